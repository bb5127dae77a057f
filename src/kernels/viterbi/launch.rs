//! Launch code of [`super`]: the device entry point ([`viterbi_dev`]:
//! model and emissions on the device, paths and scores written there),
//! the raw-pointer entry point on another stack's memory
//! ([`viterbi_raw`]) and the slice API ([`viterbi`]) on top, written against [`Stream`] so the
//! GPU and the simulator run the same sequence.

use super::host::{self, Viterbi, expect_len as expect, validate_lengths, validate_shape};
use super::ptx::{THREADS, ViterbiArgs, cap_for, generate};
use crate::dsl::params::{DevPtr, KernelParams};
use crate::dsl::types::{F32, U32};
use crate::error::Result;
use crate::kernels::dispatch::dispatch;
use crate::kernels::memo;
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::buffer::{AsDevice, AsDeviceMut};
use crate::runtime::context::{Context, Stream};
use crate::runtime::exec::{CUdeviceptr, LaunchConfig, PointerCheck, RawStream};

/// Decode every sequence on the device, queued on `stream`: `log_pi`,
/// `log_a`, `log_b` are device buffers (a model uploaded once serves any
/// number of batches), `paths` (`[batch, T]`) and `scores` (`[batch]`) are
/// written there. `lengths` is a host slice: it is validated (each at most
/// `T`) and uploaded (`batch · 4` bytes). A `[batch, T, S]` backpointer
/// workspace is allocated for the call.
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the values for `S` out of range, a
/// buffer length that does not match its shape, a length above `T`, sizes
/// that overflow; [`Error::WrongContext`](crate::Error::WrongContext); JIT and launch errors.
#[allow(clippy::too_many_arguments)]
pub fn viterbi_dev(
    stream: &Stream,
    log_pi: &impl AsDevice<f32>,
    log_a: &impl AsDevice<f32>,
    log_b: &impl AsDevice<f32>,
    lengths: &[u32],
    batch: usize,
    t: usize,
    s: usize,
    paths: &mut impl AsDeviceMut<u32>,
    scores: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    validate_shape(batch, t, s)?;
    validate_lengths(lengths, batch, t)?;
    expect("log_pi", log_pi.as_device().len(), s, "S")?;
    expect("log_a", log_a.as_device().len(), s * s, "S × S")?;
    expect(
        "log_b",
        log_b.as_device().len(),
        batch * t * s,
        "batch × T × S",
    )?;
    expect("paths", paths.as_device().len(), batch * t, "batch × T")?;
    expect("scores", scores.as_device().len(), batch, "batch")?;
    if batch == 0 {
        return Ok(());
    }
    let io = Ptrs {
        log_pi: stream.arg("log_pi", log_pi)?,
        log_a: stream.arg("log_a", log_a)?,
        log_b: stream.arg("log_b", log_b)?,
        paths: stream.arg_mut("paths", paths)?,
        scores: stream.arg_mut("scores", scores)?,
    };
    launch(stream, io, lengths, batch, t, s, PointerCheck::LiveBuffers)
}

/// The caller's memory of one decode.
struct Ptrs {
    log_pi: DevPtr<F32>,
    log_a: DevPtr<F32>,
    log_b: DevPtr<F32>,
    paths: DevPtr<U32>,
    scores: DevPtr<F32>,
}

fn launch(
    stream: &Stream,
    io: Ptrs,
    lengths: &[u32],
    batch: usize,
    t: usize,
    s: usize,
    check: PointerCheck,
) -> Result<()> {
    let ctx = stream.context();
    let module = memo!(generate, ctx.sm(), cap_for(s))?;
    let lens = stream.upload(lengths)?;
    let mut psi = ctx.alloc::<u32>(batch * t * s)?;
    let args = ViterbiArgs {
        log_pi: io.log_pi,
        log_a: io.log_a,
        log_b: io.log_b,
        lengths: stream.arg("lengths", &lens)?,
        psi: stream.arg_mut("psi", &mut psi)?,
        paths: io.paths,
        scores: io.scores,
        t: t as u32,
        s: s as u32,
    };
    let cfg = LaunchConfig::linear(batch as u32, THREADS);
    stream.launch_with(module, cfg, &args.args(), check)
}

/// [`viterbi_dev`] on memory another stack allocated: `log_pi` (`S`),
/// `log_a` (`S × S`), `log_b` (`batch × T × S` f32s) are read, `paths`
/// (`batch × T` u32s) and `scores` (`batch` f32s) written, all raw device
/// addresses; the launch is queued on the foreign `stream`. `lengths` is
/// a host slice (validated and uploaded); the backpointer workspace is
/// allocated by ptxsmith in `ctx`.
///
/// # Safety
/// * every address is device memory of `ctx`'s context with at least the
///   length above, 4-byte aligned, valid until the kernel has run; the
///   outputs overlap no input and nothing else accesses them until then;
/// * `stream` is a live stream of that context (or [`RawStream::NULL`]).
///
/// Shapes and lengths are still checked; the addresses cannot be.
///
/// # Errors
/// As [`viterbi_dev`].
#[allow(clippy::too_many_arguments)]
pub unsafe fn viterbi_raw(
    ctx: &Context,
    stream: RawStream,
    log_pi: CUdeviceptr,
    log_a: CUdeviceptr,
    log_b: CUdeviceptr,
    lengths: &[u32],
    batch: usize,
    t: usize,
    s: usize,
    paths: CUdeviceptr,
    scores: CUdeviceptr,
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
        paths: DevPtr::new(paths),
        scores: DevPtr::new(scores),
    };
    let st = ctx.borrowed_stream(stream);
    launch(&st, io, lengths, batch, t, s, PointerCheck::Caller)
}

/// Upload the inputs, decode on `stream`, download paths and scores.
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
) -> Result<Viterbi> {
    host::validate(log_pi, log_a, log_b, lengths, batch, t, s)?;
    let ctx = stream.context();
    let (pi, a, bb) = (
        stream.upload(log_pi)?,
        stream.upload(log_a)?,
        stream.upload(log_b)?,
    );
    let mut paths = ctx.alloc::<u32>(batch * t)?;
    let mut scores = ctx.alloc::<f32>(batch)?;
    viterbi_dev(
        stream,
        &pi,
        &a,
        &bb,
        lengths,
        batch,
        t,
        s,
        &mut paths,
        &mut scores,
    )?;
    Ok(Viterbi {
        batch,
        t,
        paths: stream.to_vec(&paths)?,
        scores: stream.to_vec(&scores)?,
    })
}

/// The best path of every sequence (see the [module contract](super)) on
/// `backend`; every backend gives the same bits.
#[allow(clippy::too_many_arguments)]
pub fn viterbi(
    backend: Backend,
    log_pi: &[f32],
    log_a: &[f32],
    log_b: &[f32],
    lengths: &[u32],
    batch: usize,
    t: usize,
    s: usize,
) -> Result<(Viterbi, Ran)> {
    host::validate(log_pi, log_a, log_b, lengths, batch, t, s)?;
    dispatch(
        backend,
        || host::viterbi(log_pi, log_a, log_b, lengths, batch, t, s),
        |st| run_on(st, log_pi, log_a, log_b, lengths, batch, t, s),
    )
}
