//! Launch code of [`super`]: the device entry point
//! ([`forward_backward_dev`]: model and emissions on the device, every
//! output written there), the raw-pointer entry point on another stack's
//! memory ([`forward_backward_raw`]) and the slice API
//! ([`forward_backward`]), written against [`Stream`] so the GPU and the
//! simulator run the same sequence.
//!
//! # Workspace
//! Every call allocates, in the stream's context, the prep vector and the
//! two shifted matrices (`6·S16 + 4 + 2·S16²` floats, `S16` = `S` rounded
//! up to a multiple of 16) and the per-step records of the recursions
//! (`batch·T·(3·S + S16 + 6)` floats: the backward's low parts, `R_t`
//! pairs, `s_i`/`σ_i` with their padding, the normalizer pairs, emission
//! maxima and fallback flags). The `_raw` entry point allocates it the same
//! way; it is released when the kernels have run.

use super::host::{self, Inputs, Posteriors, Shape, expect, validate_lengths};
use super::ptx::{
    BackwardArgs, ForwardArgs, PosteriorArgs, PrepExpArgs, PrepMaxArgs, THREADS, TransitionArgs,
    WARPS, XI_ROWS, cap_for, generate_backward, generate_forward, generate_posteriors,
    generate_prep_exp, generate_prep_max, generate_transitions, prep_len,
};
use crate::dsl::params::{DevPtr, KernelParams};
use crate::dsl::types::F32;
use crate::error::Result;
use crate::kernels::dispatch::dispatch;
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::buffer::{AsDevice, AsDeviceMut, DeviceBuffer, DeviceSlice, DeviceSliceMut};
use crate::runtime::context::{Context, Stream};
use crate::runtime::exec::{CUdeviceptr, LaunchConfig, PointerCheck, RawStream};

/// The device inputs of [`forward_backward_dev`]; `lengths` is a host
/// slice (validated and uploaded, `batch · 4` bytes).
#[derive(Clone, Copy)]
pub struct DeviceInputs<'a> {
    pub log_pi: DeviceSlice<'a, f32>,
    pub log_a: DeviceSlice<'a, f32>,
    pub log_b: DeviceSlice<'a, f32>,
    pub lengths: &'a [u32],
}

/// The device outputs of [`forward_backward_dev`].
pub struct DeviceOutputs<'a> {
    pub log_alpha: DeviceSliceMut<'a, f32>,
    pub log_beta: DeviceSliceMut<'a, f32>,
    pub log_likelihood: DeviceSliceMut<'a, f32>,
    pub gamma: DeviceSliceMut<'a, f32>,
    pub xi: DeviceSliceMut<'a, f32>,
}

/// The whole forward-backward pass on the device, queued on `stream`:
/// inputs are device buffers (a model uploaded once serves any number of
/// batches), every output is written to `out`'s buffers; a workspace is
/// allocated for the call (see the [module docs](self)).
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the
/// values for a buffer whose length does not match `shape` or a length
/// above `T`; [`Error::WrongContext`](crate::Error::WrongContext); JIT and
/// launch errors.
pub fn forward_backward_dev(
    stream: &Stream,
    shape: &Shape,
    inp: &DeviceInputs<'_>,
    mut out: DeviceOutputs<'_>,
) -> Result<()> {
    validate_lengths(inp.lengths, shape.batch(), shape.t())?;
    let (n, s) = (shape.elements(), shape.s());
    expect("log_pi", inp.log_pi.len(), s, "S")?;
    expect("log_a", inp.log_a.len(), s * s, "S × S")?;
    expect("log_b", inp.log_b.len(), n, "batch × T × S")?;
    expect("log_alpha", out.log_alpha.len(), n, "batch × T × S")?;
    expect("log_beta", out.log_beta.len(), n, "batch × T × S")?;
    expect("gamma", out.gamma.len(), n, "batch × T × S")?;
    let batch = shape.batch();
    expect("log_likelihood", out.log_likelihood.len(), batch, "batch")?;
    expect("xi", out.xi.len(), shape.xi_len(), "batch × S × S")?;
    if batch == 0 {
        return Ok(());
    }
    let io = Ptrs {
        log_pi: stream.arg("log_pi", &inp.log_pi)?,
        log_a: stream.arg("log_a", &inp.log_a)?,
        log_b: stream.arg("log_b", &inp.log_b)?,
        alpha: stream.arg_mut("log_alpha", &mut out.log_alpha)?,
        beta: stream.arg_mut("log_beta", &mut out.log_beta)?,
        ll: stream.arg_mut("log_likelihood", &mut out.log_likelihood)?,
        gamma: stream.arg_mut("gamma", &mut out.gamma)?,
        xi: stream.arg_mut("xi", &mut out.xi)?,
    };
    launch(stream, &io, inp.lengths, shape, PointerCheck::LiveBuffers)
}

/// The caller's memory of one pass.
struct Ptrs {
    log_pi: DevPtr<F32>,
    log_a: DevPtr<F32>,
    log_b: DevPtr<F32>,
    alpha: DevPtr<F32>,
    beta: DevPtr<F32>,
    ll: DevPtr<F32>,
    gamma: DevPtr<F32>,
    xi: DevPtr<F32>,
}

/// The workspace of one pass (see the [module docs](self)).
struct Workspace {
    prep: DeviceBuffer<f32>,
    a_hat: DeviceBuffer<f32>,
    a_til: DeviceBuffer<f32>,
    mb: DeviceBuffer<f32>,
    cnorm: DeviceBuffer<f32>,
    dnorm: DeviceBuffer<f32>,
    flags: DeviceBuffer<u32>,
    beta_lo: DeviceBuffer<f32>,
    w: DeviceBuffer<f32>,
    rh: DeviceBuffer<f32>,
    rl: DeviceBuffer<f32>,
}

impl Workspace {
    fn new(ctx: &Context, shape: &Shape) -> Result<Workspace> {
        let sp = shape.padded();
        let steps = shape.batch() * shape.t();
        let f = |n: usize| ctx.alloc::<f32>(n.max(1));
        Ok(Workspace {
            prep: f(prep_len(sp))?,
            a_hat: f(sp * sp)?,
            a_til: f(sp * sp)?,
            mb: f(steps)?,
            cnorm: f(2 * steps)?,
            dnorm: f(2 * steps)?,
            flags: ctx.alloc::<u32>(steps.max(1))?,
            beta_lo: f(shape.elements())?,
            w: f(steps * sp)?,
            rh: f(shape.elements())?,
            rl: f(shape.elements())?,
        })
    }
}

/// `n` CTAs of task counter for `tasks` tasks.
fn task_grid(tasks: u64) -> LaunchConfig {
    LaunchConfig::linear(tasks.clamp(1, 1 << 16) as u32, THREADS)
}

fn launch(
    stream: &Stream,
    io: &Ptrs,
    lengths: &[u32],
    shape: &Shape,
    check: PointerCheck,
) -> Result<()> {
    let ctx = stream.context();
    let sm = ctx.sm();
    let (batch, t, s, sp) = (shape.batch(), shape.t(), shape.s(), shape.padded());
    let cap = cap_for(s);
    let lens = stream.upload(lengths)?;
    let lens_p = stream.arg("lengths", &lens)?;
    let mut ws = Workspace::new(ctx, shape)?;
    let (t32, s32, sp32) = (t as u32, s as u32, sp as u32);
    let prep = stream.arg_mut("workspace", &mut ws.prep)?;
    let a_hat = stream.arg_mut("workspace", &mut ws.a_hat)?;
    let a_til = stream.arg_mut("workspace", &mut ws.a_til)?;
    let mb = stream.arg_mut("workspace", &mut ws.mb)?;
    let cnorm = stream.arg_mut("workspace", &mut ws.cnorm)?;
    let dnorm = stream.arg_mut("workspace", &mut ws.dnorm)?;
    let flags = stream.arg_mut("workspace", &mut ws.flags)?;
    let beta_lo = stream.arg_mut("workspace", &mut ws.beta_lo)?;
    let w = stream.arg_mut("workspace", &mut ws.w)?;
    let rh = stream.arg_mut("workspace", &mut ws.rh)?;
    let rl = stream.arg_mut("workspace", &mut ws.rl)?;

    let pm = PrepMaxArgs {
        log_a: io.log_a,
        prep,
        s: s32,
        sp: sp32,
    };
    let grid = LaunchConfig::linear((2 * s).div_ceil(THREADS as usize) as u32, THREADS);
    stream.launch_with(&generate_prep_max(sm)?, grid, &pm.args(), check)?;
    let pe = PrepExpArgs {
        log_a: io.log_a,
        prep,
        a_hat,
        a_til,
        s: s32,
        sp: sp32,
    };
    let grid = LaunchConfig::linear(sp.min(1024) as u32, THREADS);
    stream.launch_with(&generate_prep_exp(sm)?, grid, &pe.args(), check)?;

    let per_seq = LaunchConfig::linear(batch as u32, THREADS);
    let fwd = ForwardArgs {
        log_pi: io.log_pi,
        log_a: io.log_a,
        log_b: io.log_b,
        lengths: lens_p,
        prep,
        a_hat,
        alpha: io.alpha,
        alpha_lo: io.gamma,
        mb,
        cnorm,
        ll: io.ll,
        t: t32,
        s: s32,
        sp: sp32,
    };
    stream.launch_with(&generate_forward(sm, cap)?, per_seq, &fwd.args(), check)?;
    let bwd = BackwardArgs {
        log_a: io.log_a,
        log_b: io.log_b,
        lengths: lens_p,
        prep,
        a_til,
        mb,
        beta: io.beta,
        beta_lo,
        dnorm,
        w,
        rh,
        rl,
        flags,
        t: t32,
        s: s32,
        sp: sp32,
    };
    stream.launch_with(&generate_backward(sm, cap)?, per_seq, &bwd.args(), check)?;

    let chunks = t.div_ceil(WARPS as usize).clamp(1, 64);
    let tasks = batch as u64 * chunks as u64;
    let post = PosteriorArgs {
        lengths: lens_p,
        alpha: io.alpha,
        gamma: io.gamma,
        beta: io.beta,
        beta_lo,
        cnorm,
        dnorm,
        w,
        tasks,
        chunks: chunks as u32,
        t: t32,
        s: s32,
        sp: sp32,
    };
    stream.launch_with(
        &generate_posteriors(sm)?,
        task_grid(tasks),
        &post.args(),
        check,
    )?;
    let warp_tasks = (sp / XI_ROWS as usize) * s.div_ceil(32);
    let groups = warp_tasks.div_ceil(WARPS as usize);
    let tasks = batch as u64 * groups as u64;
    let xi = TransitionArgs {
        log_a: io.log_a,
        prep,
        a_til,
        lengths: lens_p,
        gamma: io.gamma,
        w,
        rh,
        rl,
        flags,
        xi: io.xi,
        tasks,
        groups: groups as u32,
        t: t32,
        s: s32,
        sp: sp32,
    };
    stream.launch_with(
        &generate_transitions(sm)?,
        task_grid(tasks),
        &xi.args(),
        check,
    )
}

/// The raw device addresses of the inputs of [`forward_backward_raw`]:
/// `log_pi` (`S`), `log_a` (`S × S`) and `log_b` (`batch × T × S`) f32s.
#[derive(Debug, Clone, Copy)]
pub struct RawInputs {
    pub log_pi: CUdeviceptr,
    pub log_a: CUdeviceptr,
    pub log_b: CUdeviceptr,
}

/// The output addresses of [`forward_backward_raw`]: `log_alpha`,
/// `log_beta`, `gamma` (`batch × T × S`), `log_likelihood` (`batch`) and
/// `xi` (`batch × S × S`) f32s.
#[derive(Debug, Clone, Copy)]
pub struct RawOutputs {
    pub log_alpha: CUdeviceptr,
    pub log_beta: CUdeviceptr,
    pub log_likelihood: CUdeviceptr,
    pub gamma: CUdeviceptr,
    pub xi: CUdeviceptr,
}

/// [`forward_backward_dev`] on memory another stack allocated: the
/// inputs are read, the outputs written, all raw device addresses; the
/// launches are queued on the foreign `stream`. `lengths` is a host slice
/// (validated and uploaded); the workspace is allocated by ptxsmith in
/// `ctx`.
///
/// # Safety
/// * every address is device memory of `ctx`'s context with at least the
///   length above, 4-byte aligned, valid until the kernels have run; the
///   outputs overlap no input and each other, and nothing else accesses
///   them until then;
/// * `stream` is a live stream of that context (or [`RawStream::NULL`]).
///
/// Shapes and lengths are still checked; the addresses cannot be.
///
/// # Errors
/// As [`forward_backward_dev`].
pub unsafe fn forward_backward_raw(
    ctx: &Context,
    stream: RawStream,
    shape: &Shape,
    inp: RawInputs,
    lengths: &[u32],
    out: RawOutputs,
) -> Result<()> {
    validate_lengths(lengths, shape.batch(), shape.t())?;
    if shape.batch() == 0 {
        return Ok(());
    }
    let io = Ptrs {
        log_pi: DevPtr::new(inp.log_pi),
        log_a: DevPtr::new(inp.log_a),
        log_b: DevPtr::new(inp.log_b),
        alpha: DevPtr::new(out.log_alpha),
        beta: DevPtr::new(out.log_beta),
        ll: DevPtr::new(out.log_likelihood),
        gamma: DevPtr::new(out.gamma),
        xi: DevPtr::new(out.xi),
    };
    let st = ctx.borrowed_stream(stream);
    launch(&st, &io, lengths, shape, PointerCheck::Caller)
}

/// Upload the inputs, run the pass on `stream`, download every output.
///
/// # Errors
/// As [`forward_backward_dev`].
pub fn run_on(stream: &Stream, shape: &Shape, inp: &Inputs<'_>) -> Result<Posteriors> {
    inp.validate(shape)?;
    let ctx = stream.context();
    let (pi, a, bb) = (
        stream.upload(inp.log_pi)?,
        stream.upload(inp.log_a)?,
        stream.upload(inp.log_b)?,
    );
    let n = shape.elements();
    let mut alpha = ctx.alloc::<f32>(n)?;
    let mut beta = ctx.alloc::<f32>(n)?;
    let mut ll = ctx.alloc::<f32>(shape.batch())?;
    let mut gamma = ctx.alloc::<f32>(n)?;
    let mut xi = ctx.alloc::<f32>(shape.xi_len())?;
    forward_backward_dev(
        stream,
        shape,
        &DeviceInputs {
            log_pi: pi.as_device(),
            log_a: a.as_device(),
            log_b: bb.as_device(),
            lengths: inp.lengths,
        },
        DeviceOutputs {
            log_alpha: alpha.as_device_mut(),
            log_beta: beta.as_device_mut(),
            log_likelihood: ll.as_device_mut(),
            gamma: gamma.as_device_mut(),
            xi: xi.as_device_mut(),
        },
    )?;
    Ok(Posteriors {
        batch: shape.batch(),
        t: shape.t(),
        s: shape.s(),
        log_alpha: stream.to_vec(&alpha)?,
        log_beta: stream.to_vec(&beta)?,
        log_likelihood: stream.to_vec(&ll)?,
        gamma: stream.to_vec(&gamma)?,
        xi: stream.to_vec(&xi)?,
    })
}

/// The forward-backward pass (see the [module contract](super)) on
/// `backend`; every backend gives the same bits.
///
/// # Errors
/// As [`forward_backward_dev`].
pub fn forward_backward(
    backend: Backend,
    shape: &Shape,
    inp: &Inputs<'_>,
) -> Result<(Posteriors, Ran)> {
    inp.validate(shape)?;
    dispatch(
        backend,
        || host::forward_backward(shape, inp),
        |st| run_on(st, shape, inp),
    )
}
