//! The speed estimate the tuner ranks candidates by when it cannot time
//! them: occupancy, an issue term and a memory term, available without the
//! `report` feature. See the [parent module](super) for the formula.

use std::collections::BTreeMap;

use crate::exec::{LaunchConfig, Traffic};
pub use crate::occupancy::Occupancy;

/// Warps resident per SM from which latency counts as hidden (a quarter
/// of the SM's warps); below it the cost grows as `1 / (4 · fraction)`.
pub const HIDING_FRACTION: f64 = 0.25;

/// One candidate's estimate on one SM, with what it was computed from.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Registers per thread from the pinned ptxas (`None`: ptxas not
    /// installed or it refused the module; registers then do not limit
    /// occupancy).
    pub registers: Option<u32>,
    /// Static shared memory per CTA from ptxas (0 when unknown), plus the
    /// launch's dynamic shared memory in [`occupancy`](Self::occupancy).
    pub shared_bytes: u32,
    /// The launch configurations the candidate's launch closure used.
    pub launches: Vec<LaunchConfig>,
    /// The lowest occupancy over those launches.
    pub occupancy: Option<Occupancy>,
    /// Dynamic instructions the simulator counted (per thread, summed).
    pub instructions: u64,
    /// Bytes of global memory the kernel's loads, stores and atomics moved
    /// on the simulator (from the opcode counts: width × vector length).
    pub global_bytes: u64,
    /// What crossed the bus on the candidate's stream (uploads, downloads,
    /// launches): the same for every candidate of a fair comparison.
    pub traffic: Traffic,
    /// The cost, in warp-issue slots: lower is faster (see the module
    /// docs).
    pub cost: f64,
}

/// Bytes one global-memory opcode moves per thread (`ld.global.v4.f32`:
/// 16), `None` for other opcodes.
pub(crate) fn global_access_bytes(opcode: &str) -> Option<u64> {
    let mut parts = opcode.split('.');
    let base = parts.next()?;
    if !matches!(base, "ld" | "st" | "atom" | "red") {
        return None;
    }
    let parts: Vec<&str> = parts.collect();
    if !parts.contains(&"global") {
        return None;
    }
    let vec = parts.iter().find_map(|p| match *p {
        "v2" => Some(2),
        "v4" => Some(4),
        "v8" => Some(8),
        _ => None,
    });
    let width = parts.iter().rev().find_map(|p| {
        let bits: u64 = p
            .strip_prefix(['b', 'u', 's', 'f'])
            .or_else(|| p.strip_prefix("bf"))?
            .parse()
            .ok()?;
        Some(bits / 8)
    })?;
    Some(width * vec.unwrap_or(1))
}

/// Global bytes moved by the opcode counts `per_opcode`.
pub(crate) fn global_bytes(per_opcode: &BTreeMap<String, u64>) -> u64 {
    per_opcode
        .iter()
        .filter_map(|(op, n)| global_access_bytes(op).map(|b| b * n))
        .sum()
}

/// The cost of the documented formula.
pub(crate) fn cost(instructions: u64, global_bytes: u64, occupancy: Option<&Occupancy>) -> f64 {
    let issue = instructions as f64 / 32.0;
    let memory = global_bytes as f64 / 32.0;
    let hiding = occupancy.map_or(1.0, |o| (o.fraction() / HIDING_FRACTION).min(1.0));
    if hiding <= 0.0 {
        return f64::INFINITY;
    }
    (issue + memory) / hiding
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::Sm;

    // The opcode widths are checked on the simulator's own opcode names
    // in tests/tune.rs (`global_bytes_count_widths_and_vectors`): PTX text
    // is spelled in the DSL only.

    #[test]
    fn occupancy_matches_the_calculator() {
        // 256 threads × 154 registers on sm_80: one CTA of 8 warps.
        let o = Occupancy::of(Sm::Sm80, 256, 154, 0);
        assert_eq!(
            (o.ctas_per_sm, o.warps_per_sm, o.max_warps_per_sm),
            (1, 8, 64)
        );
        // 256 threads × 32 registers: 8 CTAs, the SM full.
        assert_eq!(Occupancy::of(Sm::Sm80, 256, 32, 0).fraction(), 1.0);
        // Too much shared memory: nothing fits.
        assert_eq!(Occupancy::of(Sm::Sm80, 32, 0, 1 << 30).ctas_per_sm, 0);
    }

    #[test]
    fn cost_grows_below_the_hiding_fraction_only() {
        let full = Occupancy::of(Sm::Sm80, 256, 32, 0);
        let low = Occupancy::of(Sm::Sm80, 256, 154, 0); // 8 of 64 warps
        assert_eq!(cost(3200, 0, Some(&full)), 100.0);
        assert_eq!(cost(3200, 0, Some(&low)), 200.0);
        assert_eq!(cost(0, 320, None), 10.0);
        assert!(cost(1, 0, Some(&Occupancy::of(Sm::Sm80, 32, 0, 1 << 30))).is_infinite());
    }
}
