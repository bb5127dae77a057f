//! Running one candidate: on the simulator (its output bits and the
//! estimate's inputs) and, on a GPU, timed.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::estimate::{self, Estimate, Occupancy};
use crate::abi::ArgValue;
use crate::dsl::{Kernel, KernelParams};
use crate::error::{Error, Result};
use crate::exec::LaunchConfig;
use crate::nvtools::NvTools;
use crate::runtime::{Context, Stream};
use crate::target::Sm;

/// What a candidate's launch closure gets: the stream to upload, launch
/// and download on, and the candidate's kernel, launched through
/// [`launch`](Self::launch) so the tuner sees each launch (its
/// configuration, and on a GPU its time).
pub struct Trial<'a, A: KernelParams> {
    stream: Stream,
    kernel: &'a Kernel<A>,
    launches: Vec<LaunchConfig>,
    /// `(warm-up, runs)` when timing.
    timing: Option<(u32, u32)>,
    medians: Vec<Duration>,
}

impl<A: KernelParams> std::fmt::Debug for Trial<'_, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trial")
            .field("kernel", self.kernel)
            .field("launches", &self.launches)
            .field("timed", &self.timing.is_some())
            .finish()
    }
}

impl<'a, A: KernelParams> Trial<'a, A> {
    fn new(stream: Stream, kernel: &'a Kernel<A>, timing: Option<(u32, u32)>) -> Self {
        Trial {
            stream,
            kernel,
            launches: Vec::new(),
            timing,
            medians: Vec::new(),
        }
    }

    /// The stream to work on (its context is the simulator for the SM, or
    /// the GPU when timing).
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// The candidate's kernel.
    pub fn kernel(&self) -> &Kernel<A> {
        self.kernel
    }

    /// Launch the candidate's kernel with `args` on [`stream`](Self::stream)
    /// (see [`Stream::launch_kernel`]). When timing, the launch runs the
    /// tuner's warm-up count, then its runs, each timed on the device with
    /// CUDA events around the launch ([`Stream::timed`]); the median
    /// counts.
    ///
    /// # Errors
    /// As [`Stream::launch_kernel`], plus errors of the launch surfaced by
    /// the synchronisation when timing.
    pub fn launch(&mut self, cfg: LaunchConfig, args: A) -> Result<()> {
        self.launches.push(cfg);
        let args: Vec<ArgValue> = args.args();
        let module = self.kernel.module();
        let Some((warmup, runs)) = self.timing else {
            return self.stream.launch(module, cfg, &args);
        };
        for _ in 0..warmup {
            self.stream.launch(module, cfg, &args)?;
        }
        self.stream.synchronize()?;
        let mut times = Vec::with_capacity(runs as usize);
        for _ in 0..runs.max(1) {
            // Device time between CUDA events around the launch where the
            // backend has a device clock; the host's clock otherwise.
            let t0 = Instant::now();
            let ((), device) = self.stream.timed(|s| s.launch(module, cfg, &args))?;
            times.push(device.unwrap_or_else(|| t0.elapsed()));
        }
        times.sort_unstable();
        self.medians.push(times[times.len() / 2]);
        Ok(())
    }
}

fn bytes_of<E: bytemuck::Pod>(out: &[E]) -> Vec<u8> {
    bytemuck::cast_slice::<E, u8>(out).to_vec()
}

/// Run candidate `c` on a fresh simulator for `sm`: its output bytes and
/// its estimate.
pub(super) fn on_sim<T, A, E, L>(
    sm: Sm,
    kernel: &Kernel<A>,
    c: &T,
    launch: &L,
    tools: Option<&NvTools>,
) -> Result<(Vec<u8>, Estimate)>
where
    A: KernelParams,
    E: bytemuck::Pod,
    L: Fn(&mut Trial<'_, A>, &T) -> Result<Vec<E>>,
{
    let ctx = Context::sim(sm);
    let counts = |ctx: &Context| {
        ctx.with_sim(|s| (s.total_instructions(), s.opcode_totals().clone()))
            .ok_or_else(|| Error::invalid("the tuner's simulator context is not a simulator"))
    };
    let (i0, ops0) = counts(&ctx)?;
    let stream = ctx.default_stream();
    let mut trial = Trial::new(stream.clone(), kernel, None);
    let out = launch(&mut trial, c)?;
    stream.synchronize()?;
    let traffic = stream.traffic();
    let (i1, ops1) = counts(&ctx)?;
    let per_opcode: BTreeMap<String, u64> = ops1
        .into_iter()
        .map(|(op, n)| {
            let n0 = ops0.get(&op).copied().unwrap_or(0);
            (op, n - n0)
        })
        .collect();
    let usage = tools
        .and_then(|t| t.assemble(kernel.ptx(), sm).ok())
        .and_then(|a| a.entry().cloned());
    let registers = usage.as_ref().map(|u| u.registers);
    let shared_bytes = usage.as_ref().map_or(0, |u| u.shared_bytes);
    let occupancy = trial
        .launches
        .iter()
        .map(|cfg| {
            let (x, y, z) = cfg.block;
            Occupancy::of(
                sm,
                x * y * z,
                registers.unwrap_or(0),
                shared_bytes + cfg.dynamic_smem_bytes,
            )
        })
        .min_by_key(|o| o.warps_per_sm);
    let instructions = i1 - i0;
    let global_bytes = estimate::global_bytes(&per_opcode);
    let cost = estimate::cost(instructions, global_bytes, occupancy.as_ref());
    Ok((
        bytes_of(&out),
        Estimate {
            registers,
            shared_bytes,
            launches: trial.launches,
            occupancy,
            instructions,
            global_bytes,
            traffic,
            cost,
        },
    ))
}

/// Run candidate `c` on the GPU context `ctx`, timing each launch: its
/// output bytes and the sum of its launches' medians.
pub(super) fn timed<T, A, E, L>(
    ctx: &Context,
    kernel: &Kernel<A>,
    c: &T,
    launch: &L,
    warmup: u32,
    runs: u32,
) -> Result<(Vec<u8>, Duration)>
where
    A: KernelParams,
    E: bytemuck::Pod,
    L: Fn(&mut Trial<'_, A>, &T) -> Result<Vec<E>>,
{
    let stream = ctx.new_stream()?;
    let mut trial = Trial::new(stream.clone(), kernel, Some((warmup, runs)));
    let out = launch(&mut trial, c)?;
    stream.synchronize()?;
    Ok((bytes_of(&out), trial.medians.iter().sum()))
}
