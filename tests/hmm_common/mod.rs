//! Shared by `tests/hmm*.rs`: test models, and an f64 forward-backward
//! over the same f32 inputs: log space with a per-step normalization
//! (every step's log-alpha and log-beta are shifted to maximum 0 and the
//! shifts summed apart, the large input maxima in their own sum), the
//! normalized log-weights and the sums in double-f64 (about 106 bits), so
//! that it stays exact at any length and at score magnitudes up to 1e30,
//! where differences of one f32 ulp (2^76) and O(1) decide the
//! posteriors. Independent of the library's formulation: log-sum-exp over
//! every term (no linear sums, no thresholds), f64 `exp`/`ln`.
#![allow(dead_code)]

pub mod by_hand;
pub mod recursions;

/// The reference for one sequence.
pub struct Ref {
    /// Log-likelihood (`−inf` for an impossible sequence), as a
    /// double-f64 `ll + ll_lo`.
    pub ll: f64,
    pub ll_lo: f64,
    /// `[L, S]` state posteriors.
    pub gamma: Vec<f64>,
    /// `[S, S]` expected transition counts.
    pub xi: Vec<f64>,
    /// `[L, S]` log-alpha and log-beta (normalized value plus the
    /// sum of the normalizers).
    pub log_alpha: Vec<f64>,
    pub log_beta: Vec<f64>,
}

/// `log Σ exp(v)`, `−inf` for an empty or all-`−inf` set.
pub fn lse64(v: impl Iterator<Item = f64> + Clone) -> f64 {
    let m = v.clone().fold(f64::NEG_INFINITY, f64::max);
    if m == f64::NEG_INFINITY {
        return m;
    }
    m + v.map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// A double-f64 value `h + l` (about 106 bits): the reference's
/// normalized log-weights, so that scores of magnitude 1e30 still keep
/// their O(1) differences.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dd {
    pub h: f64,
    pub l: f64,
}

impl Dd {
    pub const NEG_INF: Dd = Dd {
        h: f64::NEG_INFINITY,
        l: 0.0,
    };
    pub fn of(x: f64) -> Dd {
        Dd { h: x, l: 0.0 }
    }
    pub fn neg(self) -> Dd {
        Dd {
            h: -self.h,
            l: -self.l,
        }
    }
    pub fn value(self) -> f64 {
        self.h + self.l
    }
}

fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let z = s - a;
    (s, (a - (s - z)) + (b - z))
}

pub fn dadd(x: Dd, y: Dd) -> Dd {
    let (s, e) = two_sum(x.h, y.h);
    if !s.is_finite() {
        return Dd::of(s);
    }
    let (h, l) = two_sum(s, e + (x.l + y.l));
    Dd { h, l }
}

/// `x − m`, or `x` when `m` is `−inf`.
pub fn dsub(x: Dd, m: Dd) -> Dd {
    if m.h == f64::NEG_INFINITY {
        x
    } else {
        dadd(x, m.neg())
    }
}

pub fn dmax(v: impl Iterator<Item = Dd>) -> Dd {
    v.fold(Dd::NEG_INF, |a, b| {
        if b.h > a.h || (b.h == a.h && b.l > a.l) {
            b
        } else {
            a
        }
    })
}

/// `log Σ exp(v)` of double-f64 terms.
pub fn dlse(v: &[Dd]) -> Dd {
    let m = dmax(v.iter().copied());
    if m.h == f64::NEG_INFINITY {
        return m;
    }
    let sum: f64 = v.iter().map(|&x| dsub(x, m).value().exp()).sum();
    dadd(m, Dd::of(sum.ln()))
}

fn max64(v: impl Iterator<Item = f64>) -> f64 {
    v.fold(f64::NEG_INFINITY, f64::max)
}

/// The reference for one sequence: `lb` holds its `L` rows of `S`
/// emission scores.
pub fn reference(log_pi: &[f32], log_a: &[f32], lb: &[f32], s: usize) -> Ref {
    let l = lb.len() / s;
    let amax = max64(log_a.iter().map(|&x| f64::from(x)));
    // Transition scores relative to their maximum, exactly.
    let lat: Vec<Dd> = log_a
        .iter()
        .map(|&x| dsub(Dd::of(f64::from(x)), Dd::of(amax)))
        .collect();
    let mb: Vec<f64> = (0..l)
        .map(|t| max64(lb[t * s..(t + 1) * s].iter().map(|&x| f64::from(x))))
        .collect();
    let e = |t: usize, j: usize| dsub(Dd::of(f64::from(lb[t * s + j])), Dd::of(mb[t]));
    let normalize = |row: &mut [Dd]| -> Dd {
        let m = dmax(row.iter().copied());
        row.iter_mut().for_each(|x| *x = dsub(*x, m));
        m
    };
    // Large maxima and small normalizers summed apart, in double-f64.
    let (mut big, mut small, mut steps) = (Dd::default(), Dd::default(), Dd::default());
    let mut impossible = false;
    let mut alpha = vec![Dd::NEG_INF; l * s];
    let mpi = max64(log_pi.iter().map(|&x| f64::from(x)));
    for j in 0..s {
        alpha[j] = dadd(dsub(Dd::of(f64::from(log_pi[j])), Dd::of(mpi)), e(0, j));
    }
    big = dadd(dadd(big, Dd::of(mpi)), Dd::of(mb[0]));
    let n = normalize(&mut alpha[..s]);
    impossible |= n.h == f64::NEG_INFINITY;
    small = dadd(small, n);
    let mut cum_alpha = vec![dadd(dadd(big, steps), small); l];
    let mut terms = vec![Dd::NEG_INF; s];
    for t in 1..l {
        let (done, rest) = alpha.split_at_mut(t * s);
        let prev = &done[(t - 1) * s..];
        for j in 0..s {
            for i in 0..s {
                terms[i] = dadd(prev[i], lat[i * s + j]);
            }
            rest[j] = dadd(dlse(&terms), e(t, j));
        }
        let n = normalize(&mut rest[..s]);
        impossible |= n.h == f64::NEG_INFINITY;
        big = dadd(big, Dd::of(mb[t]));
        steps = dadd(steps, Dd::of(amax));
        small = dadd(small, n);
        cum_alpha[t] = dadd(dadd(big, steps), small);
    }
    let ll = dadd(dadd(dadd(big, steps), small), dlse(&alpha[(l - 1) * s..]));
    let mut beta = vec![Dd::default(); l * s];
    let (mut bbig, mut bsmall) = (Dd::default(), Dd::default());
    let mut cum_beta = vec![Dd::default(); l];
    for t in (0..l.saturating_sub(1)).rev() {
        let (cur, next) = beta.split_at_mut((t + 1) * s);
        let next = &next[..s];
        for i in 0..s {
            for j in 0..s {
                terms[j] = dadd(dadd(lat[i * s + j], e(t + 1, j)), next[j]);
            }
            cur[t * s + i] = dlse(&terms);
        }
        bsmall = dadd(bsmall, normalize(&mut cur[t * s..]));
        bbig = dadd(dadd(bbig, Dd::of(mb[t + 1])), Dd::of(amax));
        cum_beta[t] = dadd(bbig, bsmall);
    }
    let shifted = |v: &[Dd], cum: &[Dd]| -> Vec<f64> {
        (0..l * s)
            .map(|k| {
                let c = cum[k / s];
                (v[k].h + c.h) + (v[k].l + c.l)
            })
            .collect()
    };
    let log_alpha = shifted(&alpha, &cum_alpha);
    let log_beta = shifted(&beta, &cum_beta);
    let mut gamma = vec![0f64; l * s];
    for t in 0..l {
        let w: Vec<Dd> = (0..s)
            .map(|i| dadd(alpha[t * s + i], beta[t * s + i]))
            .collect();
        let n = dlse(&w);
        for i in 0..s {
            gamma[t * s + i] = if w[i].h == f64::NEG_INFINITY {
                0.0
            } else {
                dsub(w[i], n).value().exp()
            };
        }
    }
    let mut xi = vec![0f64; s * s];
    for t in 0..l.saturating_sub(1) {
        for i in 0..s {
            let g = gamma[t * s + i];
            if g == 0.0 {
                continue;
            }
            for j in 0..s {
                terms[j] = dadd(dadd(lat[i * s + j], e(t + 1, j)), beta[(t + 1) * s + j]);
            }
            let lq = dlse(&terms);
            for j in 0..s {
                xi[i * s + j] += g * dsub(terms[j], lq).value().exp();
            }
        }
    }
    let (ll, ll_lo) = if impossible {
        (f64::NEG_INFINITY, 0.0)
    } else {
        (ll.h, ll.l)
    };
    Ref {
        ll,
        ll_lo,
        gamma,
        xi,
        log_alpha,
        log_beta,
    }
}

/// Worst errors of one comparison, in the goals' units.
#[derive(Default, Clone, Copy, Debug)]
pub struct Errors {
    /// `|gamma − ref|`.
    pub gamma: f64,
    /// `|xi − ref| / (1 + ref)`.
    pub xi: f64,
    /// `|ll − ref| / max(1, |ref|)`.
    pub ll: f64,
}

impl Errors {
    pub fn max(self, o: Errors) -> Errors {
        Errors {
            gamma: self.gamma.max(o.gamma),
            xi: self.xi.max(o.xi),
            ll: self.ll.max(o.ll),
        }
    }
    /// The goals: gamma 1e-5, xi 1e-5 relative to `1 + ref`, ll 2e-6
    /// relative to `max(1, |ref|)`.
    pub fn within_goals(&self) -> bool {
        self.gamma <= 1e-5 && self.xi <= 1e-5 && self.ll <= 2e-6
    }
}

/// Compare one sequence's outputs (`gamma` its `[L, S]` rows, `xi` its
/// `[S, S]`) with the reference; panics with `what` on a non-finite value
/// where the reference is finite.
pub fn compare(r: &Ref, ll: f32, gamma: &[f32], xi: &[f32], what: &str) -> Errors {
    assert!(r.ll.is_finite(), "{what}: the reference is not finite");
    assert!(ll.is_finite(), "{what}: ll = {ll}, reference {}", r.ll);
    let mut e = Errors {
        ll: ((f64::from(ll) - r.ll) - r.ll_lo).abs() / r.ll.abs().max(1.0),
        ..Errors::default()
    };
    for (k, (&g, &w)) in gamma.iter().zip(&r.gamma).enumerate() {
        assert!(g.is_finite(), "{what}: gamma[{k}] = {g}, reference {w}");
        e.gamma = e.gamma.max((f64::from(g) - w).abs());
    }
    for (k, (&x, &w)) in xi.iter().zip(&r.xi).enumerate() {
        assert!(x.is_finite(), "{what}: xi[{k}] = {x}, reference {w}");
        e.xi = e.xi.max((f64::from(x) - w).abs() / (1.0 + w));
    }
    e
}

/// A batch and its model.
pub struct Model {
    pub pi: Vec<f32>,
    pub a: Vec<f32>,
    pub b: Vec<f32>,
    pub lengths: Vec<u32>,
    pub batch: usize,
    pub t: usize,
    pub s: usize,
}

impl Model {
    pub fn shape(&self) -> ptxsmith::kernels::hmm::Shape {
        ptxsmith::kernels::hmm::Shape::new(self.batch, self.t, self.s).unwrap()
    }
    pub fn inputs(&self) -> ptxsmith::kernels::hmm::Inputs<'_> {
        ptxsmith::kernels::hmm::Inputs {
            log_pi: &self.pi,
            log_a: &self.a,
            log_b: &self.b,
            lengths: &self.lengths,
        }
    }
    /// Emission rows `0..lengths[b]` of sequence `b`.
    pub fn rows(&self, b: usize) -> &[f32] {
        let base = b * self.t * self.s;
        &self.b[base..base + self.lengths[b] as usize * self.s]
    }
    /// The reference of sequence `b`.
    pub fn reference(&self, b: usize) -> Ref {
        reference(&self.pi, &self.a, self.rows(b), self.s)
    }
}

/// splitmix64.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let u = 1.0 - self.uniform();
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Gaps and holes in `m`, drawn from `r`: each transition `gap` with
/// chance 1/3, then in each emission row one state kept and every other
/// `−inf` with chance `holes` % (the fallback's test models).
pub fn gaps_and_holes(m: &mut Model, gap: f32, holes: usize, r: &mut Rng) {
    for x in m.a.iter_mut() {
        if r.below(3) == 0 {
            *x = gap;
        }
    }
    let s = m.s;
    for row in m.b.chunks_mut(s) {
        let keep = r.below(s);
        for (j, x) in row.iter_mut().enumerate() {
            if j != keep && r.below(100) < holes {
                *x = f32::NEG_INFINITY;
            }
        }
    }
}

fn norm_log(v: Vec<f64>) -> Vec<f32> {
    let z: f64 = v.iter().sum();
    v.iter().map(|x| (x / z).ln() as f32).collect()
}

/// The issue's model: a normalized HMM with random (mixing) transitions
/// and standard-normal emission log-probabilities; lengths `t`, and when
/// `ragged` also `t/2`, `min(t, 1)`, `t − 1`, … by sequence.
pub fn issue_model(batch: usize, t: usize, s: usize, seed: u64, ragged: bool) -> Model {
    let mut r = Rng(seed);
    let pi = norm_log((0..s).map(|_| r.uniform() + 0.05).collect());
    let mut a = Vec::with_capacity(s * s);
    for _ in 0..s {
        a.extend(norm_log((0..s).map(|_| r.uniform() + 0.05).collect()));
    }
    let b = (0..batch * t * s).map(|_| r.normal() as f32).collect();
    let lengths = (0..batch)
        .map(|i| match (ragged, i % 4) {
            (false, _) | (_, 0) => t as u32,
            (_, 1) => (t / 2) as u32,
            (_, 2) => t.min(1) as u32,
            _ => (t as u32).saturating_sub(1),
        })
        .collect();
    Model {
        pi,
        a,
        b,
        lengths,
        batch,
        t,
        s,
    }
}

/// The bits of each value, every NaN alike.
pub fn nan_bits(v: &[f32]) -> Vec<u32> {
    v.iter()
        .map(|f| if f.is_nan() { 0x7FC0_0000 } else { f.to_bits() })
        .collect()
}

/// Every output of `got` has the bits of `want`.
pub fn assert_same(
    got: &ptxsmith::kernels::hmm::Posteriors,
    want: &ptxsmith::kernels::hmm::Posteriors,
    what: &str,
) {
    let same = |a: &[f32], b: &[f32], name: &str| {
        let (a, b) = (nan_bits(a), nan_bits(b));
        if let Some(k) = (0..a.len().max(b.len())).find(|&k| a.get(k) != b.get(k)) {
            panic!(
                "{what}: {name}[{k}] differs: {:?} vs {:?} (bits; {} and {} elements)",
                a.get(k).map(|x| f32::from_bits(*x)),
                b.get(k).map(|x| f32::from_bits(*x)),
                a.len(),
                b.len()
            );
        }
    };
    same(&got.log_alpha, &want.log_alpha, "log_alpha");
    same(&got.log_beta, &want.log_beta, "log_beta");
    same(&got.log_likelihood, &want.log_likelihood, "ll");
    same(&got.gamma, &want.gamma, "gamma");
    same(&got.xi, &want.xi, "xi");
}

/// The host model's pass over `m`.
pub fn host_run(m: &Model) -> ptxsmith::kernels::hmm::Posteriors {
    ptxsmith::kernels::hmm::host::forward_backward(m.shape(), &m.inputs()).unwrap()
}

/// The whole pass over `m` on the simulator of each of `sms` has the host
/// model's bits.
pub fn same_on(m: &Model, sms: &[ptxsmith::Sm], what: &str) {
    let want = host_run(m);
    for &sm in sms {
        let st = ptxsmith::runtime::Context::sim(sm).default_stream();
        let got = ptxsmith::kernels::hmm::forward_backward_on(&st, m.shape(), &m.inputs()).unwrap();
        assert_same(&got, &want, &format!("{what} on {sm}"));
    }
}

/// `m` with its scores moved to magnitude `k` in one of several ways (the
/// f32 sums round; the reference sees the same rounded inputs).
pub fn at_magnitude(m: &Model, how: &str, k: f32, seed: u64) -> Model {
    let mut r = Rng(seed);
    let (t, s) = (m.t, m.s);
    let mut pi = m.pi.clone();
    let mut a = m.a.clone();
    let mut b = m.b.clone();
    let ulp = |x: f32| f32::from_bits(x.abs().to_bits() + 1) - x.abs();
    match how {
        // A per-step constant of random sign and size in [k, 2k).
        "emissions per-step ±k" => {
            for row in b.chunks_mut(s) {
                let kt = k * (1.0 + r.uniform() as f32) * if r.below(2) == 0 { 1.0 } else { -1.0 };
                row.iter_mut().for_each(|x| *x += kt);
            }
        }
        "emissions −k" => b.iter_mut().for_each(|x| *x -= k),
        "emissions +k" => b.iter_mut().for_each(|x| *x += k),
        "transitions −k" => a.iter_mut().for_each(|x| *x -= k),
        "transitions +k" => a.iter_mut().for_each(|x| *x += k),
        "log_pi ±k" => pi
            .iter_mut()
            .for_each(|x| *x += if r.below(2) == 0 { k } else { -k }),
        // Ties at the magnitude: K + n·ulp(K), n ∈ {0, 1, 2}.
        "ties at ±k" => {
            for row in b.chunks_mut(s) {
                let kt = k * (1.0 + r.uniform() as f32) * if r.below(2) == 0 { 1.0 } else { -1.0 };
                let u = ulp(kt);
                row.iter_mut().for_each(|x| *x = kt + u * r.below(3) as f32);
            }
            let ka = -k;
            a.iter_mut()
                .for_each(|x| *x = ka + ulp(ka) * r.below(3) as f32);
        }
        // Far outliers: 10 % of the emissions at −k·[1, 2).
        "outliers −k" => {
            for row in b.chunks_mut(s) {
                let keep = r.below(s);
                for (j, x) in row.iter_mut().enumerate() {
                    if j != keep && r.below(10) == 0 {
                        *x = -k * (1.0 + r.uniform() as f32);
                    }
                }
            }
        }
        "everything ±k" => {
            for row in b.chunks_mut(s) {
                let kt = k * (1.0 + r.uniform() as f32) * if r.below(2) == 0 { 1.0 } else { -1.0 };
                row.iter_mut().for_each(|x| *x += kt);
            }
            a.iter_mut().for_each(|x| *x += k);
            pi.iter_mut().for_each(|x| *x -= k);
        }
        _ => unreachable!("{how}"),
    }
    Model {
        pi,
        a,
        b,
        lengths: m.lengths.clone(),
        batch: m.batch,
        t,
        s,
    }
}

pub const MAGNITUDE_CASES: [&str; 9] = [
    "emissions per-step ±k",
    "emissions −k",
    "emissions +k",
    "transitions −k",
    "transitions +k",
    "log_pi ±k",
    "ties at ±k",
    "outliers −k",
    "everything ±k",
];

/// CRF scores: uniform in [−3, 3], then at magnitude `k` (a per-position
/// constant for the label scores, one for the transitions and one for the
/// start scores, each with ties at one ulp).
pub fn crf_scores(s: usize, t: usize, k: f32, seed: u64) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let mut r = Rng(seed);
    let ulp = |x: f32| f32::from_bits(x.abs().to_bits() + 1) - x.abs();
    let sc = |base: f32, r: &mut Rng| {
        let x = (r.uniform() * 6.0 - 3.0) as f32;
        if base == 0.0 {
            x
        } else {
            base + ulp(base) * r.below(3) as f32 + x
        }
    };
    let ks = if k == 0.0 { 0.0 } else { -k };
    let start = (0..s).map(|_| sc(ks, &mut r)).collect();
    let trans = (0..s * s).map(|_| sc(k, &mut r)).collect();
    let mut unary = Vec::new();
    for _ in 0..t {
        let kt = k * (1.0 + r.uniform() as f32) * if r.below(2) == 0 { 1.0 } else { -1.0 };
        unary.extend((0..s).map(|_| sc(kt, &mut r)).collect::<Vec<_>>());
    }
    (start, trans, unary)
}

/// `s` states in a ring: stay (log 0.9) or move on (`gap`); every
/// `dwell` steps the emissions allow only the next state, so the path must
/// take a `gap` transition, whose linear sum is exactly 0 (the shifted
/// transition `exp(gap − log 0.9)` underflows and the staying state is
/// impossible).
pub fn switching_model(
    batch: usize,
    t: usize,
    s: usize,
    gap: f32,
    dwell: usize,
    seed: u64,
) -> Model {
    let mut r = Rng(seed);
    let mut a = vec![f32::NEG_INFINITY; s * s];
    for i in 0..s {
        a[i * s + i] = 0.9f32.ln();
        a[i * s + (i + 1) % s] = gap;
    }
    let mut pi = vec![f32::NEG_INFINITY; s];
    pi[0] = 0.0;
    let mut b = vec![f32::NEG_INFINITY; batch * t * s];
    for seq in 0..batch {
        for tt in 0..t {
            let state = (tt / dwell) % s;
            b[(seq * t + tt) * s + state] = r.normal() as f32;
        }
    }
    Model {
        pi,
        a,
        b,
        lengths: (0..batch).map(|k| (t - k.min(t)) as u32).collect(),
        batch,
        t,
        s,
    }
}
