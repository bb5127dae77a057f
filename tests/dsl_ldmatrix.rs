//! Issue 31: `ldmatrix` in the DSL and the simulator: the printed forms,
//! the feature gate below sm_75 (a typed error), assembly by the pinned
//! ptxas from sm_75, the exact lane layout of every form (`.x1/.x2/.x4`,
//! with and without `.trans`) against the PTX ISA's description
//! (§9.7.14.5.15 "ldmatrix", spelled out here apart from the simulator's
//! code), and a 16×16×16 tile through `ldmatrix` → `mma.sync` → store
//! equal bit for bit to the host GEMM on the tensor-core model, with `B`
//! loaded by `.trans` (row-major `B`) and without (transposed `B`).

mod common;

use common::Rng;
use ptxsmith::dsl::params::Ptr;
use ptxsmith::dsl::types::{B32, Bf16x2, F16x2, F32, Reg, U32};
use ptxsmith::dsl::*;
use ptxsmith::exec::LaunchConfig;
use ptxsmith::nvtools::NvTools;
use ptxsmith::sim::{Program, Sim, SimError};
use ptxsmith::tensor_core::{self, InputFormat};
use ptxsmith::{Error, Feature, Sm, kernel_params};

kernel_params! {
    struct TileArgs => TileRegs {
        a: Ptr<U32>,
        b: Ptr<U32>,
        d: Ptr<F32>,
    }
}

kernel_params! {
    struct RawArgs => RawRegs {
        src: Ptr<U32>,
        out: Ptr<U32>,
    }
}

/// Each of the 32 lanes copies words `4·lane .. 4·lane + 4` of `src`
/// (128 words) into `dst`; then a barrier.
fn fill(b: &mut KernelBuilder, src: GlobalPtr<U32>, dst: &SharedArray<U32>) {
    let lane = b.tid_x();
    let l4 = b.shl(lane, 2u32);
    let g = b.offset(src, l4);
    let s = b.shared_elem(dst, l4);
    for j in 0..4 {
        let w = b.ld_global(g, j);
        b.st_shared(s, j, w);
    }
}

/// Every `ldmatrix` form on a 32×8 matrix of `.b16` (128 words) in shared
/// memory: lane `l` addresses row `l` (16 bytes: word `4·l`); each form's
/// registers go to `out` lane-major, one form after another
/// (`x1, x1.trans, x2, x2.trans, x4, x4.trans`: 1+1+2+2+4+4 = 14 words a
/// lane).
fn raw_kernel(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("ldmatrix_raw", sm);
    let p = b.params::<RawArgs>();
    let s = b.shared_array::<U32>("m", 128, 16);
    fill(&mut b, p.src, &s);
    b.bar_sync();
    let lane = b.tid_x();
    let l4 = b.shl(lane, 2u32);
    let row = b.shared_elem(&s, l4);
    let mut regs: Vec<Reg<B32>> = Vec::new();
    for trans in [false, true] {
        regs.push(b.ldmatrix_x1::<B32, _>(row, trans));
    }
    for trans in [false, true] {
        regs.extend(b.ldmatrix_x2::<B32, _>(row, trans));
    }
    for trans in [false, true] {
        regs.extend(b.ldmatrix_x4::<B32, _>(row, trans));
    }
    let base = b.mul_lo(lane, 14u32);
    let o = b.offset(p.out, base);
    for (k, r) in regs.into_iter().enumerate() {
        let w = b.packed_bits(r);
        b.st_global(o, k as i32, w);
    }
    b.finish()
}

/// `D (16×16) = A (16×16) · B (16×16)` by one warp: `A` row-major; `B`
/// row-major (`k × n`) when `trans_b`, else transposed (`n × k`
/// row-major); both as pairs of halves in `u32` words (8 words a row).
/// `A` by [`KernelBuilder::ldmatrix_a`], each 8-column half of `B` by
/// [`KernelBuilder::ldmatrix_b`], two `mma.sync`, `D` row-major.
fn tile_kernel<T: LdmatrixInput>(sm: Sm, trans_b: bool) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("ldmatrix_tile", sm);
    let p = b.params::<TileArgs>();
    let sa = b.shared_array::<U32>("sa", 128, 16);
    let sb = b.shared_array::<U32>("sb", 128, 16);
    fill(&mut b, p.a, &sa);
    fill(&mut b, p.b, &sb);
    b.bar_sync();
    let lane = b.tid_x();
    // A: lane l supplies &A[l % 16][8·(l / 16)]
    let r16 = b.and(lane, 15u32);
    let hi = b.shr(lane, 4u32);
    let hi4 = b.shl(hi, 2u32);
    let aw = b.mad_lo(r16, 8u32, hi4);
    let ap = b.shared_elem(&sa, aw);
    let fa = b.ldmatrix_a::<T, _>(ap);
    let g = b.shr(lane, 2u32);
    let t = b.and(lane, 3u32);
    let t2 = b.shl(t, 1u32);
    let dbase = b.mad_lo(g, 16u32, t2);
    let dp = b.offset(p.d, dbase);
    for n0 in [0u32, 8] {
        let bw = if trans_b {
            // row-major B: lane l supplies &B[l % 16][n0]
            b.mad_lo(r16, 8u32, n0 / 2)
        } else {
            // Bᵀ (n × k): lane l supplies &Bᵀ[n0 + l % 8][8·((l / 8) % 2)]
            let r8 = b.and(lane, 7u32);
            let n = b.add(r8, n0);
            let kh = b.shr(lane, 3u32);
            let kh = b.and(kh, 1u32);
            let kh4 = b.shl(kh, 2u32);
            b.mad_lo(n, 8u32, kh4)
        };
        let bp = b.shared_elem(&sb, bw);
        let fb = b.ldmatrix_b::<T, _>(bp, trans_b);
        let c = b.frag_c_zero();
        let d = b.mma_sync(fa, fb, c);
        for (i, r) in d.regs.into_iter().enumerate() {
            let k = n0 as i32 + [0, 1, 128, 129][i];
            b.st_global(dp, k, r);
        }
    }
    b.finish()
}

fn bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn words(b: &[u8]) -> Vec<u32> {
    b.chunks(4)
        .map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]))
        .collect()
}

/// Run `m` (32 threads) on a simulated `device` with the given word
/// buffers as arguments; the last buffer back.
fn run(m: &PtxModule, device: Sm, bufs: &[Vec<u32>]) -> Result<Vec<u32>, SimError> {
    let prog = Program::parse(&m.ptx)?;
    let mut sim = Sim::new(device);
    let mut args = Vec::new();
    let mut last = 0;
    for v in bufs {
        let p = sim.alloc(v.len() * 4).unwrap();
        sim.write(p, &bytes(v)).unwrap();
        args.push(ArgValue::Ptr(p));
        last = p;
    }
    sim.launch_program(&prog, &m.kernel, LaunchConfig::linear(1, 32), &args)?;
    let mut raw = vec![0u8; bufs.last().unwrap().len() * 4];
    sim.read(last, &mut raw).unwrap();
    Ok(words(&raw))
}

#[test]
fn every_form_prints_assembles_from_sm_75_and_is_refused_below() {
    let m = raw_kernel(Sm::Sm75).unwrap();
    assert_eq!(m.version.to_string(), "6.5");
    for s in [
        "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%b0}, [%r",
        "ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%b1}, [%r",
        "ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%b2, %b3}, [%r",
        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%b10, %b11, %b12, %b13}, [%r",
    ] {
        assert!(m.ptx.contains(s), "{s}\n{}", m.ptx);
    }
    match raw_kernel(Sm::Sm70) {
        Err(Error::UnsupportedFeature { feature, sm, needs }) => {
            assert_eq!((feature, sm), (Feature::Ldmatrix, Sm::Sm70));
            assert!(needs.contains("sm_75") && needs.contains("6.5"), "{needs}");
        }
        other => panic!("{other:?}"),
    }
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    for sm in Sm::ALL
        .into_iter()
        .filter(|s| s.supports(Feature::Ldmatrix))
    {
        let m = raw_kernel(sm).unwrap();
        if let Err(e) = tools.assemble(&m.ptx, sm) {
            panic!("ldmatrix on {sm} rejected by ptxas: {e}\n{}", m.ptx);
        }
        if sm.supports(Feature::MmaSync) {
            for trans in [false, true] {
                let m = tile_kernel::<Bf16x2>(sm, trans).unwrap();
                if let Err(e) = tools.assemble(&m.ptx, sm) {
                    panic!("tile on {sm} rejected by ptxas: {e}\n{}", m.ptx);
                }
            }
        }
    }
    // 6.5 is minimal on sm_75: ptxas refuses ldmatrix at 6.4
    let lower = m.ptx.replace(".version 6.5\n", ".version 6.4\n");
    assert!(tools.assemble(&lower, Sm::Sm75).is_err());
}

/// Element `(r, c)` of matrix `i` in the raw kernel's source: matrix `i`
/// is rows `8i..8i+8` of the 32×8 `.b16` matrix; the value is its index.
fn elem(i: usize, r: usize, c: usize) -> u32 {
    ((i * 8 + r) * 8 + c) as u32
}

#[test]
fn each_lane_receives_the_isa_elements_of_every_form() {
    // the 32×8 matrix of 16-bit indices, two to a word (low half first)
    let src: Vec<u32> = (0..128u32).map(|w| ((2 * w + 1) << 16) | (2 * w)).collect();
    for device in [Sm::Sm75, Sm::Sm90] {
        let m = raw_kernel(Sm::Sm75).unwrap();
        let out = run(&m, device, &[src.clone(), vec![0; 32 * 14]]).unwrap();
        for lane in 0..32 {
            let got = &out[lane * 14..lane * 14 + 14];
            let mut want = Vec::new();
            for num in [1, 2, 4] {
                for trans in [false, true] {
                    for i in 0..num {
                        // PTX ISA §9.7.14.5.15, "fragment layout": thread l
                        // holds row l/4, columns 2(l%4), 2(l%4)+1 of each
                        // matrix; `.trans` holds the transposed matrix
                        let (row, col) = (lane / 4, 2 * (lane % 4));
                        let (lo, hi) = if trans {
                            (elem(i, col, row), elem(i, col + 1, row))
                        } else {
                            (elem(i, row, col), elem(i, row, col + 1))
                        };
                        want.push((hi << 16) | lo);
                    }
                }
            }
            assert_eq!(got, &want[..], "lane {lane} on {device}");
        }
    }
}

/// Random half-precision bits of `fmt` for a 16×16 matrix.
fn halves(fmt: InputFormat, rng: &mut Rng) -> Vec<u32> {
    (0..256)
        .map(|_| {
            let e = rng.below(13) as i32 - 6;
            let x = rng.value() * 2f32.powi(e);
            match fmt {
                InputFormat::F16 => u32::from(tensor_core::f32_to_f16_rn(x)),
                _ => u32::from(tensor_core::f32_to_bf16_rn(x)),
            }
        })
        .collect()
}

/// Two halves per word, low first.
fn pack(v: &[u32]) -> Vec<u32> {
    v.chunks(2).map(|p| (p[1] << 16) | p[0]).collect()
}

fn check_tile<T: LdmatrixInput>(fmt: InputFormat, seed: u64) {
    let mut rng = Rng(seed);
    let a = halves(fmt, &mut rng);
    let bm = halves(fmt, &mut rng); // B, k × n row-major
    let bt: Vec<u32> = (0..256).map(|i| bm[(i % 16) * 16 + i / 16]).collect();
    for device in [Sm::Sm80, Sm::Sm89, Sm::Sm90, Sm::Sm100] {
        let want = tensor_core::mma(device, fmt, (16, 16, 16), &a, &bm, &[0.0; 256]).unwrap();
        let want: Vec<u32> = want.iter().map(|x| x.to_bits()).collect();
        for trans in [true, false] {
            let m = tile_kernel::<T>(Sm::Sm80, trans).unwrap();
            let b_words = pack(if trans { &bm } else { &bt });
            let got = run(&m, device, &[pack(&a), b_words, vec![0; 256]]).unwrap();
            assert_eq!(got, want, "{fmt} on {device}, trans {trans}");
        }
    }
}

#[test]
fn ldmatrix_mma_tile_equals_the_host_gemm_bf16() {
    check_tile::<Bf16x2>(InputFormat::Bf16, 31);
}

#[test]
fn ldmatrix_mma_tile_equals_the_host_gemm_f16() {
    check_tile::<F16x2>(InputFormat::F16, 75);
}

#[test]
fn misaligned_and_out_of_bounds_rows_are_findings() {
    // lane 0 addresses 8 bytes past its row: not 16-byte aligned
    let build = |shift: u32| {
        let mut b = KernelBuilder::new("ldmatrix_bad", Sm::Sm75);
        let p = b.params::<RawArgs>();
        let s = b.shared_array::<U32>("m", 128, 16);
        fill(&mut b, p.src, &s);
        b.bar_sync();
        let lane = b.tid_x();
        let l4 = b.shl(lane, 2u32);
        let is0 = b.setp(Cmp::Eq, lane, 0u32);
        let extra = b.selp(is0, shift, 0u32);
        let w = b.add(l4, extra);
        let row = b.shared_elem(&s, w);
        let r = b.ldmatrix_x4::<B32, _>(row, false);
        let o = b.offset(p.out, lane);
        let w = b.packed_bits(r[0]);
        b.st_global(o, 0, w);
        b.finish().unwrap()
    };
    let src = vec![0u32; 128];
    match run(&build(2), Sm::Sm80, &[src.clone(), vec![0; 32]]) {
        Err(SimError::Misaligned { size: 16, site, .. }) => {
            assert_eq!(site.tid, (0, 0, 0));
            assert!(site.instr.starts_with("ldmatrix"), "{site}");
        }
        other => panic!("{other:?}"),
    }
    // lane 0 addresses past the 512-byte array
    match run(&build(128), Sm::Sm80, &[src, vec![0; 32]]) {
        Err(SimError::OutOfBounds { size: 16, site, .. }) => assert_eq!(site.tid, (0, 0, 0)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_parser_refuses_malformed_forms_and_old_targets() {
    let ptx = raw_kernel(Sm::Sm75).unwrap().ptx;
    let parse = |p: &str| Program::parse(p).err();
    assert!(parse(&ptx).is_none());
    let x3 = ptx.replacen(".x4.shared", ".x3.shared", 1);
    assert!(
        matches!(parse(&x3), Some(SimError::Unsupported { .. })),
        "{x3}"
    );
    let short = ptx.replacen(".x1.shared", ".x2.shared", 1);
    assert!(
        matches!(parse(&short), Some(SimError::Parse { .. })),
        "{short}"
    );
    let b32 = ptx.replacen(".x1.shared.b16", ".x1.shared.b32", 1);
    assert!(
        matches!(parse(&b32), Some(SimError::Unsupported { .. })),
        "{b32}"
    );
    let old = ptx
        .replace(".target sm_75", ".target sm_70")
        .replace(".version 6.5", ".version 6.0");
    match parse(&old) {
        Some(SimError::Unsupported { reason, .. }) => assert!(reason.contains("sm_75"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

/// Warp 0 stores 128 words to shared memory (if `filled`); then every warp
/// loads them by `ldmatrix .x4` (lane `l` addressing word `4·(l % 32)`),
/// with a barrier in between if `bar`.
fn shared_reader(filled: bool, bar: bool) -> PtxModule {
    let mut b = KernelBuilder::new("ldmatrix_reader", Sm::Sm80);
    let p = b.params::<RawArgs>();
    let s = b.shared_array::<U32>("m", 128, 16);
    let t = b.tid_x();
    if filled {
        let w0 = b.setp(Cmp::Lt, t, 32u32);
        b.if_(w0, |b| fill(b, p.src, &s));
    }
    if bar {
        b.bar_sync();
    }
    let lane = b.and(t, 31u32);
    let l4 = b.shl(lane, 2u32);
    let row = b.shared_elem(&s, l4);
    let r = b.ldmatrix_x4::<B32, _>(row, false);
    let o = b.offset(p.out, t);
    let w = b.packed_bits(r[3]);
    b.st_global(o, 0, w);
    b.finish().unwrap()
}

#[test]
fn rows_count_as_shared_reads_for_the_race_and_initialisation_checks() {
    let run64 = |m: &PtxModule| -> Result<(), SimError> {
        let prog = Program::parse(&m.ptx)?;
        let mut sim = Sim::new(Sm::Sm80);
        let s = sim.alloc(512).unwrap();
        sim.write(s, &[1; 512]).unwrap();
        let o = sim.alloc(256).unwrap();
        sim.launch_program(
            &prog,
            &m.kernel,
            LaunchConfig::linear(1, 64),
            &[ArgValue::Ptr(s), ArgValue::Ptr(o)],
        )
        .map(|_| ())
    };
    run64(&shared_reader(true, true)).unwrap();
    match run64(&shared_reader(false, true)) {
        Err(SimError::UninitializedShared { site, size: 16, .. }) => {
            assert!(site.instr.starts_with("ldmatrix"), "{site}")
        }
        other => panic!("{other:?}"),
    }
    match run64(&shared_reader(true, false)) {
        Err(SimError::SharedRace { site, .. }) => {
            assert!(site.instr.starts_with("ldmatrix"), "{site}");
            assert!(site.tid.0 >= 32, "{site}");
        }
        other => panic!("{other:?}"),
    }
}
