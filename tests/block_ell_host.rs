//! The block-ELL host model against an independent dense formulation (bit
//! for bit), finite differences (the math), the topology tools and the
//! statistics.

use proptest::prelude::*;
use ptxsmith::Error;
use ptxsmith::kernels::block_ell::host::{
    block_grad_norms, ema_update, forward, grad_bias, grad_input, grad_values, input_block_norms,
    output_block_norms,
};
use ptxsmith::kernels::block_ell::{
    self, BLOCK_SIZES, Dims, N_CHUNK, TransposedIndex, from_dense, retopology, to_dense,
};

// ---------------------------------------------------------------- inputs

mod common;
use common::Rng;

/// A random `col [R, K]`: each row gets distinct column blocks in random
/// order, with `-1` at random slots (and every slot `-1` past `C` blocks).
fn random_col(rng: &mut Rng, r: usize, c: usize, k: usize, empty_pct: u64) -> Vec<i32> {
    let mut col = Vec::with_capacity(r * k);
    for _ in 0..r {
        let mut perm: Vec<i32> = (0..c as i32).collect();
        for i in (1..perm.len()).rev() {
            perm.swap(i, rng.below(i + 1));
        }
        let mut used = perm.into_iter();
        for _ in 0..k {
            let slot = if rng.chance(empty_pct) {
                -1
            } else {
                used.next().unwrap_or(-1)
            };
            col.push(slot);
        }
    }
    col
}

#[derive(Debug)]
struct Case {
    dims: Dims,
    n: usize,
    x: Vec<f32>,
    values: Vec<f32>,
    col: Vec<i32>,
    bias: Option<Vec<f32>>,
    gy: Vec<f32>,
}

fn case_from(b: usize, n: usize, r: usize, c: usize, k: usize, seed: u64) -> Case {
    let mut rng = Rng(seed);
    let empty_pct = [0, 30, 70, 100][rng.below(4)];
    let col = random_col(&mut rng, r, c, k, empty_pct);
    let dims = Dims::new(r, c, k, b).unwrap();
    let mut values = rng.values(dims.values_len());
    // Empty slots hold 0 (0·Inf would be NaN) or NaN (never read).
    let fill = if rng.chance(50) { 0.0 } else { f32::NAN };
    for (s, &cc) in col.iter().enumerate() {
        if cc < 0 {
            values[s * b * b..(s + 1) * b * b].fill(fill);
        }
    }
    let mut x = rng.values(n * c * b);
    // Inf in x at every column block no slot uses: skipped, so no NaN.
    for unused in (0..c as i32).filter(|cc| !col.contains(cc)) {
        for row in 0..n {
            x[row * c * b + unused as usize * b + rng.below(b)] = f32::INFINITY;
        }
    }
    let bias = rng.chance(50).then(|| rng.values(r * b));
    let gy = rng.values(n * r * b);
    Case {
        dims,
        n,
        x,
        values,
        col,
        bias,
        gy,
    }
}

fn arb_case() -> impl Strategy<Value = Case> {
    (
        prop::sample::select(BLOCK_SIZES.to_vec()),
        0usize..=9,
        0usize..=5,
        0usize..=5,
        any::<u64>(),
    )
        .prop_flat_map(|(b, n, r, c, seed)| {
            (0..=c + 1).prop_map(move |k| case_from(b, n, r, c, k, seed))
        })
}

fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(p, q)| p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()))
}

// ------------------------------------------- the independent formulation

/// The dense weight with an explicit block mask (not zeros), and each
/// block row's column blocks in slot order.
struct Dense {
    b: usize,
    r: usize,
    c: usize,
    /// `[R·B, C·B]`; masked-out blocks hold NaN (never read).
    w: Vec<f32>,
    /// `[R, C]`.
    mask: Vec<bool>,
    /// per block row, the column blocks of its non-empty slots, k ascending.
    order: Vec<Vec<usize>>,
}

impl Dense {
    fn new(case: &Case) -> Self {
        let d = case.dims;
        let (b, r, c, k) = (d.b(), d.r(), d.c(), d.k());
        let mut w = vec![f32::NAN; r * b * c * b];
        let mut mask = vec![false; r * c];
        let mut order = vec![Vec::new(); r];
        for rr in 0..r {
            for kk in 0..k {
                let cc = case.col[rr * k + kk];
                if cc < 0 {
                    continue;
                }
                let cc = cc as usize;
                assert!(!mask[rr * c + cc]);
                mask[rr * c + cc] = true;
                order[rr].push(cc);
                for i in 0..b {
                    for j in 0..b {
                        w[(rr * b + i) * (c * b) + cc * b + j] =
                            case.values[((rr * k + kk) * b + i) * b + j];
                    }
                }
            }
        }
        Self {
            b,
            r,
            c,
            w,
            mask,
            order,
        }
    }

    fn at(&self, o: usize, f: usize) -> f32 {
        assert!(self.mask[(o / self.b) * self.c + f / self.b]);
        self.w[o * self.c * self.b + f]
    }

    fn forward(&self, n: usize, x: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
        let (fin, fout) = (self.c * self.b, self.r * self.b);
        let mut y = Vec::with_capacity(n * fout);
        for row in 0..n {
            for o in 0..fout {
                let mut acc = 0.0f32;
                for &cc in &self.order[o / self.b] {
                    for f in cc * self.b..(cc + 1) * self.b {
                        acc = self.at(o, f).mul_add(x[row * fin + f], acc);
                    }
                }
                if let Some(bias) = bias {
                    acc += bias[o];
                }
                y.push(acc);
            }
        }
        y
    }

    fn grad_input(&self, n: usize, gy: &[f32]) -> Vec<f32> {
        let (fin, fout) = (self.c * self.b, self.r * self.b);
        let mut gx = Vec::with_capacity(n * fin);
        for row in 0..n {
            for f in 0..fin {
                let mut acc = 0.0f32;
                // ascending (r, k) = ascending r: a column block appears at
                // most once per row.
                for rr in 0..self.r {
                    if !self.mask[rr * self.c + f / self.b] {
                        continue;
                    }
                    for o in rr * self.b..(rr + 1) * self.b {
                        acc = self.at(o, f).mul_add(gy[row * fout + o], acc);
                    }
                }
                gx.push(acc);
            }
        }
        gx
    }

    /// The dense `[R·B, C·B]` gradient of W (NaN where masked out).
    fn grad_w(&self, n: usize, x: &[f32], gy: &[f32]) -> Vec<f32> {
        let (fin, fout) = (self.c * self.b, self.r * self.b);
        let mut g = vec![f32::NAN; fout * fin];
        for o in 0..fout {
            for f in 0..fin {
                if self.mask[(o / self.b) * self.c + f / self.b] {
                    g[o * fin + f] = tree(n, |row| (gy[row * fout + o], x[row * fin + f]));
                }
            }
        }
        g
    }
}

/// The N-chunk tree, written out: chunk partials (fma chains from +0),
/// then summed left to right starting from the first.
fn tree(n: usize, term: impl Fn(usize) -> (f32, f32)) -> f32 {
    let partials: Vec<f32> = (0..n.div_ceil(N_CHUNK))
        .map(|q| {
            let rows = q * N_CHUNK..n.min((q + 1) * N_CHUNK);
            rows.fold(0.0f32, |acc, row| {
                let (a, b) = term(row);
                a.mul_add(b, acc)
            })
        })
        .collect();
    match partials.split_first() {
        None => 0.0,
        Some((first, rest)) => rest.iter().fold(*first, |acc, p| acc + p),
    }
}

/// gv at block-ELL positions from the dense gradient; +0 at empty slots.
fn gv_from_dense(case: &Case, gw: &[f32]) -> Vec<f32> {
    let d = case.dims;
    let (b, c, k) = (d.b(), d.c(), d.k());
    let mut gv = vec![0.0f32; d.values_len()];
    for (s, &cc) in case.col.iter().enumerate() {
        if cc < 0 {
            continue;
        }
        let rr = s / k;
        for i in 0..b {
            for j in 0..b {
                gv[(s * b + i) * b + j] = gw[(rr * b + i) * (c * b) + cc as usize * b + j];
            }
        }
    }
    gv
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn host_matches_dense_formulation(case in arb_case()) {
        let dense = Dense::new(&case);
        let d = &case.dims;
        let y = forward(d, case.n, &case.x, &case.values, &case.col, case.bias.as_deref()).unwrap();
        prop_assert!(same_bits(&y, &dense.forward(case.n, &case.x, case.bias.as_deref())));
        // Values and activations are finite except Inf at unused column
        // blocks: nothing may be NaN.
        prop_assert!(y.iter().all(|v| !v.is_nan()), "NaN in y: {:?}", y);

        let gx = grad_input(d, case.n, &case.gy, &case.values, &case.col).unwrap();
        prop_assert!(same_bits(&gx, &dense.grad_input(case.n, &case.gy)));
        prop_assert!(gx.iter().all(|v| !v.is_nan()));

        let gv = grad_values(d, case.n, &case.x, &case.gy, &case.col).unwrap();
        let want = gv_from_dense(&case, &dense.grad_w(case.n, &case.x, &case.gy));
        prop_assert!(same_bits(&gv, &want));

        let gb = grad_bias(d, case.n, &case.gy).unwrap();
        let fout = d.out_features();
        let want: Vec<f32> = (0..fout)
            .map(|o| tree(case.n, |row| (case.gy[row * fout + o], 1.0)))
            .collect();
        prop_assert!(same_bits(&gb, &want));
    }

    #[test]
    fn transposed_index_lists_slots_in_order(case in arb_case()) {
        let d = &case.dims;
        let t = TransposedIndex::build(d, &case.col).unwrap();
        prop_assert_eq!(t.offsets().len(), d.c() + 1);
        prop_assert_eq!(t.offsets()[0], 0);
        prop_assert_eq!(t.nnz(), case.col.iter().filter(|&&c| c >= 0).count());
        for c in 0..d.c() {
            let want: Vec<u32> = (0..d.slots() as u32)
                .filter(|&s| case.col[s as usize] == c as i32)
                .collect();
            prop_assert_eq!(t.column(c), &want[..]);
        }
    }

    #[test]
    fn dense_round_trips(
        b in prop::sample::select(BLOCK_SIZES.to_vec()),
        r in 0usize..=5,
        c in 0usize..=5,
        seed in any::<u64>(),
    ) {
        let mut rng = Rng(seed);
        let pct = rng.below(101) as u64;
        let mask: Vec<bool> = (0..r * c).map(|_| rng.chance(pct)).collect();
        let dense = rng.values(r * b * c * b);
        let ell = from_dense(r, c, b, &dense, &mask).unwrap();
        let k = (0..r).map(|rr| mask[rr * c..(rr + 1) * c].iter().filter(|&&m| m).count()).max().unwrap_or(0);
        prop_assert_eq!(ell.dims, Dims::new(r, c, k, b).unwrap());
        // Slots: kept column blocks ascending, then -1 with zero values.
        for rr in 0..r {
            let kept: Vec<i32> = (0..c as i32).filter(|&cc| mask[rr * c + cc as usize]).collect();
            let row = &ell.col[rr * k..(rr + 1) * k];
            prop_assert_eq!(&row[..kept.len()], &kept[..]);
            prop_assert!(row[kept.len()..].iter().all(|&cc| cc == -1));
            for kk in kept.len()..k {
                let s = rr * k + kk;
                prop_assert!(ell.values[s * b * b..(s + 1) * b * b].iter().all(|v| v.to_bits() == 0));
            }
        }
        let back = to_dense(&ell.dims, &ell.values, &ell.col).unwrap();
        let width = c * b;
        for (e, (&got, &orig)) in back.iter().zip(&dense).enumerate() {
            let (o, f) = (e / width, e % width);
            let want = if mask[(o / b) * c + f / b] { orig } else { 0.0 };
            prop_assert_eq!(got.to_bits(), want.to_bits());
        }
    }

    #[test]
    fn ell_to_dense_and_back(case in arb_case()) {
        let d = &case.dims;
        let dense = to_dense(d, &case.values, &case.col).unwrap();
        let mut mask = vec![false; d.r() * d.c()];
        for (s, &cc) in case.col.iter().enumerate() {
            if cc >= 0 {
                mask[(s / d.k()) * d.c() + cc as usize] = true;
            }
        }
        let ell = from_dense(d.r(), d.c(), d.b(), &dense, &mask).unwrap();
        let again = to_dense(&ell.dims, &ell.values, &ell.col).unwrap();
        prop_assert!(same_bits(&dense, &again));
        // Empty slots (NaN or 0 in `values`) come back as +0.0.
        prop_assert!(dense.iter().all(|v| !v.is_nan()));
    }

    #[test]
    fn retopology_keeps_survivors(case in arb_case(), seed in any::<u64>(), new_k in 0usize..=6) {
        let d = &case.dims;
        let mut rng = Rng(seed);
        let new_col = random_col(&mut rng, d.r(), d.c(), new_k, 30);
        let out = retopology(d, &case.values, &case.col, &new_col, new_k).unwrap();
        let bb = d.b() * d.b();
        prop_assert_eq!(out.dims, d.with_k(new_k).unwrap());
        prop_assert_eq!(&out.col, &new_col);
        for (s, &cc) in new_col.iter().enumerate() {
            let rr = s / new_k;
            let block = &out.values[s * bb..(s + 1) * bb];
            let old = (0..d.k()).find(|&k0| cc >= 0 && case.col[rr * d.k() + k0] == cc);
            match old {
                Some(k0) => {
                    let s0 = rr * d.k() + k0;
                    prop_assert!(block.iter().zip(&case.values[s0 * bb..(s0 + 1) * bb])
                        .all(|(p, q)| p.to_bits() == q.to_bits()));
                }
                None => prop_assert!(block.iter().all(|v| v.to_bits() == 0)),
            }
        }
    }

    #[test]
    fn statistics(case in arb_case(), decay in 0.0f32..=1.0) {
        let d = &case.dims;
        let (b, bb) = (d.b(), d.b() * d.b());
        let gv = grad_values(d, case.n, &case.x, &case.gy, &case.col).unwrap();
        let norms = block_grad_norms(d, &gv, &case.col).unwrap();
        prop_assert_eq!(norms.len(), d.slots());
        for (s, &got) in norms.iter().enumerate() {
            let blk = &gv[s * bb..(s + 1) * bb];
            let mut acc = 0.0f32;
            for &g in blk {
                acc = g.mul_add(g, acc);
            }
            let want = if case.col[s] < 0 { 0.0 } else { acc.sqrt() };
            prop_assert_eq!(got.to_bits(), want.to_bits());
            let exact = blk.iter().map(|&g| (g as f64) * (g as f64)).sum::<f64>().sqrt();
            let tol = bb as f64 * 2f64.powi(-24) * exact + 1e-30;
            prop_assert!((got as f64 - exact).abs() <= tol, "{got} vs {exact}");
        }

        // Activation norms: x has Inf only at unused blocks; check finite
        // blocks against f64 and all blocks against the stated order.
        let check = |a: &[f32], blocks: usize, got: &[f32]| -> Result<(), TestCaseError> {
            prop_assert_eq!(got.len(), blocks);
            let width = blocks * b;
            for (blk, &g) in got.iter().enumerate() {
                // N ≤ N_CHUNK here: one chain over (n, j) ascending.
                prop_assert!(case.n <= N_CHUNK);
                let terms = || (0..case.n * b).map(|t| a[(t / b) * width + blk * b + t % b]);
                let want = terms().fold(0.0f32, |acc, v| v.mul_add(v, acc)).sqrt();
                prop_assert_eq!(g.to_bits(), want.to_bits());
                let exact = terms().map(|v| v as f64 * v as f64).sum::<f64>().sqrt();
                if exact.is_finite() {
                    let tol = (case.n * b) as f64 * 2f64.powi(-24) * exact + 1e-30;
                    prop_assert!((g as f64 - exact).abs() <= tol, "{g} vs {exact}");
                } else {
                    prop_assert_eq!(g, f32::INFINITY);
                }
            }
            Ok(())
        };
        check(&case.x, d.c(), &input_block_norms(d, case.n, &case.x).unwrap())?;
        check(&case.gy, d.r(), &output_block_norms(d, case.n, &case.gy).unwrap())?;

        let mut scores: Vec<f32> = norms.iter().map(|v| v * 0.5 + 0.25).collect();
        let before = scores.clone();
        ema_update(&mut scores, &norms, decay).unwrap();
        for ((&s, &s0), &v) in scores.iter().zip(&before).zip(&norms) {
            prop_assert_eq!(s.to_bits(), decay.mul_add(s0, (1.0 - decay) * v).to_bits());
            let exact = decay as f64 * s0 as f64 + (1.0 - decay as f64) * v as f64;
            prop_assert!((s as f64 - exact).abs() <= 1e-6 * (s0.abs().max(v.abs()) as f64) + 1e-30);
        }
    }
}

// ---------------------------------------------------- the N-chunk tree

/// N = 600 spans three chunks; the host follows the tree, and the tree
/// differs from one long chain on a contrived input.
#[test]
fn grad_values_multi_chunk() {
    let n = 600;
    let mut case = case_from(8, n, 2, 3, 2, 7);
    case.col = vec![2, -1, 0, 1];
    case.x = Rng(1).values(n * case.dims.in_features());
    let dense = Dense::new(&case);
    let gv = grad_values(&case.dims, n, &case.x, &case.gy, &case.col).unwrap();
    let want = gv_from_dense(&case, &dense.grad_w(n, &case.x, &case.gy));
    assert!(same_bits(&gv, &want));
    let gb = grad_bias(&case.dims, n, &case.gy).unwrap();
    let fout = case.dims.out_features();
    for (o, g) in gb.iter().enumerate() {
        assert_eq!(
            g.to_bits(),
            tree(n, |row| (case.gy[row * fout + o], 1.0)).to_bits()
        );
    }

    // x = 1, gy = 2^24 at n = 0 and 1 elsewhere: a single chain stays at
    // 2^24; the tree adds the later chunks' partials (256 and 88).
    let dims = Dims::new(1, 1, 1, 8).unwrap();
    let x = vec![1.0f32; n * 8];
    let mut gy = vec![1.0f32; n * 8];
    gy[0] = 16_777_216.0;
    let gv = grad_values(&dims, n, &x, &gy, &[0]).unwrap();
    assert_eq!(gv[0], 16_777_216.0 + 344.0);
    assert_eq!(gv[8], 600.0); // i = 1: gy = 1 throughout
    assert_eq!(grad_bias(&dims, n, &gy).unwrap()[0], 16_777_216.0 + 344.0);

    // Input norms over 600 rows: chunks of 256 rows (256·B terms each).
    let x: Vec<f32> = Rng(3).values(n * 8);
    let got = input_block_norms(&dims, n, &x).unwrap()[0];
    let mut total = 0.0f32;
    for q in 0..n.div_ceil(N_CHUNK) {
        let mut acc = 0.0f32;
        for &v in &x[q * N_CHUNK * 8..(n.min((q + 1) * N_CHUNK)) * 8] {
            acc = v.mul_add(v, acc);
        }
        total = if q == 0 { acc } else { total + acc };
    }
    assert_eq!(got.to_bits(), total.sqrt().to_bits());
}

// ------------------------------------------------- finite differences

/// `loss = Σ gy·y` in f64 over the block-ELL structure.
fn loss64(case: &Case, x: &[f64], values: &[f64], bias: &[f64]) -> f64 {
    let d = case.dims;
    let (b, k) = (d.b(), d.k());
    let (fin, fout) = (d.in_features(), d.out_features());
    let mut loss = 0.0;
    for row in 0..case.n {
        for (o, &bias_o) in bias.iter().enumerate().take(fout) {
            let (r, i) = (o / b, o % b);
            let mut y = bias_o;
            for kk in 0..k {
                let c = case.col[r * k + kk];
                if c < 0 {
                    continue;
                }
                for j in 0..b {
                    y += values[((r * k + kk) * b + i) * b + j] * x[row * fin + c as usize * b + j];
                }
            }
            loss += case.gy[row * fout + o] as f64 * y;
        }
    }
    loss
}

#[test]
fn gradients_match_finite_differences() {
    for (seed, b) in [(11u64, 8usize), (12, 16), (13, 8), (14, 32)] {
        let mut case = case_from(b, 3, 3, 3, 2, seed);
        for v in case.values.iter_mut().chain(case.x.iter_mut()) {
            if !v.is_finite() {
                *v = 0.0;
            }
        }
        let d = case.dims;
        let bias = case
            .bias
            .clone()
            .unwrap_or_else(|| vec![0.0; d.out_features()]);
        let x64: Vec<f64> = case.x.iter().map(|&v| v as f64).collect();
        let v64: Vec<f64> = case.values.iter().map(|&v| v as f64).collect();
        let b64: Vec<f64> = bias.iter().map(|&v| v as f64).collect();
        let gx = grad_input(&d, case.n, &case.gy, &case.values, &case.col).unwrap();
        let gv = grad_values(&d, case.n, &case.x, &case.gy, &case.col).unwrap();
        let gb = grad_bias(&d, case.n, &case.gy).unwrap();
        // Magnitudes: the same gradients of |x|, |values|, |gy| bound the
        // f32 rounding (at most 96 terms per element here).
        let abs = |v: &[f32]| v.iter().map(|a| a.abs()).collect::<Vec<f32>>();
        let (ax, av, agy) = (abs(&case.x), abs(&case.values), abs(&case.gy));
        let mags = [
            grad_input(&d, case.n, &agy, &av, &case.col).unwrap(),
            grad_values(&d, case.n, &ax, &agy, &case.col).unwrap(),
            grad_bias(&d, case.n, &agy).unwrap(),
        ];
        let h = 1e-3;
        let fd = |which: usize, e: usize| {
            let (mut x, mut v, mut bi) = (x64.clone(), v64.clone(), b64.clone());
            let slot = match which {
                0 => &mut x[e],
                1 => &mut v[e],
                _ => &mut bi[e],
            };
            let base = *slot;
            *slot = base + h;
            let hi = (x.clone(), v.clone(), bi.clone());
            let slot = match which {
                0 => &mut x[e],
                1 => &mut v[e],
                _ => &mut bi[e],
            };
            *slot = base - h;
            (loss64(&case, &hi.0, &hi.1, &hi.2) - loss64(&case, &x, &v, &bi)) / (2.0 * h)
        };
        for (which, got) in [(0, &gx), (1, &gv), (2, &gb)] {
            for (e, &g) in got.iter().enumerate() {
                let want = fd(which, e);
                assert!(
                    (g as f64 - want).abs() <= 1e-5 * mags[which][e] as f64 + 1e-6,
                    "seed {seed}, grad {which}[{e}]: {g} vs finite difference {want}"
                );
            }
        }
    }
}

// -------------------------------------------------- sizes and errors

fn msg(e: Error) -> String {
    match e {
        Error::InvalidArgument(m) => m.to_string(),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

#[test]
fn degenerate_sizes() {
    // N = 0: empty activations, +0 gradients.
    let d = Dims::new(2, 2, 1, 8).unwrap();
    let values = vec![1.0; d.values_len()];
    let col = [1, -1];
    assert!(forward(&d, 0, &[], &values, &col, None).unwrap().is_empty());
    assert!(grad_input(&d, 0, &[], &values, &col).unwrap().is_empty());
    let gv = grad_values(&d, 0, &[], &[], &col).unwrap();
    assert!(gv.len() == d.values_len() && gv.iter().all(|v| v.to_bits() == 0));
    assert!(
        grad_bias(&d, 0, &[])
            .unwrap()
            .iter()
            .all(|v| v.to_bits() == 0)
    );
    assert!(
        input_block_norms(&d, 0, &[])
            .unwrap()
            .iter()
            .all(|v| v.to_bits() == 0)
    );
    // K = 0: no slots; y = +0 + bias, gx = +0.
    let d = Dims::new(2, 3, 0, 8).unwrap();
    let x = vec![f32::INFINITY; 2 * d.in_features()];
    let bias: Vec<f32> = (0..16).map(|i| i as f32 - 8.0).collect();
    let y = forward(&d, 2, &x, &[], &[], Some(&bias)).unwrap();
    assert_eq!(y, [bias.clone(), bias].concat());
    assert!(
        forward(&d, 2, &x, &[], &[], None)
            .unwrap()
            .iter()
            .all(|v| v.to_bits() == 0)
    );
    let gx = grad_input(&d, 2, &[1.0; 32], &[], &[]).unwrap();
    assert!(gx.len() == 48 && gx.iter().all(|v| v.to_bits() == 0));
    // R = 0 and C = 0: valid empty layers.
    let d = Dims::new(0, 3, 2, 16).unwrap();
    assert!(
        forward(&d, 4, &vec![1.0; 4 * 48], &[], &[], None)
            .unwrap()
            .is_empty()
    );
    assert_eq!(grad_input(&d, 4, &[], &[], &[]).unwrap(), vec![0.0; 4 * 48]);
    let d = Dims::new(2, 0, 1, 16).unwrap();
    let y = forward(&d, 3, &[], &vec![7.0; d.values_len()], &[-1, -1], None).unwrap();
    assert_eq!(y, vec![0.0; 3 * 32]);
    assert!(msg(validate(&d, &[0, -1]).unwrap_err()).contains("col[0,0] = 0"));
    assert!(
        to_dense(&d, &vec![0.0; d.values_len()], &[-1, -1])
            .unwrap()
            .is_empty()
    );
}

/// The cuSPARSE pitfall: an empty slot read as column 0 with zero values
/// would give 0·Inf = NaN here.
#[test]
fn empty_slot_is_skipped_not_zeroed() {
    let d = Dims::new(1, 2, 2, 8).unwrap();
    let mut values = vec![0.0f32; d.values_len()];
    values[..64].fill(0.5); // slot 0 (column block 1)
    let col = [1, -1];
    let mut x = vec![1.0f32; 16];
    x[..8].fill(f32::INFINITY); // column block 0: no slot
    let y = forward(&d, 1, &x, &values, &col, None).unwrap();
    assert_eq!(y, vec![4.0; 8]);
    let gx = grad_input(&d, 1, &[f32::INFINITY; 8], &values, &[-1, -1]).unwrap();
    assert!(gx.iter().all(|v| v.to_bits() == 0));
}

fn validate(d: &Dims, col: &[i32]) -> Result<(), Error> {
    block_ell::validate_col(d, col)
}

#[test]
fn errors_name_the_values() {
    assert!(msg(Dims::new(2, 2, 1, 24).unwrap_err()).contains("B = 24"));
    let d = Dims::new(2, 3, 2, 8).unwrap();
    let values = vec![0.0; d.values_len()];
    let col = [0, 2, 1, -1];
    let x = vec![0.0; 2 * 24];
    let gy = vec![0.0; 2 * 16];
    let e = msg(forward(&d, 2, &x[1..], &values, &col, None).unwrap_err());
    assert!(e.contains("x has 47 elements") && e.contains("= 48"), "{e}");
    let e = msg(forward(&d, 2, &x, &values[1..], &col, None).unwrap_err());
    assert!(e.contains("values has 255") && e.contains("= 256"), "{e}");
    let e = msg(forward(&d, 2, &x, &values, &col, Some(&[0.0; 15])).unwrap_err());
    assert!(e.contains("bias has 15") && e.contains("= 16"), "{e}");
    let e = msg(forward(&d, 2, &x, &values, &[0, 3, 1, -1], None).unwrap_err());
    assert!(e.contains("col[0,1] = 3") && e.contains("-1..3"), "{e}");
    let e = msg(grad_input(&d, 2, &gy, &values, &[0, 0, 1, -1]).unwrap_err());
    assert!(
        e.contains("column block 0 appears twice in block row 0"),
        "{e}"
    );
    let e = msg(grad_values(&d, 2, &x, &gy[2..], &col).unwrap_err());
    assert!(e.contains("gy has 30"), "{e}");
    let e = msg(grad_bias(&d, 3, &gy).unwrap_err());
    assert!(e.contains("gy has 32") && e.contains("= 48"), "{e}");
    let e = msg(forward(&d, usize::MAX, &x, &values, &col, None).unwrap_err());
    assert!(e.contains("overflows"), "{e}");
    let e = msg(TransposedIndex::build(&d, &[0, -7, 1, -1]).unwrap_err());
    assert!(e.contains("col[0,1] = -7"), "{e}");
    let e = msg(from_dense(2, 3, 8, &[0.0; 16 * 24], &[true; 5]).unwrap_err());
    assert!(e.contains("mask has 5") && e.contains("= 6"), "{e}");
    let e = msg(from_dense(2, 3, 8, &[0.0; 10], &[true; 6]).unwrap_err());
    assert!(e.contains("dense has 10") && e.contains("= 384"), "{e}");
    let e = msg(from_dense(2, 3, 7, &[], &[]).unwrap_err());
    assert!(e.contains("B = 7"), "{e}");
    let e = msg(retopology(&d, &values, &col, &[1, 1, -1], 1).unwrap_err());
    assert!(e.contains("new_col") && e.contains("3 elements"), "{e}");
    let e = msg(retopology(&d, &values, &col, &[1, 1, 2, 2], 2).unwrap_err());
    assert!(
        e.contains("new_col") && e.contains("column block 1 appears twice"),
        "{e}"
    );
    let e = msg(block_grad_norms(&d, &values[3..], &col).unwrap_err());
    assert!(e.contains("gv has 253"), "{e}");
    let e = msg(input_block_norms(&d, 1, &x).unwrap_err());
    assert!(e.contains("x has 48") && e.contains("= 24"), "{e}");
    let e = msg(output_block_norms(&d, 1, &x).unwrap_err());
    assert!(e.contains("gy has 48") && e.contains("= 16"), "{e}");
    let mut s = vec![0.0f32; 3];
    for bad in [f32::NAN, -0.5, 1.5, f32::INFINITY] {
        let e = msg(ema_update(&mut s, &[0.0; 3], bad).unwrap_err());
        assert!(e.contains(&format!("decay = {bad}")), "{e}");
    }
    let e = msg(ema_update(&mut s, &[0.0; 2], 0.5).unwrap_err());
    assert!(e.contains("values has 2") && e.contains("= 3"), "{e}");
    // An index built for other sizes is refused.
    let other = TransposedIndex::build(&Dims::new(2, 3, 2, 16).unwrap(), &col).unwrap();
    let e = msg(block_ell::host::grad_input_indexed(&d, 2, &gy, &values, &other).unwrap_err());
    assert!(e.contains("transposed index built for"), "{e}");
}
