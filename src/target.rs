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
//!
//! # Plain and arch-specific targets
//!
//! A plain target (`sm_80`, `sm_100`, …) is forward compatible: its PTX
//! JIT-compiles for every later GPU. The arch-specific targets `sm_100a`
//! and `sm_120a` (PTX ISA §11.1.2) unlock instructions that only that exact
//! architecture has — here the block-scale conversions of
//! [`Feature::BlockScaleCvt`] (`cvt.rn.satfinite.e2m1x2.f32`,
//! `cvt.{rz,rp}.satfinite.ue8m0x2.f32` and their decodes) — and are **not**
//! forward compatible: PTX for `sm_100a` runs only on a device of compute
//! capability exactly 10.0, `sm_120a` only on exactly 12.0. Their table rows
//! (shared memory, registers, occupancy) are those of `sm_100` / `sm_120`;
//! their minimum `.version` is the same (8.6 / 8.7: measured with the pinned
//! ptxas 12.9, which rejects `sm_100a` at 8.5 and `sm_120a` at 8.6).
//!
//! [`Sm::for_compute_capability`] returns the arch-specific target for a
//! device of exactly that architecture (10.0 → `sm_100a`, 12.0 → `sm_120a`),
//! so the kernels use the hardware conversions there; every kernel assembles
//! for both (`tests/kernels_ptxas.rs`). Any other device gets the newest
//! *plain* target not newer than it (10.3 → `sm_100`, 12.1 → `sm_120`).
//!
//! The family targets `sm_100f` / `sm_120f` (forward compatible within
//! their family, so an sm_103 or sm_121 device could use the hardware
//! conversions too) need PTX 8.8 (CUDA 12.9, driver r575); ptxas 12.9
//! assembles the block-scale cvt forms for them. They are **not offered**
//! yet: each target multiplies every ptxas, simulator and tuning-report
//! sweep, and a family member other than 10.0 / 12.0 gets the integer
//! software path through its plain target, which is bit-identical. Adding
//! them means two rows here, [`Feature::BlockScaleCvt`]'s target list and
//! the family rule in [`Sm::runs_on`].

use std::fmt;

use crate::error::{Error, Result};

/// A PTX ISA version, ordered (`7.8 < 8.1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PtxVersion {
    /// Major version.
    pub major: u8,
    /// Minor version.
    pub minor: u8,
}

impl PtxVersion {
    /// `major.minor`.
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

/// A supported SM target: plain `sm_XY` (forward compatible through the
/// driver JIT: PTX for `sm_86` runs on an sm_89 card, for instance) or
/// arch-specific `sm_XYa` (that exact architecture only; see the module
/// docs).
///
/// The derived order is the table order (oldest first, each `a` target
/// right after its plain one); it is **not** a capability order — `sm_120`
/// sorts after `sm_100a` but lacks its instructions. Ask
/// [`Sm::supports`] for features and [`Sm::runs_on`] for devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Sm {
    /// `sm_70` (Volta: V100)
    Sm70,
    /// `sm_75` (Turing: T4, RTX 20)
    Sm75,
    /// `sm_80` (Ampere: A100)
    Sm80,
    /// `sm_86` (Ampere: RTX 30, A10, A40)
    Sm86,
    /// `sm_89` (Ada: L4, L40, RTX 40)
    Sm89,
    /// `sm_90` (Hopper: H100, H200)
    Sm90,
    /// `sm_100` (Blackwell: B200, forward compatible)
    Sm100,
    /// `sm_100a`: exactly compute capability 10.0 (B200 / GB200).
    Sm100a,
    /// `sm_120` (Blackwell: RTX 50, RTX PRO, forward compatible)
    Sm120,
    /// `sm_120a`: exactly compute capability 12.0 (RTX 50xx / RTX PRO 6000).
    Sm120a,
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
    /// Every supported target, oldest first (each arch-specific target
    /// right after its plain one).
    pub const ALL: [Sm; 10] = [
        Sm::Sm70,
        Sm::Sm75,
        Sm::Sm80,
        Sm::Sm86,
        Sm::Sm89,
        Sm::Sm90,
        Sm::Sm100,
        Sm::Sm100a,
        Sm::Sm120,
        Sm::Sm120a,
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
            Sm::Sm100a => "sm_100a",
            Sm::Sm120 => "sm_120",
            Sm::Sm120a => "sm_120a",
        }
    }

    /// Whether this is an arch-specific (`a`) target, which runs only on a
    /// device of exactly its compute capability.
    pub const fn is_arch_specific(self) -> bool {
        matches!(self, Sm::Sm100a | Sm::Sm120a)
    }

    /// The plain target with the same table row (`sm_100a` → `sm_100`;
    /// plain targets map to themselves).
    pub const fn plain(self) -> Sm {
        match self {
            Sm::Sm100a => Sm::Sm100,
            Sm::Sm120a => Sm::Sm120,
            s => s,
        }
    }

    /// Whether PTX for this target runs on a device of compute capability
    /// `major.minor`: a plain target on every device at least as new, an
    /// arch-specific one only on exactly its architecture (the rule of
    /// [`Sm::target_runs_on`]).
    pub fn runs_on(self, major: u32, minor: u32) -> bool {
        let (a, b) = self.info().cc;
        let own = u32::from(a) * 10 + u32::from(b);
        let suffix = self.is_arch_specific().then_some('a');
        // `minor.min(9)` keeps the order of `(major, minor)` pairs.
        let cc = major.saturating_mul(10).saturating_add(minor.min(9));
        Sm::target_runs_on((own, suffix), cc)
    }

    /// The one rule for which `.target` runs on which device (PTX ISA
    /// §11.1.2), for any target a PTX module may name, offered by
    /// ptxsmith or not: `target` is the `.target`'s number and suffix
    /// (`sm_100a` → `(100, Some('a'))`), `cc` the device's compute
    /// capability as a number (10.3 → 103). A plain target runs on every
    /// device at least as new, an `a` target only on exactly its
    /// architecture, an `f` target on its family (same major version) from
    /// its own on. [`Sm::runs_on`], the simulator and the driver emulator
    /// all ask this.
    ///
    /// ```
    /// use ptxsmith::Sm;
    /// assert!(Sm::target_runs_on((80, None), 90));
    /// assert!(!Sm::target_runs_on((100, Some('a')), 103));
    /// assert!(Sm::target_runs_on((100, Some('f')), 103));
    /// assert!(!Sm::target_runs_on((100, Some('f')), 120));
    /// ```
    pub fn target_runs_on(target: (u32, Option<char>), cc: u32) -> bool {
        let (sm, suffix) = target;
        match suffix {
            Some('a') => sm == cc,
            Some(_) => sm / 10 == cc / 10 && sm <= cc,
            None => sm <= cc,
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
            Sm::Sm100 | Sm::Sm100a => {
                row((10, 0), (8, 6), 232_448, 2048, 128, (32, 228 * KIB, KIB))
            }
            // Compute capability 12.0: 24 resident CTAs per SM, as 8.9.
            // NVIDIA documents the limit in the CUDA C++ Programming
            // Guide's "Technical Specifications per Compute Capability"
            // ("Maximum number of resident blocks per SM"); the figure was
            // checked with NVIDIA's pinned ptxas (12.9), which knows each
            // target's limit: `.minnctapersm 24` is accepted for sm_120 and
            // 25 refused ("Value of minnctapersm for entry k is out of
            // range"), as for sm_89, where sm_90 accepts 32 and sm_86 16
            // (the table's other rows).
            Sm::Sm120 | Sm::Sm120a => {
                row((12, 0), (8, 7), 101_376, 1536, 128, (24, 100 * KIB, KIB))
            }
        }
    }

    /// The lowest PTX ISA version that knows this target.
    pub const fn min_ptx(self) -> PtxVersion {
        self.info().ptx_introduced
    }

    /// Whether this target has `feature`: the arch-specific features only on
    /// their `a` targets, the others on every target whose compute
    /// capability is at least the feature's oldest target's.
    pub fn supports(self, feature: Feature) -> bool {
        match feature {
            Feature::BlockScaleCvt => self.is_arch_specific(),
            f => self.info().cc >= f.min_sm().info().cc,
        }
    }

    /// Parse `sm_80`, `80`, `sm80`, `8.0`, or with an `a` suffix for the
    /// arch-specific targets (`sm_100a`, `100a`).
    pub fn parse(s: &str) -> Result<Sm> {
        let t = s.trim().trim_start_matches("sm_").trim_start_matches("sm");
        let digits: String = t.chars().filter(|c| c.is_ascii_digit()).collect();
        let suffix = if t.ends_with('a') { "a" } else { "" };
        let want = format!("{digits}{suffix}");
        Sm::ALL
            .into_iter()
            .find(|sm| sm.name()[3..] == want)
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
    #[cfg(feature = "oxicuda-ptx")]
    #[cfg_attr(docsrs, doc(cfg(feature = "oxicuda-ptx")))]
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
            // oxicuda-ptx has no arch-specific targets
            Sm::Sm100a | Sm::Sm120a => return None,
        })
    }

    /// The best target for a device of compute capability `major.minor`: the
    /// arch-specific target of exactly that architecture if there is one
    /// (10.0 → `sm_100a`, 12.0 → `sm_120a`), else the newest supported plain
    /// target not newer than the device (PTX for a plain target
    /// JIT-compiles for every later GPU). Errors below sm_70.
    pub fn for_compute_capability(major: u32, minor: u32) -> Result<Sm> {
        Sm::ALL
            .into_iter()
            .rev()
            .find(|sm| sm.runs_on(major, minor))
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
#[non_exhaustive]
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
    /// `cvt.rn.bf16.f32` and `cvt.rn.bf16x2.f32` (sm_80, PTX 7.0).
    Bf16Cvt,
    /// `cvt.rn.f16x2.f32`: two f32 to a packed f16 pair (sm_80, PTX 7.0).
    F16x2Cvt,
    /// `cvt.rna.tf32.f32` (sm_80, PTX 7.0).
    Tf32Cvt,
    /// `mma.sync.aligned` `m16n8k16` with f16/bf16 and `m16n8k8` with tf32
    /// operands, f32 accumulators (sm_80, PTX 7.0).
    MmaSync,
    /// `ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16` (sm_75,
    /// PTX 6.5).
    Ldmatrix,
    /// `cp.async.{ca,cg}.shared.global`, `cp.async.commit_group`,
    /// `cp.async.wait_group`, `cp.async.wait_all` (sm_80, PTX 7.0).
    CpAsync,
    /// The block-scale conversions `cvt.rn.satfinite.e2m1x2.f32`,
    /// `cvt.{rz,rp}.satfinite.ue8m0x2.f32`, `cvt.rn.f16x2.e2m1x2` and
    /// `cvt.rn.bf16x2.ue8m0x2`: only the arch-specific targets `sm_100a`
    /// (PTX 8.6) and `sm_120a` (PTX 8.7). ptxas 12.9 refuses them on plain
    /// `sm_100`/`sm_120` and on `sm_90a` ("not supported on .target").
    BlockScaleCvt,
    /// Thread-block clusters and distributed shared memory (sm_90, PTX
    /// 7.8, as the PTX ISA's pages for each form say and ptxas 12.9
    /// confirms: "Feature 'mapa' requires .target sm_90 or higher"):
    /// `.reqnctapercluster`, the cluster
    /// special registers (`%cluster_ctarank`, `%clusterid`, …),
    /// `mapa.shared::cluster`, `ld`/`st.shared::cluster`,
    /// `barrier.cluster.arrive`/`wait` (default `.release`/`.acquire`
    /// semantics) and `fence.acq_rel.cluster`.
    Cluster,
    /// `barrier.cluster.arrive.relaxed` (sm_90, PTX 8.0: ptxas 12.9
    /// "Modifier '.relaxed' on 'barrier.cluster.arrive' requires PTX ISA
    /// .version 8.0 or later").
    ClusterRelaxed,
    /// Shared-memory barriers with transaction counts and bulk copies
    /// (sm_90, PTX 8.0; issue 31): `mbarrier.init`/`arrive`/
    /// `arrive.expect_tx`/`try_wait.parity` on `.shared::cta`,
    /// `fence.mbarrier_init.release.cluster`, `fence.proxy.async.shared::cta`
    /// and `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`
    /// with the optional `.multicast::cluster`. The PTX ISA's pages give
    /// the base `mbarrier` forms sm_80/PTX 7.0 (`.shared::cta` PTX 7.8) and
    /// `try_wait` sm_90/PTX 7.8, but `expect_tx`, the fences and
    /// `cp.async.bulk` need sm_90 and PTX 8.0 (ptxas 12.9: "Feature
    /// 'mbarrier.arrive.expect_tx' requires PTX ISA .version 8.0 or
    /// later", "Modifier '.mbarrier_init' requires .target sm_90 or
    /// higher"), and the DSL's barrier exists for the bulk copies, so the
    /// family is gated as one.
    BulkCopy,
    /// Tensor-map copies (`cp.async.bulk.tensor`, a tensor map's
    /// parameter address by `cvta.param`): sm_90, PTX ISA 8.0.
    TensorCopy,
    /// `elect.sync`: one leader of a warp's threads, sm_90, PTX ISA 8.0.
    Elect,
}

impl Feature {
    /// The oldest target with the feature. For [`Feature::BlockScaleCvt`]
    /// that is `sm_100a`, but later targets do not inherit it: only
    /// `sm_100a` and `sm_120a` have it (see [`Sm::supports`]).
    pub const fn min_sm(self) -> Sm {
        match self {
            Feature::WarpSync => Sm::Sm70,
            Feature::Ldmatrix => Sm::Sm75,
            Feature::Redux
            | Feature::MinMaxNaN
            | Feature::Bf16Cvt
            | Feature::F16x2Cvt
            | Feature::Tf32Cvt
            | Feature::MmaSync
            | Feature::CpAsync => Sm::Sm80,
            Feature::Fp8Cvt => Sm::Sm89,
            Feature::Cluster
            | Feature::ClusterRelaxed
            | Feature::BulkCopy
            | Feature::TensorCopy
            | Feature::Elect => Sm::Sm90,
            Feature::BlockScaleCvt => Sm::Sm100a,
        }
    }

    /// The lowest ISA version that allows the feature on `sm` (which must
    /// support it). ptxas 12.9 rejects the FP8 cvt on sm_89 below ISA 8.1
    /// although sm_90 accepts it from 7.8.
    pub const fn min_ptx(self, sm: Sm) -> PtxVersion {
        match self {
            Feature::WarpSync => PtxVersion::new(6, 0),
            Feature::Ldmatrix => PtxVersion::new(6, 5),
            Feature::Redux
            | Feature::MinMaxNaN
            | Feature::Bf16Cvt
            | Feature::F16x2Cvt
            | Feature::Tf32Cvt
            | Feature::MmaSync
            | Feature::CpAsync => PtxVersion::new(7, 0),
            Feature::Fp8Cvt => match sm {
                Sm::Sm89 => PtxVersion::new(8, 1),
                _ => PtxVersion::new(7, 8),
            },
            // ptxas 12.9: "Feature 'cvt with .e2m1x2' requires PTX ISA
            // .version 8.6 or later"; sm_120a itself needs 8.7.
            Feature::BlockScaleCvt => PtxVersion::new(8, 6),
            Feature::Cluster => PtxVersion::new(7, 8),
            Feature::ClusterRelaxed | Feature::BulkCopy | Feature::TensorCopy | Feature::Elect => {
                PtxVersion::new(8, 0)
            }
        }
    }

    /// "sm_89" style description of the requirement, for error messages.
    pub fn requirement(self) -> String {
        match self {
            Feature::Fp8Cvt => "sm_89 with PTX 8.1, or sm_90+ with PTX 7.8".to_string(),
            Feature::BlockScaleCvt => {
                "an arch-specific target: sm_100a (PTX 8.6) or sm_120a (PTX 8.7)".to_string()
            }
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
            Feature::F16x2Cvt => "f16x2 cvt",
            Feature::Tf32Cvt => "tf32 cvt",
            Feature::MmaSync => "tensor-core mma (f16/bf16/tf32)",
            Feature::Ldmatrix => "ldmatrix",
            Feature::CpAsync => "cp.async",
            Feature::BlockScaleCvt => "block-scale cvt (e2m1x2/ue8m0x2)",
            Feature::Cluster => "thread-block clusters (mapa, shared::cluster, cluster barriers)",
            Feature::ClusterRelaxed => "relaxed cluster barrier arrive",
            Feature::BulkCopy => "mbarrier transaction counts and bulk async copies (multicast)",
            Feature::TensorCopy => "tensor-map bulk copies (TMA)",
            Feature::Elect => "warp leader election (elect)",
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
        assert_eq!(v(Sm::Sm100a), "8.6");
        assert_eq!(v(Sm::Sm120a), "8.7");
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
        // arch-specific targets: exactly their architecture, nothing else
        assert_eq!(Sm::parse("sm_100a").unwrap(), Sm::Sm100a);
        assert_eq!(Sm::parse("120a").unwrap(), Sm::Sm120a);
        assert!(Sm::parse("sm_90a").is_err());
        assert_eq!(Sm::for_compute_capability(10, 0).unwrap(), Sm::Sm100a);
        assert_eq!(Sm::for_compute_capability(12, 0).unwrap(), Sm::Sm120a);
        assert_eq!(Sm::for_compute_capability(11, 0).unwrap(), Sm::Sm100);
        assert_eq!(Sm::for_compute_capability(13, 0).unwrap(), Sm::Sm120);
        assert!(Sm::Sm100a.runs_on(10, 0) && !Sm::Sm100a.runs_on(10, 3));
        assert!(!Sm::Sm100a.runs_on(12, 0) && !Sm::Sm120a.runs_on(12, 1));
        assert!(Sm::Sm100.runs_on(12, 0) && !Sm::Sm100.runs_on(9, 0));
        for sm in Sm::ALL {
            assert_eq!(Sm::parse(sm.name()).unwrap(), sm);
            assert_eq!(sm.plain().info(), sm.info());
            assert!(!sm.plain().is_arch_specific());
            let (a, b) = sm.info().cc;
            assert!(sm.runs_on(a.into(), b.into()), "{sm}");
            #[cfg(feature = "oxicuda-ptx")]
            assert_eq!(
                sm.to_oxicuda().is_none(),
                sm == Sm::Sm70 || sm.is_arch_specific()
            );
        }
    }

    #[test]
    fn features_gate_by_sm() {
        assert!(!Sm::Sm86.supports(Feature::Fp8Cvt));
        assert!(Sm::Sm89.supports(Feature::Fp8Cvt));
        assert!(!Sm::Sm75.supports(Feature::Redux));
        assert!(Sm::Sm80.supports(Feature::Redux));
        // only the `a` targets have the block-scale cvt; they have the rest
        let bs: Vec<Sm> = Sm::ALL
            .into_iter()
            .filter(|s| s.supports(Feature::BlockScaleCvt))
            .collect();
        assert_eq!(bs, [Sm::Sm100a, Sm::Sm120a]);
        for f in [Feature::Fp8Cvt, Feature::Redux, Feature::MinMaxNaN] {
            assert!(Sm::Sm100a.supports(f) && Sm::Sm120a.supports(f), "{f}");
        }
        assert!(Feature::BlockScaleCvt.requirement().contains("sm_100a"));
        assert!(!Sm::Sm70.supports(Feature::Ldmatrix) && Sm::Sm75.supports(Feature::Ldmatrix));
        assert!(!Sm::Sm75.supports(Feature::CpAsync) && Sm::Sm80.supports(Feature::CpAsync));
        assert_eq!(Feature::Ldmatrix.requirement(), "sm_75 and PTX 6.5");
        for sm in Sm::ALL {
            for f in [
                Feature::WarpSync,
                Feature::Redux,
                Feature::Fp8Cvt,
                Feature::BlockScaleCvt,
                Feature::Ldmatrix,
                Feature::CpAsync,
            ] {
                if sm.supports(f) {
                    assert!(f.min_ptx(sm).max(sm.min_ptx()) >= sm.min_ptx());
                }
            }
        }
    }
}
