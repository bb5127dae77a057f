//! The block-ELL problems of the roofline model (forward at several
//! densities, grad-input, grad-values, statistics and grad-bias), with the
//! layer topology and byte counts they share.

use super::*;

/// `col` of an `r × c`-block layer with `k` slots, `filled` of them used
/// per row (the bench's spread columns).
fn topology(r: usize, c: usize, k: usize, filled: usize) -> Vec<i32> {
    (0..r * k)
        .map(|s| {
            let (row, slot) = (s / k, s % k);
            if slot < filled {
                ((row + slot * (c / filled.max(1))) % c) as i32
            } else {
                -1
            }
        })
        .collect()
}

/// Shape of the block-ELL problems: `[R, C, K, filled, B, N]`.
fn ell_dims(s: &Shape) -> Result<Dims> {
    Dims::new(s[0], s[1], s[2], s[4])
}

/// The bench's layer: 2048 → 2048 in 32 × 32 blocks (R = C = 64), N 4096,
/// `k` of the 64 slots filled.
fn ell_full(k: usize) -> Shape {
    vec![64, 64, k, k, 32, 4096]
}

/// Non-empty slots.
fn nnz(s: &Shape) -> usize {
    s[0] * s[3]
}

/// Multiply-adds of the forward / grad-input at `s`.
fn ell_macs(s: &Shape) -> f64 {
    f(nnz(s) * s[4] * s[4] * s[5])
}

fn ell_topo(st: &Stream, s: &Shape) -> Result<(Dims, DeviceTopology)> {
    let d = ell_dims(s)?;
    let col = topology(s[0], s[1], s[2], s[3]);
    let t = DeviceTopology::upload(st, &d, &col)?;
    Ok((d, t))
}

/// Rows of `N` per forward / grad-input tile at block size `b`.
fn rows_per_tile(b: usize) -> usize {
    block_ell::ptx::rows_per_tile(b as u32) as usize
}

fn ell_forward(pct: usize) -> Problem {
    let k = 64 * pct / 100;
    let full = ell_full(k);
    let rpt = rows_per_tile(full[4]);
    Problem {
        family: "block_ell",
        name: format!("forward 2048 → 2048, B 32, N 4096, {pct} % of the slots"),
        roof: Roof::Fp32,
        // One block row, 8 and 16 filled slots: the cost per slot does not
        // depend on K.
        samples: vec![vec![1, 64, 8, 8, 32, rpt], vec![1, 64, 16, 16, 32, rpt]],
        check: vec![1, 64, 8, 8, 32, 2 * rpt],
        capped: None,
        full,
        basis: Box::new(|s, _, _| vec![f(s[0] * s[5]), f(nnz(s) * s[5])]),
        run: Box::new(|st, s, dry| {
            let (d, topo) = ell_topo(st, s)?;
            let n = s[5];
            let x = uniform(st, n * d.in_features(), 4, dry, -0.5, 0.5)?;
            let values = uniform(st, d.values_len(), 6, dry, -0.5, 0.5)?;
            let mut y = out::<f32>(st, n * d.out_features())?;
            block_ell::forward_dev(st, &topo, n, &x, &values, None, &mut y)
        }),
        traffic: Box::new(|s, _| {
            let b = s[4];
            let n = s[5];
            vec![(
                format!("block_ell_forward_b{b}"),
                F32 * f(n * s[1] * b + nnz(s) * b * b + n * s[0] * b),
            )]
        }),
        // One FFMA per multiply-add.
        essential: Box::new(ell_macs),
        goal: (pct == 50).then_some(Goal::DenseSpeedup {
            // x [4096, 2048] · Wᵀ [2048, 2048].
            dense_macs: 4096.0 * 2048.0 * 2048.0,
            min: 1.6,
        }),
        note: "x once (the row blocks of a wave share it in L2), the filled slots' values \
               once, y once; roof: one FFMA per multiply-add (the contract's fused \
               multiply-add)",
    }
}

fn ell_grad_input() -> Problem {
    let full = ell_full(32);
    let rpt = rows_per_tile(full[4]);
    Problem {
        family: "block_ell",
        name: "grad-input 2048 → 2048, B 32, N 4096, 50 % of the slots".into(),
        roof: Roof::Fp32,
        samples: vec![vec![2, 64, 8, 8, 32, rpt], vec![4, 64, 8, 8, 32, rpt]],
        check: vec![2, 64, 8, 8, 32, 2 * rpt],
        capped: None,
        full,
        basis: Box::new(|s, _, _| vec![f(s[1] * s[5]), f(nnz(s) * s[5])]),
        run: Box::new(|st, s, dry| {
            let (d, topo) = ell_topo(st, s)?;
            let n = s[5];
            let gy = uniform(st, n * d.out_features(), 5, dry, -0.5, 0.5)?;
            let values = uniform(st, d.values_len(), 6, dry, -0.5, 0.5)?;
            let mut gx = out::<f32>(st, n * d.in_features())?;
            block_ell::grad_input_dev(st, &topo, n, &gy, &values, &mut gx)
        }),
        traffic: Box::new(|s, _| {
            let (b, n) = (s[4], s[5]);
            vec![(
                format!("block_ell_grad_input_b{b}"),
                F32 * f(n * s[0] * b + nnz(s) * b * b + n * s[1] * b),
            )]
        }),
        essential: Box::new(ell_macs),
        goal: None,
        note: "gy once, the filled slots' values once, gx once; roof: one FFMA per \
               multiply-add",
    }
}

/// Chunks of the N-chunk tree and the passes `chunk_tree` makes over them
/// for `len` outputs.
fn chunk_passes(n: usize, len: usize) -> (f64, f64) {
    let nchunks = n.div_ceil(block_ell::N_CHUNK);
    if nchunks <= 1 {
        return (1.0, 1.0);
    }
    let group = (block_ell::launch::SCRATCH_FLOATS / len.max(1)).clamp(1, nchunks);
    (f(nchunks), f(nchunks.div_ceil(group)))
}

/// Bytes of the fold kernel over `len` outputs: every partial read once,
/// the output written per pass and read back on every pass but the first.
fn fold_bytes(n: usize, len: usize) -> f64 {
    let (chunks, passes) = chunk_passes(n, len);
    if chunks <= 1.0 {
        return 0.0;
    }
    F32 * f(len) * (chunks + 2.0 * passes - 1.0)
}

fn ell_grad_values() -> Problem {
    Problem {
        family: "block_ell",
        name: "grad-values 2048 → 2048, B 32, N 4096, 50 % of the slots".into(),
        roof: Roof::Fp32,
        full: ell_full(32),
        samples: vec![
            vec![1, 64, 2, 2, 32, 512],
            vec![1, 64, 2, 1, 32, 512],
            vec![1, 64, 2, 2, 32, 768],
        ],
        check: vec![1, 64, 2, 1, 32, 1024],
        capped: None,
        // Multiply-adds; fold passes over the outputs; partials (outputs
        // × chunks).
        basis: Box::new(|s, _, _| {
            let len = s[0] * s[2] * s[4] * s[4];
            let (chunks, passes) = chunk_passes(s[5], len);
            vec![
                f(nnz(s) * s[4] * s[4] * s[5]),
                f(len) * passes,
                f(len) * chunks,
            ]
        }),
        run: Box::new(|st, s, dry| {
            let (d, topo) = ell_topo(st, s)?;
            let n = s[5];
            let x = uniform(st, n * d.in_features(), 4, dry, -0.5, 0.5)?;
            let gy = uniform(st, n * d.out_features(), 5, dry, -0.5, 0.5)?;
            let mut gv = out::<f32>(st, d.values_len())?;
            block_ell::grad_values_dev(st, &topo, n, &x, &gy, &mut gv)
        }),
        traffic: Box::new(|s, _| {
            let (b, n) = (s[4], s[5]);
            let len = s[0] * s[2] * b * b;
            let (chunks, _) = chunk_passes(n, len);
            vec![
                (
                    format!("block_ell_grad_values_b{b}"),
                    // x and gy once, every chunk's partials written.
                    F32 * (f(n * s[1] * b + n * s[0] * b) + chunks * f(len)),
                ),
                ("block_ell_fold".into(), fold_bytes(n, len)),
            ]
        }),
        essential: Box::new(ell_macs),
        goal: None,
        note: "x and gy once, the partials of the 16 N-chunks written and read back by the \
               fold passes (8 chunks a pass within the 64 MiB scratch budget), gv written \
               per pass; roof: one FFMA per multiply-add",
    }
}

fn ell_stats() -> Problem {
    Problem {
        family: "block_ell",
        name: "statistics and grad-bias, 2048 → 2048, B 32, N 4096, 50 %".into(),
        roof: Roof::Memory,
        full: ell_full(32),
        samples: vec![
            vec![8, 8, 4, 4, 32, 256],
            vec![8, 8, 8, 8, 32, 256],
            vec![8, 8, 4, 4, 32, 512],
        ],
        check: vec![8, 8, 8, 8, 32, 512],
        capped: None,
        // Fixed work (the slot statistics), per filled-slot element, per
        // row of x and gy (R = C in every shape).
        basis: Box::new(|s, _, _| {
            vec![1.0, f(nnz(s) * s[4] * s[4]), f(s[5] * s[4] * (s[0] + s[1]))]
        }),
        run: Box::new(|st, s, dry| {
            let (d, topo) = ell_topo(st, s)?;
            let n = s[5];
            let x = uniform(st, n * d.in_features(), 4, dry, -0.5, 0.5)?;
            let gy = uniform(st, n * d.out_features(), 5, dry, -0.5, 0.5)?;
            let gv = uniform(st, d.values_len(), 7, dry, -0.5, 0.5)?;
            let vals = uniform(st, d.slots(), 8, dry, 0.0, 1.0)?;
            let mut scores = uniform(st, d.slots(), 9, dry, 0.0, 1.0)?;
            let mut norms = out::<f32>(st, d.slots())?;
            let mut xin = out::<f32>(st, d.c())?;
            let mut yout = out::<f32>(st, d.r())?;
            let mut gb = out::<f32>(st, d.out_features())?;
            block_ell::block_grad_norms_dev(st, &topo, &gv, &mut norms)?;
            block_ell::input_block_norms_dev(st, &d, n, &x, &mut xin)?;
            block_ell::output_block_norms_dev(st, &d, n, &gy, &mut yout)?;
            block_ell::ema_update_dev(st, &mut scores, &vals, 0.9)?;
            block_ell::grad_bias_dev(st, &d, n, &gy, &mut gb)
        }),
        traffic: Box::new(|s, _| {
            let (r, c, b, n) = (s[0], s[1], s[4], s[5]);
            let slots = r * s[2];
            let (chunks, _) = chunk_passes(n, c);
            vec![
                // gv of the filled slots in, a norm per slot out.
                (
                    "block_ell_grad_norms".into(),
                    F32 * f(nnz(s) * b * b + 2 * slots),
                ),
                // x and gy read, per-chunk partials out.
                (
                    "block_ell_block_norm_partials".into(),
                    F32 * (f(n * (c + r) * b) + chunks * f(c + r)),
                ),
                (
                    "block_ell_fold".into(),
                    fold_bytes(n, c) + fold_bytes(n, r) + fold_bytes(n, r * b),
                ),
                ("block_ell_sqrt".into(), 2.0 * F32 * f(c + r)),
                ("block_ell_ema".into(), 3.0 * F32 * f(slots)),
                // gy read again, per-chunk partials out.
                (
                    "block_ell_grad_bias".into(),
                    F32 * (f(n * r * b) + chunks * f(r * b)),
                ),
            ]
        }),
        essential: Box::new(|s| {
            let (r, c, b, n) = (s[0], s[1], s[4], s[5]);
            F32 * f(nnz(s) * b * b + n * (c + r) * b)
        }),
        goal: None,
        note: "block_grad_norms, input/output_block_norms, ema_update and grad_bias as a \
               training step calls them: x, gy (twice: norms and grad-bias are separate \
               calls) and gv read; essential: x, gy, gv once",
    }
}

pub(super) fn block_ell_problems() -> Vec<Problem> {
    vec![
        ell_forward(50),
        ell_forward(100),
        ell_grad_input(),
        ell_grad_values(),
        ell_stats(),
    ]
}
