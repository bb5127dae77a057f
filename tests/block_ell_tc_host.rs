//! Properties of the tensor-core block-ELL host models (issue 31), on
//! random layers: with small-integer inputs every product and partial sum
//! is exact, so truncated alignment and the block width cannot show, and
//! every precision on every modelled SM equals the FP32 path's `fma.rn`
//! chains bit for bit — including empty slots full of NaN (never read),
//! ragged `N` and several N-chunks. Exact sums do not depend on their
//! order, so this checks *which* terms each output sums (operand
//! gathering, the transposed index, empty slots, padding, the rows of each
//! N-chunk); the order and the per-SM rounding are checked against the
//! simulator in `tests/block_ell_tc.rs`.

use proptest::prelude::*;
use ptxsmith::Sm;
use ptxsmith::kernels::block_ell::{self, Dims};
use ptxsmith::kernels::block_ell_tc::{TcPrecision, host, to_bf16, to_f16};

#[derive(Debug, Clone)]
struct Case {
    dims: Dims,
    n: usize,
    col: Vec<i32>,
    x: Vec<f32>,
    values: Vec<f32>,
    gy: Vec<f32>,
    bias: Option<Vec<f32>>,
}

fn ints(len: usize) -> impl Strategy<Value = Vec<f32>> {
    prop::collection::vec((-4i32..=4).prop_map(|v| v as f32), len)
}

fn case() -> impl Strategy<Value = Case> {
    (
        1usize..=3,
        1usize..=3,
        0usize..=3,
        prop::sample::select(vec![16usize, 32]),
        prop::sample::select(vec![0usize, 1, 5, 8, 13, 21, 260]),
    )
        .prop_flat_map(|(r, c, k, b, n)| {
            let dims = Dims::new(r, c, k, b).unwrap();
            (
                Just(dims),
                Just(n),
                prop::collection::vec(-1i32..c as i32, r * k),
                ints(n * c * b),
                ints(dims.values_len()),
                ints(n * r * b),
                prop::option::of(ints(r * b)),
            )
        })
        .prop_map(|(dims, n, mut col, x, mut values, gy, bias)| {
            // a column block at most once a row; repeats become empty slots
            let (k, bb) = (dims.k(), dims.b() * dims.b());
            for r in 0..dims.r() {
                for s in 0..k {
                    let c = col[r * k + s];
                    if c >= 0 && col[r * k..r * k + s].contains(&c) {
                        col[r * k + s] = -1;
                    }
                }
            }
            // empty slots hold NaN: never read
            for (s, &c) in col.iter().enumerate() {
                if c < 0 {
                    values[s * bb..(s + 1) * bb].fill(f32::NAN);
                }
            }
            Case {
                dims,
                n,
                col,
                x,
                values,
                gy,
                bias,
            }
        })
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn exact_inputs_equal_the_fp32_path(c in case()) {
        let (d, n) = (&c.dims, c.n);
        let fy = block_ell::host::forward(d, n, &c.x, &c.values, &c.col, c.bias.as_deref()).unwrap();
        let fgx = block_ell::host::grad_input(d, n, &c.gy, &c.values, &c.col).unwrap();
        let fgv = block_ell::host::grad_values(d, n, &c.x, &c.gy, &c.col).unwrap();
        prop_assert!(fy.iter().chain(&fgx).chain(&fgv).all(|v| v.is_finite()));
        for sm in [Sm::Sm80, Sm::Sm89, Sm::Sm90, Sm::Sm100] {
            for p in TcPrecision::ALL {
                let (y, gx, gv) = match p {
                    TcPrecision::Tf32 => (
                        host::forward(sm, p, d, n, &c.x, &c.values, &c.col, c.bias.as_deref()),
                        host::grad_input(sm, p, d, n, &c.gy, &c.values, &c.col),
                        host::grad_values(sm, p, d, n, &c.x, &c.gy, &c.col),
                    ),
                    _ => {
                        let enc = |v: &[f32]| if p == TcPrecision::F16 { to_f16(v) } else { to_bf16(v) };
                        let (x, v, gy) = (enc(&c.x), enc(&c.values), enc(&c.gy));
                        (
                            host::forward(sm, p, d, n, &x, &v, &c.col, c.bias.as_deref()),
                            host::grad_input(sm, p, d, n, &gy, &v, &c.col),
                            host::grad_values(sm, p, d, n, &x, &gy, &c.col),
                        )
                    }
                };
                prop_assert_eq!(bits(&y.unwrap()), bits(&fy), "forward {} {}", p, sm);
                prop_assert_eq!(bits(&gx.unwrap()), bits(&fgx), "grad_input {} {}", p, sm);
                prop_assert_eq!(bits(&gv.unwrap()), bits(&fgv), "grad_values {} {}", p, sm);
            }
        }
    }
}
