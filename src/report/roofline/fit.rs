//! The roofline's counts: each problem's kernels simulated on its sample
//! shapes, their dynamic counts (PTX, FP32 and per region) fitted to the
//! problem's basis and extrapolated to the full size, and the full size's
//! launch sequence from a dry run.

use std::collections::BTreeMap;

use crate::dsl::params::ArgValue;
use crate::error::{Error, Result};
use crate::exec::LaunchConfig;
use crate::target::Sm;

use super::problems::{Problem, Shape};
use super::record::{Launch, Recorder};

/// Dynamic counts of one kernel entry summed over its launches.
#[derive(Debug, Clone, Default)]
struct Counts {
    ptx: f64,
    fp32: f64,
    mma: f64,
    /// L2 bytes ([`super::l2`]).
    l2: f64,
    /// Each launch's CTAs × its heaviest CTA's PTX count ([`Fit::heaviest`]).
    heaviest: f64,
    /// Each launch's warps × its heaviest warp's PTX count
    /// ([`Fit::heaviest_warp`]).
    heaviest_warp: f64,
    /// Each launch's CTAs × its critical path in clocks
    /// ([`Fit::critical_path`]).
    critical_path: f64,
    /// Per region ([`super::regions`]); empty when the launches' regions differ.
    regions: Vec<f64>,
    /// Whether the launches ran one module.
    one_module: bool,
}

/// Per kernel entry: counts summed over the launches of one run.
fn by_kernel(log: &[Launch]) -> BTreeMap<String, Counts> {
    let mut m: BTreeMap<String, Counts> = BTreeMap::new();
    for l in log {
        let first = log
            .iter()
            .find(|f| f.module.kernel == l.module.kernel)
            .expect("l is in the log");
        let c = m.entry(l.module.kernel.clone()).or_insert_with(|| Counts {
            regions: vec![0.0; first.regions.len()],
            one_module: true,
            ..Counts::default()
        });
        c.ptx += l.ptx as f64;
        c.fp32 += l.fp32 as f64;
        c.mma += l.mma as f64;
        c.l2 += l.l2 as f64;
        c.heaviest += l.heaviest as f64 * l.ctas() as f64;
        c.heaviest_warp += l.heaviest_warp as f64 * l.warps() as f64;
        c.critical_path += l.critical_path as f64 * l.ctas() as f64;
        c.one_module &= first.module.ptx == l.module.ptx;
        if c.one_module && c.regions.len() == l.regions.len() {
            for (a, &v) in c.regions.iter_mut().zip(&l.regions) {
                *a += v as f64;
            }
        } else {
            c.one_module = false;
        }
    }
    m
}

/// Solve `a · x = y` (small, dense) by Gaussian elimination with partial
/// pivoting on the column-scaled matrix (basis columns differ by many
/// orders of magnitude); `None` when singular.
fn solve(mut a: Vec<Vec<f64>>, mut y: Vec<f64>) -> Option<Vec<f64>> {
    let n = y.len();
    if a.len() != n || a.iter().any(|r| r.len() != n) {
        return None;
    }
    let scale: Vec<f64> = (0..n)
        .map(|j| a.iter().fold(0f64, |m, r| m.max(r[j].abs())))
        .collect();
    if scale.contains(&0.0) {
        return None;
    }
    for r in &mut a {
        for (v, s) in r.iter_mut().zip(&scale) {
            *v /= s;
        }
    }
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[p][c].abs() < 1e-9 {
            return None;
        }
        a.swap(c, p);
        y.swap(c, p);
        let (top, rest) = a.split_at_mut(c + 1);
        let pivot = &top[c];
        for (i, row) in rest.iter_mut().enumerate() {
            let f = row[c] / pivot[c];
            for (v, pv) in row[c..].iter_mut().zip(&pivot[c..]) {
                *v -= f * pv;
            }
            y[c + 1 + i] -= f * y[c];
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|k| a[r][k] * x[k]).sum();
        x[r] = (y[r] - s) / a[r][r];
    }
    Some(x.iter().zip(&scale).map(|(x, s)| x / s).collect())
}

/// The launches of `p` at `shape` on a recorder for `sm` with `sms` SMs.
fn record(p: &Problem, sm: Sm, sms: u32, shape: &Shape, simulate: bool) -> Result<Vec<Launch>> {
    let (ctx, log) = Recorder::context(sm, sms, simulate);
    let st = ctx.default_stream();
    (p.run)(&st, shape, !simulate)
        .map_err(|e| Error::invalid(format!("roofline: {} at {shape:?} on {sm}: {e}", p.name)))?;
    st.synchronize()?;
    drop(st);
    drop(ctx);
    let v = log.lock().expect("launch log poisoned").clone();
    Ok(v)
}

/// A kernel entry's dynamic counts as linear combinations of a problem's
/// basis (and, for problems with a capped sample, of the threads the
/// kernel launched): coefficients for PTX and FP32 instructions.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// Coefficients of the dynamic PTX count: one per basis term, plus a
    /// last one per launched thread when the problem has a capped sample
    /// (and that system was solvable).
    pub ptx: Vec<f64>,
    /// Coefficients of the FP32 math count, laid out as `ptx`.
    pub fp32: Vec<f64>,
    /// Coefficients of the warp-level MMA count (thread-instructions of
    /// `mma.*`), laid out as `ptx`: the tensor pipe's floor.
    pub mma: Vec<f64>,
    /// Coefficients of the L2 bytes ([`super::l2`]), laid out as `ptx`.
    pub l2: Vec<f64>,
    /// Coefficients, laid out as `ptx`, of the PTX count the launches
    /// would have were each of their CTAs as heavy as their heaviest
    /// (a launch's CTAs × its heaviest CTA's count, summed over the
    /// launches). Over the PTX count it gives the kernel's *skew*, the
    /// heaviest CTA over the mean ([`super::speed`]); fitted like the
    /// counts because it is one: where a launch's CTAs differ in kind
    /// (the joint HMM launch's forward and backward clusters), or by a
    /// ragged last CTA, it follows the basis as the total does.
    pub heaviest: Vec<f64>,
    /// Coefficients, laid out as `ptx`, of the PTX count the launches
    /// would have were each of their warps as heavy as their heaviest (a
    /// launch's warps × its heaviest warp's thread-instructions, summed
    /// over the launches): over the PTX count, the heaviest warp over the
    /// mean warp, a diagnostic of the latency where one warp of a CTA
    /// carries a dependent chain while the others wait (the HMM cluster
    /// recursions; `docs/perf.md`); the model does not use it (one chain
    /// at the mix's mean latency overcharges the warp's independent work).
    /// Fitted as [`Fit::heaviest`].
    pub heaviest_warp: Vec<f64>,
    /// Coefficients, laid out as `ptx`, of the launches' critical paths
    /// weighted by their CTAs (a launch's CTAs × its critical path in
    /// clocks, [`crate::sim::LaunchReport::critical_path`], summed over
    /// the launches): a count like the others, which follows the basis
    /// where the work does (the HMM: CTAs ∝ batch, path ∝ T); over the
    /// launches' CTAs, the mean launch's critical path
    /// ([`super::speed`], the latency term).
    pub critical_path: Vec<f64>,
    /// Coefficients of each region's dynamic PTX count ([`super::regions`]),
    /// laid out as `ptx`; empty when the samples ran several modules of
    /// the entry.
    pub regions: Vec<Vec<f64>>,
}

impl Fit {
    /// `(PTX, FP32)` instructions at basis values `b` with `threads`
    /// launched (ignored when the fit has no thread term).
    pub fn at(&self, b: &[f64], threads: f64) -> (f64, f64) {
        (dot(&self.ptx, b, threads), dot(&self.fp32, b, threads))
    }

    /// MMA thread-instructions at basis values `b` with `threads`
    /// launched.
    pub fn mma_at(&self, b: &[f64], threads: f64) -> f64 {
        dot(&self.mma, b, threads)
    }

    /// L2 bytes at basis values `b` with `threads` launched.
    pub fn l2_at(&self, b: &[f64], threads: f64) -> f64 {
        dot(&self.l2, b, threads)
    }

    /// [`Fit::heaviest`]'s count at basis values `b` with `threads`
    /// launched.
    pub fn heaviest_at(&self, b: &[f64], threads: f64) -> f64 {
        dot(&self.heaviest, b, threads)
    }

    /// [`Fit::heaviest_warp`]'s count at basis values `b` with `threads`
    /// launched.
    pub fn heaviest_warp_at(&self, b: &[f64], threads: f64) -> f64 {
        dot(&self.heaviest_warp, b, threads)
    }

    /// [`Fit::critical_path`]'s count at basis values `b` with `threads`
    /// launched.
    pub fn critical_path_at(&self, b: &[f64], threads: f64) -> f64 {
        dot(&self.critical_path, b, threads)
    }

    /// Each region's dynamic PTX count at basis values `b` with `threads`
    /// launched (empty without region coefficients).
    pub fn regions_at(&self, b: &[f64], threads: f64) -> Vec<f64> {
        self.regions.iter().map(|c| dot(c, b, threads)).collect()
    }
}

/// Coefficients `c` at basis values `b` (and `threads` for a last, thread
/// coefficient), at least 0.
fn dot(c: &[f64], b: &[f64], threads: f64) -> f64 {
    let t = if c.len() > b.len() {
        c[b.len()] * threads
    } else {
        0.0
    };
    (c.iter().zip(b).map(|(c, b)| c * b).sum::<f64>() + t).max(0.0)
}

/// Threads launched per kernel entry in a run.
fn threads_by_kernel(log: &[Launch], name: &str) -> f64 {
    log.iter()
        .filter(|l| l.module.kernel == name)
        .map(|l| {
            let (x, y, z) = l.cfg.block;
            l.ctas() as f64 * f64::from(x * y * z)
        })
        .sum()
}

/// The fitted counts of `p`'s kernels on `sm`, from simulated runs at its
/// sample shapes (grids sized for `sms` SMs, the capped sample's for its
/// own count), with the launches the samples made.
pub fn fit(p: &Problem, sm: Sm, sms: u32) -> Result<(BTreeMap<String, Fit>, Vec<Launch>)> {
    fit_memo(p, sm, sms, &mut SampleMemo::default())
}

/// A module's PTX without the lines that name its target (the generator's
/// comment, `.version`, `.target`): two SMs' modules with the same text
/// here execute the same instructions on the simulator.
fn target_free(ptx: &str) -> String {
    ptx.lines()
        .filter(|l| {
            let t = l.trim_start();
            !(t.starts_with(".version")
                || t.starts_with(".target")
                || t.starts_with("// Generated"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the simulator would see of a sample run: the sample shape (which
/// sets the data), and each launch's kernel, target-free module text,
/// configuration and arguments (pointers included: the dry allocator hands
/// out the same addresses for the same allocations), from a dry run.
type RunKey = (String, Vec<(String, String, LaunchConfig, Vec<ArgValue>)>);

/// Simulated sample runs of one problem on the SMs done so far, by their
/// [`RunKey`] ([`fit_memo`]).
#[derive(Default)]
pub struct SampleMemo(Vec<(RunKey, Vec<Launch>)>);

/// The simulated launches of `p` at `shape` on `sm` with `sms` SMs: a
/// run of another SM whose dry run launched the same kernels with the
/// same module text (but for the target lines) and configurations, its
/// launches relabelled with this SM's modules, else simulated now (and
/// remembered in `memo`). The counts are the same either way: the
/// simulator runs the same instructions on the same data.
fn sampled_run(
    p: &Problem,
    sm: Sm,
    sms: u32,
    shape: &Shape,
    memo: &mut SampleMemo,
) -> Result<Vec<Launch>> {
    let dry = record(p, sm, sms, shape, false)?;
    let key: RunKey = (
        format!("{shape:?}"),
        dry.iter()
            .map(|l| {
                (
                    l.module.kernel.clone(),
                    target_free(&l.module.ptx),
                    l.cfg,
                    l.args.clone(),
                )
            })
            .collect(),
    );
    if let Some((_, log)) = memo.0.iter().find(|(k, _)| *k == key) {
        let ours: BTreeMap<String, &Launch> = dry
            .iter()
            .map(|l| (target_free(&l.module.ptx), l))
            .collect();
        let relabelled: Option<Vec<Launch>> = log
            .iter()
            .map(|l| {
                ours.get(&target_free(&l.module.ptx)).map(|d| Launch {
                    module: d.module.clone(),
                    ..l.clone()
                })
            })
            .collect();
        if let Some(r) = relabelled {
            return Ok(r);
        }
    }
    let log = record(p, sm, sms, shape, true)?;
    memo.0.push((key, log.clone()));
    Ok(log)
}

/// [`fit`], reusing (and adding to) `memo`'s simulated runs of the same
/// problem on other SMs ([`sampled_run`]).
pub fn fit_memo(
    p: &Problem,
    sm: Sm,
    sms: u32,
    memo: &mut SampleMemo,
) -> Result<(BTreeMap<String, Fit>, Vec<Launch>)> {
    let fail = |msg: String| Error::invalid(format!("roofline: {}: {msg}", p.name));
    let mut runs: Vec<(Shape, u32)> = p.samples.iter().map(|s| (s.clone(), sms)).collect();
    if let Some((s, few)) = &p.capped {
        runs.push((s.clone(), *few));
    }
    let mut basis = Vec::new();
    let mut logs = Vec::new();
    for (s, n) in &runs {
        logs.push(sampled_run(p, sm, *n, s, memo)?);
        basis.push((p.basis)(s, sm, *n));
    }
    let launched: Vec<Launch> = logs.iter().flatten().cloned().collect();
    let names: std::collections::BTreeSet<&String> =
        launched.iter().map(|l| &l.module.kernel).collect();
    let nb = p.samples.len();
    let mut out = BTreeMap::new();
    for name in names {
        let counts: Vec<Counts> = logs
            .iter()
            .map(|l| by_kernel(l).remove(name).unwrap_or_default())
            .collect();
        // With the capped sample: the basis plus the kernel's launched
        // threads; where that system is singular (a kernel whose grid does
        // not follow the SM count), the basis alone on the other samples.
        let with_threads: Vec<Vec<f64>> = basis
            .iter()
            .zip(&logs)
            .map(|(b, l)| {
                let mut r = b.clone();
                r.push(threads_by_kernel(l, name));
                r
            })
            .collect();
        let solve_for = |f: &dyn Fn(&Counts) -> f64| -> Result<Vec<f64>> {
            let y: Vec<f64> = counts.iter().map(f).collect();
            if p.capped.is_some()
                && let Some(c) = solve(with_threads.clone(), y.clone())
            {
                return Ok(c);
            }
            solve(basis[..nb].to_vec(), y[..nb].to_vec()).ok_or_else(|| {
                fail(format!(
                    "the sample shapes do not determine the basis for {name}"
                ))
            })
        };
        // Regions: where every run of the entry ran one module (runs
        // without it count zeros).
        let modules: std::collections::BTreeSet<&str> = launched
            .iter()
            .filter(|l| &l.module.kernel == name)
            .map(|l| l.module.ptx.as_str())
            .collect();
        let nr = counts.iter().map(|c| c.regions.len()).max().unwrap_or(0);
        let regions = if modules.len() == 1
            && counts
                .iter()
                .all(|c| c.one_module && (c.regions.len() == nr || c.ptx == 0.0))
        {
            (0..nr)
                .map(|r| solve_for(&|c: &Counts| c.regions.get(r).copied().unwrap_or(0.0)))
                .collect::<Result<Vec<_>>>()
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        out.insert(
            name.clone(),
            Fit {
                ptx: solve_for(&|c| c.ptx)?,
                fp32: solve_for(&|c| c.fp32)?,
                mma: solve_for(&|c| c.mma)?,
                l2: solve_for(&|c| c.l2)?,
                heaviest: solve_for(&|c| c.heaviest)?,
                heaviest_warp: solve_for(&|c| c.heaviest_warp)?,
                critical_path: solve_for(&|c| c.critical_path)?,
                regions,
            },
        );
    }
    Ok((out, launched))
}

/// One kernel's counts on a check shape: `(PTX, FP32)` as the fit predicts
/// them and as the simulator ran them.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    /// The entry's name.
    pub kernel: String,
    /// `(PTX, FP32)` instructions the fit predicts.
    pub predicted: (f64, f64),
    /// `(PTX, FP32)` instructions the simulator executed.
    pub simulated: (f64, f64),
    /// [`Fit::heaviest`]'s count: `(predicted, simulated)`.
    pub heaviest: (f64, f64),
    /// [`Fit::heaviest_warp`]'s count: `(predicted, simulated)`.
    pub heaviest_warp: (f64, f64),
    /// [`Fit::critical_path`]'s count: `(predicted, simulated)`.
    pub critical_path: (f64, f64),
}

/// Predicted and simulated counts of `p`'s kernels at `shape` on `sm` with
/// `sms` SMs (for checking a problem's basis on a shape it was not fitted
/// on).
pub fn check_fit(p: &Problem, sm: Sm, sms: u32, shape: &Shape) -> Result<Vec<Predicted>> {
    let (fits, _) = fit(p, sm, sms)?;
    let log = record(p, sm, sms, shape, true)?;
    let b = (p.basis)(shape, sm, sms);
    Ok(by_kernel(&log)
        .into_iter()
        .map(|(k, c)| {
            let t = threads_by_kernel(&log, &k);
            Predicted {
                predicted: fits.get(&k).map_or((0.0, 0.0), |f| f.at(&b, t)),
                simulated: (c.ptx, c.fp32),
                heaviest: (
                    fits.get(&k).map_or(0.0, |f| f.heaviest_at(&b, t)),
                    c.heaviest,
                ),
                heaviest_warp: (
                    fits.get(&k).map_or(0.0, |f| f.heaviest_warp_at(&b, t)),
                    c.heaviest_warp,
                ),
                critical_path: (
                    fits.get(&k).map_or(0.0, |f| f.critical_path_at(&b, t)),
                    c.critical_path,
                ),
                kernel: k,
            }
        })
        .collect())
}

/// Record `p`'s full-size launches on `sm` with `sms` SMs (a dry run) and
/// check them against its traffic list: every launched kernel listed,
/// every listed kernel launched.
pub fn check_traffic(p: &Problem, sm: Sm, sms: u32) -> Result<Vec<Launch>> {
    let full = record(p, sm, sms, &p.full, false)?;
    let traffic = (p.traffic)(&p.full, sm);
    for l in &full {
        if !traffic.iter().any(|(k, _)| *k == l.module.kernel) {
            return Err(Error::invalid(format!(
                "roofline: {} launches {}, which its description in \
                 src/report/roofline/problems.rs does not list: update it",
                p.name, l.module.kernel
            )));
        }
    }
    for (k, _) in &traffic {
        if !full.iter().any(|l| &l.module.kernel == k) {
            return Err(Error::invalid(format!(
                "roofline: {} lists {k}, which its launch code no longer launches: \
                 update src/report/roofline/problems.rs",
                p.name
            )));
        }
    }
    Ok(full)
}

/// One kernel's extrapolated counts at the full size.
#[derive(Debug, Clone, Default)]
pub(super) struct Extrapolated {
    pub(super) ptx: f64,
    pub(super) fp32: f64,
    /// MMA thread-instructions ([`Fit::mma`]).
    pub(super) mma: f64,
    /// L2 bytes ([`super::l2`]).
    pub(super) l2: f64,
    /// [`Fit::heaviest`]'s count.
    pub(super) heaviest: f64,
    /// [`Fit::critical_path`]'s count.
    pub(super) critical_path: f64,
    /// Per region ([`super::regions`]); empty when not fitted.
    pub(super) regions: Vec<f64>,
}

/// Counts per kernel entry of `p`'s full-size launches `full` on `sm` with
/// `sms` SMs; fails naming the problem when a sample did not run one of
/// those modules (the extrapolation would be of another kernel).
pub(super) fn extrapolate(
    p: &Problem,
    sm: Sm,
    sms: u32,
    fits: &BTreeMap<String, Fit>,
    sampled: &[Launch],
    full: &[Launch],
) -> Result<BTreeMap<String, Extrapolated>> {
    let b = (p.basis)(&p.full, sm, sms);
    let mut out = BTreeMap::new();
    for l in full {
        let name = &l.module.kernel;
        if !sampled.iter().any(|s| s.module.ptx == l.module.ptx) {
            return Err(Error::invalid(format!(
                "roofline: {}: no sample shape runs the full size's {name} (tuning `{}`): \
                 choose samples that launch every kernel with the same module",
                p.name, l.module.tuning
            )));
        }
        let t = threads_by_kernel(full, name);
        let (ptx, fp32) = fits[name].at(&b, t);
        out.insert(
            name.clone(),
            Extrapolated {
                ptx,
                fp32,
                mma: fits[name].mma_at(&b, t),
                l2: fits[name].l2_at(&b, t),
                heaviest: fits[name].heaviest_at(&b, t),
                critical_path: fits[name].critical_path_at(&b, t),
                regions: fits[name].regions_at(&b, t),
            },
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solve_small_systems() {
        let x = solve(vec![vec![1.0, 2.0], vec![1.0, 3.0]], vec![5.0, 7.0]).unwrap();
        assert!((x[0] - 1.0).abs() < 1e-12 && (x[1] - 2.0).abs() < 1e-12);
        assert!(solve(vec![vec![1.0, 2.0], vec![2.0, 4.0]], vec![1.0, 2.0]).is_none());
        // Columns of very different magnitudes (a constant and an element
        // count).
        let x = solve(
            vec![vec![1.0, 65536.0], vec![1.0, 131072.0]],
            vec![10.0 + 7.0 * 65536.0, 10.0 + 7.0 * 131072.0],
        )
        .unwrap();
        assert!((x[0] - 10.0).abs() < 1e-6 && (x[1] - 7.0).abs() < 1e-12);
        assert!(solve(vec![vec![0.0, 1.0], vec![0.0, 2.0]], vec![1.0, 2.0]).is_none());
    }
}
