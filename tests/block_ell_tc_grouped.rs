//! Issue 31, the grouped tensor-core block-ELL kernels: the forward pass
//! runs rows of any length (its schedule is windowed: a row longer than
//! the window is ranked a window at a time), and tf32 grad-input is
//! grouped; the simulator equals the host model bit for bit.

mod common;
#[path = "common/block_ell_tc.rs"]
mod tc_common;

use common::Rng;
use ptxsmith::Sm;
use ptxsmith::kernels::block_ell_tc::{self as tc, Dims, TcOutput, TcPrecision, host, ptx};
use ptxsmith::runtime::Context;
use tc_common::{Inputs, assert_bits, forward_case};

/// Values `±[1, 2)·2^[−8, 8]`; with `specials`, ±∞, NaN and the f32
/// extremes at a few places.
fn values(rng: &mut Rng, len: usize, specials: bool) -> Vec<f32> {
    let mut v = tc_common::values(rng, len, 8, 20);
    if specials {
        tc_common::specials(&mut v, Some((f32::MAX, f32::from_bits(1))));
    }
    v
}

/// sm_86, bf16, `B` = 64: the window is 288 entries (99 KiB of shared
/// memory less the staging, over `G` = 4 lists). Row 0 holds 590 blocks
/// (three windows: ranks 0–287, 288–575, 576–589) in permuted slots and
/// 10 empty slots; row 1 holds 289 (two windows), so that block 289 is the
/// last entry of row 1's first window and the first of row 0's second
/// (the step that takes it for both lists refills both); `R` = 2 of a
/// group of 4, `N` = 1 of a 64-token tile. Before the windows this call
/// was refused (`8·G·K` bytes of schedule past the opt-in limit).
#[test]
fn forward_rows_past_the_window_run() {
    let sm = Sm::Sm86;
    let (r, c, k, b) = (2, 600, 600, 64);
    assert_eq!(ptx::grouped::window(TcPrecision::Bf16, b as u32, sm), 288);
    let dims = Dims::new(r, c, k, b).unwrap();
    let mut col = vec![-1i32; r * k];
    // slot (7·j + 3) mod 600 of row 0 holds block j + 1 (7 is prime to 600)
    for j in 0..590 {
        col[(7 * j + 3) % k] = j as i32 + 1;
    }
    // row 1: blocks 2 ..= 290, descending from slot 0
    for j in 0..289 {
        col[k + j] = 290 - j as i32;
    }
    let mut rng = Rng(86);
    let v = values(&mut rng, dims.values_len(), false);
    let n = 1;
    let x = values(&mut rng, n * dims.in_features(), false);
    let bias = Some(values(&mut rng, dims.out_features(), false));
    let inputs = Inputs { values: v, x, bias };
    let f = forward_case::<u16>(&Context::sim(sm), TcPrecision::Bf16, dims, col, n, inputs);
    f.check_f32(true, "forward, 3 windows");
}

/// tf32 grad-input (and the forward pass) against the host model on
/// sm_80, sm_89, sm_90 and sm_100 for `B` ∈ {16, 32, 64}: `R` and `C` not
/// multiples of the group, unsorted rows, empty slots (NaN values never
/// read), an empty column block, ragged `N`, inputs with ±∞, NaN and the
/// f32 extremes.
#[test]
fn tf32_grouped_grad_input_matches_the_host_model() {
    let prec = TcPrecision::Tf32;
    for (i, sm) in [Sm::Sm80, Sm::Sm89, Sm::Sm90, Sm::Sm100]
        .into_iter()
        .enumerate()
    {
        for (j, b) in [16usize, 32, 64].into_iter().enumerate() {
            let (r, c, k) = (3 + j, 5 + i, 3);
            let dims = Dims::new(r, c, k, b).unwrap();
            // row s / k: blocks by a stride, slot 1 of every other row
            // empty; column block 1 is never used
            let mut col: Vec<i32> = (0..r * k)
                .map(|s| {
                    let (row, slot) = (s / k, s % k);
                    if slot == 1 && row % 2 == 0 {
                        -1
                    } else {
                        let blk = (row + k - 1 - slot) % (c - 1);
                        (if blk >= 1 { blk + 1 } else { blk }) as i32
                    }
                })
                .collect();
            col[..3].copy_from_slice(&[(c - 1) as i32, -1, 0]);
            let n = [5, 70, 131, 67][i];
            let mut rng = Rng(31 + 7 * i as u64 + j as u64);
            let v = values(&mut rng, dims.values_len(), true);
            let gy = values(&mut rng, n * dims.out_features(), true);
            let x = values(&mut rng, n * dims.in_features(), true);
            let inputs = Inputs {
                values: v,
                x,
                bias: None,
            };
            let f = forward_case::<f32>(&Context::sim(sm), prec, dims, col, n, inputs);
            let (st, col) = (&f.st, &f.col);
            let dgy = st.upload(&gy).unwrap();
            let what = format!("tf32 B={b} R={r} C={c} N={n} on {sm}");
            let mut gx = st.upload(&vec![7.0f32; n * dims.in_features()]).unwrap();
            tc::grad_input_dev(st, prec, TcOutput::F32, &f.topo, n, &dgy, &f.dv, &mut gx).unwrap();
            let want = host::grad_input(sm, prec, &dims, n, &gy, &f.v, col).unwrap();
            let got = st.to_vec(&gx).unwrap();
            // column block 1 has no entry: +0.0
            let fin = dims.in_features();
            for row in 0..n {
                assert!(
                    got[row * fin + b..row * fin + 2 * b]
                        .iter()
                        .all(|v| v.to_bits() == 0)
                );
            }
            assert_bits(&format!("grad_input {what}"), &got, &want);
            f.check_f32(false, &format!("forward {what}"));
        }
    }
}
