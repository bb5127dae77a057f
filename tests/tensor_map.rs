//! Tensor-map copies end to end (issue 31): a DSL kernel loads a 2D box of
//! a row-padded `u32` tensor by `cp.async.bulk.tensor` (a `TensorMap`
//! kernel parameter) into shared memory — with each swizzle mode, boxes
//! partly out of bounds (zero and NaN fill), and multicast to a cluster of
//! two — and writes it back to global memory 16-byte chunk by chunk through
//! `KernelBuilder::swizzled_chunk`; the simulator's result (checks on)
//! equals the plain-Rust box bit for bit. The simulator's findings: a map
//! that does not decode (the bytes a real driver writes), a rank other than
//! the instruction's, a destination not aligned to the swizzle pattern, a read of
//! the tile before the mbarrier wait.
//! The DSL refuses it below sm_90; the pinned ptxas assembles it on sm_90,
//! sm_100, sm_100a and sm_120 (PTX 8.0, not 7.8) into `UTMALDG` (sm_120's
//! multicast form into a software loop without it). Through the
//! runtime: on a CUDA device the map is the driver's
//! `cuTensorMapEncodeTiled` (the emulator's in CI, else SKIP), on the
//! simulator context the private encoding.

use ptxsmith::dsl::params::Ptr;
use ptxsmith::dsl::types::{S32, Src, U32};
use ptxsmith::dsl::*;
use ptxsmith::exec::LaunchConfig;
use ptxsmith::nvtools::NvTools;
use ptxsmith::sim::{Program, Sim, SimError};
use ptxsmith::tensor_map::{OobFill, Swizzle, TensorDataType, TensorMap, TiledDesc};
use ptxsmith::{Error, Feature, Sm, kernel_params};

kernel_params! {
    struct Args => Regs {
        map: TensorMapParam,
        out: Ptr<U32>,
        x: S32,
        y: S32,
    }
}

/// The global tensor: `W` × `H` words, rows padded to `PITCH` bytes.
const W: u64 = 40;
const H: u64 = 20;
const PITCH: u64 = 176;
/// Box rows; the box's width is the swizzle span (64 bytes unswizzled).
const ROWS: u32 = 8;
const THREADS: u32 = 64;

fn row_bytes(s: Swizzle) -> u32 {
    s.span_bytes().unwrap_or(64)
}

/// Each CTA (a cluster of `cluster` CTAs; rank 0 multicasts with mask
/// `0b11` when 2) loads the box at `(x, y)` and thread `t` writes chunk
/// `t` (row `t / chunks`, chunk `t % chunks`) to `out[rank][row][4·chunk..]`.
/// `pattern`: the tile's alignment (the swizzle pattern's, unless a flaw).
fn kernel(
    sm: Sm,
    s: Swizzle,
    cluster: u32,
    dims: usize,
    pattern: u32,
    wait: bool,
) -> ptxsmith::Result<PtxModule> {
    // one name per variant (a context caches modules by name)
    let name = format!("tmap_box_{s:?}_c{cluster}_d{dims}_a{pattern}_w{wait}").to_lowercase();
    let mut b = KernelBuilder::new(&name, sm);
    if cluster > 1 {
        b.cluster_dims(cluster, 1, 1);
    }
    let p = b.params::<Args>();
    let rb = row_bytes(s);
    let box_bytes = rb * ROWS;
    // one pattern more than the box, so that a misaligned start fits
    let tile_words = (box_bytes + 1024) / 4;
    let tile = b.shared_array::<U32>("tile", tile_words, 1024);
    let bar = b.shared_mbarrier("bar");
    let t = b.tid_x();
    let first = b.setp(Cmp::Eq, t, 0u32);
    let rank = if cluster > 1 {
        b.cluster_ctarank()
    } else {
        b.mov(0u32)
    };
    b.if_(first, |b| {
        b.mbarrier_init(bar, 1u32);
        b.fence_mbarrier_init();
    });
    if cluster > 1 {
        b.cluster_sync();
    } else {
        b.bar_sync();
    }
    let start = b.shared_elem(&tile, (pattern % 1024) / 4);
    b.if_(first, |b| {
        let _ = b.mbarrier_arrive_expect_tx(bar, box_bytes);
        let coords: Vec<Src<S32>> = [p.x.into(), p.y.into(), 0i32.into()][..dims].to_vec();
        if cluster > 1 {
            let leader = b.setp(Cmp::Eq, rank, 0u32);
            b.if_(leader, |b| {
                b.cp_async_bulk_tensor_multicast(start, p.map, &coords, bar, 0b11u32)
            });
        } else {
            b.cp_async_bulk_tensor(start, p.map, &coords, bar);
        }
    });
    if wait {
        b.mbarrier_wait(bar, 0u32);
    }
    let chunks = rb / 16;
    let live = b.setp(Cmp::Lt, t, ROWS * chunks);
    b.if_(live, |b| {
        let row = b.div(t, chunks);
        let chunk = b.rem(t, chunks);
        let a = b.swizzled_chunk(start, s, rb, row, chunk);
        let words = rb / 4;
        let base = b.mul_lo(rank, ROWS * words);
        let o = b.mad_lo(row, words, base);
        let c4 = b.shl(chunk, 2u32);
        let o = b.add(o, c4);
        let g = b.offset(p.out, o);
        for j in 0..4 {
            let v = b.ld_shared(a, j);
            b.st_global(g, j, v);
        }
    });
    if cluster > 1 {
        // the peer's multicast has landed before either CTA exits
        b.cluster_sync();
    }
    b.finish()
}

fn value(col: u64, row: u64) -> u32 {
    (row as u32) << 16 | col as u32 | 0x8000_0000
}

/// The tensor's bytes (padding words marked).
fn tensor() -> Vec<u8> {
    let mut v = vec![0xEEu8; (PITCH * H) as usize];
    for r in 0..H {
        for c in 0..W {
            let o = (r * PITCH + 4 * c) as usize;
            v[o..o + 4].copy_from_slice(&value(c, r).to_le_bytes());
        }
    }
    v
}

/// The box at `(x, y)` as the kernel writes it (per CTA).
fn host(s: Swizzle, x: i32, y: i32, fill: u32) -> Vec<u32> {
    let words = row_bytes(s) / 4;
    let mut out = Vec::new();
    for r in 0..ROWS as i64 {
        for c in 0..words as i64 {
            let (gx, gy) = (i64::from(x) + c, i64::from(y) + r);
            out.push(
                if (0..W as i64).contains(&gx) && (0..H as i64).contains(&gy) {
                    value(gx as u64, gy as u64)
                } else {
                    fill
                },
            );
        }
    }
    out
}

fn desc(base: u64, s: Swizzle, dtype: TensorDataType) -> TiledDesc {
    TiledDesc::new(dtype, base, &[W, H], &[PITCH], &[row_bytes(s) / 4, ROWS]).swizzle(s)
}

/// Launch on a simulated sm_90 with checks on: `out` back.
fn run(
    m: &PtxModule,
    map: impl FnOnce(u64) -> TensorMap,
    ctas: u32,
    x: i32,
    y: i32,
    words: usize,
) -> Result<Vec<u32>, SimError> {
    let prog = Program::parse(&m.ptx)?;
    let mut sim = Sim::new(Sm::Sm90);
    let src = tensor();
    let g = sim.alloc(src.len()).unwrap();
    sim.write(g, &src).unwrap();
    let total = words * ctas as usize;
    let d = sim.alloc(total * 4).unwrap();
    sim.write(d, &vec![0; total * 4]).unwrap();
    let args = Args {
        map: map(g),
        out: DevPtr::new(d),
        x,
        y,
    };
    sim.launch_program(
        &prog,
        &m.kernel,
        LaunchConfig::linear(ctas, THREADS),
        &args.args(),
    )?;
    let mut raw = vec![0u8; total * 4];
    sim.read(d, &mut raw).unwrap();
    Ok(raw
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

#[test]
fn boxes_land_swizzled_and_read_back_bit_exact() {
    for s in Swizzle::ALL {
        let words = (row_bytes(s) / 4 * ROWS) as usize;
        let m = kernel(Sm::Sm90, s, 1, 2, s.pattern_bytes().max(128), true).unwrap();
        // inside, across the right and bottom edges, across the left and top
        for (x, y) in [(4, 3), (W as i32 - 5, H as i32 - 3), (-3, -2)] {
            let map = |g| TensorMap::encode_private(&desc(g, s, TensorDataType::U32)).unwrap();
            let got = run(&m, map, 1, x, y, words).unwrap();
            assert_eq!(got, host(s, x, y, 0), "{s:?} at ({x}, {y})");
        }
        // NaN fill of an f32 map: the PTX canonical NaN
        let map = |g| {
            TensorMap::encode_private(&desc(g, s, TensorDataType::F32).oob_fill(OobFill::Nan))
                .unwrap()
        };
        let got = run(&m, map, 1, -2, 15, words).unwrap();
        assert_eq!(got, host(s, -2, 15, 0x7FFF_FFFF), "{s:?} NaN fill");
    }
}

#[test]
fn swizzled_layout_is_not_row_major() {
    // a 64B-swizzled box read back as if row-major (the kernel built for
    // no swizzle): rows come back permuted as the swizzle says (the
    // helper is what makes the readback right)
    let s = Swizzle::B64;
    let words = (row_bytes(s) / 4 * ROWS) as usize;
    let m = kernel(Sm::Sm90, Swizzle::None, 1, 2, 1024, true).unwrap();
    let map = |g| TensorMap::encode_private(&desc(g, s, TensorDataType::U32)).unwrap();
    let got = run(&m, map, 1, 0, 0, words).unwrap();
    let plain = host(s, 0, 0, 0);
    let mut landed = vec![0u32; plain.len()];
    for (k, v) in plain.iter().enumerate() {
        let q = ptxsmith::tensor_map::swizzle_offset(s, 4 * k as u32) as usize / 4;
        landed[q] = *v;
    }
    assert_eq!(got, landed);
    assert_ne!(got, plain);
}

#[test]
fn multicast_to_a_cluster_of_two() {
    for s in [Swizzle::B64, Swizzle::B128] {
        let words = (row_bytes(s) / 4 * ROWS) as usize;
        let m = kernel(Sm::Sm90, s, 2, 2, s.pattern_bytes(), true).unwrap();
        let map = |g| TensorMap::encode_private(&desc(g, s, TensorDataType::U32)).unwrap();
        let got = run(&m, map, 2, 30, -4, words).unwrap();
        let one = host(s, 30, -4, 0);
        assert_eq!(got[..words], one[..], "{s:?} rank 0");
        assert_eq!(got[words..], one[..], "{s:?} rank 1");
    }
}

#[test]
fn findings() {
    let s = Swizzle::B128;
    let words = (row_bytes(s) / 4 * ROWS) as usize;
    let good = |g| TensorMap::encode_private(&desc(g, s, TensorDataType::U32)).unwrap();
    // a destination 512-byte aligned under the 1,024-byte pattern
    let m = kernel(Sm::Sm90, s, 1, 2, 512, true).unwrap();
    let e = run(&m, good, 1, 0, 0, words).unwrap_err();
    assert!(matches!(e, SimError::BulkCopy { .. }), "{e}");
    assert!(e.to_string().contains("not 1024-byte aligned"), "{e}");
    // bytes that are not the private encoding (a real driver's map)
    let m = kernel(Sm::Sm90, s, 1, 2, 1024, true).unwrap();
    let e = run(&m, |_| TensorMap([0x11; 128]), 1, 0, 0, words).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, SimError::BulkCopy { .. }), "{e}");
    assert!(
        msg.contains("does not decode") && msg.contains("tmap_box"),
        "{msg}"
    );
    // a 3D copy with a 2D map
    let m = kernel(Sm::Sm90, s, 1, 3, 1024, true).unwrap();
    let e = run(&m, good, 1, 0, 0, words).unwrap_err();
    assert!(
        e.to_string().contains("3d with a tensor map of rank 2"),
        "{e}"
    );
}

#[test]
fn a_read_before_the_wait_is_a_finding() {
    let s = Swizzle::B128;
    let words = (row_bytes(s) / 4 * ROWS) as usize;
    let m = kernel(Sm::Sm90, s, 1, 2, 1024, false).unwrap();
    let good = |g| TensorMap::encode_private(&desc(g, s, TensorDataType::U32)).unwrap();
    let e = run(&m, good, 1, 0, 0, words).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, SimError::BulkCopy { .. }), "{e}");
    assert!(
        msg.contains("ld.shared") && msg.contains("will write"),
        "{msg}"
    );
}

#[test]
fn gates_and_ptxas() {
    for sm in [Sm::Sm80, Sm::Sm89] {
        match kernel(sm, Swizzle::B128, 1, 2, 1024, true) {
            Err(Error::UnsupportedFeature { feature, .. }) => {
                assert!(
                    matches!(feature, Feature::TensorCopy | Feature::BulkCopy),
                    "{feature}"
                )
            }
            other => panic!("{sm}: {other:?}"),
        }
    }
    let mut b = KernelBuilder::new("k", Sm::Sm90);
    let bar = b.shared_mbarrier("bar");
    let tile = b.shared_array::<U32>("t", 64, 128);
    let map = b.tensor_map_param("m");
    let s = b.shared_elem(&tile, 0u32);
    b.cp_async_bulk_tensor(s, map, &[0i32.into(); 4], bar);
    match b.finish() {
        Err(Error::Build { error, .. }) => assert_eq!(error, BuildError::TensorCoords { n: 4 }),
        other => panic!("{other:?}"),
    }
    let m = kernel(Sm::Sm90, Swizzle::B128, 2, 2, 1024, true).unwrap();
    assert!(m.ptx.contains(".version 8.0\n"), "{}", m.ptx);
    assert!(
        m.ptx.contains(".param .align 64 .b8 p_map[128]"),
        "{}",
        m.ptx
    );
    assert!(
        m.ptx.contains(
            "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r"
        ),
        "{}",
        m.ptx
    );
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    for sm in [Sm::Sm90, Sm::Sm100, Sm::Sm100a, Sm::Sm120] {
        for cluster in [1, 2] {
            let m = kernel(sm, Swizzle::B128, cluster, 2, 1024, true).unwrap();
            let asm = tools
                .assemble(&m.ptx, sm)
                .unwrap_or_else(|e| panic!("{sm}: ptxas: {e}\n{}", m.ptx));
            let sass = tools.disassemble(&asm).unwrap();
            // sm_120 has no multicast tensor copy in hardware: ptxas 12.9
            // lowers the multicast form to a software loop (a CALL, no
            // UTMALDG); the unicast form is one UTMALDG there too
            let want = !(sm == Sm::Sm120 && cluster == 2);
            assert_eq!(
                sass.count("UTMALDG") >= 1,
                want,
                "{sm}, cluster {cluster}: {:?}",
                sass.opcode_histogram()
            );
        }
    }
    let lower = m.ptx.replace(".version 8.0\n", ".version 7.8\n");
    assert!(tools.assemble(&lower, Sm::Sm90).is_err());
}

/// The swizzled multicast copy through the runtime on `ctx`: the map
/// encoded by [`TensorMap::encode_tiled`] (the driver's on a device, the
/// private encoding on the simulator), a launch with it as an argument.
fn through_runtime(ctx: &ptxsmith::runtime::Context) {
    use ptxsmith::dsl::Kernel;
    let sm = ctx.sm();
    if !sm.supports(Feature::TensorCopy) {
        println!("SKIP: {sm} has no tensor-map copies");
        return;
    }
    for (s, cluster) in [(Swizzle::B128, 1), (Swizzle::B64, 2), (Swizzle::None, 1)] {
        let words = (row_bytes(s) / 4 * ROWS) as usize;
        let m = kernel(sm, s, cluster, 2, s.pattern_bytes().max(128), true).unwrap();
        let k = Kernel::<Args>::from_module(m).unwrap();
        let src = ctx.upload(&tensor()).unwrap();
        let out = ctx.alloc_zeroed::<u32>(words * cluster as usize).unwrap();
        let map =
            TensorMap::encode_tiled(ctx, &desc(src.device_ptr(), s, TensorDataType::U32)).unwrap();
        let st = ctx.default_stream();
        let args = Args {
            map,
            out: DevPtr::new(out.device_ptr()),
            x: 33,
            y: -3,
        };
        st.launch_kernel(&k, LaunchConfig::linear(cluster, THREADS), args)
            .unwrap();
        let got = out.to_vec().unwrap();
        let one = host(s, 33, -3, 0);
        for r in 0..cluster as usize {
            assert_eq!(
                got[r * words..(r + 1) * words],
                one[..],
                "{sm} {s:?} rank {r}"
            );
        }
    }
    // an invalid description is refused before the driver is called
    let bad = desc(0x1008, Swizzle::B128, TensorDataType::U32);
    assert!(matches!(
        TensorMap::encode_tiled(ctx, &bad),
        Err(Error::TensorMap(
            ptxsmith::tensor_map::TensorMapError::Address { .. }
        ))
    ));
}

#[test]
fn sim_context_runs_the_copy() {
    through_runtime(&ptxsmith::runtime::Context::sim(Sm::Sm90));
}

/// On a GPU (SKIP without one; in CI on the driver emulator, whose
/// `cuTensorMapEncodeTiled` writes the private encoding).
#[test]
fn gpu_tensor_map_copy() {
    let Some(ctx) = ptxsmith::testing::cuda_for_tests() else {
        return;
    };
    through_runtime(&ctx);
}
