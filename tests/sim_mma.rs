//! Issue 31: the simulator executes `mma.sync` with the tensor-core model
//! of the **emulated device's** SM. One warp loads its A/B/C fragments from
//! global memory (lane-major: lane `l`'s registers at `4l..4l+4`, B at
//! `2l..2l+2`), runs one `mma.sync` and stores D; the result must equal
//! `tensor_core::mma(sm, …)` on the host bit for bit on sm_80, sm_89,
//! sm_90 and sm_100, for a module built for sm_80 (so the device's SM,
//! not the module's `.target`, selects the model).
//!
//! The host side places the tile elements into per-lane fragments by its
//! own spelling of the PTX ISA tables (§9.7.14.5.7 `m16n8k8` tf32,
//! §9.7.14.5.8 `m16n8k16` f16/bf16), written register by register, apart
//! from the simulator's element formulas.

mod common;

use common::Rng;
use ptxsmith::dsl::params::Ptr;
use ptxsmith::dsl::types::{Bf16x2, F16x2, F32, MmaInput, Tf32, U32};
use ptxsmith::dsl::*;
use ptxsmith::exec::LaunchConfig;
use ptxsmith::sim::{Program, Sim, SimError};
use ptxsmith::tensor_core::{self, InputFormat};
use ptxsmith::{Sm, kernel_params};

kernel_params! {
    struct MmaArgs => MmaRegs {
        a: Ptr<U32>,
        b: Ptr<U32>,
        c: Ptr<F32>,
        d: Ptr<F32>,
    }
}

fn mma_kernel<T: MmaInput>(sm: Sm) -> PtxModule {
    let mut b = KernelBuilder::new("mma_one", sm);
    let p = b.params::<MmaArgs>();
    let lane = b.tid_x();
    let l4 = b.shl(lane, 2u32);
    let l2 = b.shl(lane, 1u32);
    let (ap, bp) = (b.offset(p.a, l4), b.offset(p.b, l2));
    let (cp, dp) = (b.offset(p.c, l4), b.offset(p.d, l4));
    let a = FragA {
        regs: [0, 1, 2, 3].map(|i| {
            let w = b.ld_global(ap, i);
            b.u32_as_packed::<T>(w)
        }),
    };
    let bf = FragB {
        regs: [0, 1].map(|i| {
            let w = b.ld_global(bp, i);
            b.u32_as_packed::<T>(w)
        }),
    };
    let c = FragC {
        regs: [0, 1, 2, 3].map(|i| b.ld_global(cp, i)),
    };
    let d = b.mma_sync(a, bf, c);
    for (i, r) in d.regs.into_iter().enumerate() {
        b.st_global(dp, i as i32, r);
    }
    b.finish().unwrap()
}

/// Per-lane fragments of row-major tiles A (16×k), B (k×8), C (16×8):
/// `(a words, b words, c values)`, lane-major.
fn fragments(fmt: InputFormat, a: &[u32], b: &[u32], c: &[f32]) -> (Vec<u32>, Vec<u32>, Vec<f32>) {
    let k = if fmt == InputFormat::Tf32 { 8 } else { 16 };
    let (mut fa, mut fb, mut fc) = (vec![], vec![], vec![]);
    for lane in 0..32 {
        let g = lane / 4; // groupID
        let t = lane % 4; // threadID_in_group
        let at = |r: usize, col: usize| a[r * k + col];
        let bt = |r: usize| b[r * 8 + g];
        let pair = |lo: u32, hi: u32| (hi << 16) | lo;
        if fmt == InputFormat::Tf32 {
            // a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)
            fa.extend([at(g, t), at(g + 8, t), at(g, t + 4), at(g + 8, t + 4)]);
            // b0 (t, g), b1 (t+4, g)
            fb.extend([bt(t), bt(t + 4)]);
        } else {
            // {a0,a1} row g, {a2,a3} row g+8, {a4,a5} row g, {a6,a7} row
            // g+8; columns 2t, 2t+1, and +8 for a4..a7
            fa.extend([
                pair(at(g, 2 * t), at(g, 2 * t + 1)),
                pair(at(g + 8, 2 * t), at(g + 8, 2 * t + 1)),
                pair(at(g, 2 * t + 8), at(g, 2 * t + 9)),
                pair(at(g + 8, 2 * t + 8), at(g + 8, 2 * t + 9)),
            ]);
            // {b0,b1} rows 2t, 2t+1; {b2,b3} rows 2t+8, 2t+9; column g
            fb.extend([
                pair(bt(2 * t), bt(2 * t + 1)),
                pair(bt(2 * t + 8), bt(2 * t + 9)),
            ]);
        }
        // c0, c1 at row g; c2, c3 at row g+8; columns 2t, 2t+1
        for (r, col) in [
            (g, 2 * t),
            (g, 2 * t + 1),
            (g + 8, 2 * t),
            (g + 8, 2 * t + 1),
        ] {
            fc.push(c[r * 8 + col]);
        }
    }
    (fa, fb, fc)
}

fn bytes_u32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Run one `mma.sync` of the module `m` on a simulated `sm`; D as a
/// row-major 16×8 tile.
fn run(
    m: &PtxModule,
    device: Sm,
    fmt: InputFormat,
    a: &[u32],
    b: &[u32],
    c: &[f32],
) -> Result<Vec<u32>, SimError> {
    run_block(m, device, fmt, a, b, c, 32)
}

fn run_block(
    m: &PtxModule,
    device: Sm,
    fmt: InputFormat,
    a: &[u32],
    b: &[u32],
    c: &[f32],
    threads: u32,
) -> Result<Vec<u32>, SimError> {
    let (fa, fb, fc) = fragments(fmt, a, b, c);
    let fc: Vec<u32> = fc.iter().map(|x| x.to_bits()).collect();
    let prog = Program::parse(&m.ptx)?;
    let mut sim = Sim::new(device);
    let mut put = |v: &[u32]| {
        let p = sim.alloc(v.len() * 4).unwrap();
        sim.write(p, &bytes_u32(v)).unwrap();
        p
    };
    let (da, db, dc) = (put(&fa), put(&fb), put(&fc));
    let dd = put(&[0; 128]);
    sim.launch_program(
        &prog,
        &m.kernel,
        LaunchConfig::linear(1, threads),
        &[
            ArgValue::Ptr(da),
            ArgValue::Ptr(db),
            ArgValue::Ptr(dc),
            ArgValue::Ptr(dd),
        ],
    )?;
    let mut raw = vec![0u8; 512];
    sim.read(dd, &mut raw).unwrap();
    let lanes: Vec<u32> = raw
        .chunks(4)
        .map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]))
        .collect();
    // back to a row-major tile by the same table
    let mut d = vec![0u32; 128];
    for lane in 0..32 {
        let (g, t) = (lane / 4, lane % 4);
        for (i, (r, col)) in [
            (g, 2 * t),
            (g, 2 * t + 1),
            (g + 8, 2 * t),
            (g + 8, 2 * t + 1),
        ]
        .into_iter()
        .enumerate()
        {
            d[r * 8 + col] = lanes[lane * 4 + i];
        }
    }
    Ok(d)
}

/// Operand bits of `fmt` for an f32 value.
fn enc(fmt: InputFormat, x: f32) -> u32 {
    match fmt {
        InputFormat::F16 => u32::from(tensor_core::f32_to_f16_rn(x)),
        InputFormat::Bf16 => u32::from(tensor_core::f32_to_bf16_rn(x)),
        InputFormat::Tf32 => tensor_core::f32_to_tf32_rna(x),
    }
}

/// Random tiles with a wide exponent spread (so truncated alignment and
/// block order matter), plus special values when `specials`.
fn tiles(fmt: InputFormat, seed: u64, specials: bool) -> (Vec<u32>, Vec<u32>, Vec<f32>) {
    let k = if fmt == InputFormat::Tf32 { 8 } else { 16 };
    let mut rng = Rng(seed);
    let span = if fmt == InputFormat::F16 { 6 } else { 20 };
    let val = |rng: &mut Rng| {
        let e = rng.below(2 * span + 1) as i32 - span as i32;
        let sign = if rng.chance(50) { -1.0 } else { 1.0 };
        sign * (1.0 + rng.below(1 << 20) as f32 / (1u32 << 20) as f32) * 2f32.powi(e)
    };
    let mut a: Vec<u32> = (0..16 * k).map(|_| enc(fmt, val(&mut rng))).collect();
    let mut b: Vec<u32> = (0..k * 8).map(|_| enc(fmt, val(&mut rng))).collect();
    let mut c: Vec<f32> = (0..128).map(|_| val(&mut rng)).collect();
    if specials {
        let (inf, nan, sub) = match fmt {
            InputFormat::F16 => (0x7C00, 0x7E00, 0x0003),
            InputFormat::Bf16 => (0x7F80, 0x7FC0, 0x0005),
            InputFormat::Tf32 => (0x7F80_0000, 0x7FC0_0000, 0x0000_6000),
        };
        a[0] = inf; // row 0: +inf products
        a[k + 1] = nan; // row 1: NaN
        a[2 * k] = sub; // row 2: subnormal operands
        b[1] = sub;
        b[8 + 2] = inf
            | if fmt == InputFormat::Tf32 {
                0x8000_0000
            } else {
                0x8000
            };
        c[3 * 8] = f32::INFINITY;
        c[4 * 8 + 1] = f32::NAN;
        c[5 * 8 + 2] = f32::from_bits(1); // f32 subnormal accumulator
        c[6 * 8 + 3] = -0.0;
    }
    (a, b, c)
}

fn check<T: MmaInput>() {
    let fmt = T::FORMAT;
    let k = T::K as usize;
    let m = mma_kernel::<T>(Sm::Sm80);
    let mut differ = false;
    for seed in 0..6 {
        let (a, b, c) = tiles(fmt, 0x31 + seed, seed % 2 == 1);
        let mut per_sm = vec![];
        for sm in [Sm::Sm80, Sm::Sm89, Sm::Sm90, Sm::Sm100] {
            let got = run(&m, sm, fmt, &a, &b, &c).unwrap_or_else(|e| panic!("{fmt} {sm}: {e}"));
            let want: Vec<u32> = tensor_core::mma(sm, fmt, (16, 8, k), &a, &b, &c)
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect();
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g, w, "{fmt} on {sm}, seed {seed}, D[{}][{}]", i / 8, i % 8);
            }
            per_sm.push(got);
        }
        differ |= per_sm[0] != per_sm[2];
    }
    // the A100 and H100 models give different bits on these inputs, so the
    // device's SM (not the module's sm_80 target) chose each result
    assert!(differ, "{fmt}: sm_80 and sm_90 agreed on every input");
}

#[test]
fn bf16_matches_the_host_model_per_sm() {
    check::<Bf16x2>();
}

#[test]
fn f16_matches_the_host_model_per_sm() {
    check::<F16x2>();
}

#[test]
fn tf32_matches_the_host_model_per_sm() {
    check::<Tf32>();
}

#[test]
fn partial_warp_is_a_finding() {
    let m = mma_kernel::<Bf16x2>(Sm::Sm80);
    let (a, b, c) = tiles(InputFormat::Bf16, 1, false);
    let e = run_block(&m, Sm::Sm90, InputFormat::Bf16, &a, &b, &c, 16).unwrap_err();
    assert!(e.to_string().contains("all 32 lanes"), "{e}");
}

#[test]
fn divergent_mma_is_a_finding() {
    // lanes 0..15 skip the mma: the others wait for them there
    let mut b = KernelBuilder::new("mma_div", Sm::Sm80);
    let p = b.params::<MmaArgs>();
    let lane = b.tid_x();
    let l4 = b.shl(lane, 2u32);
    let dp = b.offset(p.d, l4);
    let h = b.cvt_to_bf16x2(1.0f32, 1.0f32);
    let c = b.frag_c_zero();
    let high = b.setp(Cmp::Ge, lane, 16u32);
    let out = b.var(0.0f32);
    b.if_(high, |b| {
        let d = b.mma_sync(FragA { regs: [h; 4] }, FragB { regs: [h; 2] }, c);
        b.set(&out, d.regs[0]);
    });
    let v = b.get(&out);
    b.st_global(dp, 0, v);
    let m = b.finish().unwrap();
    let (a, bb, cc) = tiles(InputFormat::Bf16, 1, false);
    let e = run(&m, Sm::Sm90, InputFormat::Bf16, &a, &bb, &cc).unwrap_err();
    println!("{e}");
    assert!(e.to_string().contains("mma.sync"), "{e}");
}

/// `cvt.rn.{f16x2,bf16x2}.f32`, `cvt.rna.tf32.f32` and the exact way back,
/// on the simulator, against the host conversions of `tensor_core`.
#[test]
fn conversions_match_the_host_model() {
    let mut b = KernelBuilder::new("cvt_half", Sm::Sm80);
    let p = b.params::<MmaArgs>();
    let i = b.tid_x();
    let i2 = b.shl(i, 1u32);
    let i4 = b.shl(i, 2u32);
    let xp = b.offset(p.c, i2);
    let (x, y) = (b.ld_global(xp, 0), b.ld_global(xp, 1));
    let wp = b.offset(p.a, i4);
    let fp = b.offset(p.d, i4);
    let h = b.cvt_to_f16x2(x, y);
    let bf = b.cvt_to_bf16x2(x, y);
    let t = b.cvt_to_tf32(x);
    for (k, w) in [b.packed_bits(h), b.packed_bits(bf), b.packed_bits(t)]
        .into_iter()
        .enumerate()
    {
        b.st_global(wp, k as i32, w);
    }
    let (hl, hh) = b.f16x2_to_f32x2(h);
    let (bl, bh) = b.bf16x2_to_f32x2(bf);
    let _ = (hh, bh);
    let tf = b.tf32_to_f32(t);
    b.st_global(fp, 0, hl);
    b.st_global(fp, 1, bl);
    b.st_global(fp, 2, tf);
    let m = b.finish().unwrap();

    let mut rng = Rng(7);
    let n = 256usize;
    let mut xs: Vec<f32> = (0..2 * n)
        .map(|_| {
            let e = rng.below(300) as i32 - 150;
            rng.scaled(e)
        })
        .collect();
    let specials = [
        f32::INFINITY,
        -f32::INFINITY,
        f32::NAN,
        -0.0,
        65520.0,                     // rounds to f16 ∞
        65519.99,                    // stays finite in f16
        f32::from_bits(1),           // f32 subnormal
        5.960_464_5e-8,              // f16's smallest subnormal
        2.980_232_2e-8,              // half of it: ties to even → 0
        f32::from_bits(0x3F80_1000), // tf32 tie: away from zero
        f32::from_bits(0xBF80_1000),
        f32::from_bits(0x3F80_8000), // bf16 tie: to even
        f32::MAX,
    ];
    xs[..specials.len()].copy_from_slice(&specials);
    let prog = Program::parse(&m.ptx).unwrap();
    let mut sim = Sim::new(Sm::Sm90);
    let xb: Vec<u8> = xs.iter().flat_map(|v| v.to_le_bytes()).collect();
    let dx = sim.alloc(xb.len()).unwrap();
    sim.write(dx, &xb).unwrap();
    let (dw, df) = (sim.alloc(n * 16).unwrap(), sim.alloc(n * 16).unwrap());
    sim.launch_program(
        &prog,
        "cvt_half",
        LaunchConfig::linear(1, n as u32),
        &[
            ArgValue::Ptr(dw),
            ArgValue::Ptr(dw),
            ArgValue::Ptr(dx),
            ArgValue::Ptr(df),
        ],
    )
    .unwrap();
    let read = |sim: &mut Sim, a: u64| {
        let mut raw = vec![0u8; n * 16];
        sim.read(a, &mut raw).unwrap();
        raw.chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect::<Vec<u32>>()
    };
    let (w, f) = (read(&mut sim, dw), read(&mut sim, df));
    for i in 0..n {
        let (x, y) = (xs[2 * i], xs[2 * i + 1]);
        let ctx = format!("x = {x:e} ({:#x}), y = {y:e}", x.to_bits());
        assert_eq!(w[4 * i], tensor_core::cvt_rn_f16x2_f32(x, y), "f16x2 {ctx}");
        assert_eq!(
            w[4 * i + 1],
            tensor_core::cvt_rn_bf16x2_f32(x, y),
            "bf16x2 {ctx}"
        );
        assert_eq!(w[4 * i + 2], tensor_core::f32_to_tf32_rna(x), "tf32 {ctx}");
        // back to f32: exact (NaN payloads aside)
        let lo16 = tensor_core::f32_to_f16_rn(y);
        let want = tensor_core::f16_to_f32(lo16);
        let got = f32::from_bits(f[4 * i]);
        assert!(
            got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan(),
            "f16 back {ctx}"
        );
        let want = f32::from_bits(u32::from(tensor_core::f32_to_bf16_rn(y)) << 16);
        assert_eq!(f[4 * i + 1], want.to_bits(), "bf16 back {ctx}");
        assert_eq!(
            f[4 * i + 2],
            tensor_core::f32_to_tf32_rna(x),
            "tf32 back {ctx}"
        );
    }
}
