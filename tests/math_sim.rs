//! The DSL routines of `ptxsmith::dsl::math` against their host mirror
//! `ptxsmith::math`, and what ptxas makes of them.
//!
//! * On the simulator (sm_80 with a large sample, sm_70 and sm_90 with a
//!   smaller one): a kernel applies `exp`, `log`, `log1p` and
//!   `log_add_exp` elementwise; every output must equal the host function
//!   bit for bit (any NaN for a NaN) on the special values, every power of
//!   two and its neighbours, subnormals, the overflow/underflow thresholds
//!   and their neighbours, `log_add_exp`'s own thresholds, subnormal
//!   results and cancellation region (see `lae_pairs`), and random inputs.
//!   sm_70 runs `log_add_exp`'s variant without `max.NaN`.
//! * With the pinned ptxas: the kernel assembles for every SM, its PTX has
//!   no `.approx`, `ex2`, `lg2`, `.ftz`, `div`, `rcp` or `sqrt`, and the
//!   SASS instruction count of one call of each routine, as the tuning
//!   report measures it (`ptxsmith::report::math_cost`, hence the `report`
//!   feature), is printed per SM (`cargo test --release --features report
//!   --test math_sim -- --nocapture`); `log_add_exp` must stay within 45
//!   (47 on sm_75, without `max.NaN`).

use std::time::Instant;

use ptxsmith::dsl::math as dm;
use ptxsmith::dsl::params::{KernelParams, Ptr};
use ptxsmith::dsl::types::{F32, Reg, U32};
use ptxsmith::dsl::*;
use ptxsmith::math;
use ptxsmith::nvtools::NvTools;
use ptxsmith::runtime::{Context, LaunchConfig};
use ptxsmith::testing::{cuda_for_tests, small_shapes};
use ptxsmith::{Sm, kernel_params};

kernel_params! {
    struct MathArgs => MathRegs {
        x: Ptr<F32>,
        y: Ptr<F32>,
        n: U32,
        exp_out: Ptr<F32>,
        log_out: Ptr<F32>,
        log1p_out: Ptr<F32>,
        lae_out: Ptr<F32>,
    }
}

const BLOCK: u32 = 256;

/// A unary routine of `ptxsmith::dsl::math`.
type Unary = fn(&mut KernelBuilder, Reg<F32>) -> Reg<F32>;

/// The elementwise kernels' shape: `f(b, i)` for this thread's global
/// index `i` when `i < n` (one thread an element, the grid rounded up).
fn each_index_below(
    b: &mut KernelBuilder,
    n: Reg<U32>,
    f: impl FnOnce(&mut KernelBuilder, Reg<U32>),
) {
    let i = b.global_id_x();
    let inside = b.setp(Cmp::Lt, i, n);
    b.if_(inside, |b| f(b, i));
}

/// `exp_out[i] = exp(x[i])`, `log_out[i] = log(x[i])`,
/// `log1p_out[i] = log1p(x[i])`, `lae_out[i] = log_add_exp(x[i], y[i])`
/// for `i < n`.
fn routines_kernel(sm: Sm) -> PtxModule {
    let mut b = KernelBuilder::new("math_routines", sm);
    b.maxntid(BLOCK, 1, 1);
    let p = b.params::<MathArgs>();
    each_index_below(&mut b, p.n, |b, i| {
        let xp = b.offset(p.x, i);
        let x = b.ld_global(xp, 0);
        let yp = b.offset(p.y, i);
        let y = b.ld_global(yp, 0);
        let outs: [(Unary, _); 3] = [
            (dm::exp, p.exp_out),
            (dm::log, p.log_out),
            (dm::log1p, p.log1p_out),
        ];
        for (f, out) in outs {
            let r = f(b, x);
            let op = b.offset(out, i);
            b.st_global(op, 0, r);
        }
        let r = dm::log_add_exp(b, x, y);
        let op = b.offset(p.lae_out, i);
        b.st_global(op, 0, r);
    });
    b.finish().unwrap()
}

// ---------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 32) as u32
    }
    /// Uniform in `[lo, hi)` (roughly).
    fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * (self.next() >> 8) as f32 / (1u32 << 24) as f32
    }
}

/// Bit patterns worth checking one by one: special values, every power of
/// two and its two neighbours (both signs), subnormals, and the thresholds
/// of the routines (exp's overflow, subnormal and underflow edges and its
/// clamps; log1p's −1 and its polynomial/split boundaries near ±1/3) with
/// their 8 neighbours on each side.
fn special_inputs() -> Vec<u32> {
    let mut v = vec![
        0,
        0x8000_0000,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0xffc0_0000,
        0x7f80_0001,
        0x7fff_ffff,
        0xffff_ffff,
        0x7f7f_ffff,
        0xff7f_ffff,
    ];
    for e in 0..=255u32 {
        for s in [0, 0x8000_0000] {
            let p = s | (e << 23);
            v.extend([p.wrapping_sub(1), p, p + 1]);
        }
    }
    // subnormals: the smallest ones, the largest ones, every single-bit one
    for s in [0, 0x8000_0000u32] {
        v.extend((1..=64).map(|b| s | b));
        v.extend((0x007f_ffc0..=0x007f_ffff).map(|b| s | b));
        v.extend((0..23).map(|k| s | (1 << k) | 1));
    }
    for t in [
        88.722_83_f32, // last x with a finite exp
        89.0,
        -87.336_54,  // exp becomes subnormal
        -103.972_08, // exp underflows to 0
        -110.0,
        -1.0, // log1p's pole
        1.0 / 3.0,
        -1.0 / 3.0,
        2.0 / 3.0,
        4.0 / 3.0,
        core::f32::consts::LN_2,
        -core::f32::consts::LN_2 / 2.0,
        core::f32::consts::LN_2 / 2.0,
        1e-8,
        -1e-8,
    ] {
        let b = t.to_bits();
        for d in 0..=8 {
            v.extend([b.wrapping_sub(d), b + d]);
        }
    }
    v
}

/// `(x, y)` pairs for `log_add_exp`'s own edges: `(0, d)` and `(d, 0)` at
/// every threshold of the routine with 8 neighbours on each side (the
/// split `d = −LN2_HI` between its two forms, every change of `k` at
/// `d = −(j + ½)·ln 2`, the clamp `−110`, the last `d` with a non-zero
/// result, the top of the subnormal results), a run of subnormal results,
/// tiny `d`; pairs in the cancellation region (`max < 0`, `y` near 0:
/// `a = b = −ln 2`, `a = b = −x` near it, `max ∈ [−1.5, 0)` with `min` a
/// little below) and pairs whose difference rounds (a tiny `max`, a
/// moderate `min`).
fn lae_pairs(seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut ds = vec![];
    let mut ts = vec![
        math::LAE_SPLIT,
        math::LAE_CLAMP,
        -103.972_08,
        -87.336_54,
        -1e-20,
        -3e-8,
    ];
    ts.extend((0..160).map(|j| -(j as f32 + 0.5) * core::f32::consts::LN_2));
    for t in ts {
        let b = t.to_bits();
        ds.extend((0..=8).flat_map(|k| [f32::from_bits(b - k), f32::from_bits(b + k)]));
    }
    let mut r = Lcg(seed ^ 0x5eed);
    ds.extend((0..2000).map(|_| r.uniform(-104.0, -87.0)));
    let mut xs = vec![];
    let mut ys = vec![];
    for &d in &ds {
        xs.extend([0.0, d, d, -0.0]);
        ys.extend([d, 0.0, -0.0, -d]);
    }
    let ln2 = core::f32::consts::LN_2.to_bits();
    for k in 0..=16 {
        let x = -f32::from_bits(ln2 - 8 + k);
        xs.push(x);
        ys.push(x);
    }
    for _ in 0..20_000 {
        let mx = r.uniform(-1.5, 0.0);
        xs.push(mx);
        ys.push(mx - r.uniform(0.0, 3.0));
        let tiny = r.uniform(-1e-6, 1e-6);
        xs.push(tiny);
        ys.push(r.uniform(-20.0, -1.0));
    }
    (xs, ys)
}

/// `(x, y)` pairs: the specials (with `y` cycling through a small set),
/// every pair of a small set of values (log_add_exp's NaN/∞ rules, equal
/// arguments, signed zeros), then `random` random inputs: a quarter
/// uniform bit patterns, the rest uniform in the ranges where the
/// functions do something (exp's whole finite range, log1p near −1 and 0).
fn inputs(random: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let small = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.5,
        88.7,
        -103.9,
        1e-30,
        -1e30,
        f32::MAX,
        f32::MIN,
        f32::from_bits(1),
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for (i, b) in special_inputs().into_iter().enumerate() {
        xs.push(f32::from_bits(b));
        ys.push(small[i % small.len()]);
    }
    for &a in &small {
        for &c in &small {
            xs.push(a);
            ys.push(c);
        }
    }
    let (lx, ly) = lae_pairs(seed);
    xs.extend(lx);
    ys.extend(ly);
    let mut r = Lcg(seed);
    for k in 0..random {
        let x = match k % 8 {
            0 | 1 => f32::from_bits(r.next()),
            2 | 3 => r.uniform(-110.0, 90.0),
            4 => r.uniform(-1.0, 1.0),
            5 => r.uniform(-1e-3, 1e-3),
            6 => r.uniform(-1.0, -0.99),
            _ => r.uniform(0.0, 4.0),
        };
        let y = match k % 4 {
            0 => f32::from_bits(r.next()),
            1 => x + r.uniform(-30.0, 30.0),
            2 => x + r.uniform(-1e-3, 1e-3),
            _ => r.uniform(-100.0, 100.0),
        };
        xs.push(x);
        ys.push(y);
    }
    (xs, ys)
}

// ---------------------------------------------------------------------------
// Simulator
// ---------------------------------------------------------------------------

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Run the kernel on `ctx` (the simulator or a GPU) and compare every
/// output with the host mirror.
fn check_on(ctx: &Context, random: usize, seed: u64) {
    let sm = ctx.sm();
    let (xs, ys) = inputs(random, seed);
    let n = xs.len();
    let t0 = Instant::now();
    let module = routines_kernel(sm);
    let st = ctx.default_stream();
    let xb = st.upload(&xs).unwrap();
    let yb = st.upload(&ys).unwrap();
    let mut outs: Vec<_> = (0..4).map(|_| ctx.alloc::<f32>(n).unwrap()).collect();
    let [oe, ol, o1, oa] = &mut outs[..] else {
        unreachable!()
    };
    let args = MathArgs {
        x: st.arg("x", &xb).unwrap(),
        y: st.arg("y", &yb).unwrap(),
        n: n as u32,
        exp_out: st.arg_mut("exp_out", oe).unwrap(),
        log_out: st.arg_mut("log_out", ol).unwrap(),
        log1p_out: st.arg_mut("log1p_out", o1).unwrap(),
        lae_out: st.arg_mut("lae_out", oa).unwrap(),
    };
    let grid = (n as u32).div_ceil(BLOCK);
    st.launch(&module, LaunchConfig::linear(grid, BLOCK), &args.args())
        .unwrap();
    let got: Vec<Vec<f32>> = outs.iter().map(|o| st.to_vec(o).unwrap()).collect();
    let host: [(&str, &dyn Fn(usize) -> f32); 4] = [
        ("exp", &|i| math::exp_f32(xs[i])),
        ("log", &|i| math::log_f32(xs[i])),
        ("log1p", &|i| math::log1p_f32(xs[i])),
        ("log_add_exp", &|i| math::log_add_exp(xs[i], ys[i])),
    ];
    for ((name, want), got) in host.iter().zip(&got) {
        for (i, g) in got.iter().enumerate() {
            let w = want(i);
            assert!(
                same(*g, w),
                "{sm} {name}: x = {:e} ({:#010x}), y = {:e} ({:#010x}): simulator {:e} \
                 ({:#010x}), host {:e} ({:#010x})",
                xs[i],
                xs[i].to_bits(),
                ys[i],
                ys[i].to_bits(),
                g,
                g.to_bits(),
                w,
                w.to_bits()
            );
        }
    }
    eprintln!(
        "{sm} ({:?}): {n} inputs × 4 routines bit-identical to the host mirror ({:.1} s)",
        ctx.kind(),
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn sim_sm80_matches_host_bit_for_bit() {
    check_on(&Context::sim(Sm::Sm80), 1 << 21, 1);
}

#[test]
fn sim_sm70_matches_host_bit_for_bit() {
    check_on(&Context::sim(Sm::Sm70), 1 << 17, 2);
}

#[test]
fn sim_sm90_matches_host_bit_for_bit() {
    check_on(&Context::sim(Sm::Sm90), 1 << 17, 3);
}

kernel_params! {
    struct UnaryArgs => UnaryRegs {
        x: Ptr<F32>,
        n: U32,
        out: Ptr<F32>,
    }
}

/// `dm::exp_bounded` (exp without its upper clamp) is `exp_f32` bit for
/// bit wherever its contract holds: `x ≤ 89` and NaN.
#[test]
fn sim_exp_bounded_matches_host_up_to_the_clamp() {
    let (all, _) = inputs(1 << 16, 4);
    let xs: Vec<f32> = all
        .into_iter()
        .filter(|x| x.is_nan() || *x <= math::EXP_CLAMP_HI)
        .collect();
    assert!(xs.contains(&math::EXP_CLAMP_HI) && xs.iter().any(|x| x.is_nan()));
    for sm in [Sm::Sm70, Sm::Sm90] {
        let mut b = KernelBuilder::new("exp_bounded", sm);
        b.maxntid(BLOCK, 1, 1);
        let p = b.params::<UnaryArgs>();
        each_index_below(&mut b, p.n, |b, i| {
            let xp = b.offset(p.x, i);
            let x = b.ld_global(xp, 0);
            let r = dm::exp_bounded(b, x);
            let op = b.offset(p.out, i);
            b.st_global(op, 0, r);
        });
        let module = b.finish().unwrap();
        let ctx = Context::sim(sm);
        let st = ctx.default_stream();
        let xb = st.upload(&xs).unwrap();
        let mut out = ctx.alloc::<f32>(xs.len()).unwrap();
        let args = UnaryArgs {
            x: st.arg("x", &xb).unwrap(),
            n: xs.len() as u32,
            out: st.arg_mut("out", &mut out).unwrap(),
        };
        let grid = (xs.len() as u32).div_ceil(BLOCK);
        st.launch(&module, LaunchConfig::linear(grid, BLOCK), &args.args())
            .unwrap();
        for (x, g) in xs.iter().zip(st.to_vec(&out).unwrap()) {
            let w = math::exp_f32(*x);
            assert!(
                same(g, w),
                "{sm}: exp_bounded({x:e}) = {g:e}, exp_f32 {w:e}"
            );
        }
    }
}

/// The same check on a real GPU (its own SM's variant), with a larger
/// sample; without one `cuda_for_tests` prints SKIP and the test passes.
/// On the driver emulator (kernels on the simulator) the sample is the
/// simulator tests' size.
#[test]
fn gpu_matches_host_bit_for_bit() {
    let Some(ctx) = cuda_for_tests() else { return };
    let random = if small_shapes(&ctx) { 1 << 17 } else { 1 << 24 };
    check_on(&ctx, random, 4);
}

// ---------------------------------------------------------------------------
// ptxas
// ---------------------------------------------------------------------------

/// Mnemonics and modifiers the routines must never emit.
const FORBIDDEN: [&str; 7] = [".approx", "ex2", "lg2", ".ftz", "div", "rcp", "sqrt"];

/// The PTX instruction lines (no comments, directives or labels).
fn instruction_lines(ptx: &str) -> impl Iterator<Item = &str> {
    ptx.lines().map(str::trim).filter(|l| {
        !l.is_empty()
            && !l.starts_with("//")
            && !l.starts_with('.')
            && !l.starts_with('{')
            && !l.starts_with('}')
            && !l.ends_with(':')
    })
}

#[test]
fn ptx_uses_only_exact_operations() {
    for sm in Sm::ALL {
        let m = routines_kernel(sm);
        let body: Vec<&str> = instruction_lines(&m.ptx).collect();
        assert!(body.len() > 100, "{sm}: {} instructions", body.len());
        for l in &body {
            for bad in FORBIDDEN {
                assert!(!l.contains(bad), "{sm}: `{l}` contains {bad}");
            }
            if l.contains(".f32")
                && ["add", "sub", "mul", "fma"]
                    .iter()
                    .any(|o| l.starts_with(o))
            {
                assert!(l.contains(".rn."), "{sm}: float op without .rn: `{l}`");
            }
        }
    }
}

#[test]
fn routines_assemble_for_every_sm() {
    let Some(tools) = NvTools::for_tests() else {
        eprintln!("SKIP: no NVIDIA tools");
        return;
    };
    for sm in Sm::ALL {
        let m = routines_kernel(sm);
        let asm = tools
            .assemble(&m.ptx, sm)
            .unwrap_or_else(|e| panic!("{sm}: ptxas rejected the routines: {e}\n{}", m.ptx));
        let k = asm.function("math_routines").unwrap();
        assert!(!k.spills(), "{sm}: {k:?}");
    }
}

/// The SASS instructions per call of each routine, measured by the tuning
/// report's code (`ptxsmith::report::math_cost`, which says how), printed
/// per SM; `log_add_exp` must stay within issue 19's budget.
#[cfg(feature = "report")]
#[test]
fn sass_instructions_per_call() {
    use ptxsmith::Feature;
    use ptxsmith::report::math_cost::{Routine, per_call};
    let Some(tools) = NvTools::for_tests() else {
        eprintln!("SKIP: no NVIDIA tools");
        return;
    };
    eprintln!("SASS instructions per call (kernel with one call minus the same kernel without):");
    eprintln!(
        "{:<8} {:>5} {:>5} {:>6} {:>12}",
        "target", "exp", "log", "log1p", "log_add_exp"
    );
    let mut measured = 0;
    for sm in Sm::ALL {
        let Some(counts) = per_call(&tools, sm).unwrap() else {
            assert!(!NvTools::can_disassemble(sm), "{sm}: no figures");
            eprintln!("{:<8} (nvdisasm cannot read {sm} cubins)", sm.name());
            continue;
        };
        measured += 1;
        let lae = Routine::ALL
            .into_iter()
            .zip(counts)
            .find_map(|(r, c)| (r == Routine::LogAddExp).then_some(c))
            .unwrap();
        eprintln!(
            "{:<8} {:>5} {:>5} {:>6} {:>12}",
            sm.name(),
            counts[0],
            counts[1],
            counts[2],
            counts[3]
        );
        for c in counts {
            assert!((10..400).contains(&c), "{sm}: {counts:?}");
        }
        // issue 19's budget for the one-routine log_add_exp: 45 on sm_90
        // (and every target with max.NaN), 47 without it (sm_75)
        let budget = if sm.supports(Feature::MinMaxNaN) {
            45
        } else {
            47
        };
        assert!(lae <= budget, "{sm}: log_add_exp {lae}");
    }
    assert_eq!(measured, Sm::ALL.len() - 1, "every target but sm_70");
}
