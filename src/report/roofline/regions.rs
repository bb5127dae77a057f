//! Per-loop SASS/PTX ratios weighted by each loop's dynamic count.
//!
//! A kernel's PTX is cut into *regions*: its innermost loops (a backward
//! branch's range that holds no other) in address order, and everything
//! else (*outside*). The simulator counts each PTX instruction's issues
//! ([`crate::sim::Sim::last_launch_counts`]); summed per region they give
//! each region's dynamic PTX count, which the roofline extrapolates to
//! the full size like the kernel's total.
//!
//! Each PTX loop is matched to its SASS loop by an order-preserving
//! alignment of the two lists of innermost loops ([`align`]): ptxas keeps
//! the loops' order, unrolls some (a main loop of `u` bodies and one or
//! two remainder loops, which the alignment skips: the main loop carries
//! nearly all the trips) and fully unrolls or adds others (skipped too).
//! A matched pair's ratio is the SASS loop's instructions over `u` times
//! the PTX loop's, `u` the loop's FP32 math (or `mma`) in SASS over that
//! in PTX, rounded (1 for a loop without FP32 math). The rest (the
//! outside region and the unmatched PTX loops, which ptxas unrolled into
//! straight code) takes the ratio of the SASS outside the matched SASS
//! loops (remainder loops included: a few trips each, straight code in
//! effect) over the PTX outside the matched PTX loops.
//!
//! The kernel's ratio is then `Σ count_r · ratio_r / Σ count_r`, and its
//! pipe mix the regions' mixes weighted by their SASS counts. The old rule
//! (the hottest loop's ratio for the whole kernel) moved the wrong way when
//! another loop became the hottest: `lcse_bwd` at six CTAs an SM.

use crate::report::pipes::PipeMix;
use crate::sim::Entry;
use crate::sim::ir::Op;

use super::record::is_fp32_math;

/// One innermost loop: its instructions, its FP32 math (and `mma` /
/// `HMMA`) instructions, and (SASS only) its instructions per pipe.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopSummary {
    /// Instructions in the loop.
    pub instructions: usize,
    /// FP32 math and matrix instructions in the loop.
    pub fp32: usize,
    /// Instructions per pipe (empty for a PTX loop).
    pub mix: PipeMix,
}

/// The innermost loops of `e` as instruction index ranges, in address
/// order.
pub(crate) fn ptx_innermost(e: &Entry) -> Vec<(usize, usize)> {
    let mut loops: Vec<(usize, usize)> = e
        .insts
        .iter()
        .enumerate()
        .filter_map(|(i, inst)| match inst.op {
            Op::Bra { target } | Op::BraUni { target, .. } if (target as usize) <= i => {
                Some((target as usize, i))
            }
            _ => None,
        })
        .collect();
    loops.sort_unstable();
    loops.dedup();
    loops
        .iter()
        .copied()
        .filter(|&(a, b)| {
            !loops
                .iter()
                .any(|&(c, d)| (c, d) != (a, b) && a <= c && d <= b)
        })
        .collect()
}

/// Whether instruction `i` of `e` is FP32 math or `mma` (the unit ptxas'
/// unroll factor is read from).
pub(crate) fn ptx_is_fp(e: &Entry, i: usize) -> bool {
    let op = &e.opcodes[usize::from(e.insts[i].opcode)];
    is_fp32_math(op) || op.split('.').next() == Some("mma")
}

/// The innermost loops of `e` summarised (no mix).
pub(crate) fn ptx_loops(e: &Entry) -> Vec<LoopSummary> {
    ptx_innermost(e)
        .into_iter()
        .map(|(a, b)| LoopSummary {
            instructions: b - a + 1,
            fp32: (a..=b).filter(|&i| ptx_is_fp(e, i)).count(),
            mix: PipeMix::default(),
        })
        .collect()
}

/// Dynamic counts per region of `e` from per-instruction counts `per_pc`:
/// one per innermost loop (address order), then the outside. Empty when
/// `per_pc` does not fit the entry.
pub(crate) fn region_counts(e: &Entry, per_pc: &[u64]) -> Vec<u64> {
    if per_pc.len() != e.insts.len() {
        return Vec::new();
    }
    let loops = ptx_innermost(e);
    let mut out: Vec<u64> = loops
        .iter()
        .map(|&(a, b)| per_pc[a..=b].iter().sum())
        .collect();
    let inside: u64 = out.iter().sum();
    out.push(per_pc.iter().sum::<u64>() - inside);
    out
}

/// A matched pair's unroll factor and cost, or `None` when the two cannot
/// be the same loop.
fn pair(p: &LoopSummary, s: &LoopSummary) -> Option<(u32, f64)> {
    if p.instructions == 0 || s.instructions == 0 || (p.fp32 == 0) != (s.fp32 == 0) {
        return None;
    }
    let (u, fp_miss) = if p.fp32 == 0 {
        (1.0, 0.0)
    } else {
        let q = s.fp32 as f64 / p.fp32 as f64;
        let u = q.round().max(1.0);
        (u, (q / u - 1.0).abs())
    };
    if fp_miss > 0.25 {
        return None;
    }
    let r = s.instructions as f64 / (u * p.instructions as f64);
    if !(0.2..=5.0).contains(&r) {
        return None;
    }
    // Prefer the unrolled main loop over its remainder (the main loop
    // carries nearly all the trips).
    Some((u as u32, r.ln().abs() + fp_miss - 0.3 * u.ln()))
}

/// Order-preserving alignment of PTX loops `ptx` with SASS loops `sass`
/// (module docs): for each PTX loop, the index of its SASS loop and the
/// unroll factor, or `None` when it has none.
pub fn align(ptx: &[LoopSummary], sass: &[LoopSummary]) -> Vec<Option<(usize, u32)>> {
    const SKIP_PTX: f64 = 2.0;
    const SKIP_SASS: f64 = 0.5;
    let (n, m) = (ptx.len(), sass.len());
    let mut cost = vec![vec![f64::INFINITY; m + 1]; n + 1];
    // 0: skip PTX, 1: skip SASS, 2: match.
    let mut from = vec![vec![0u8; m + 1]; n + 1];
    cost[0][0] = 0.0;
    for i in 0..=n {
        for j in 0..=m {
            let c = cost[i][j];
            if !c.is_finite() {
                continue;
            }
            if i < n && c + SKIP_PTX < cost[i + 1][j] {
                cost[i + 1][j] = c + SKIP_PTX;
                from[i + 1][j] = 0;
            }
            if j < m && c + SKIP_SASS < cost[i][j + 1] {
                cost[i][j + 1] = c + SKIP_SASS;
                from[i][j + 1] = 1;
            }
            if i < n
                && j < m
                && let Some((_, pc)) = pair(&ptx[i], &sass[j])
                && c + pc < cost[i + 1][j + 1]
            {
                cost[i + 1][j + 1] = c + pc;
                from[i + 1][j + 1] = 2;
            }
        }
    }
    let mut out = vec![None; n];
    let (mut i, mut j) = (n, m);
    while i > 0 || j > 0 {
        match from[i][j] {
            0 if i > 0 => i -= 1,
            1 if j > 0 => j -= 1,
            _ => {
                i -= 1;
                j -= 1;
                out[i] = pair(&ptx[i], &sass[j]).map(|(u, _)| (j, u));
            }
        }
    }
    out
}

/// The weighted SASS/PTX ratio and pipe mix of a kernel (module docs):
/// PTX loops `ptx` of a function of `ptx_total` instructions, SASS loops
/// `sass` of a function of `sass_total` instructions with mix `sass_mix`,
/// dynamic PTX counts `regions` (one per PTX loop, then the outside).
/// `None` when `regions` does not fit `ptx` or counts nothing.
pub fn weighted(
    ptx: &[LoopSummary],
    ptx_total: usize,
    sass: &[LoopSummary],
    sass_total: usize,
    sass_mix: &PipeMix,
    regions: &[f64],
) -> Option<(f64, PipeMix)> {
    if regions.len() != ptx.len() + 1 || regions.iter().sum::<f64>() <= 0.0 {
        return None;
    }
    let whole = sass_total as f64 / ptx_total.max(1) as f64;
    let matched = align(ptx, sass);
    // The rest: the PTX outside the matched loops (unmatched ones were
    // unrolled into straight code, or their SASS loop was not found)
    // against the SASS outside the matched loops (with ptxas' remainder
    // loops, a few trips each: straight code in effect).
    let ptx_rest = ptx_total.saturating_sub(
        (ptx.iter().zip(&matched))
            .filter(|(_, m)| m.is_some())
            .map(|(l, _)| l.instructions)
            .sum(),
    );
    let used: Vec<usize> = matched.iter().flatten().map(|&(j, _)| j).collect();
    let sass_rest =
        sass_total.saturating_sub(used.iter().map(|&j| sass[j].instructions).sum::<usize>());
    let mut rest_mix = *sass_mix;
    for &j in &used {
        for (o, v) in rest_mix.0.iter_mut().zip(sass[j].mix.0) {
            *o = (*o - v).max(0.0);
        }
    }
    let (rest_ratio, rest_mix) = if ptx_rest > 0 && sass_rest > 0 {
        (sass_rest as f64 / ptx_rest as f64, rest_mix)
    } else {
        (whole, *sass_mix)
    };
    let mut sass_count = 0.0;
    let mut mix = PipeMix::default();
    let mut add = |count: f64, ratio: f64, m: &PipeMix| {
        let s = count * ratio;
        sass_count += s;
        for (o, v) in mix.0.iter_mut().zip(m.scaled_to(s).0) {
            *o += v;
        }
    };
    for (i, p) in ptx.iter().enumerate() {
        match matched[i] {
            Some((j, u)) => add(
                regions[i],
                sass[j].instructions as f64 / (f64::from(u) * p.instructions as f64),
                &sass[j].mix,
            ),
            None => add(regions[i], rest_ratio, &rest_mix),
        }
    }
    add(regions[ptx.len()], rest_ratio, &rest_mix);
    let total: f64 = regions.iter().sum();
    Some((sass_count / total, mix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::pipes::Pipe;

    fn l(instructions: usize, fp32: usize) -> LoopSummary {
        LoopSummary {
            instructions,
            fp32,
            mix: PipeMix::default(),
        }
    }

    fn sl(instructions: usize, fp32: usize, pipe: Pipe) -> LoopSummary {
        let mut mix = PipeMix::default();
        mix.0[pipe as usize] = instructions as f64;
        LoopSummary {
            instructions,
            fp32,
            mix,
        }
    }

    #[test]
    fn alignment_skips_remainder_and_extra_loops() {
        // hmm_forward on sm_90 (pinned ptxas), PTX against SASS loops
        // (instructions/FP32): the 10/1 loop unrolled ×4 (26/4) with its
        // remainder (8/1), the 48/16 loop ×4 (105/64) with its remainder
        // (32/16), and an extra SASS loop (12/4) near the end.
        let ptx = [
            l(8, 0),
            l(10, 1),
            l(9, 1),
            l(92, 42),
            l(76, 33),
            l(12, 0),
            l(48, 16),
            l(67, 28),
            l(117, 62),
            l(76, 33),
            l(10, 1),
        ];
        let sass = [
            l(5, 0),
            l(26, 4),
            l(8, 1),
            l(7, 1),
            l(77, 40),
            l(61, 35),
            l(12, 0),
            l(105, 64),
            l(32, 16),
            l(58, 27),
            l(99, 63),
            l(62, 35),
            l(12, 4),
            l(6, 1),
        ];
        let a = align(&ptx, &sass);
        assert_eq!(
            a,
            vec![
                Some((0, 1)),
                Some((1, 4)),
                // 9/1 pairs with the closer 8/1 (the ×4 loop's remainder
                // or its own: alike, and a few trips either way).
                Some((2, 1)),
                Some((4, 1)),
                Some((5, 1)),
                Some((6, 1)),
                Some((7, 4)),
                Some((9, 1)),
                Some((10, 1)),
                Some((11, 1)),
                Some((13, 1)),
            ]
        );
        // A loop without FP32 math never pairs with one with it.
        assert_eq!(align(&[l(10, 0)], &[l(10, 2)]), vec![None]);
    }

    /// Two loops: A (10 PTX, SASS ratio 1.0, FP32 pipe) and B (20 PTX, 40
    /// SASS, ratio 2.0, ALU pipe, the most FP32 math: the old rule's hot
    /// loop), nothing outside them. The old rule gives 2.0 whatever runs;
    /// the weighted ratio follows the dynamic counts.
    #[test]
    fn the_busiest_loop_changing_moves_the_ratio_its_way() {
        let ptx = [l(10, 1), l(20, 2)];
        let sass = [sl(10, 1, Pipe::Fp32), sl(40, 2, Pipe::Alu)];
        let mut mix = PipeMix::default();
        mix.0[Pipe::Fp32 as usize] = 10.0;
        mix.0[Pipe::Alu as usize] = 40.0;
        // A busiest: 900 of A, 100 of B: (900 + 200) / 1000.
        let (r, m) = weighted(&ptx, 30, &sass, 50, &mix, &[900.0, 100.0, 0.0]).unwrap();
        assert!((r - 1.1).abs() < 1e-12, "{r}");
        assert!((m.get(Pipe::Fp32) - 900.0).abs() < 1e-9);
        assert!((m.get(Pipe::Alu) - 200.0).abs() < 1e-9);
        // B busiest: (100 + 1800) / 1000.
        let (r, _) = weighted(&ptx, 30, &sass, 50, &mix, &[100.0, 900.0, 0.0]).unwrap();
        assert!((r - 1.9).abs() < 1e-12, "{r}");
        // Outside the loops: 10 PTX, 15 SASS (ratio 1.5).
        let (r, _) = weighted(&ptx, 40, &sass, 65, &mix, &[0.0, 0.0, 100.0]).unwrap();
        assert!((r - 1.5).abs() < 1e-12, "{r}");
        // A PTX loop without a SASS loop (unrolled into straight code)
        // counts with the rest: with A alone matched, 40 - 10 PTX against
        // 65 - 10 SASS.
        let (r, _) = weighted(
            &[l(10, 1), l(20, 0)],
            40,
            &[sass[0].clone()],
            65,
            &mix,
            &[0.0, 100.0, 0.0],
        )
        .unwrap();
        assert!((r - 55.0 / 30.0).abs() < 1e-12, "{r}");
        // Regions that do not fit the loops: no figure.
        assert!(weighted(&ptx, 30, &sass, 50, &mix, &[1.0, 2.0]).is_none());
    }
}
