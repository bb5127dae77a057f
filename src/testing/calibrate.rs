//! Probes of the latencies the critical-path scoreboard takes on faith
//! (`sim::interp::timing`: the dependent FP32 issue, a shared-memory load,
//! an L2 hit, `bar.sync`, the cluster barrier).
//!
//! Each probe is a kernel whose threads run a dependent chain of `n`
//! links between two reads of `%clock64`
//! ([`KernelBuilder::clock64`]); thread 0 of each CTA stores the
//! difference. [`measure`] runs it at [`SHORT`] and [`LONG`] links (after
//! a warm-up run, which also puts the global chain in L2) and takes
//! `(clocks(LONG) − clocks(SHORT)) / (LONG − SHORT)`: the clocks a link,
//! without the fixed costs (the reads, the loop's first test). On a GPU
//! that is the hardware's figure; on the simulator with the scoreboard on
//! ([`crate::sim::Sim::set_timing`]) it is the model's, for the same PTX.
//! A link is the operation and what the chain needs around it (the
//! loads' index arithmetic, [`UNROLL`] links a loop iteration), the same
//! on both sides, so the two figures compare directly.
//! `examples/calibrate.rs` prints them side by side (the device suite runs
//! it on a lent GPU); `docs/perf.md` ("Calibrating the scoreboard") says
//! what each one would change.

use crate::dsl::params::{KernelParams, Ptr};
use crate::dsl::types::{F32, U32, U64};
use crate::dsl::{Cmp, KernelBuilder, PtxModule, Rounding};
use crate::error::{Error, Result};
use crate::kernel_params;
use crate::runtime::{Context, LaunchConfig};
use crate::sim::latency;
use crate::target::{Feature, Sm};

kernel_params! {
    /// A probe's arguments: `n` links (a multiple of [`UNROLL`]); thread 0
    /// of CTA `k` stores its clocks for them at `out[k]` and the chain's
    /// last value at `sink[k]` / `sink_f[k]` (so the chain is not dead
    /// code); `table` is the global chain ([`table`]), `a` and `c` the
    /// FMA's operands.
    pub struct ProbeArgs => ProbeRegs {
        out: Ptr<U64>,
        sink: Ptr<U32>,
        sink_f: Ptr<F32>,
        table: Ptr<U32>,
        n: U32,
        a: F32,
        c: F32,
    }
}

/// Links a loop iteration (the loop's own test and increment, off the
/// chain, are shared by this many links).
pub const UNROLL: u32 = 16;
/// The shorter run's links.
pub const SHORT: u32 = 128;
/// The longer run's links.
pub const LONG: u32 = 256;
/// Words of the global chain: 2 MiB, more than an SM's L1, well within L2.
pub const TABLE_WORDS: u32 = 1 << 19;
/// The global chain's stride in words (16 KiB + 12 bytes): every link of
/// a run reads a line no earlier link of that run read.
pub const TABLE_STRIDE: u32 = 4099;
/// Words of the shared chain (one warp's worth).
const SHARED_WORDS: u32 = 32;

/// One probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// `fma.rn.f32` on the previous link's result.
    Fma,
    /// `ld.shared.u32` of the index the previous link loaded.
    SharedLoad,
    /// `ld.global.u32` of the index the previous link loaded: an L2 hit
    /// (a new line each link, the table warmed into L2).
    GlobalLoad,
    /// `bar.sync` of 256 threads (8 warps).
    BarSync,
    /// `barrier.cluster.arrive.release` + `wait.acquire` of a cluster of
    /// two CTAs of 128 threads (sm_90+).
    ClusterBarrier,
}

impl Probe {
    /// Every probe.
    pub const ALL: [Probe; 5] = [
        Probe::Fma,
        Probe::SharedLoad,
        Probe::GlobalLoad,
        Probe::BarSync,
        Probe::ClusterBarrier,
    ];

    /// What a link is.
    pub fn name(self) -> &'static str {
        match self {
            Probe::Fma => "dependent FP32 fma",
            Probe::SharedLoad => "dependent shared load (with its index arithmetic)",
            Probe::GlobalLoad => "dependent global load, L2 hit (with its index arithmetic)",
            Probe::BarSync => "CTA barrier, 256 threads",
            Probe::ClusterBarrier => "cluster barrier, 2 CTAs × 128 threads",
        }
    }

    /// The scoreboard's latency the probe times, in clocks (what a link
    /// costs there beyond its index arithmetic and issue slots).
    pub fn model_clocks(self) -> u64 {
        match self {
            Probe::Fma => latency::ALU_CLOCKS,
            Probe::SharedLoad => latency::SHARED_CLOCKS,
            Probe::GlobalLoad => latency::L2_HIT_CLOCKS,
            Probe::BarSync => latency::BAR_CLOCKS,
            Probe::ClusterBarrier => latency::CLUSTER_BARRIER_CLOCKS,
        }
    }

    /// Whether `sm` has what the probe uses (clusters: sm_90+).
    pub fn runs_on(self, sm: Sm) -> bool {
        self != Probe::ClusterBarrier || sm.supports(Feature::Cluster)
    }

    /// CTAs and threads a CTA.
    fn shape(self) -> (u32, u32) {
        match self {
            Probe::BarSync => (1, 256),
            Probe::ClusterBarrier => (2, 128),
            _ => (1, 32),
        }
    }

    /// The entry name.
    pub fn entry(self) -> &'static str {
        match self {
            Probe::Fma => "probe_fma",
            Probe::SharedLoad => "probe_ld_shared",
            Probe::GlobalLoad => "probe_ld_global",
            Probe::BarSync => "probe_bar_sync",
            Probe::ClusterBarrier => "probe_cluster_barrier",
        }
    }

    /// The probe's kernel for `sm` (refused where [`Probe::runs_on`] is
    /// false: clusters need sm_90).
    pub fn kernel(self, sm: Sm) -> Result<PtxModule> {
        let (ctas, threads) = self.shape();
        let mut b = KernelBuilder::new(self.entry(), sm);
        b.reqntid(threads, 1, 1);
        if ctas > 1 {
            b.cluster_dims(ctas, 1, 1);
        }
        let p = b.params::<ProbeArgs>();
        let tid = b.tid_x();
        // The shared chain: chain[i] = i + 1 mod 32, written by the warp
        // before the clock.
        let chain = (self == Probe::SharedLoad).then(|| {
            let chain = b.shared_array::<U32>("chain", SHARED_WORDS, 4);
            let lane = b.and(tid, SHARED_WORDS - 1);
            let next = b.add(lane, 1u32);
            let next = b.and(next, SHARED_WORDS - 1);
            let q = b.shared_elem(&chain, lane);
            b.st_shared(q, 0, next);
            b.bar_sync();
            chain
        });
        let x = b.mov(0u32);
        let f = b.mov(p.a);
        let c0 = b.clock64();
        b.for_range(0u32, p.n, UNROLL, |b, _| {
            for _ in 0..UNROLL {
                match self {
                    Probe::Fma => {
                        let v = b.ffma(Rounding::Rn, f, p.a, p.c);
                        b.assign(f, v);
                    }
                    Probe::SharedLoad => {
                        let chain = chain.as_ref().expect("the shared probe's chain");
                        let q = b.shared_elem(chain, x);
                        let v = b.ld_shared(q, 0);
                        b.assign(x, v);
                    }
                    Probe::GlobalLoad => {
                        let q = b.offset(p.table, x);
                        let v = b.ld_global(q, 0);
                        b.assign(x, v);
                    }
                    Probe::BarSync => b.bar_sync(),
                    Probe::ClusterBarrier => b.cluster_sync(),
                }
            }
        });
        let c1 = b.clock64();
        let first = b.setp(Cmp::Eq, tid, 0u32);
        b.if_(first, |b| {
            let k = b.ctaid_x();
            let d = b.sub(c1, c0);
            let o = b.offset(p.out, k);
            b.st_global(o, 0, d);
            let s = b.offset(p.sink, k);
            b.st_global(s, 0, x);
            let s = b.offset(p.sink_f, k);
            b.st_global(s, 0, f);
        });
        b.finish()
    }
}

/// The global chain: word `i` holds `(i + TABLE_STRIDE) mod TABLE_WORDS`.
pub fn table() -> Vec<u32> {
    (0..TABLE_WORDS)
        .map(|i| (i + TABLE_STRIDE) % TABLE_WORDS)
        .collect()
}

/// The clocks a link of `probe` on `ctx` (its device's SM): thread 0 of
/// CTA 0, `(clocks(LONG) − clocks(SHORT)) / (LONG − SHORT)` after a
/// warm-up run of `LONG` links. On the simulator the figure is the
/// scoreboard's when the context's simulator keeps one
/// ([`crate::sim::Sim::set_timing`]), else that of a counter going up by
/// one a read (0 a link).
pub fn measure(ctx: &Context, probe: Probe) -> Result<f64> {
    let sm = ctx.sm();
    if !probe.runs_on(sm) {
        return Err(Error::invalid(format!(
            "the {} probe needs clusters (sm_90 or later), not {sm}",
            probe.entry()
        )));
    }
    let module = probe.kernel(sm)?;
    let (ctas, threads) = probe.shape();
    let st = ctx.default_stream();
    let table = st.upload(&table())?;
    let mut out = ctx.alloc::<u64>(ctas as usize)?;
    let mut sink = ctx.alloc::<u32>(ctas as usize)?;
    let mut sink_f = ctx.alloc::<f32>(ctas as usize)?;
    let mut run = |n: u32| -> Result<u64> {
        let args = ProbeArgs {
            out: st.arg_mut("out", &mut out)?,
            sink: st.arg_mut("sink", &mut sink)?,
            sink_f: st.arg_mut("sink_f", &mut sink_f)?,
            table: st.arg("table", &table)?,
            n,
            a: 1.0,
            c: 0.5,
        };
        st.launch(&module, LaunchConfig::linear(ctas, threads), &args.args())?;
        Ok(st.to_vec(&out)?[0])
    };
    run(LONG)?;
    let short = run(SHORT)?;
    let long = run(LONG)?;
    Ok((long as f64 - short as f64) / f64::from(LONG - SHORT))
}
