//! Launch code of [`super`], one request ([`Shape`] and the sequence
//! lengths) for every entry point: the slice API on a [`Backend`]
//! ([`viterbi`]) or a stream ([`viterbi_on`]), the device entry point
//! ([`viterbi_dev`]: model and emissions on the device, paths and scores
//! written there) and the raw-pointer twin ([`viterbi_raw`]), written
//! against [`Stream`] so the GPU and the simulator run the same sequence.

use super::host::{self, Shape, Viterbi, validate_lengths};
use super::ptx::{THREADS, ViterbiArgs, cap_for, cluster, generate};
use crate::dsl::params::KernelParams;
use crate::error::Result;
use crate::exec::{CUdeviceptr, LaunchConfig};
use crate::kernels::check;
use crate::kernels::dispatch::dispatch;
use crate::kernels::{memo, raw};
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::buffer::{AsDevice, AsDeviceMut};
use crate::runtime::context::Stream;

/// Where [`viterbi_dev`] writes: `paths` (`[batch, T]` u32s) and `scores`
/// (`[batch]` f32s), device buffers or foreign views.
#[derive(Debug)]
pub struct DeviceOutputs<'a, P, S> {
    /// `[batch, T]`: the best state at each position,
    /// [`NO_STATE`](super::NO_STATE) past a sequence's length.
    pub paths: &'a mut P,
    /// `[batch]`: each best path's score.
    pub scores: &'a mut S,
}

/// The output addresses of [`viterbi_raw`].
#[derive(Debug, Clone, Copy)]
pub struct RawOutputs {
    /// `[batch, T]` u32s.
    pub paths: CUdeviceptr,
    /// `[batch]` f32s.
    pub scores: CUdeviceptr,
}

/// Decode every sequence on the device, queued on `stream`: `log_pi`
/// (`[S]`), `log_a` (`[S, S]`) and `log_b` (`[batch, T, S]`) are device
/// buffers or foreign views (a model uploaded once serves any number of
/// batches), `out`'s paths and scores are written there. `lengths` is a
/// host slice: it is validated (each at most `T`) and uploaded (`batch ·
/// 4` bytes). A `[batch, T, S]` backpointer workspace is allocated for the
/// call.
///
/// ```
/// use ptxsmith::kernels::viterbi::{self, DeviceOutputs, Shape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let shape = Shape { batch: 1, t: 3, s: 2 };
/// let log_pi = st.upload(&[0.0f32, -1.0])?;
/// let log_a = st.upload(&[-0.1f32, -2.0, -2.0, -0.1])?;
/// let log_b = st.upload(&[-0.5f32, -3.0, -3.0, -0.5, -0.5, -3.0])?;
/// let (mut paths, mut scores) = (ctx.alloc::<u32>(3)?, ctx.alloc::<f32>(1)?);
/// let out = DeviceOutputs { paths: &mut paths, scores: &mut scores };
/// viterbi::viterbi_dev(&st, shape, &[3], &log_pi, &log_a, &log_b, out)?;
/// assert_eq!(st.to_vec(&paths)?, [0, 0, 0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the
/// values for `S` out of range, a buffer length that does not match its
/// shape, a length above `T`, sizes that overflow;
/// [`Error::WrongContext`](crate::Error::WrongContext); JIT and launch
/// errors. Nothing is queued on error.
pub fn viterbi_dev<P, S>(
    stream: &Stream,
    shape: Shape,
    lengths: &[u32],
    log_pi: &impl AsDevice<f32>,
    log_a: &impl AsDevice<f32>,
    log_b: &impl AsDevice<f32>,
    out: DeviceOutputs<'_, P, S>,
) -> Result<()>
where
    P: AsDeviceMut<u32>,
    S: AsDeviceMut<f32>,
{
    shape.validate()?;
    let Shape { batch, t, s } = shape;
    validate_lengths(lengths, batch, t)?;
    check::len("viterbi", "log_pi", log_pi.as_device().len(), s, "S")?;
    check::len("viterbi", "log_a", log_a.as_device().len(), s * s, "S × S")?;
    check::len(
        "viterbi",
        "log_b",
        log_b.as_device().len(),
        batch * t * s,
        "batch × T × S",
    )?;
    check::len(
        "viterbi",
        "paths",
        out.paths.as_device().len(),
        batch * t,
        "batch × T",
    )?;
    check::len(
        "viterbi",
        "scores",
        out.scores.as_device().len(),
        batch,
        "batch",
    )?;
    let (pi, a, b) = (
        stream.arg("log_pi", log_pi)?,
        stream.arg("log_a", log_a)?,
        stream.arg("log_b", log_b)?,
    );
    let (paths, scores) = (
        stream.arg_mut("paths", out.paths)?,
        stream.arg_mut("scores", out.scores)?,
    );
    if batch == 0 {
        return Ok(());
    }
    let ctx = stream.context();
    // A cluster a sequence with the matrix on chip where clusters exist
    // (`ptx::cluster`), else a CTA a sequence.
    let (module, ctas_per_seq) = if cluster::uses_cluster(ctx.sm(), s) {
        (memo!(cluster::generate, ctx.sm())?, cluster::CLUSTER)
    } else {
        (memo!(generate, ctx.sm(), cap_for(s))?, 1)
    };
    // The grid's x dimension is at most 2^31 − 1 CTAs.
    let ctas = (batch as u64) * u64::from(ctas_per_seq);
    if ctas > i32::MAX as u64 {
        return Err(crate::Error::invalid(format!(
            "viterbi: batch = {batch} needs {ctas} CTAs ({ctas_per_seq} a sequence); \
             a launch takes at most 2^31 − 1"
        )));
    }
    let lens = stream.upload(lengths)?;
    let mut psi = ctx.alloc::<u32>(batch * t * s)?;
    let args = ViterbiArgs {
        log_pi: pi,
        log_a: a,
        log_b: b,
        lengths: stream.arg("lengths", &lens)?,
        psi: stream.arg_mut("psi", &mut psi)?,
        paths,
        scores,
        t: t as u32,
        s: s as u32,
    };
    let cfg = LaunchConfig::linear(ctas as u32, THREADS);
    stream.launch(module, cfg, &args.args())
}

/// [`viterbi_dev`] on raw device addresses of another stack, queued on
/// `stream` (e.g. made with [`Stream::from_raw`]): a thin wrapper that
/// views `log_pi` (`S`), `log_a` (`S × S`), `log_b` (`batch × T × S`
/// f32s) and `out` (`batch × T` u32s, `batch` f32s) as [`ForeignSlice`](crate::runtime::ForeignSlice)s of
/// those lengths, so every check of the views applies. `lengths` is a host
/// slice (validated and uploaded); the backpointer workspace is
/// ptxsmith's.
///
/// ```
/// use ptxsmith::kernels::viterbi::{self, RawOutputs, Shape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let (pi, a, b) = (st.upload(&[0.0f32])?, st.upload(&[-1.0f32])?, st.upload(&[-0.5f32, -0.5])?);
/// let (paths, scores) = (ctx.alloc::<u32>(2)?, ctx.alloc::<f32>(1)?);
/// let out = RawOutputs { paths: paths.device_ptr(), scores: scores.device_ptr() };
/// let shape = Shape { batch: 1, t: 2, s: 1 };
/// // SAFETY: live memory of this context of the lengths the shape gives.
/// unsafe { viterbi::viterbi_raw(&st, shape, &[2], pi.device_ptr(), a.device_ptr(), b.device_ptr(), out)? };
/// assert_eq!(scores.to_vec()?, [-2.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Safety
/// * every address is device memory of `stream`'s context with at least
///   the length above, valid until the kernel has run; the outputs overlap
///   no input and nothing else accesses them until then.
///
/// # Errors
/// As [`viterbi_dev`], and the checks of [`ForeignSlice::from_raw_parts`](crate::runtime::ForeignSlice::from_raw_parts).
pub unsafe fn viterbi_raw(
    stream: &Stream,
    shape: Shape,
    lengths: &[u32],
    log_pi: CUdeviceptr,
    log_a: CUdeviceptr,
    log_b: CUdeviceptr,
    out: RawOutputs,
) -> Result<()> {
    shape.validate()?;
    let Shape { batch, t, s } = shape;
    // SAFETY: the caller's contract covers each range (lengths from the
    // validated shape).
    let (pi, a, b, mut paths, mut scores) = unsafe {
        (
            raw::view::<f32>(stream, log_pi, s)?,
            raw::view::<f32>(stream, log_a, s * s)?,
            raw::view::<f32>(stream, log_b, batch * t * s)?,
            raw::view_mut::<u32>(stream, out.paths, batch * t)?,
            raw::view_mut::<f32>(stream, out.scores, batch)?,
        )
    };
    let out = DeviceOutputs {
        paths: &mut paths,
        scores: &mut scores,
    };
    viterbi_dev(stream, shape, lengths, &pi, &a, &b, out)
}

/// Upload the inputs, decode on `stream`, download paths and scores.
///
/// ```
/// use ptxsmith::kernels::viterbi::{self, Shape};
/// use ptxsmith::runtime::Context;
///
/// let st = Context::sim(ptxsmith::Sm::Sm80).default_stream();
/// let shape = Shape { batch: 2, t: 2, s: 1 };
/// let v = viterbi::viterbi_on(&st, shape, &[2, 1], &[0.0], &[-1.0], &[-0.5, -0.5, -2.0, -9.0])?;
/// assert_eq!(v.scores, [-2.0, -2.0]); // 0 − 0.5 − 1 − 0.5; 0 − 2
/// assert_eq!(v.paths, [0, 0, 0, viterbi::NO_STATE]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`viterbi_dev`].
pub fn viterbi_on(
    stream: &Stream,
    shape: Shape,
    lengths: &[u32],
    log_pi: &[f32],
    log_a: &[f32],
    log_b: &[f32],
) -> Result<Viterbi> {
    let Shape { batch, t, s } = shape;
    host::validate(log_pi, log_a, log_b, lengths, batch, t, s)?;
    let ctx = stream.context();
    let (pi, a, bb) = (
        stream.upload(log_pi)?,
        stream.upload(log_a)?,
        stream.upload(log_b)?,
    );
    let mut paths = ctx.alloc::<u32>(batch * t)?;
    let mut scores = ctx.alloc::<f32>(batch)?;
    let out = DeviceOutputs {
        paths: &mut paths,
        scores: &mut scores,
    };
    viterbi_dev(stream, shape, lengths, &pi, &a, &bb, out)?;
    Ok(Viterbi {
        batch,
        t,
        paths: stream.to_vec(&paths)?,
        scores: stream.to_vec(&scores)?,
    })
}

/// The best path of every sequence (see the [module contract](super)) on
/// `backend`; every backend gives the same bits.
///
/// ```
/// use ptxsmith::kernels::viterbi::{self, Shape};
/// use ptxsmith::runtime::Backend;
///
/// // Two states that prefer to stay; the emissions favour 0, 1, 1.
/// let shape = Shape { batch: 1, t: 3, s: 2 };
/// let (log_pi, log_a) = ([0.0, -1.0], [-0.1, -2.0, -2.0, -0.1]);
/// let log_b = [-0.5, -3.0, -3.0, -0.5, -3.0, -0.5];
/// let (v, _ran) = viterbi::viterbi(Backend::Sim, shape, &[3], &log_pi, &log_a, &log_b)?;
/// assert_eq!(v.paths, [0, 1, 1]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`viterbi_dev`], checked before anything runs.
pub fn viterbi(
    backend: Backend,
    shape: Shape,
    lengths: &[u32],
    log_pi: &[f32],
    log_a: &[f32],
    log_b: &[f32],
) -> Result<(Viterbi, Ran)> {
    let Shape { batch, t, s } = shape;
    host::validate(log_pi, log_a, log_b, lengths, batch, t, s)?;
    dispatch(
        backend,
        || host::viterbi(log_pi, log_a, log_b, lengths, batch, t, s),
        |st| viterbi_on(st, shape, lengths, log_pi, log_a, log_b),
    )
}
