//! Theoretical occupancy from the target table, the model of NVIDIA's
//! occupancy calculator: how many CTAs of a kernel fit on one SM, and which
//! resource runs out first.
//!
//! * **Registers**: a warp's registers are allocated in units of 256, so a
//!   warp takes `ceil(regs · 32 / 256) · 256`; CTAs by registers =
//!   `floor(regs_per_sm / (that · warps_per_cta))`.
//! * **Shared memory**: a CTA takes its static + dynamic bytes rounded up
//!   to 128, plus the per-CTA reservation (1 KiB from sm_80 on); CTAs by
//!   shared memory = `floor(smem_per_sm / that)`.
//! * **Threads**: `floor(max_warps_per_sm / warps_per_cta)`.
//! * **CTA slots**: the SM's resident-CTA limit.
//!
//! One rule for the whole crate: the tuner's estimate
//! ([`tune::Estimate`](crate::tune::Estimate)) and the `report` feature's
//! tuning report and roofline both read it (without the feature too).

use std::fmt;

use crate::target::Sm;

/// Shared memory allocation granularity per CTA, in bytes.
pub const SMEM_ALLOC_UNIT: u32 = 128;
/// Register allocation granularity per warp.
pub const REG_ALLOC_UNIT: u32 = 256;

/// The resource that limits how many CTAs fit on an SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Limiter {
    /// The SM's register file.
    Registers,
    /// The SM's shared memory (with the per-CTA reservation).
    SharedMemory,
    /// The SM's resident-warp limit.
    Threads,
    /// The SM's resident-CTA limit.
    CtaSlots,
}

impl fmt::Display for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limiter::Registers => "registers",
            Limiter::SharedMemory => "shared memory",
            Limiter::Threads => "threads",
            Limiter::CtaSlots => "CTA slots",
        })
    }
}

/// How a kernel occupies one SM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occupancy {
    /// Resident CTAs per SM (0: the CTA does not fit at all).
    pub ctas_per_sm: u32,
    /// Resident warps per SM.
    pub warps_per_sm: u32,
    /// The SM's warp limit.
    pub max_warps_per_sm: u32,
    /// What limits `ctas_per_sm` (the first of registers, shared memory,
    /// threads, CTA slots that reaches the minimum).
    pub limiter: Limiter,
}

impl Occupancy {
    /// Occupancy of CTAs of `threads` threads with `regs` registers per
    /// thread (0: unknown, not limiting) and `smem` bytes of shared memory
    /// (static + dynamic) on `sm`: the same as [`occupancy`].
    pub fn of(sm: Sm, threads: u32, regs: u32, smem: u32) -> Occupancy {
        occupancy(sm, threads, regs, smem)
    }

    /// Resident warps as a share of the SM's maximum, in `[0, 1]`.
    pub fn fraction(&self) -> f64 {
        f64::from(self.warps_per_sm) / f64::from(self.max_warps_per_sm.max(1))
    }
}

/// Registers a warp of threads using `regs` registers each is allocated:
/// `regs · 32` rounded up to [`REG_ALLOC_UNIT`] (154 registers: 4 928 →
/// 5 120).
pub fn regs_per_warp(regs: u32) -> u32 {
    (regs * 32).div_ceil(REG_ALLOC_UNIT) * REG_ALLOC_UNIT
}

/// Occupancy of a CTA of `threads` threads using `regs` registers per
/// thread (0: unknown, not limiting) and `smem` bytes of shared memory (static + dynamic) on `sm`.
pub fn occupancy(sm: Sm, threads: u32, regs: u32, smem: u32) -> Occupancy {
    let info = sm.info();
    let max_warps = info.max_threads_per_sm / 32;
    let warps = threads.div_ceil(32).max(1);
    let by_regs = if regs == 0 {
        u32::MAX
    } else {
        info.regs_per_sm / (regs_per_warp(regs) * warps)
    };
    let per_cta = smem.div_ceil(SMEM_ALLOC_UNIT) * SMEM_ALLOC_UNIT + info.reserved_smem_per_cta;
    let by_smem = info.smem_per_sm.checked_div(per_cta).unwrap_or(u32::MAX);
    let by_threads = max_warps / warps;
    let limits = [
        (by_regs, Limiter::Registers),
        (by_smem, Limiter::SharedMemory),
        (by_threads, Limiter::Threads),
        (info.max_ctas_per_sm, Limiter::CtaSlots),
    ];
    let (ctas, limiter) = limits
        .into_iter()
        .min_by_key(|&(n, l)| (n, l))
        .expect("four limits");
    Occupancy {
        ctas_per_sm: ctas,
        warps_per_sm: ctas * warps,
        max_warps_per_sm: max_warps,
        limiter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_hand_computed_cases() {
        // 154 registers × 32 = 4 928, allocated in units of 256: 5 120 a
        // warp (not 4 992).
        assert_eq!(regs_per_warp(154), 5120);
        assert_eq!(regs_per_warp(152), 4864);
        assert_eq!(regs_per_warp(8), 256);
        // 256 threads × 154 registers: 5 120 registers a warp → 40 960 a
        // CTA, one CTA of 8 warps in 65 536 registers.
        let o = occupancy(Sm::Sm80, 256, 154, 0);
        assert_eq!(
            (o.ctas_per_sm, o.warps_per_sm, o.limiter),
            (1, 8, Limiter::Registers)
        );
        assert_eq!(o.max_warps_per_sm, 64);
        // Where the granularity decides: one warp of 154 registers a CTA,
        // 65 536 / 5 120 = 12 CTAs (4 992 a warp would give 13).
        let o = occupancy(Sm::Sm80, 32, 154, 0);
        assert_eq!((o.ctas_per_sm, o.limiter), (12, Limiter::Registers));
        // 256 threads × 32 registers, no shared memory: 8 CTAs by threads
        // (64 warps / 8), registers allow 8 too (1024 a warp): registers
        // come first in the tie.
        let o = occupancy(Sm::Sm80, 256, 32, 0);
        assert_eq!((o.ctas_per_sm, o.limiter), (8, Limiter::Registers));
        // 40 KiB of shared memory on sm_75 (64 KiB, no reservation): 1 CTA.
        let o = occupancy(Sm::Sm75, 256, 64, 40 * 1024);
        assert_eq!((o.ctas_per_sm, o.limiter), (1, Limiter::SharedMemory));
        // ... on sm_86 (100 KiB, 1 KiB reserved a CTA): 41 KiB a CTA → 2.
        let o = occupancy(Sm::Sm86, 256, 64, 40 * 1024);
        assert_eq!((o.ctas_per_sm, o.limiter), (2, Limiter::SharedMemory));
        // Small CTAs run into the CTA-slot limit: 32 threads, 16 registers.
        let o = occupancy(Sm::Sm75, 32, 16, 0);
        assert_eq!((o.ctas_per_sm, o.limiter), (16, Limiter::CtaSlots));
        assert!((o.fraction() - 0.5).abs() < 1e-12);
        // A CTA too big for the SM: 0.
        let o = occupancy(Sm::Sm75, 1024, 255, 0);
        assert_eq!((o.ctas_per_sm, o.limiter), (0, Limiter::Registers));
    }
}
