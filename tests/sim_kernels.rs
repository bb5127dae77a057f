//! End-to-end runs of the hand-written kernels in tests/ptx through the
//! simulator library (and the `Context` interface shared with the GPU).

use ptxsmith::Sm;
use ptxsmith::dsl::PtxModule;
use ptxsmith::dsl::params::{ArgValue, ParamDesc, ParamKind, ScalarType};
use ptxsmith::runtime::{Context, LaunchConfig};
use ptxsmith::sim::{Program, Sim, SimError};

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn saxpy_matches_fma() {
    let prog = Program::parse(include_str!("ptx/saxpy.ptx")).unwrap();
    let mut sim = Sim::new(Sm::Sm80);
    let n = 1000u32;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.37 - 11.0).collect();
    let y: Vec<f32> = (0..n).map(|i| (i as f32).sqrt()).collect();
    let a = 1.7f32;
    let px = sim.alloc(4 * n as usize).unwrap();
    let py = sim.alloc(4 * n as usize).unwrap();
    sim.write(
        px,
        &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    )
    .unwrap();
    sim.write(
        py,
        &y.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    )
    .unwrap();
    let rep = sim
        .launch_program(
            &prog,
            "saxpy",
            LaunchConfig::linear(n.div_ceil(128), 128),
            &[
                ArgValue::Ptr(px),
                ArgValue::Ptr(py),
                ArgValue::F32(a),
                ArgValue::U32(n),
            ],
        )
        .unwrap();
    let mut out = vec![0u8; 4 * n as usize];
    sim.read(py, &mut out).unwrap();
    let out = f32s(&out);
    for i in 0..n as usize {
        assert_eq!(out[i].to_bits(), a.mul_add(x[i], y[i]).to_bits(), "i={i}");
    }
    assert_eq!(rep.per_opcode["fma.rn.f32"], n as u64);
    assert_eq!(rep.per_base["fma"], n as u64);
    assert!(rep.instructions > 10 * n as u64);
    assert_eq!(sim.total_instructions(), rep.instructions);
}

#[test]
fn block_sum_reduction() {
    let prog = Program::parse(include_str!("ptx/reduce.ptx")).unwrap();
    let mut sim = Sim::new(Sm::Sm80);
    let blocks = 5u32;
    let bs = 128u32;
    let input: Vec<u32> = (0..blocks * bs)
        .map(|i| i.wrapping_mul(2654435761))
        .collect();
    let pin = sim.alloc(input.len() * 4).unwrap();
    let pout = sim.alloc(blocks as usize * 4).unwrap();
    sim.write(
        pin,
        &input
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let rep = sim
        .launch_program(
            &prog,
            "block_sum",
            LaunchConfig::linear(blocks, bs),
            &[ArgValue::Ptr(pin), ArgValue::Ptr(pout)],
        )
        .unwrap();
    let mut out = vec![0u8; blocks as usize * 4];
    sim.read(pout, &mut out).unwrap();
    for b in 0..blocks as usize {
        let want = input[b * bs as usize..(b + 1) * bs as usize]
            .iter()
            .fold(0u32, |a, v| a.wrapping_add(*v));
        assert_eq!(
            u32::from_le_bytes(out[4 * b..4 * b + 4].try_into().unwrap()),
            want
        );
    }
    // 1 + log2(128) barriers per block
    assert_eq!(rep.barriers, blocks as u64 * 8);
}

#[test]
fn executor_interface_parses_once_and_counts_traffic() {
    let ptx = include_str!("ptx/saxpy.ptx").to_string();
    let module = PtxModule {
        kernel: "saxpy".into(),
        tuning: String::new(),
        sm: Sm::Sm80,
        version: ptxsmith::PtxVersion::new(7, 0),
        params: vec![
            ParamDesc {
                name: "p_x".into(),
                kind: ParamKind::GlobalPtr {
                    elem: ScalarType::F32,
                    align: 16,
                },
            },
            ParamDesc {
                name: "p_y".into(),
                kind: ParamKind::GlobalPtr {
                    elem: ScalarType::F32,
                    align: 16,
                },
            },
            ParamDesc {
                name: "a".into(),
                kind: ParamKind::Scalar(ScalarType::F32),
            },
            ParamDesc {
                name: "n".into(),
                kind: ParamKind::Scalar(ScalarType::U32),
            },
        ],
        ptx,
    };
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let bx = st.upload(&[0f32; 16]).unwrap();
    let by = st.upload(&[0f32; 16]).unwrap();
    let args = [
        ArgValue::Ptr(bx.device_ptr()),
        ArgValue::Ptr(by.device_ptr()),
        ArgValue::F32(2.0),
        ArgValue::U32(16),
    ];
    st.launch(&module, LaunchConfig::linear(1, 32), &args)
        .unwrap();
    st.launch(&module, LaunchConfig::linear(1, 32), &args)
        .unwrap();
    let out = by.to_vec().unwrap();
    assert_eq!(out.len(), 16);
    let t = ctx.traffic();
    assert_eq!(
        (t.bytes_uploaded, t.bytes_downloaded, t.launches),
        (128, 64, 2)
    );
    assert_eq!(ctx.multiprocessor_count(), 4);
    // wrong argument kinds are refused before running
    let bad = [args[0], args[1], ArgValue::U32(2), ArgValue::U32(16)];
    assert!(matches!(
        st.launch(&module, LaunchConfig::linear(1, 32), &bad),
        Err(ptxsmith::Error::InvalidArgument(_))
    ));
    assert_eq!(ctx.with_sim(|sim: &mut Sim| sim.cache_len()), Some(1));
    // sim errors convert into the crate error
    let e: ptxsmith::Error = SimError::InvalidLaunch("x".into()).into();
    assert!(matches!(e, ptxsmith::Error::Sim(_)));
}

/// Host model of tests/ptx/dot.ptx, written from its comment.
fn dot_model(x: &[f32], y: &[f32], grid: usize, block: usize) -> Vec<f32> {
    let n = x.len();
    let mut out = Vec::new();
    for b in 0..grid {
        let mut red: Vec<f32> = (0..block)
            .map(|t| {
                let mut acc = 0f32;
                let mut i = b * block + t;
                while i < n {
                    acc = x[i].mul_add(y[i], acc);
                    i += grid * block;
                }
                acc
            })
            .collect();
        let mut s = block / 2;
        while s >= 32 {
            for t in 0..s {
                red[t] += red[t + s];
            }
            s /= 2;
        }
        let mut v: Vec<f32> = red[..32].to_vec();
        for off in [16, 8, 4, 2, 1] {
            let old = v.clone();
            for l in 0..32 {
                let src = if l + off < 32 { old[l + off] } else { old[l] };
                v[l] = old[l] + src;
            }
        }
        out.push(v[0]);
    }
    out
}

#[test]
fn dot_kernel_matches_model_bit_for_bit() {
    let prog = Program::parse(include_str!("ptx/dot.ptx")).unwrap();
    let mut sim = Sim::new(Sm::Sm80);
    let n = 10_007usize;
    let x: Vec<f32> = (0..n)
        .map(|i| ((i * 7919) % 1000) as f32 / 997.0 - 0.5)
        .collect();
    let y: Vec<f32> = (0..n)
        .map(|i| ((i * 104_729) % 1000) as f32 / 313.0 - 1.5)
        .collect();
    for (grid, block) in [(3usize, 256usize), (1, 1024), (7, 64)] {
        let px = sim.alloc(4 * n).unwrap();
        let py = sim.alloc(4 * n).unwrap();
        let pp = sim.alloc(4 * grid).unwrap();
        sim.write(
            px,
            &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
        )
        .unwrap();
        sim.write(
            py,
            &y.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
        )
        .unwrap();
        sim.launch_program(
            &prog,
            "dot",
            LaunchConfig::linear(grid as u32, block as u32),
            &[
                ArgValue::Ptr(px),
                ArgValue::Ptr(py),
                ArgValue::Ptr(pp),
                ArgValue::U32(n as u32),
            ],
        )
        .unwrap();
        let mut o = vec![0u8; 4 * grid];
        sim.read(pp, &mut o).unwrap();
        let got = f32s(&o);
        let want = dot_model(&x, &y, grid, block);
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}
