//! Issue 31: the tensor-core block-ELL kernels on the simulator equal the
//! host model bit for bit, per SM (the emulated device's SM picks the
//! tensor-core model), for every precision, `B` ∈ {16, 32, 64}, ragged
//! `N`, empty slots (whose values hold NaN and must never be read into a
//! result) and inputs with ±∞, NaN and values at the format's limits.

mod common;
#[path = "common/block_ell_tc.rs"]
mod tc_common;

use common::Rng;
use ptxsmith::kernels::block_ell_tc::{
    self as tc, DeviceTopology, Dims, TcOutput, TcPrecision, host, to_bf16,
};
use ptxsmith::runtime::Context;
use ptxsmith::testing::{self, cuda_for_tests, or_skip};
use ptxsmith::{Error, Feature, Sm};
use tc_common::{Encode, Inputs, assert_bits, forward_case};

/// Random values with a wide exponent spread (truncated alignment and the
/// block width matter), a few specials when `specials`.
fn values(rng: &mut Rng, len: usize, prec: TcPrecision, specials: bool) -> Vec<f32> {
    let span = if prec == TcPrecision::F16 { 6 } else { 18 };
    let mut v = tc_common::values(rng, len, span, 20);
    if specials {
        let extremes = match prec {
            TcPrecision::F16 => (65504.0, 2f32.powi(-24)),
            _ => (f32::from_bits(0x7F7F_0000), f32::from_bits(0x0001_0000)),
        };
        tc_common::specials(&mut v, Some(extremes));
    }
    v
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// bf16 output bits against the host model: the f32 results `want`, each
/// rounded once ([`host::output`]).
fn assert_bf16(what: &str, got: &[u16], want: &[f32]) {
    let want = host::output::<u16>(TcOutput::Bf16, want).unwrap();
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (e, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "{what}: element {e}: {g:#06x} != {w:#06x}");
    }
}

/// Run the three kernels of one case on `ctx` and compare with the host
/// model of its device's SM.
fn case<T: Encode>(
    ctx: &Context,
    prec: TcPrecision,
    b: usize,
    n: usize,
    seed: u64,
    specials: bool,
) {
    let sm = ctx.sm();
    let (r, c, k) = (2, 3, 3);
    let dims = Dims::new(r, c, k, b).unwrap();
    // row 0: blocks 2, (empty), 0; row 1: (empty), 1, (empty)
    let col = vec![2, -1, 0, -1, 1, -1];
    let mut rng = Rng(seed);
    let vals = values(&mut rng, dims.values_len(), prec, specials);
    let xf = values(&mut rng, n * dims.in_features(), prec, specials);
    let gyf = values(&mut rng, n * dims.out_features(), prec, specials);
    let bias = Some(values(
        &mut rng,
        dims.out_features(),
        TcPrecision::Tf32,
        false,
    ));
    let inputs = Inputs {
        values: vals,
        x: xf,
        bias,
    };
    // (empty slots hold NaN: never read into a result)
    let f = forward_case::<T>(ctx, prec, dims, col, n, inputs);
    let what = format!("{prec} B={b} N={n} on {sm}, seed {seed}");
    f.check_f32(true, &format!("forward {what}"));
    // bf16 output: the same results, each rounded once at the store
    f.check_bf16(true, &format!("forward bf16 out {what}"));

    let (st, topo, col) = (&f.st, &f.topo, &f.col);
    let gy = T::encode(prec, &gyf);
    let dgy = st.upload(&gy).unwrap();
    let mut gx = ctx.alloc::<f32>(n * dims.in_features()).unwrap();
    tc::grad_input_dev(st, prec, TcOutput::F32, topo, n, &dgy, &f.dv, &mut gx).unwrap();
    let want = host::grad_input(sm, prec, &dims, n, &gy, &f.v, col).unwrap();
    assert_bits(
        &format!("grad_input {what}"),
        &st.to_vec(&gx).unwrap(),
        &want,
    );
    let mut gx16 = ctx.alloc::<u16>(n * dims.in_features()).unwrap();
    tc::grad_input_dev(st, prec, TcOutput::Bf16, topo, n, &dgy, &f.dv, &mut gx16).unwrap();
    assert_bf16(
        &format!("grad_input bf16 out {what}"),
        &st.to_vec(&gx16).unwrap(),
        &want,
    );

    let mut gv = ctx.alloc::<f32>(dims.values_len()).unwrap();
    tc::grad_values_dev(st, prec, topo, n, &f.dx, &dgy, &mut gv).unwrap();
    let want = host::grad_values(sm, prec, &dims, n, &f.x, &gy, col).unwrap();
    assert_bits(
        &format!("grad_values {what}"),
        &st.to_vec(&gv).unwrap(),
        &want,
    );
}

fn run_on(ctx: &Context, prec: TcPrecision, b: usize, n: usize, seed: u64, specials: bool) {
    match prec {
        TcPrecision::Tf32 => case::<f32>(ctx, prec, b, n, seed, specials),
        _ => case::<u16>(ctx, prec, b, n, seed, specials),
    }
}

fn run(sm: Sm, prec: TcPrecision, b: usize, n: usize, seed: u64, specials: bool) {
    run_on(&Context::sim(sm), prec, b, n, seed, specials);
}

const SMS: [Sm; 4] = [Sm::Sm80, Sm::Sm89, Sm::Sm90, Sm::Sm100];

#[test]
fn bf16_matches_the_host_model_per_sm() {
    for (i, sm) in SMS.into_iter().enumerate() {
        run(sm, TcPrecision::Bf16, 16, 11, 10 + i as u64, i % 2 == 1);
    }
}

#[test]
fn f16_matches_the_host_model_per_sm() {
    for (i, sm) in SMS.into_iter().enumerate() {
        run(sm, TcPrecision::F16, 16, 13, 20 + i as u64, i % 2 == 0);
    }
}

#[test]
fn tf32_matches_the_host_model_per_sm() {
    for (i, sm) in SMS.into_iter().enumerate() {
        run(sm, TcPrecision::Tf32, 16, 9, 30 + i as u64, i % 2 == 1);
    }
}

#[test]
fn block_sizes_32_and_64() {
    run(Sm::Sm80, TcPrecision::Bf16, 32, 7, 41, true);
    run(Sm::Sm90, TcPrecision::Tf32, 32, 5, 42, false);
    run(Sm::Sm90, TcPrecision::F16, 64, 3, 43, true);
}

#[test]
fn grad_values_tree_and_padding() {
    // two N-chunks, the last ragged; N = 260 leaves a last MMA chunk with
    // 4 real rows (an all-zero block on width-8 SMs)
    run(Sm::Sm80, TcPrecision::Bf16, 16, 260, 51, false);
    run(Sm::Sm90, TcPrecision::Tf32, 16, 263, 52, true);
}

/// The model really depends on the SM: the same call gives other bits on
/// sm_80 (A100: blocks of 8, one extra alignment bit) than on sm_90 (H100:
/// blocks of 16, two bits).
#[test]
fn the_sm_changes_the_bits() {
    let dims = Dims::new(1, 1, 1, 16).unwrap();
    let mut rng = Rng(61);
    let n = 8;
    for prec in TcPrecision::ALL {
        let x = values(&mut rng, n * 16, prec, false);
        let v = values(&mut rng, 256, prec, false);
        let ys: Vec<Vec<u32>> = [Sm::Sm80, Sm::Sm90]
            .into_iter()
            .map(|sm| match prec {
                TcPrecision::Tf32 => host::forward(sm, prec, &dims, n, &x, &v, &[0], None),
                _ => {
                    let (x, v) = (u16::encode(prec, &x), u16::encode(prec, &v));
                    host::forward(sm, prec, &dims, n, &x, &v, &[0], None)
                }
            })
            .map(|y| bits(&y.unwrap()))
            .collect();
        assert_ne!(ys[0], ys[1], "{prec}: sm_80 and sm_90 agree");
    }
}

#[test]
fn refused_below_sm_80_and_for_b_8() {
    for sm in [Sm::Sm70, Sm::Sm75] {
        let dims = Dims::new(1, 1, 1, 16).unwrap();
        let st = Context::sim(sm).default_stream();
        let topo = DeviceTopology::upload(&st, &dims, &[0]).unwrap();
        let x = st.upload(&[0u16; 16]).unwrap();
        let v = st.upload(&[0u16; 256]).unwrap();
        let mut y = st.context().alloc::<f32>(16).unwrap();
        let e = tc::forward_dev(
            &st,
            TcPrecision::Bf16,
            TcOutput::F32,
            &topo,
            1,
            &x,
            &v,
            None,
            &mut y,
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                Error::UnsupportedFeature {
                    feature: Feature::MmaSync,
                    sm: at,
                    ..
                } if at == sm
            ),
            "{e:?}"
        );
        let h = host::forward::<u16>(
            sm,
            TcPrecision::Bf16,
            &dims,
            1,
            &[0; 16],
            &[0; 256],
            &[0],
            None,
        );
        assert!(matches!(h, Err(Error::UnsupportedFeature { .. })), "{h:?}");
        assert!(tc::ptx::variants(sm).unwrap().is_empty());
    }
    let dims = Dims::new(1, 1, 1, 8).unwrap();
    let e = host::forward::<u16>(
        Sm::Sm90,
        TcPrecision::Bf16,
        &dims,
        1,
        &[0; 8],
        &[0; 64],
        &[0],
        None,
    )
    .unwrap_err();
    assert!(e.to_string().contains("B = 8"), "{e}");
}

#[test]
fn nothing_written_on_error() {
    let dims = Dims::new(1, 1, 1, 16).unwrap();
    let st = Context::sim(Sm::Sm80).default_stream();
    let topo = DeviceTopology::upload(&st, &dims, &[0]).unwrap();
    let x = st.upload(&[0x3F80u16; 16]).unwrap();
    let v = st.upload(&[0x3F80u16; 255]).unwrap(); // one short
    let mut y = st.upload(&[7.0f32; 16]).unwrap();
    let e = tc::forward_dev(
        &st,
        TcPrecision::Bf16,
        TcOutput::F32,
        &topo,
        1,
        &x,
        &v,
        None,
        &mut y,
    )
    .unwrap_err();
    assert!(e.to_string().contains("values has 255 elements"), "{e}");
    // f32 storage for a bf16 request is refused
    let xf = st.upload(&[1.0f32; 16]).unwrap();
    let vf = st.upload(&[1.0f32; 256]).unwrap();
    let e = tc::forward_dev(
        &st,
        TcPrecision::Bf16,
        TcOutput::F32,
        &topo,
        1,
        &xf,
        &vf,
        None,
        &mut y,
    )
    .unwrap_err();
    assert!(e.to_string().contains("not stored as f32"), "{e}");
    assert_eq!(st.to_vec(&y).unwrap(), [7.0; 16]);
    // an output buffer that is not the output type's storage
    let v = st.upload(&[0x3F80u16; 256]).unwrap();
    let e = tc::forward_dev(
        &st,
        TcPrecision::Bf16,
        TcOutput::Bf16,
        &topo,
        1,
        &x,
        &v,
        None,
        &mut y,
    )
    .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert!(
        e.to_string().contains("bf16 output is not stored as f32"),
        "{e}"
    );
    let e = tc::grad_input_dev(
        &st,
        TcPrecision::Bf16,
        TcOutput::Bf16,
        &topo,
        1,
        &x,
        &v,
        &mut y,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("bf16 output is not stored as f32"),
        "{e}"
    );
    assert_eq!(st.to_vec(&y).unwrap(), [7.0; 16]);
    let mut y16 = st.upload(&[7u16; 16]).unwrap();
    let e = tc::forward_dev(
        &st,
        TcPrecision::Bf16,
        TcOutput::F32,
        &topo,
        1,
        &x,
        &v,
        None,
        &mut y16,
    )
    .unwrap_err();
    assert!(
        e.to_string().contains("f32 output is not stored as u16"),
        "{e}"
    );
    assert_eq!(st.to_vec(&y16).unwrap(), [7; 16]);
}

/// bf16 output rounds each f32 result once, to nearest even, at the
/// store. Row 0 multiplies zeros, so `y = +0 + bias` is the bias exactly
/// and the bias picks the f32 results: ties to even (down and up), just
/// above a tie, `f32::MAX` and a tie at the top rounding to `∞`, the
/// largest bf16 kept, infinities, NaN with payloads (`0x7FFF`), and
/// subnormal ties; the other rows are `x + bias` (`W = I`, ragged `N`).
/// Grad-input (`W = I`: `gx = gy`) gets the same values through `gy` on
/// tf32 and bf16 inputs; column block 1 has no slot (`+0`), and the empty
/// slot's values are NaN. Every SM with a tensor-core model.
#[test]
fn bf16_output_rounds_once_to_nearest_even() {
    let special: [(u32, u16); 16] = [
        (0x3F80_8000, 0x3F80), // 1 + 2⁻⁸: tie, to even (down)
        (0x3F81_8000, 0x3F82), // 1 + 3·2⁻⁸: tie, to even (up)
        (0x3F80_8008, 0x3F81), // just above a tie
        (0xBF80_8000, 0xBF80), // negative tie
        (0x7F7F_FFFF, 0x7F80), // f32::MAX overflows to ∞
        (0x7F7F_8000, 0x7F80), // a tie above the largest bf16: ∞
        (0x7F7F_7FFF, 0x7F7F), // the largest bf16 stays
        (0xFF7F_FFFF, 0xFF80), // −∞
        (0x7F80_0000, 0x7F80),
        (0xFF80_0000, 0xFF80),
        (0x7FC1_2345, 0x7FFF), // NaN payloads: 0x7FFF
        (0xFFA0_0001, 0x7FFF),
        (0x0000_8000, 0x0000), // subnormal tie, to even (down)
        (0x0001_8000, 0x0002), // subnormal tie, to even (up)
        (0x8000_0001, 0x8000), // −tiny rounds to −0
        (0x0000_C000, 0x0001),
    ];
    let (b, n) = (16, 19);
    let dims = Dims::new(1, 2, 2, b).unwrap();
    let col = [0, -1];
    let mut rng = Rng(111);
    let mut w = vec![f32::NAN; dims.values_len()];
    for i in 0..b {
        for j in 0..b {
            w[i * b + j] = if i == j { 1.0 } else { 0.0 };
        }
    }
    let bias: Vec<f32> = special.iter().map(|&(f, _)| f32::from_bits(f)).collect();
    let mut xf = values(&mut rng, n * dims.in_features(), TcPrecision::Bf16, false);
    xf[..dims.in_features()].fill(0.0);
    let mut gyf = values(&mut rng, n * b, TcPrecision::Bf16, false);
    // gy row 0: the finite specials as tf32 holds them (10 fraction
    // bits); zeros for ±∞ and NaN, which `0 ×` would spread to the row
    for (e, &(f, _)) in special.iter().enumerate() {
        let f = f & 0xFFFF_E000;
        gyf[e] = if f & 0x7FFF_FFFF >= 0x7F80_0000 {
            0.0
        } else {
            f32::from_bits(f)
        };
    }
    for sm in SMS {
        let st = Context::sim(sm).default_stream();
        let topo = DeviceTopology::upload(&st, &dims, &col).unwrap();
        let dbias = st.upload(&bias).unwrap();
        let mut y16 = st.upload(&vec![0x5555u16; n * b]).unwrap();
        let mut gx16 = st.upload(&vec![0x5555u16; n * 2 * b]).unwrap();
        macro_rules! both {
            ($prec:expr, $x:expr, $w:expr, $gy:expr) => {{
                let prec = $prec;
                let (dx, dw, dgy) = (
                    st.upload(&$x).unwrap(),
                    st.upload(&$w).unwrap(),
                    st.upload(&$gy).unwrap(),
                );
                let bd = Some(&dbias as &dyn ptxsmith::runtime::buffer::AsDevice<f32>);
                tc::forward_dev(&st, prec, TcOutput::Bf16, &topo, n, &dx, &dw, bd, &mut y16)
                    .unwrap();
                let y = st.to_vec(&y16).unwrap();
                let got0: Vec<u16> = y[..b].to_vec();
                let want0: Vec<u16> = special.iter().map(|s| s.1).collect();
                assert_eq!(got0, want0, "row 0 {prec} on {sm}");
                let h = host::forward(sm, prec, &dims, n, &$x, &$w, &col, Some(&bias)).unwrap();
                assert_bf16(&format!("forward {prec} on {sm}"), &y, &h);
                tc::grad_input_dev(&st, prec, TcOutput::Bf16, &topo, n, &dgy, &dw, &mut gx16)
                    .unwrap();
                let gx = st.to_vec(&gx16).unwrap();
                let h = host::grad_input(sm, prec, &dims, n, &$gy, &$w, &col).unwrap();
                assert_bf16(&format!("grad_input {prec} on {sm}"), &gx, &h);
                for row in gx.chunks(2 * b) {
                    assert!(
                        row[b..].iter().all(|v| *v == 0),
                        "unused column {prec} on {sm}"
                    );
                }
                gx
            }};
        }
        let gx = both!(TcPrecision::Tf32, xf, w, gyf);
        // tf32 keeps 10 fraction bits: row 0's ties reach the rounding
        assert_eq!(
            &gx[..6],
            &[0x3F80, 0x3F82, 0x3F80, 0xBF80, 0x7F80, 0x7F80],
            "grad_input row 0 on {sm}"
        );
        both!(TcPrecision::Bf16, to_bf16(&xf), to_bf16(&w), to_bf16(&gyf));
    }
}

/// The padded rows of grad-values are real `+0 × +0` pairs of the model:
/// on sm_80 (blocks of 8) a last MMA chunk with 4 real rows ends in a
/// block of padding only, which turns a `−0.0` accumulator into `+0.0`.
/// Here every block of 8 rows holds one product `−2⁻¹⁵¹` (truncated to
/// `−0.0`) and zeros: `N = 256` gives `−0.0`, `N = 260` gives `+0.0`
/// (`−0 + +0`), and the kernel agrees with the model both times.
#[test]
fn grad_values_padding_turns_negative_zero_positive() {
    let dims = Dims::new(1, 1, 1, 16).unwrap();
    let prec = TcPrecision::Bf16;
    let st = Context::sim(Sm::Sm80).default_stream();
    let topo = DeviceTopology::upload(&st, &dims, &[0]).unwrap();
    for (n, want) in [(256usize, 0x8000_0000u32), (260, 0)] {
        let row = |v: f32| -> Vec<f32> {
            (0..n * 16)
                .map(|e| if (e / 16) % 8 == 0 { v } else { 0.0 })
                .collect()
        };
        let gy = to_bf16(&row(-(2f32.powi(-75))));
        let x = to_bf16(&row(2f32.powi(-76)));
        let h = host::grad_values(Sm::Sm80, prec, &dims, n, &x, &gy, &[0]).unwrap();
        assert!(
            h.iter().all(|v| v.to_bits() == want),
            "N = {n}: {:#x}",
            h[0].to_bits()
        );
        let (dx, dgy) = (st.upload(&x).unwrap(), st.upload(&gy).unwrap());
        let mut gv = st.context().alloc::<f32>(256).unwrap();
        tc::grad_values_dev(&st, prec, &topo, n, &dx, &dgy, &mut gv).unwrap();
        assert_eq!(bits(&st.to_vec(&gv).unwrap()), bits(&h), "N = {n}");
    }
}

/// Each kernel × precision (`B` = 16; the block size changes only the
/// unrolled chunk count and the tile) is assembled by the pinned ptxas
/// with `HMMA`, `LDGSTS` and `LDSM` in its SASS (no `LDSM` for tf32
/// grad-values) on the first target of each tensor-core model (sm_80 A100,
/// sm_89 Ada, sm_90 H100, sm_100 B200); `tests/kernels_ptxas.rs` assembles
/// every variant on every target (no spills, no local memory, minimal
/// `.version`). SKIPs without the tools.
#[test]
fn hmma_in_the_sass() {
    for sm in [Sm::Sm80, Sm::Sm89, Sm::Sm90, Sm::Sm100] {
        let all = tc::ptx::variants(sm).unwrap();
        assert_eq!(all.len(), 27);
        for m in all.iter().filter(|m| m.kernel.ends_with("_b16")) {
            assert!(m.ptx.contains("mma.sync.aligned"), "{}", m.kernel);
            // the staged kernels: cp.async copies (LDGSTS) and ldmatrix
            // fragments (LDSM); one assembly per module
            let sass = match or_skip(testing::sass(m)) {
                Ok(Some(s)) => s,
                Ok(None) => return,
                Err(e) => panic!("{} on {sm}: {e}", m.kernel),
            };
            // every kernel is staged; tf32 grad-values loads both operands
            // with ld.shared (ldmatrix cannot transpose 32-bit elements)
            let ops: &[&str] = if m.kernel.starts_with("block_ell_tc_grad_values_tf32") {
                &["HMMA", "LDGSTS"]
            } else {
                &["HMMA", "LDSM", "LDGSTS"]
            };
            for op in ops {
                assert!(sass.count(op) > 0, "{} on {sm}: no {op}", m.kernel);
            }
        }
    }
}

/// The device (a GPU, or the driver emulator on CI) against the host model
/// of its SM, every precision and block size. SKIP without a device, and
/// on a device below sm_80 (no variants there).
#[test]
fn gpu_equals_host_when_present() {
    let Some(ctx) = cuda_for_tests() else {
        return;
    };
    if !ctx.sm().supports(Feature::MmaSync) {
        println!(
            "SKIP: {} has no tensor-core mma.sync for bf16/f16/tf32",
            ctx.sm()
        );
        return;
    }
    println!("device: {}", ctx.sm());
    let n = if testing::small_shapes(&ctx) { 37 } else { 300 };
    for (i, prec) in TcPrecision::ALL.into_iter().enumerate() {
        for (j, b) in [16, 32, 64].into_iter().enumerate() {
            run_on(&ctx, prec, b, n, 70 + (3 * i + j) as u64, j != 1);
        }
    }
}

/// `N = 0`: nothing to compute for the forward pass and grad-input, and
/// grad-values writes `+0.0` everywhere (the empty N-chunk tree), over
/// whatever `gv` held.
#[test]
fn zero_rows() {
    let dims = Dims::new(2, 2, 2, 16).unwrap();
    let col = [1, -1, 0, 1];
    let st = Context::sim(Sm::Sm89).default_stream();
    let topo = DeviceTopology::upload(&st, &dims, &col).unwrap();
    let empty = st.context().alloc::<u16>(0).unwrap();
    let mut gv = st.upload(&vec![5.0f32; dims.values_len()]).unwrap();
    tc::grad_values_dev(&st, TcPrecision::F16, &topo, 0, &empty, &empty, &mut gv).unwrap();
    let want = host::grad_values::<u16>(Sm::Sm89, TcPrecision::F16, &dims, 0, &[], &[], &col);
    assert_eq!(st.to_vec(&gv).unwrap(), want.unwrap());
    assert!(st.to_vec(&gv).unwrap().iter().all(|v| v.to_bits() == 0));
    let v = st.upload(&vec![0u16; dims.values_len()]).unwrap();
    let mut y = st.context().alloc::<f32>(0).unwrap();
    tc::forward_dev(
        &st,
        TcPrecision::F16,
        TcOutput::F32,
        &topo,
        0,
        &empty,
        &v,
        None,
        &mut y,
    )
    .unwrap();
}

/// The staged forward and grad-input kernels' edge paths: a single token
/// (every CTA tile almost all padding rows, zero-filled), more CTA tiles
/// than the simulator's grid cap (4 SMs × 8 CTAs: the grid-stride loop
/// over tiles), a block row whose slots are all empty (its outputs are
/// `+0.0`, or exactly the bias) and column blocks no slot uses (`gx` is
/// `+0.0`), with and without a bias. Outputs start as a sentinel, so an
/// unwritten element fails.
#[test]
fn staged_edge_paths() {
    let (r, c, b) = (36, 34, 16);
    let dims = Dims::new(r, c, 1, b).unwrap();
    // row 5 and every row ≡ 3 (mod 11) empty; the rest spread over the
    // columns, leaving some unused
    let col: Vec<i32> = (0..r)
        .map(|i| {
            if i == 5 || i % 11 == 3 {
                -1
            } else {
                ((i * 7) % c) as i32
            }
        })
        .collect();
    assert!((0..c as i32).any(|j| !col.contains(&j)));
    for (sm, prec, seed) in [
        (Sm::Sm80, TcPrecision::Bf16, 81),
        (Sm::Sm90, TcPrecision::Tf32, 82),
    ] {
        let n = 1;
        let mut rng = Rng(seed);
        let vals = values(&mut rng, dims.values_len(), prec, false);
        let xf = values(&mut rng, n * dims.in_features(), prec, false);
        let gyf = values(&mut rng, n * dims.out_features(), prec, false);
        let bias = values(&mut rng, dims.out_features(), TcPrecision::Tf32, false);
        let st = Context::sim(sm).default_stream();
        let topo = DeviceTopology::upload(&st, &dims, &col).unwrap();
        let dbias = st.upload(&bias).unwrap();
        let check = |what: &str, got: Vec<f32>, want: Vec<f32>| {
            assert_eq!(bits(&got), bits(&want), "{what} {prec} on {sm}");
        };
        macro_rules! run {
            ($t:ty) => {{
                let (x, v, gy) = (
                    <$t>::encode(prec, &xf),
                    <$t>::encode(prec, &vals),
                    <$t>::encode(prec, &gyf),
                );
                let (dx, dv, dgy) = (
                    st.upload(&x).unwrap(),
                    st.upload(&v).unwrap(),
                    st.upload(&gy).unwrap(),
                );
                for with_bias in [false, true] {
                    let mut y = st.upload(&vec![7.0f32; n * dims.out_features()]).unwrap();
                    let bias_dev = with_bias
                        .then_some(&dbias as &dyn ptxsmith::runtime::buffer::AsDevice<f32>);
                    tc::forward_dev(
                        &st,
                        prec,
                        TcOutput::F32,
                        &topo,
                        n,
                        &dx,
                        &dv,
                        bias_dev,
                        &mut y,
                    )
                    .unwrap();
                    let hb = with_bias.then_some(&bias[..]);
                    let want = host::forward(sm, prec, &dims, n, &x, &v, &col, hb).unwrap();
                    let got = st.to_vec(&y).unwrap();
                    // the empty row: +0.0 or exactly the bias
                    for i in 0..b {
                        let e = 5 * b + i;
                        let empty = if with_bias { bias[e] } else { 0.0 };
                        assert_eq!(
                            got[e].to_bits(),
                            empty.to_bits(),
                            "empty row, bias {with_bias}"
                        );
                    }
                    check(&format!("forward (bias {with_bias})"), got, want);
                }
                let mut gx = st.upload(&vec![7.0f32; n * dims.in_features()]).unwrap();
                tc::grad_input_dev(&st, prec, TcOutput::F32, &topo, n, &dgy, &dv, &mut gx).unwrap();
                let want = host::grad_input(sm, prec, &dims, n, &gy, &v, &col).unwrap();
                let got = st.to_vec(&gx).unwrap();
                for j in (0..c).filter(|j| !col.contains(&(*j as i32))) {
                    assert!(
                        got[j * b..(j + 1) * b].iter().all(|v| v.to_bits() == 0),
                        "unused column {j}"
                    );
                }
                check("grad_input", got, want);
            }};
        }
        match prec {
            TcPrecision::Tf32 => run!(f32),
            _ => run!(u16),
        }
    }
}

/// The staged grad-values kernel over several token tiles: `N = 300`
/// spans five CTA tiles of 64 tokens at `B` = 64 (bf16) and `B` = 32
/// (tf32), four to an N-chunk, so partials fold at a tile boundary inside
/// the run and at the ragged end. Then the skipped MMA chunks: at `N =
/// 272` (bf16, `B` = 16, tiles of 128) the last tile runs one MMA chunk of
/// its eight; every block of 8 rows holds one product `−2⁻¹⁵¹` (a `−0.0`
/// partial), and an all-zero chunk run past `N` would turn the last
/// partial into `+0.0` and the sum `−0.0 + +0.0` into `+0.0`.
#[test]
fn grad_values_staged_tiles() {
    fn one<T: Encode>(sm: Sm, prec: TcPrecision, b: usize, n: usize, seed: u64) {
        let dims = Dims::new(2, 2, 2, b).unwrap();
        let col = [1, 0, -1, 1];
        let mut rng = Rng(seed);
        let x = T::encode(prec, &values(&mut rng, n * dims.in_features(), prec, true));
        let gy = T::encode(prec, &values(&mut rng, n * dims.out_features(), prec, true));
        let st = Context::sim(sm).default_stream();
        let topo = DeviceTopology::upload(&st, &dims, &col).unwrap();
        let (dx, dgy) = (st.upload(&x).unwrap(), st.upload(&gy).unwrap());
        let mut gv = st.upload(&vec![7.0f32; dims.values_len()]).unwrap();
        tc::grad_values_dev(&st, prec, &topo, n, &dx, &dgy, &mut gv).unwrap();
        let want = host::grad_values(sm, prec, &dims, n, &x, &gy, &col).unwrap();
        assert_bits(
            &format!("grad_values {prec} B={b} N={n} on {sm}"),
            &st.to_vec(&gv).unwrap(),
            &want,
        );
    }
    one::<u16>(Sm::Sm90, TcPrecision::Bf16, 64, 300, 91);
    one::<f32>(Sm::Sm80, TcPrecision::Tf32, 32, 300, 92);

    let dims = Dims::new(1, 1, 1, 16).unwrap();
    let n = 272;
    let row = |v: f32| -> Vec<f32> {
        (0..n * 16)
            .map(|e| if (e / 16) % 8 == 0 { v } else { 0.0 })
            .collect()
    };
    let gy = to_bf16(&row(-(2f32.powi(-75))));
    let x = to_bf16(&row(2f32.powi(-76)));
    let prec = TcPrecision::Bf16;
    let h = host::grad_values(Sm::Sm80, prec, &dims, n, &x, &gy, &[0]).unwrap();
    assert!(
        h.iter().all(|v| v.to_bits() == 0x8000_0000),
        "host: {:#x}",
        h[0].to_bits()
    );
    let st = Context::sim(Sm::Sm80).default_stream();
    let topo = DeviceTopology::upload(&st, &dims, &[0]).unwrap();
    let (dx, dgy) = (st.upload(&x).unwrap(), st.upload(&gy).unwrap());
    let mut gv = st.context().alloc::<f32>(256).unwrap();
    tc::grad_values_dev(&st, prec, &topo, n, &dx, &dgy, &mut gv).unwrap();
    assert_eq!(bits(&st.to_vec(&gv).unwrap()), bits(&h));
}

/// Grad-values at `B` = 32, whose 32 × 32 warp tile is the whole block
/// (one warp computes, all four stage), and the staging's two paths: full
/// token tiles copy from running row pointers, the ragged last tile clamps
/// and zero-fills. Shapes: a single slot; an odd slot count per row with
/// `−1` slots (their `gv` is `+0.0`); `N` a multiple of the tile (full
/// tiles only, folding at the N-chunk end), and not (a ragged tile after
/// full ones, past an N-chunk boundary). `gv` starts as a sentinel, so an
/// unwritten element fails.
#[test]
fn grad_values_b32_warp_tile_edges() {
    fn one<T: Encode>(sm: Sm, prec: TcPrecision, r: usize, col: &[i32], n: usize, seed: u64) {
        let k = col.len() / r;
        let dims = Dims::new(r, 3, k, 32).unwrap();
        let mut rng = Rng(seed);
        let x = T::encode(prec, &values(&mut rng, n * dims.in_features(), prec, true));
        let gy = T::encode(prec, &values(&mut rng, n * dims.out_features(), prec, true));
        let st = Context::sim(sm).default_stream();
        let topo = DeviceTopology::upload(&st, &dims, col).unwrap();
        let (dx, dgy) = (st.upload(&x).unwrap(), st.upload(&gy).unwrap());
        let mut gv = st.upload(&vec![7.0f32; dims.values_len()]).unwrap();
        tc::grad_values_dev(&st, prec, &topo, n, &dx, &dgy, &mut gv).unwrap();
        let got = st.to_vec(&gv).unwrap();
        let want = host::grad_values(sm, prec, &dims, n, &x, &gy, col).unwrap();
        for (s, _) in col.iter().enumerate().filter(|(_, c)| **c < 0) {
            assert!(
                got[s * 1024..(s + 1) * 1024]
                    .iter()
                    .all(|v| v.to_bits() == 0),
                "empty slot {s}"
            );
        }
        assert_bits(
            &format!("grad_values {prec} B=32 R={r} K={k} N={n} on {sm}"),
            &got,
            &want,
        );
    }
    // one slot, N a multiple of the 128-token tile: full tiles only
    one::<u16>(Sm::Sm90, TcPrecision::Bf16, 1, &[2], 256, 101);
    // three slots a row (one empty), N = 300: tiles at 0 and 128 full,
    // 256 ragged and past the first N-chunk
    one::<u16>(
        Sm::Sm80,
        TcPrecision::F16,
        2,
        &[0, -1, 2, 1, 2, -1],
        300,
        102,
    );
    // tf32 (64-token tiles): N = 100, one full tile and a ragged one
    one::<f32>(Sm::Sm89, TcPrecision::Tf32, 1, &[1, -1, 0], 100, 103);
}

/// The grouped forward and grad-input kernels (a CTA over `G` output
/// blocks): rows with unsorted slots (the forward takes a row's entries
/// by input block; `validate_col` refuses a block twice in a row), empty
/// rows and slots, `R` and `C` not multiples of `G` (the last
/// group's missing blocks never store), two token tiles with a ragged
/// end; on sm_80 (`G` = 16 at `B` = 16, 8 at 32) and sm_89 (the smaller
/// tiles: `B` = 64 with `G` = 4 and 64 tokens, tf32 `B` = 32 with `G` = 4).
#[test]
fn grouped_unsorted_rows_and_ragged_groups() {
    fn one<T: Encode>(sm: Sm, prec: TcPrecision, b: usize, (r, c): (usize, usize), n: usize) {
        let k = 3;
        let dims = Dims::new(r, c, k, b).unwrap();
        let mut col: Vec<i32> = (0..r * k)
            .map(|s| match s % 5 {
                3 => -1,
                _ => ((s * 7 + s / k) % c) as i32,
            })
            .collect();
        // row 0: block 2, an empty slot, block 0; row 1 empty; the last
        // row's slots descending
        col[..3].copy_from_slice(&[2, -1, 0]);
        col[3..6].fill(-1);
        col[(r - 1) * k..].copy_from_slice(&[c as i32 - 1, 1, 0]);
        let mut rng = Rng(90 + b as u64);
        let vals = values(&mut rng, dims.values_len(), prec, true);
        let x = values(&mut rng, n * dims.in_features(), prec, true);
        let gy = T::encode(prec, &values(&mut rng, n * dims.out_features(), prec, true));
        let bias = Some(values(
            &mut rng,
            dims.out_features(),
            TcPrecision::Tf32,
            false,
        ));
        let inputs = Inputs {
            values: vals,
            x,
            bias,
        };
        let f = forward_case::<T>(&Context::sim(sm), prec, dims, col, n, inputs);
        let what = format!("{prec} B={b} R={r} C={c} N={n} on {sm}");
        f.check_f32(true, &format!("forward {what}"));
        let st = &f.st;
        let dgy = st.upload(&gy).unwrap();
        let mut gx = st.upload(&vec![7.0f32; n * dims.in_features()]).unwrap();
        tc::grad_input_dev(st, prec, TcOutput::F32, &f.topo, n, &dgy, &f.dv, &mut gx).unwrap();
        let want = host::grad_input(sm, prec, &dims, n, &gy, &f.v, &f.col).unwrap();
        assert_bits(
            &format!("grad_input {what}"),
            &st.to_vec(&gx).unwrap(),
            &want,
        );
    }
    one::<u16>(Sm::Sm80, TcPrecision::Bf16, 16, (17, 18), 131);
    one::<u16>(Sm::Sm80, TcPrecision::F16, 32, (9, 10), 5);
    one::<u16>(Sm::Sm89, TcPrecision::Bf16, 64, (5, 6), 67);
    one::<f32>(Sm::Sm89, TcPrecision::Tf32, 32, (5, 3), 3);
}
