//! The SM targets ptxsmith generates code for, with what each one offers.
//!
//! Sources (see also `shared/reference/ptx-semantics.md` §9):
//! * PTX ISA 9.4, §11.1.2 (targets) and §13 Table 71/72 (ISA version per
//!   target, driver branch per ISA version, feature release history).
//! * CUDA C Programming Guide, "Compute Capabilities" table (shared memory
//!   per block with opt-in, registers, resident threads, FP32 lanes per SM).
//!
//! Every emitted module's `.version` is the **lowest** ISA that both the
//! target and the instructions it uses require ([`Sm::min_ptx`] joined with
//! [`Feature::min_ptx`]), so the module JIT-loads on the oldest driver that
//! supports the card.

use std::fmt;

use crate::error::{Error, Result};

/// A PTX ISA version, ordered (`7.8 < 8.1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PtxVersion {
    pub major: u8,
    pub minor: u8,
}

impl PtxVersion {
    pub const fn new(major: u8, minor: u8) -> Self {
        Self { major, minor }
    }

    /// The CUDA release and minimum driver branch that first accept this ISA
    /// (PTX ISA §13, Table 71). A module with `.version` X.Y needs a driver
    /// at least this new, because the JIT compiler lives in the driver.
    pub fn min_driver(self) -> (&'static str, &'static str) {
        match (self.major, self.minor) {
            (6, 0) => ("9.0", "r384"),
            (6, 1) => ("9.1", "r387"),
            (6, 2) => ("9.2", "r396"),
            (6, 3) => ("10.0", "r400"),
            (6, 4) => ("10.1", "r418"),
            (6, 5) => ("10.2", "r440"),
            (7, 0) => ("11.0", "r445"),
            (7, 1) => ("11.1", "r455"),
            (7, 2) => ("11.2", "r460"),
            (7, 3) => ("11.3", "r465"),
            (7, 4) => ("11.4", "r470"),
            (7, 5) => ("11.5", "r495"),
            (7, 6) => ("11.6", "r510"),
            (7, 7) => ("11.7", "r515"),
            (7, 8) => ("11.8", "r520"),
            (8, 0) => ("12.0", "r525"),
            (8, 1) => ("12.1", "r530"),
            (8, 2) => ("12.2", "r535"),
            (8, 3) => ("12.3", "r545"),
            (8, 4) => ("12.4", "r550"),
            (8, 5) => ("12.5", "r555"),
            (8, 6) => ("12.7", "r565"),
            (8, 7) => ("12.8", "r570"),
            (8, 8) => ("12.9", "r575"),
            _ => ("unknown", "unknown"),
        }
    }
}

impl fmt::Display for PtxVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A supported SM target (plain `sm_XY`, forward compatible through the
/// driver JIT: PTX for `sm_86` runs on an sm_89 card, for instance).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Sm {
    Sm70,
    Sm75,
    Sm80,
    Sm86,
    Sm89,
    Sm90,
    Sm100,
    Sm120,
}

/// Facts about one SM target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmInfo {
    /// Compute capability, e.g. (8, 0).
    pub cc: (u8, u8),
    /// The PTX ISA version that introduced the target (§11.1.2).
    pub ptx_introduced: PtxVersion,
    /// Largest dynamic shared memory one block may opt in to, in bytes.
    pub max_smem_per_block_optin: u32,
    /// Registers per SM (32-bit).
    pub regs_per_sm: u32,
    /// Maximum resident threads per SM.
    pub max_threads_per_sm: u32,
    /// FP32 lanes per SM (for peak-throughput estimates).
    pub fp32_lanes_per_sm: u32,
    /// Maximum resident CTAs (thread blocks) per SM.
    pub max_ctas_per_sm: u32,
    /// Shared memory per SM in bytes (the largest carve-out).
    pub smem_per_sm: u32,
    /// Shared memory the system reserves per resident CTA (1 KiB from
    /// sm_80 on), counted against the SM's shared memory.
    pub reserved_smem_per_cta: u32,
}

/// Static shared memory per block (`.shared` declarations) is capped at
/// 48 KiB on every plain target (PTX ISA §5.4.5); more needs dynamic shared
/// memory and an opt-in attribute.
pub const STATIC_SMEM_LIMIT: u32 = 48 * 1024;
/// Registers a thread may use on every supported target.
pub const MAX_REGS_PER_THREAD: u32 = 255;
/// Threads per block on every supported target.
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;

impl Sm {
    /// Every supported target, oldest first.
    pub const ALL: [Sm; 8] = [
        Sm::Sm70,
        Sm::Sm75,
        Sm::Sm80,
        Sm::Sm86,
        Sm::Sm89,
        Sm::Sm90,
        Sm::Sm100,
        Sm::Sm120,
    ];

    /// The `.target` name, e.g. `sm_80`.
    pub const fn name(self) -> &'static str {
        match self {
            Sm::Sm70 => "sm_70",
            Sm::Sm75 => "sm_75",
            Sm::Sm80 => "sm_80",
            Sm::Sm86 => "sm_86",
            Sm::Sm89 => "sm_89",
            Sm::Sm90 => "sm_90",
            Sm::Sm100 => "sm_100",
            Sm::Sm120 => "sm_120",
        }
    }

    /// The table row for this target.
    pub const fn info(self) -> SmInfo {
        // Occupancy columns (CTAs/SM, shared memory/SM, reserved per CTA):
        // CUDA C++ Programming Guide, "Technical Specifications per Compute
        // Capability" and the occupancy calculator's per-CC data.
        const fn row(
            cc: (u8, u8),
            ptx: (u8, u8),
            smem: u32,
            threads: u32,
            lanes: u32,
            occ: (u32, u32, u32),
        ) -> SmInfo {
            SmInfo {
                cc,
                ptx_introduced: PtxVersion::new(ptx.0, ptx.1),
                max_smem_per_block_optin: smem,
                regs_per_sm: 65536,
                max_threads_per_sm: threads,
                fp32_lanes_per_sm: lanes,
                max_ctas_per_sm: occ.0,
                smem_per_sm: occ.1,
                reserved_smem_per_cta: occ.2,
            }
        }
        const KIB: u32 = 1024;
        match self {
            Sm::Sm70 => row((7, 0), (6, 0), 98_304, 2048, 64, (32, 96 * KIB, 0)),
            Sm::Sm75 => row((7, 5), (6, 3), 65_536, 1024, 64, (16, 64 * KIB, 0)),
            Sm::Sm80 => row((8, 0), (7, 0), 166_912, 2048, 64, (32, 164 * KIB, KIB)),
            Sm::Sm86 => row((8, 6), (7, 1), 101_376, 1536, 128, (16, 100 * KIB, KIB)),
            Sm::Sm89 => row((8, 9), (7, 8), 101_376, 1536, 128, (24, 100 * KIB, KIB)),
            Sm::Sm90 => row((9, 0), (7, 8), 232_448, 2048, 128, (32, 228 * KIB, KIB)),
            Sm::Sm100 => row((10, 0), (8, 6), 232_448, 2048, 128, (32, 228 * KIB, KIB)),
            Sm::Sm120 => row((12, 0), (8, 7), 101_376, 1536, 128, (24, 100 * KIB, KIB)),
        }
    }

    /// The lowest PTX ISA version that knows this target.
    pub const fn min_ptx(self) -> PtxVersion {
        self.info().ptx_introduced
    }

    /// Whether this target has `feature`.
    pub fn supports(self, feature: Feature) -> bool {
        self >= feature.min_sm()
    }

    /// Parse `sm_80`, `80`, `sm80` or `8.0`.
    pub fn parse(s: &str) -> Result<Sm> {
        let t = s.trim().trim_start_matches("sm_").trim_start_matches("sm");
        let digits: String = t.chars().filter(|c| c.is_ascii_digit()).collect();
        Sm::ALL
            .into_iter()
            .find(|sm| sm.name()[3..] == digits)
            .ok_or_else(|| {
                Error::UnsupportedSm(format!(
                    "`{s}` (supported: {})",
                    Sm::ALL.map(Sm::name).join(", ")
                ))
            })
    }

    /// The matching `oxicuda-ptx` target, for code that mixes both DSLs.
    /// oxicuda-ptx has no sm_70, and its `.version` for sm_100 (8.5) is below
    /// what ptxas accepts (8.6): use [`Sm::min_ptx`], not its table.
    pub fn to_oxicuda(self) -> Option<oxicuda_ptx::arch::SmVersion> {
        use oxicuda_ptx::arch::SmVersion as O;
        Some(match self {
            Sm::Sm70 => return None,
            Sm::Sm75 => O::Sm75,
            Sm::Sm80 => O::Sm80,
            Sm::Sm86 => O::Sm86,
            Sm::Sm89 => O::Sm89,
            Sm::Sm90 => O::Sm90,
            Sm::Sm100 => O::Sm100,
            Sm::Sm120 => O::Sm120,
        })
    }

    /// The best target for a device of compute capability `major.minor`: the
    /// newest supported plain target not newer than the device (PTX for a
    /// plain target JIT-compiles for every later GPU). Errors below sm_70.
    pub fn for_compute_capability(major: u32, minor: u32) -> Result<Sm> {
        let cc = major * 10 + minor;
        Sm::ALL
            .into_iter()
            .rev()
            .find(|sm| {
                let (a, b) = sm.info().cc;
                u32::from(a) * 10 + u32::from(b) <= cc
            })
            .ok_or_else(|| {
                Error::UnsupportedSm(format!(
                    "compute capability {major}.{minor} is older than sm_70"
                ))
            })
    }
}

impl fmt::Display for Sm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An instruction family that not every target (or ISA version) has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Feature {
    /// `shfl.sync` / `vote.sync` (sm_30, PTX 6.0).
    WarpSync,
    /// `redux.sync` integer warp reductions (sm_80, PTX 7.0).
    Redux,
    /// `min/max.NaN.f32` (sm_80, PTX 7.0).
    MinMaxNaN,
    /// `cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32` and `cvt.rn.f16x2.{e4m3x2,e5m2x2}`
    /// (sm_89 with PTX 8.1; sm_90 with PTX 7.8).
    Fp8Cvt,
    /// `cvt.rn.bf16.f32` (sm_80, PTX 7.0).
    Bf16Cvt,
}

impl Feature {
    /// The oldest target with the feature.
    pub const fn min_sm(self) -> Sm {
        match self {
            Feature::WarpSync => Sm::Sm70,
            Feature::Redux | Feature::MinMaxNaN | Feature::Bf16Cvt => Sm::Sm80,
            Feature::Fp8Cvt => Sm::Sm89,
        }
    }

    /// The lowest ISA version that allows the feature on `sm` (which must
    /// support it). ptxas 12.9 rejects the FP8 cvt on sm_89 below ISA 8.1
    /// although sm_90 accepts it from 7.8.
    pub const fn min_ptx(self, sm: Sm) -> PtxVersion {
        match self {
            Feature::WarpSync => PtxVersion::new(6, 0),
            Feature::Redux | Feature::MinMaxNaN | Feature::Bf16Cvt => PtxVersion::new(7, 0),
            Feature::Fp8Cvt => match sm {
                Sm::Sm89 => PtxVersion::new(8, 1),
                _ => PtxVersion::new(7, 8),
            },
        }
    }

    /// "sm_89" style description of the requirement, for error messages.
    pub fn requirement(self) -> String {
        match self {
            Feature::Fp8Cvt => "sm_89 with PTX 8.1, or sm_90+ with PTX 7.8".to_string(),
            f => format!("{} and PTX {}", f.min_sm(), f.min_ptx(f.min_sm())),
        }
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Feature::WarpSync => "shfl.sync/vote.sync",
            Feature::Redux => "redux.sync",
            Feature::MinMaxNaN => "min/max.NaN",
            Feature::Fp8Cvt => "FP8 cvt (e4m3x2/e5m2x2)",
            Feature::Bf16Cvt => "bf16 cvt",
        };
        f.write_str(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_versions_are_the_documented_minimums() {
        let v = |sm: Sm| sm.min_ptx().to_string();
        assert_eq!(v(Sm::Sm70), "6.0");
        assert_eq!(v(Sm::Sm80), "7.0");
        assert_eq!(v(Sm::Sm89), "7.8");
        assert_eq!(v(Sm::Sm90), "7.8");
        assert_eq!(v(Sm::Sm100), "8.6");
        assert_eq!(v(Sm::Sm120), "8.7");
        assert_eq!(Feature::Fp8Cvt.min_ptx(Sm::Sm89).to_string(), "8.1");
        assert_eq!(Feature::Fp8Cvt.min_ptx(Sm::Sm90).to_string(), "7.8");
    }

    #[test]
    fn parse_and_device_mapping() {
        assert_eq!(Sm::parse("sm_80").unwrap(), Sm::Sm80);
        assert_eq!(Sm::parse("120").unwrap(), Sm::Sm120);
        assert!(matches!(Sm::parse("sm_61"), Err(Error::UnsupportedSm(m)) if m.contains("sm_61")));
        assert_eq!(Sm::for_compute_capability(8, 7).unwrap(), Sm::Sm86);
        assert_eq!(Sm::for_compute_capability(10, 3).unwrap(), Sm::Sm100);
        assert_eq!(Sm::for_compute_capability(12, 1).unwrap(), Sm::Sm120);
        assert_eq!(Sm::for_compute_capability(9, 0).unwrap(), Sm::Sm90);
        assert!(Sm::for_compute_capability(6, 1).is_err());
    }

    #[test]
    fn features_gate_by_sm() {
        assert!(!Sm::Sm86.supports(Feature::Fp8Cvt));
        assert!(Sm::Sm89.supports(Feature::Fp8Cvt));
        assert!(!Sm::Sm75.supports(Feature::Redux));
        assert!(Sm::Sm80.supports(Feature::Redux));
        for sm in Sm::ALL {
            for f in [Feature::WarpSync, Feature::Redux, Feature::Fp8Cvt] {
                if sm.supports(f) {
                    assert!(f.min_ptx(sm).max(sm.min_ptx()) >= sm.min_ptx());
                }
            }
        }
    }
}
