//! The per-pipe speed model of one SM: which execution pipe each SASS
//! opcode issues to, how many lane-instructions a clock each pipe of each
//! target takes, and the issue time of a mix of instructions.
//!
//! # Pipes
//! The pipe names are Nsight Compute's ("Kernel Profiling Guide",
//! section "Pipelines", <https://docs.nvidia.com/nsight-compute/ProfilingGuide/>):
//! * [`Pipe::Fp32`]: `fma` (FP32 `FADD`/`FMUL`/`FFMA` and packed FP16
//!   `HADD2`/`HMUL2`/`HFMA2`), split into *fmaheavy* and *fmalite*;
//! * [`Pipe::Imad`]: integer multiply(-add) `IMAD`/`IMUL` (also the
//!   `IMAD.MOV`/`IMAD.SHL`/`IMAD.IADD` forms ptxas uses as moves and adds),
//!   which runs on *fmaheavy* only: it shares that half of the FP32 pipe;
//! * [`Pipe::Alu`]: integer add/logic/shift/compare/select, FP32 compare
//!   and min/max (`FSETP`, `FSEL`, `FMNMX`), moves, and on Ampere and
//!   later the packed conversions (`F2FP`, `I2FP`);
//! * [`Pipe::Xu`]: the transcendental and conversion unit (`MUFU`,
//!   `F2F`/`F2I`/`I2F`/`I2I`/`FRND`, `POPC`, `FLO`, `BREV`);
//! * [`Pipe::Fp64`]: double precision;
//! * [`Pipe::Lsu`]: loads, stores, atomics, shuffles and special-register
//!   reads (`LDG`, `STG`, `LDS`, `STS`, `SHFL`, `S2R`, …);
//! * [`Pipe::Tensor`]: `HMMA`/`IMMA`/`HGMMA`/… (the tensor-core
//!   block-ELL kernels issue `HMMA`, see *Tensor-core issue rate*);
//! * [`Pipe::Uniform`] (the uniform datapath, `U*` opcodes, `R2UR`,
//!   `S2UR`) and [`Pipe::Control`] (branches, barriers, `EXIT`, `NOP`):
//!   they take a dispatch slot but no vector pipe.
//!
//! # Rates (lane-instructions per SM per clock)
//! From the CUDA C++ Programming Guide's "Arithmetic Instructions"
//! throughput table ("Throughput of Native Arithmetic Instructions —
//! operations per clock cycle per multiprocessor",
//! <https://docs.nvidia.com/cuda/cuda-c-programming-guide/#arithmetic-instructions>),
//! per compute capability:
//! * 32-bit FP add/multiply/multiply-add: 64 on 7.0, 7.5, 8.0; 128 on 8.6,
//!   8.9, 9.0 (and 10.0, 12.0: 128 FP32 lanes per SM, the Blackwell
//!   whitepapers);
//! * 64-bit FP: 32 (7.0), 2 (7.5), 32 (8.0), 2 (8.6, 8.9), 64 (9.0; 10.0
//!   taken as 9.0), 2 (12.0);
//! * 32-bit integer add, compare, min/max, shift, logic: 64 (7.x–9.0);
//!   12.0: 128 (the RTX Blackwell whitepaper: every CUDA core of the SM
//!   executes FP32 or INT32, doubling Ada's INT32 rate), shared with FP32;
//! * 32-bit integer multiply(-add): 64 (7.x–9.0);
//! * reciprocal, rsqrt, log2, exp2, sine, cosine (`MUFU`): 16; type
//!   conversions other than 8/16-bit integer widening: 16; population
//!   count, leading zeros: 16;
//! * warp shuffle: 32.
//!
//! Loads and stores: 32 LD/ST units per SM (8 per processing block) on
//! Volta through Hopper (the Volta, Ampere and Hopper architecture
//! whitepapers' SM diagrams), so 32 lane-instructions a clock; shuffles
//! and special-register reads go through the same pipe (Nsight Compute's
//! `lsu`). Blackwell keeps the figure (not published separately: an
//! assumption).
//!
//! Tensor: dense FP16 multiply-add FLOP per SM per clock from the
//! published peaks (V100 125 TFLOP/s / (80 SMs × 1.53 GHz) = 1 024; T4 65
//! / (40 × 1.59) = 1 024; A100 312 / (108 × 1.41) = 2 048; A10 125 / (72 ×
//! 1.695) = 1 024; L40S 362 / (142 × 2.52) = 1 024; H100 SXM 989 / (132 ×
//! 1.83, the tensor clock) = 4 096; B200 2 250 / (148 × 1.86) = 8 192; RTX
//! 5090 419 (FP16 accumulate) / (170 × 2.41) = 1 024).
//!
//! # Tensor-core issue rate
//! A warp's `mma.sync.aligned.m16n8k16` (f16/bf16 → f32) is one SASS
//! `HMMA.16816` of 16 × 8 × 16 multiply-adds, 4 096 FLOP; an
//! `mma.sync.aligned.m16n8k8` (tf32 → f32) is one `HMMA.1688` of 2 048 FLOP.
//! The published dense TF32 peak is half the dense FP16/BF16 one on every
//! card from Ampere on (A100 156 of 312 TFLOP/s, A100 whitepaper table 1;
//! H100 SXM 494.7 of 989.4, H100 whitepaper table 2; L40S 183 of 362, L40S
//! datasheet; B200 1 100 of 2 250, Blackwell datasheet), so both
//! instructions issue at the **same** rate:
//! [`PipeRates::mma_per_clock`] = `tensor_flop` / 4 096 warp-instructions
//! per SM per clock (bf16 and f16 alike: the whitepapers list one
//! figure for both), i.e. 0.5 on sm_80 (A100: 2 048 FLOP/clk/SM), 1 on
//! sm_90 (H100: 4 096), 2 on sm_100, 0.25 on sm_86/sm_89. On sm_120 the
//! RTX 5090's FP32-accumulate rate is half its FP16-accumulate one (RTX
//! Blackwell whitepaper, appendix table: 209.5 against 419 dense FP16
//! TFLOP/s), and every kernel of this crate accumulates in FP32: 0.125
//! ([`PipeRates::tensor_f32_acc`]; sm_86's row is the A10's, which runs
//! FP32 accumulation at the full rate, unlike the RTX 3090).
//! The tensor pipe's lane rate for [`issue_clocks`] is that times 32
//! (one `HMMA` is 32 lane-instructions, like any warp instruction). The
//! rate is the published peak; `mma.sync` fed from registers is taken to
//! reach it (on sm_90 only `wgmma` is documented to reach the full peak:
//! an optimistic bound there). Volta's and Turing's `HMMA.884`/`HMMA.1688`
//! shapes differ; no kernel of this crate issues them.
//!
//! # Issue time of a mix
//! Each SM has four warp schedulers, each dispatching one warp instruction
//! a clock: at most 128 lane-instructions a clock in all (the *dispatch*
//! floor). Each pipe takes at most its rate. Pipes that share hardware
//! add up: FP32 and `IMAD` share *fmaheavy* (`(fp32 + imad) / fp32 rate`,
//! and `imad / 64`); on sm_86, sm_89 and sm_120 one FP32 datapath of each
//! processing block also executes the integer ALU instructions (GA102, AD102
//! and RTX Blackwell whitepapers: "16 FP32 + 16 FP32/INT32" per block), so
//! `(fp32 + alu) / 128` binds too (with those rates at 128 the shared
//! terms equal the dispatch floor on every target but sm_70, sm_75 and
//! sm_80, whose FP32 pipe takes 64; they are kept so that the table stays
//! right where the rates differ). Ties go to dispatch. The SM's clocks for
//! a mix are the
//! **maximum** of those terms ([`issue_clocks`]): pipes run in parallel
//! once dispatched, and dispatch is the one shared port. This is a
//! throughput bound: it assumes enough independent warps to keep every
//! pipe fed (see the roofline's latency term for the kernels where that
//! fails).

use std::fmt;

use crate::nvtools::SassInstr;
use crate::target::Sm;

/// An execution pipe of the SM (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pipe {
    /// FP32 add/multiply/multiply-add (and packed FP16).
    Fp32,
    /// Integer multiply(-add), on the FP32 pipe's heavy half.
    Imad,
    /// Integer and logic, FP32 compare/select/min/max, moves.
    Alu,
    /// Transcendentals, conversions, bit counts.
    Xu,
    /// Double precision.
    Fp64,
    /// Loads, stores, atomics, shuffles, special registers.
    Lsu,
    /// Matrix instructions.
    Tensor,
    /// The uniform datapath (dispatch slot only).
    Uniform,
    /// Branches, barriers, exits (dispatch slot only).
    Control,
}

impl Pipe {
    /// Every pipe, in [`PipeMix`]'s order.
    pub const ALL: [Pipe; 9] = [
        Pipe::Fp32,
        Pipe::Imad,
        Pipe::Alu,
        Pipe::Xu,
        Pipe::Fp64,
        Pipe::Lsu,
        Pipe::Tensor,
        Pipe::Uniform,
        Pipe::Control,
    ];

    /// Short name for the report.
    pub const fn name(self) -> &'static str {
        match self {
            Pipe::Fp32 => "fp32",
            Pipe::Imad => "imad",
            Pipe::Alu => "alu",
            Pipe::Xu => "xu",
            Pipe::Fp64 => "fp64",
            Pipe::Lsu => "lsu",
            Pipe::Tensor => "tensor",
            Pipe::Uniform => "uniform",
            Pipe::Control => "control",
        }
    }
}

impl fmt::Display for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The pipe of a SASS opcode (its base, before the first `.`: `IMAD` of
/// `IMAD.MOV.U32`). Opcodes the table does not name go to [`Pipe::Alu`],
/// the most common vector pipe (a conservative choice: half the FP32 rate).
pub fn classify(opcode: &str) -> Pipe {
    let base = opcode.split('.').next().unwrap_or(opcode);
    match base {
        "FADD" | "FMUL" | "FFMA" | "FADD32I" | "FMUL32I" | "FFMA32I" | "HADD2" | "HMUL2"
        | "HFMA2" | "FSWZADD" => Pipe::Fp32,
        "IMAD" | "IMUL" | "IMAD32I" | "IMUL32I" | "IDP" | "IDP4A" => Pipe::Imad,
        "MUFU" | "F2F" | "F2I" | "I2F" | "I2I" | "FRND" | "POPC" | "FLO" | "BREV" => Pipe::Xu,
        "DADD" | "DMUL" | "DFMA" | "DSETP" | "DMNMX" | "DSET" => Pipe::Fp64,
        "LDG" | "STG" | "LDS" | "STS" | "LD" | "ST" | "LDL" | "STL" | "LDC" | "ATOM" | "ATOMG"
        | "ATOMS" | "RED" | "REDG" | "REDUX" | "LDSM" | "STSM" | "LDGSTS" | "SHFL" | "S2R"
        | "MATCH" | "SUST" | "SULD" | "TEX" | "TLD" => Pipe::Lsu,
        "HMMA" | "IMMA" | "DMMA" | "BMMA" | "HGMMA" | "IGMMA" | "QGMMA" | "BGMMA" | "UTCHMMA"
        | "UTCQMMA" | "UTCIMMA" | "UTCMMA" | "OMMA" | "QMMA" => Pipe::Tensor,
        "BRA" | "BRX" | "JMP" | "JMX" | "CALL" | "RET" | "EXIT" | "BSSY" | "BSYNC" | "BREAK"
        | "BAR" | "BMOV" | "WARPSYNC" | "NOP" | "YIELD" | "BPT" | "DEPBAR" | "MEMBAR"
        | "ERRBAR" | "CCTL" | "FENCE" | "KILL" | "WARPGROUP" | "ELECT" | "ACQBULK" | "SYNCS"
        | "ARRIVES" => Pipe::Control,
        "R2UR" | "S2UR" | "REDUX_U" => Pipe::Uniform,
        b if b.starts_with('U') => Pipe::Uniform,
        _ => Pipe::Alu,
    }
}

/// Lane-instructions per SM per clock of each pipe on one target (see
/// the [module docs](self) for the sources).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PipeRates {
    /// Dispatch: 4 schedulers × 32 lanes.
    pub dispatch: f64,
    /// FP32 add/multiply/multiply-add.
    pub fp32: f64,
    /// Integer multiply(-add) (on the FP32 pipe's heavy half).
    pub imad: f64,
    /// Integer/logic ALU.
    pub alu: f64,
    /// `MUFU`, conversions, bit counts.
    pub xu: f64,
    /// Double precision.
    pub fp64: f64,
    /// Loads, stores, shuffles.
    pub lsu: f64,
    /// Dense FP16 tensor FLOP per SM per clock (not a lane rate).
    pub tensor_flop: f64,
    /// The FP32-accumulate tensor rate as a share of `tensor_flop`: 0.5
    /// on sm_120 (the RTX 5090, whose `tensor_flop` is the
    /// FP16-accumulate figure), 1 elsewhere.
    pub tensor_f32_acc: f64,
    /// Whether the integer ALU shares a datapath with FP32 (sm_86, sm_89,
    /// sm_120): `fp32 + alu` is then bound by the FP32 rate too.
    pub alu_shares_fp32: bool,
}

/// A warp-level `mma.sync` shape of this crate's tensor-core kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MmaShape {
    /// `m16n8k16` with f16 or bf16 inputs, f32 accumulators (`HMMA.16816`).
    M16n8k16,
    /// `m16n8k8` with tf32 inputs, f32 accumulators (`HMMA.1688`).
    M16n8k8Tf32,
}

impl MmaShape {
    /// Multiply-adds of one warp instruction (`m × n × k`).
    pub const fn macs(self) -> f64 {
        match self {
            MmaShape::M16n8k16 => 16.0 * 8.0 * 16.0,
            MmaShape::M16n8k8Tf32 => 16.0 * 8.0 * 8.0,
        }
    }

    /// The shape's dense peak as a share of the FP16 one (TF32 half, see
    /// the [module docs](self)).
    pub const fn peak_share(self) -> f64 {
        match self {
            MmaShape::M16n8k16 => 1.0,
            MmaShape::M16n8k8Tf32 => 0.5,
        }
    }
}

impl PipeRates {
    /// Warp `mma.sync` instructions of `shape` (f32 accumulate) one SM
    /// issues per clock at the published dense peak (module docs,
    /// *Tensor-core issue rate*).
    pub fn mma_per_clock(&self, shape: MmaShape) -> f64 {
        self.tensor_flop * self.tensor_f32_acc * shape.peak_share() / (2.0 * shape.macs())
    }

    /// Tensor-pipe lane-instructions per SM per clock (32 per `HMMA`;
    /// both shapes issue at the same rate).
    pub fn tensor_lanes(&self) -> f64 {
        32.0 * self.mma_per_clock(MmaShape::M16n8k16)
    }
}

impl PipeRates {
    /// The rates of `sm` (module docs).
    pub const fn of(sm: Sm) -> PipeRates {
        const fn r(
            fp32: f64,
            alu: f64,
            fp64: f64,
            tensor_flop: f64,
            alu_shares_fp32: bool,
        ) -> PipeRates {
            PipeRates {
                dispatch: 128.0,
                fp32,
                imad: 64.0,
                alu,
                xu: 16.0,
                fp64,
                lsu: 32.0,
                tensor_flop,
                tensor_f32_acc: 1.0,
                alu_shares_fp32,
            }
        }
        match sm {
            Sm::Sm70 => r(64.0, 64.0, 32.0, 1024.0, false),
            Sm::Sm75 => r(64.0, 64.0, 2.0, 1024.0, false),
            Sm::Sm80 => r(64.0, 64.0, 32.0, 2048.0, false),
            Sm::Sm86 => r(128.0, 64.0, 2.0, 1024.0, true),
            Sm::Sm89 => r(128.0, 64.0, 2.0, 1024.0, true),
            Sm::Sm90 => r(128.0, 64.0, 64.0, 4096.0, false),
            Sm::Sm100 | Sm::Sm100a => r(128.0, 64.0, 64.0, 8192.0, false),
            Sm::Sm120 | Sm::Sm120a => PipeRates {
                tensor_f32_acc: 0.5,
                ..r(128.0, 128.0, 2.0, 1024.0, true)
            },
        }
    }
}

/// Instructions per pipe (counts or lane-instructions), indexed in the
/// order of [`Pipe::ALL`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PipeMix(pub [f64; 9]);

impl PipeMix {
    /// The mix of `instrs` (padding `NOP`s left out).
    pub fn of<'a>(instrs: impl IntoIterator<Item = &'a SassInstr>) -> PipeMix {
        let mut m = PipeMix::default();
        for i in instrs {
            if i.is("NOP") {
                continue;
            }
            m.0[classify(&i.opcode) as usize] += 1.0;
        }
        m
    }

    /// The count of `p`.
    pub fn get(&self, p: Pipe) -> f64 {
        self.0[p as usize]
    }

    /// Every pipe's count summed.
    pub fn total(&self) -> f64 {
        self.0.iter().sum()
    }

    /// The mix scaled so that its total is `total` (the shares kept);
    /// all zero when the mix is empty.
    pub fn scaled_to(&self, total: f64) -> PipeMix {
        let t = self.total();
        if t == 0.0 {
            return PipeMix::default();
        }
        PipeMix(self.0.map(|v| v * total / t))
    }
}

/// What bounds a mix's issue time: dispatch, a pipe, or two pipes that
/// share hardware.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IssueLimit {
    /// 128 lane-instructions a clock.
    Dispatch,
    /// One pipe at its rate.
    Pipe(Pipe),
    /// FP32 and `IMAD` on the FP32 pipe.
    Fp32Imad,
    /// FP32 and the integer ALU on a shared datapath.
    Fp32Alu,
}

impl fmt::Display for IssueLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IssueLimit::Dispatch => f.write_str("dispatch"),
            IssueLimit::Pipe(p) => write!(f, "{p}"),
            IssueLimit::Fp32Imad => f.write_str("fp32+imad"),
            IssueLimit::Fp32Alu => f.write_str("fp32+alu"),
        }
    }
}

/// Clocks one SM needs to issue `mix` (lane-instructions on that SM) at
/// `rates`, and what binds (module docs, *Issue time of a mix*). Tensor
/// instructions take the dispatch floor and the tensor pipe at
/// [`PipeRates::tensor_lanes`].
pub fn issue_clocks(mix: &PipeMix, rates: &PipeRates) -> (f64, IssueLimit) {
    let g = |p| mix.get(p);
    let mut terms = vec![
        (mix.total() / rates.dispatch, IssueLimit::Dispatch),
        (g(Pipe::Fp32) / rates.fp32, IssueLimit::Pipe(Pipe::Fp32)),
        (g(Pipe::Imad) / rates.imad, IssueLimit::Pipe(Pipe::Imad)),
        (g(Pipe::Alu) / rates.alu, IssueLimit::Pipe(Pipe::Alu)),
        (g(Pipe::Xu) / rates.xu, IssueLimit::Pipe(Pipe::Xu)),
        (g(Pipe::Fp64) / rates.fp64, IssueLimit::Pipe(Pipe::Fp64)),
        (g(Pipe::Lsu) / rates.lsu, IssueLimit::Pipe(Pipe::Lsu)),
        (
            g(Pipe::Tensor) / rates.tensor_lanes(),
            IssueLimit::Pipe(Pipe::Tensor),
        ),
        (
            (g(Pipe::Fp32) + g(Pipe::Imad)) / rates.fp32,
            IssueLimit::Fp32Imad,
        ),
    ];
    if rates.alu_shares_fp32 {
        terms.push((
            (g(Pipe::Fp32) + g(Pipe::Alu)) / rates.fp32,
            IssueLimit::Fp32Alu,
        ));
    }
    terms
        .into_iter()
        .fold((0.0, IssueLimit::Dispatch), |best, t| {
            if t.0 > best.0 { t } else { best }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opcodes_go_to_their_pipes() {
        for (op, pipe) in [
            ("FFMA", Pipe::Fp32),
            ("FADD.FTZ", Pipe::Fp32),
            ("FMUL", Pipe::Fp32),
            ("HFMA2.MMA", Pipe::Fp32),
            ("IMAD.MOV.U32", Pipe::Imad),
            ("IMAD.WIDE.U32", Pipe::Imad),
            ("IMAD.SHL.U32", Pipe::Imad),
            ("IADD3", Pipe::Alu),
            ("LOP3.LUT", Pipe::Alu),
            ("SHF.R.U32.HI", Pipe::Alu),
            ("ISETP.GE.AND", Pipe::Alu),
            ("FSETP.GEU.AND", Pipe::Alu),
            ("FMNMX", Pipe::Alu),
            ("FSEL", Pipe::Alu),
            ("SEL", Pipe::Alu),
            ("MOV", Pipe::Alu),
            ("LEA.HI.X", Pipe::Alu),
            ("PRMT", Pipe::Alu),
            ("F2FP.SATFINITE.E4M3.F32.PACK_AB", Pipe::Alu),
            ("MUFU.EX2", Pipe::Xu),
            ("F2I.FTZ.U32.TRUNC", Pipe::Xu),
            ("I2F.U32", Pipe::Xu),
            ("FRND.FLOOR", Pipe::Xu),
            ("POPC", Pipe::Xu),
            ("FLO.U32", Pipe::Xu),
            ("DFMA", Pipe::Fp64),
            ("LDG.E.128.CONSTANT", Pipe::Lsu),
            ("STG.E.64", Pipe::Lsu),
            ("LDS.128", Pipe::Lsu),
            ("STS", Pipe::Lsu),
            ("SHFL.BFLY", Pipe::Lsu),
            ("S2R", Pipe::Lsu),
            ("HMMA.16816.F32", Pipe::Tensor),
            ("ULDC.64", Pipe::Uniform),
            ("UMOV", Pipe::Uniform),
            ("S2UR", Pipe::Uniform),
            ("BRA", Pipe::Control),
            ("BAR.SYNC.DEFER_BLOCKING", Pipe::Control),
            ("EXIT", Pipe::Control),
            ("BSSY", Pipe::Control),
        ] {
            assert_eq!(classify(op), pipe, "{op}");
        }
    }

    #[test]
    fn rates_follow_the_programming_guide() {
        let h = PipeRates::of(Sm::Sm90);
        assert_eq!(
            (h.fp32, h.imad, h.alu, h.xu, h.lsu, h.fp64, h.dispatch),
            (128.0, 64.0, 64.0, 16.0, 32.0, 64.0, 128.0)
        );
        assert!(!h.alu_shares_fp32);
        let a = PipeRates::of(Sm::Sm80);
        assert_eq!((a.fp32, a.alu, a.fp64), (64.0, 64.0, 32.0));
        assert!(PipeRates::of(Sm::Sm89).alu_shares_fp32);
        assert_eq!(PipeRates::of(Sm::Sm86).fp64, 2.0);
        assert_eq!(PipeRates::of(Sm::Sm120a).alu, 128.0);
        // FP32 lanes agree with the target table.
        for sm in Sm::ALL {
            assert_eq!(
                PipeRates::of(sm).fp32,
                f64::from(sm.info().fp32_lanes_per_sm),
                "{sm}"
            );
        }
        // Tensor: H100 SXM's 989 dense FP16 TFLOP/s at the 1.83 GHz tensor
        // clock on 132 SMs.
        let t = PipeRates::of(Sm::Sm90).tensor_flop * 132.0 * 1.83e9 / 1e12;
        assert!((t - 989.0).abs() / 989.0 < 0.01, "{t}");
    }

    #[test]
    fn mma_rates_from_the_published_peaks() {
        // H100 SXM: 989.4 dense bf16 TFLOP/s / (132 SMs × 1.83 GHz × 4 096
        // FLOP per HMMA.16816) = 1.0 HMMA per SM per clock; TF32 494.7 /
        // (132 × 1.83 × 2 048) = 1.0 HMMA.1688 too.
        let h = PipeRates::of(Sm::Sm90);
        assert_eq!(h.mma_per_clock(MmaShape::M16n8k16), 1.0);
        assert_eq!(h.mma_per_clock(MmaShape::M16n8k8Tf32), 1.0);
        let bf16 = h.mma_per_clock(MmaShape::M16n8k16) * 4096.0 * 132.0 * 1.83e9 / 1e12;
        assert!((bf16 - 989.4).abs() / 989.4 < 0.01, "{bf16}");
        let tf32 = h.mma_per_clock(MmaShape::M16n8k8Tf32) * 2048.0 * 132.0 * 1.83e9 / 1e12;
        assert!((tf32 - 494.7).abs() / 494.7 < 0.01, "{tf32}");
        // A100: 312 / (108 × 1.41 GHz × 4 096) = 0.5; TF32 156 likewise.
        let a = PipeRates::of(Sm::Sm80);
        assert_eq!(a.mma_per_clock(MmaShape::M16n8k16), 0.5);
        assert_eq!(a.mma_per_clock(MmaShape::M16n8k8Tf32), 0.5);
        let tf32: f64 = 0.5 * 2048.0 * 108.0 * 1.41e9 / 1e12;
        assert!((tf32 - 156.0).abs() / 156.0 < 0.01, "{tf32}");
        // L40S 0.25 (362 / (142 × 2.52 × 4 096)), B200 2 (2 250 / (148 ×
        // 1.86 × 4 096)), RTX 5090 FP32 accumulate 0.125 (209.5 / (170 ×
        // 2.41 × 4 096)).
        assert_eq!(
            PipeRates::of(Sm::Sm89).mma_per_clock(MmaShape::M16n8k16),
            0.25
        );
        assert_eq!(
            PipeRates::of(Sm::Sm100a).mma_per_clock(MmaShape::M16n8k16),
            2.0
        );
        let g = PipeRates::of(Sm::Sm120a);
        assert_eq!(g.mma_per_clock(MmaShape::M16n8k16), 0.125);
        let t: f64 = 0.125 * 4096.0 * 170.0 * 2.41e9 / 1e12;
        assert!((t - 209.5).abs() / 209.5 < 0.01, "{t}");
        // Lane rates: 32 per HMMA.
        assert_eq!(h.tensor_lanes(), 32.0);
        assert_eq!(a.tensor_lanes(), 16.0);
    }

    #[test]
    fn tensor_pipe_binds_an_hmma_heavy_mix() {
        let m = |t: f64, a: f64| {
            let mut m = PipeMix::default();
            m.0[Pipe::Tensor as usize] = t;
            m.0[Pipe::Alu as usize] = a;
            m
        };
        // 1 000 HMMA (32 000 lane-instructions) on sm_90 take 1 000 clocks
        // (one a clock), far above the dispatch floor (250).
        let h = PipeRates::of(Sm::Sm90);
        assert_eq!(
            issue_clocks(&m(32_000.0, 0.0), &h),
            (1000.0, IssueLimit::Pipe(Pipe::Tensor))
        );
        // On sm_80, 2 000 clocks; on sm_100a, 500.
        assert_eq!(
            issue_clocks(&m(32_000.0, 0.0), &PipeRates::of(Sm::Sm80)).0,
            2000.0
        );
        assert_eq!(
            issue_clocks(&m(32_000.0, 0.0), &PipeRates::of(Sm::Sm100a)).0,
            500.0
        );
        // With 4 ALU instructions per HMMA the ALU pipe binds on sm_90
        // (128 000 / 64 = 2 000 clocks) and the HMMAs hide behind it.
        assert_eq!(
            issue_clocks(&m(32_000.0, 128_000.0), &h),
            (2000.0, IssueLimit::Pipe(Pipe::Alu))
        );
    }

    #[test]
    fn issue_time_is_the_tightest_pipe() {
        let h = PipeRates::of(Sm::Sm90);
        let mix = |v: &[(Pipe, f64)]| {
            let mut m = PipeMix::default();
            for &(p, n) in v {
                m.0[p as usize] = n;
            }
            m
        };
        // Pure FP32: dispatch and the FP32 pipe tie at 1 clock per 128.
        let (c, _) = issue_clocks(&mix(&[(Pipe::Fp32, 1280.0)]), &h);
        assert!((c - 10.0).abs() < 1e-12);
        // Integer ALU at half rate: 1280 ALU lane-instructions take 20.
        let (c, l) = issue_clocks(&mix(&[(Pipe::Alu, 1280.0)]), &h);
        assert_eq!((c, l), (20.0, IssueLimit::Pipe(Pipe::Alu)));
        // MUFU at 16: 160 of them take 10 clocks, as much as 1280 FFMA.
        let (c, l) = issue_clocks(&mix(&[(Pipe::Xu, 160.0), (Pipe::Fp32, 640.0)]), &h);
        assert_eq!((c, l), (10.0, IssueLimit::Pipe(Pipe::Xu)));
        // FP32 and IMAD share fmaheavy: on sm_90 that is the dispatch
        // floor (1024 FFMA + 512 IMAD: 12 clocks either way); on sm_80,
        // whose FP32 pipe takes 64, 640 FFMA + 320 IMAD take 15 (not 10).
        let (c, _) = issue_clocks(&mix(&[(Pipe::Fp32, 1024.0), (Pipe::Imad, 512.0)]), &h);
        assert_eq!(c, 12.0);
        let m = mix(&[(Pipe::Fp32, 640.0), (Pipe::Imad, 320.0)]);
        assert_eq!(
            issue_clocks(&m, &PipeRates::of(Sm::Sm80)),
            (15.0, IssueLimit::Fp32Imad)
        );
        // A balanced mix is dispatch-bound: 64 FP32, 32 ALU, 16 LSU, 16
        // uniform = 128 a clock.
        let m = mix(&[
            (Pipe::Fp32, 640.0),
            (Pipe::Alu, 320.0),
            (Pipe::Lsu, 160.0),
            (Pipe::Uniform, 160.0),
        ]);
        assert_eq!(issue_clocks(&m, &h), (10.0, IssueLimit::Dispatch));
        // Half ALU: the ALU pipe binds on sm_90 (64 a clock), not on
        // sm_120 (128).
        let m = mix(&[(Pipe::Fp32, 640.0), (Pipe::Alu, 640.0)]);
        assert_eq!(issue_clocks(&m, &h), (10.0, IssueLimit::Dispatch));
        let m = mix(&[(Pipe::Fp32, 320.0), (Pipe::Alu, 960.0)]);
        assert_eq!(issue_clocks(&m, &h), (15.0, IssueLimit::Pipe(Pipe::Alu)));
        assert_eq!(issue_clocks(&m, &PipeRates::of(Sm::Sm120a)).0, 10.0);
        // Scaling keeps the shares.
        let s = m.scaled_to(10.0);
        assert!((s.get(Pipe::Fp32) - 2.5).abs() < 1e-12 && (s.total() - 10.0).abs() < 1e-12);
    }
}
