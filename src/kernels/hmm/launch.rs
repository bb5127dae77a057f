//! Launch code of [`super`]: the device entry point
//! ([`forward_backward_dev`]: model and emissions on the device, every
//! output written there), the raw-pointer entry point on another stack's
//! memory ([`forward_backward_raw`]) and the slice API
//! ([`forward_backward`]), written
//! against [`Stream`] so the GPU and the simulator run the same sequence.

use super::host::{self, Posteriors, expect, validate_lengths, validate_shape};
use super::ptx::{
    BackwardArgs, ForwardArgs, PostArgs, THREADS, cap_for, generate_backward, generate_forward,
    generate_posteriors, generate_transitions,
};
use crate::dsl::params::{DevPtr, KernelParams};
use crate::dsl::types::F32;
use crate::error::Result;
use crate::kernels::dispatch::dispatch;
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::buffer::{AsDevice, AsDeviceMut};
use crate::runtime::context::{Context, Stream};
use crate::runtime::exec::{CUdeviceptr, LaunchConfig, PointerCheck, RawStream};

/// The device outputs of [`forward_backward_dev`].
pub struct DeviceOutputs<'a, A, B, L, G, X> {
    pub log_alpha: &'a mut A,
    pub log_beta: &'a mut B,
    pub log_likelihood: &'a mut L,
    pub gamma: &'a mut G,
    pub xi: &'a mut X,
}

/// The whole forward-backward pass on the device, queued on `stream`:
/// inputs are device buffers (a model uploaded once serves any number of
/// batches), every output is written to `out`'s buffers. `lengths` is a
/// host slice: validated (each at most `T`) and uploaded (`batch · 4`
/// bytes).
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the values for `S` out of range, a
/// buffer whose length does not match its shape, a length above `T`,
/// sizes that overflow; [`Error::WrongContext`](crate::Error::WrongContext); JIT and launch errors.
#[allow(clippy::too_many_arguments)]
pub fn forward_backward_dev<A, B, L, G, X>(
    stream: &Stream,
    log_pi: &impl AsDevice<f32>,
    log_a: &impl AsDevice<f32>,
    log_b: &impl AsDevice<f32>,
    lengths: &[u32],
    batch: usize,
    t: usize,
    s: usize,
    out: DeviceOutputs<'_, A, B, L, G, X>,
) -> Result<()>
where
    A: AsDeviceMut<f32>,
    B: AsDeviceMut<f32>,
    L: AsDeviceMut<f32>,
    G: AsDeviceMut<f32>,
    X: AsDeviceMut<f32>,
{
    validate_shape(batch, t, s)?;
    validate_lengths(lengths, batch, t)?;
    let n = batch * t * s;
    expect("log_pi", log_pi.as_device().len(), s, "S")?;
    expect("log_a", log_a.as_device().len(), s * s, "S × S")?;
    expect("log_b", log_b.as_device().len(), n, "batch × T × S")?;
    expect(
        "log_alpha",
        out.log_alpha.as_device().len(),
        n,
        "batch × T × S",
    )?;
    expect(
        "log_beta",
        out.log_beta.as_device().len(),
        n,
        "batch × T × S",
    )?;
    expect("gamma", out.gamma.as_device().len(), n, "batch × T × S")?;
    expect(
        "log_likelihood",
        out.log_likelihood.as_device().len(),
        batch,
        "batch",
    )?;
    expect(
        "xi",
        out.xi.as_device().len(),
        batch * s * s,
        "batch × S × S",
    )?;
    if batch == 0 {
        return Ok(());
    }
    let io = Ptrs {
        log_pi: stream.arg("log_pi", log_pi)?,
        log_a: stream.arg("log_a", log_a)?,
        log_b: stream.arg("log_b", log_b)?,
        alpha: stream.arg_mut("log_alpha", out.log_alpha)?,
        beta: stream.arg_mut("log_beta", out.log_beta)?,
        ll: stream.arg_mut("log_likelihood", out.log_likelihood)?,
        gamma: stream.arg_mut("gamma", out.gamma)?,
        xi: stream.arg_mut("xi", out.xi)?,
    };
    launch(stream, &io, lengths, batch, t, s, PointerCheck::LiveBuffers)
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

fn launch(
    stream: &Stream,
    io: &Ptrs,
    lengths: &[u32],
    batch: usize,
    t: usize,
    s: usize,
    check: PointerCheck,
) -> Result<()> {
    let sm = stream.context().sm();
    let cap = cap_for(s);
    let lens = stream.upload(lengths)?;
    let lens_p = stream.arg("lengths", &lens)?;
    let cfg = LaunchConfig::linear(batch as u32, THREADS);
    let (t32, s32) = (t as u32, s as u32);
    let fwd = ForwardArgs {
        log_pi: io.log_pi,
        log_a: io.log_a,
        log_b: io.log_b,
        lengths: lens_p,
        alpha: io.alpha,
        ll: io.ll,
        t: t32,
        s: s32,
    };
    stream.launch_with(&generate_forward(sm, cap)?, cfg, &fwd.args(), check)?;
    let bwd = BackwardArgs {
        log_a: io.log_a,
        log_b: io.log_b,
        lengths: lens_p,
        beta: io.beta,
        t: t32,
        s: s32,
    };
    stream.launch_with(&generate_backward(sm, cap)?, cfg, &bwd.args(), check)?;
    let post = |outp| PostArgs {
        log_a: io.log_a,
        log_b: io.log_b,
        lengths: lens_p,
        alpha: io.alpha,
        beta: io.beta,
        ll: io.ll,
        out: outp,
        t: t32,
        s: s32,
    };
    stream.launch_with(
        &generate_posteriors(sm)?,
        cfg,
        &post(io.gamma).args(),
        check,
    )?;
    stream.launch_with(&generate_transitions(sm)?, cfg, &post(io.xi).args(), check)
}

/// [`forward_backward_dev`] on memory another stack allocated: `log_pi`
/// (`S`), `log_a` (`S × S`) and `log_b` (`batch × T × S`) are read;
/// `log_alpha`, `log_beta`, `gamma` (`batch × T × S`), `log_likelihood`
/// (`batch`) and `xi` (`batch × S × S`) are written, all raw device
/// addresses of f32s given in that order in `out`; the launches are
/// queued on the foreign `stream`. `lengths` is a host slice (validated
/// and uploaded).
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
#[allow(clippy::too_many_arguments)]
pub unsafe fn forward_backward_raw(
    ctx: &Context,
    stream: RawStream,
    log_pi: CUdeviceptr,
    log_a: CUdeviceptr,
    log_b: CUdeviceptr,
    lengths: &[u32],
    batch: usize,
    t: usize,
    s: usize,
    out: RawOutputs,
) -> Result<()> {
    validate_shape(batch, t, s)?;
    validate_lengths(lengths, batch, t)?;
    if batch == 0 {
        return Ok(());
    }
    let io = Ptrs {
        log_pi: DevPtr::new(log_pi),
        log_a: DevPtr::new(log_a),
        log_b: DevPtr::new(log_b),
        alpha: DevPtr::new(out.log_alpha),
        beta: DevPtr::new(out.log_beta),
        ll: DevPtr::new(out.log_likelihood),
        gamma: DevPtr::new(out.gamma),
        xi: DevPtr::new(out.xi),
    };
    let st = ctx.borrowed_stream(stream);
    launch(&st, &io, lengths, batch, t, s, PointerCheck::Caller)
}

/// The output addresses of [`forward_backward_raw`].
#[derive(Debug, Clone, Copy)]
pub struct RawOutputs {
    pub log_alpha: CUdeviceptr,
    pub log_beta: CUdeviceptr,
    pub log_likelihood: CUdeviceptr,
    pub gamma: CUdeviceptr,
    pub xi: CUdeviceptr,
}

/// Upload the inputs, run the pass on `stream`, download every output.
#[allow(clippy::too_many_arguments)]
pub fn run_on(
    stream: &Stream,
    log_pi: &[f32],
    log_a: &[f32],
    log_b: &[f32],
    lengths: &[u32],
    batch: usize,
    t: usize,
    s: usize,
) -> Result<Posteriors> {
    host::validate(log_pi, log_a, log_b, lengths, batch, t, s)?;
    let ctx = stream.context();
    let (pi, a, bb) = (
        stream.upload(log_pi)?,
        stream.upload(log_a)?,
        stream.upload(log_b)?,
    );
    let n = batch * t * s;
    let mut alpha = ctx.alloc::<f32>(n)?;
    let mut beta = ctx.alloc::<f32>(n)?;
    let mut ll = ctx.alloc::<f32>(batch)?;
    let mut gamma = ctx.alloc::<f32>(n)?;
    let mut xi = ctx.alloc::<f32>(batch * s * s)?;
    forward_backward_dev(
        stream,
        &pi,
        &a,
        &bb,
        lengths,
        batch,
        t,
        s,
        DeviceOutputs {
            log_alpha: &mut alpha,
            log_beta: &mut beta,
            log_likelihood: &mut ll,
            gamma: &mut gamma,
            xi: &mut xi,
        },
    )?;
    Ok(Posteriors {
        batch,
        t,
        s,
        log_alpha: stream.to_vec(&alpha)?,
        log_beta: stream.to_vec(&beta)?,
        log_likelihood: stream.to_vec(&ll)?,
        gamma: stream.to_vec(&gamma)?,
        xi: stream.to_vec(&xi)?,
    })
}

/// The forward-backward pass (see the [module contract](super)) on
/// `backend`; every backend gives the same bits.
#[allow(clippy::too_many_arguments)]
pub fn forward_backward(
    backend: Backend,
    log_pi: &[f32],
    log_a: &[f32],
    log_b: &[f32],
    lengths: &[u32],
    batch: usize,
    t: usize,
    s: usize,
) -> Result<(Posteriors, Ran)> {
    host::validate(log_pi, log_a, log_b, lengths, batch, t, s)?;
    dispatch(
        backend,
        || host::forward_backward(log_pi, log_a, log_b, lengths, batch, t, s),
        |st| run_on(st, log_pi, log_a, log_b, lengths, batch, t, s),
    )
}
