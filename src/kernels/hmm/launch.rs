//! Launch code of [`super`], one request ([`Shape`]) first after the
//! backend or stream for every entry point, then the inputs (with the
//! sequence lengths, a host slice) and, on the device, the outputs: the
//! slice API on a [`Backend`] ([`forward_backward`]) or a stream
//! ([`forward_backward_on`]), the device entry point
//! ([`forward_backward_dev`]: model and emissions on the device, every
//! output written there) and its raw-pointer twin on another stack's
//! memory ([`forward_backward_raw`]), written against [`Stream`] so the GPU
//! and the simulator run the same sequence. Every kernel is a memoised
//! module (one PTX generation per kernel, target and state capacity in a
//! process).
//!
//! # Workspace
//! The kernels' device scratch is a [`Workspace`] (its buffers, bytes per
//! shape and the shapes one serves are in [its docs](super::workspace)).
//! The `_ws` entry points ([`forward_backward_dev_ws`],
//! [`forward_backward_on_ws`]) take one the caller keeps, so a warm
//! [`forward_backward_dev_ws`] allocates nothing (the lengths are copied
//! into the workspace); the others make one for the call
//! ([`Workspace::bytes_for`] bytes in 12 allocations), released when the
//! kernels have run.

use super::host::{self, Inputs, Posteriors, Shape, validate_lengths};
use super::ptx::{
    BackwardArgs, ForwardArgs, JointArgs, MaximaArgs, PosteriorArgs, PrepExpArgs, PrepMaxArgs,
    THREADS, TransitionArgs, WARPS, cap_for, cluster_for, cluster_smem_bytes, generate_backward,
    generate_backward_cluster, generate_forward, generate_forward_cluster, generate_fwdbwd_cluster,
    generate_maxima, generate_posteriors, generate_prep_exp, generate_prep_max,
    generate_transitions, joint_fits, maxima_ctas, transition_groups, transition_threads,
};
use super::workspace::Workspace;
use crate::dsl::params::{DevPtr, KernelParams};
use crate::dsl::types::F32;
use crate::error::Result;
use crate::exec::{CUdeviceptr, LaunchConfig};
use crate::kernels::dispatch::dispatch;
use crate::kernels::{check, grid, memo, raw};
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::buffer::{AsDevice, AsDeviceMut, DeviceSlice, DeviceSliceMut};
use crate::runtime::context::Stream;

/// The inputs of [`forward_backward_dev`]: the model and the emissions as
/// device memory (views of device buffers or foreign slices, e.g.
/// `buf.as_device()`), the lengths as a host slice (validated and
/// uploaded, `batch · 4` bytes).
#[derive(Debug, Clone, Copy)]
pub struct DeviceInputs<'a> {
    /// `[S]` initial log-probabilities (or start scores).
    pub log_pi: DeviceSlice<'a, f32>,
    /// `[S, S]` transition log-probabilities, `log_a[i·S + j]` from `i`
    /// to `j`.
    pub log_a: DeviceSlice<'a, f32>,
    /// `[batch, T, S]` emission log-probabilities (or label scores).
    pub log_b: DeviceSlice<'a, f32>,
    /// `[batch]` sequence lengths, each at most `T` (host memory).
    pub lengths: &'a [u32],
}

/// Where [`forward_backward_dev`] writes, device memory (views of device
/// buffers or foreign slices, e.g. `buf.as_device_mut()`); the fields of
/// [`Posteriors`] of the same names.
#[derive(Debug)]
pub struct DeviceOutputs<'a> {
    /// `[batch, T, S]` forward log-probabilities (`−inf` past a length).
    pub log_alpha: DeviceSliceMut<'a, f32>,
    /// `[batch, T, S]` backward log-probabilities (`−inf` past a length).
    pub log_beta: DeviceSliceMut<'a, f32>,
    /// `[batch]` log-likelihoods (`+0.0` for length 0).
    pub log_likelihood: DeviceSliceMut<'a, f32>,
    /// `[batch, T, S]` state posteriors (`0` past a length).
    pub gamma: DeviceSliceMut<'a, f32>,
    /// `[batch, S, S]` expected transition counts.
    pub xi: DeviceSliceMut<'a, f32>,
}

/// The whole forward-backward pass on the device, queued on `stream`: the
/// inputs are device memory (a model uploaded once serves any number of
/// batches), every output is written to `out`; a workspace is allocated
/// for the call (see the [launch docs](self)).
///
/// ```
/// use ptxsmith::kernels::hmm::{self, DeviceInputs, DeviceOutputs, Shape};
/// use ptxsmith::runtime::{AsDevice, AsDeviceMut, Context};
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let shape = Shape::new(1, 2, 2)?;
/// let (pi, a) = (st.upload(&[-0.5f32, -1.0])?, st.upload(&[-0.1f32, -2.4, -2.4, -0.1])?);
/// let b = st.upload(&[-0.2f32, -1.7, -1.7, -0.2])?;
/// let mut alpha = ctx.alloc::<f32>(4)?;
/// let mut beta = ctx.alloc::<f32>(4)?;
/// let mut ll = ctx.alloc::<f32>(1)?;
/// let mut gamma = ctx.alloc::<f32>(4)?;
/// let mut xi = ctx.alloc::<f32>(4)?;
/// let inputs = DeviceInputs {
///     log_pi: pi.as_device(),
///     log_a: a.as_device(),
///     log_b: b.as_device(),
///     lengths: &[2],
/// };
/// let out = DeviceOutputs {
///     log_alpha: alpha.as_device_mut(),
///     log_beta: beta.as_device_mut(),
///     log_likelihood: ll.as_device_mut(),
///     gamma: gamma.as_device_mut(),
///     xi: xi.as_device_mut(),
/// };
/// hmm::forward_backward_dev(&st, shape, &inputs, out)?;
/// let gamma = st.to_vec(&gamma)?;
/// assert!((gamma[0] + gamma[1] - 1.0).abs() < 1e-6); // a distribution per step
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) naming the
/// values for a buffer whose length does not match `shape` or a length
/// above `T`; [`Error::WrongContext`](crate::Error::WrongContext); JIT and
/// launch errors. Nothing is queued on error.
pub fn forward_backward_dev(
    stream: &Stream,
    shape: Shape,
    inputs: &DeviceInputs<'_>,
    out: DeviceOutputs<'_>,
) -> Result<()> {
    with_own_workspace(stream, shape, inputs, out, true)
}

/// [`forward_backward_dev`] with the forward and backward recursions in
/// two launches one after the other even where one launch of both would
/// fit the device (`hmm_fwdbwd_cluster<n>_cap<c>`, see `hmm::ptx`): the
/// same bits, for comparisons and for models of a batch that takes the
/// two launches at full size (the roofline's batch-64 row, whose small
/// samples would otherwise take the one launch).
///
/// # Errors
/// As [`forward_backward_dev`].
pub fn forward_backward_dev_two_launches(
    stream: &Stream,
    shape: Shape,
    inputs: &DeviceInputs<'_>,
    out: DeviceOutputs<'_>,
) -> Result<()> {
    with_own_workspace(stream, shape, inputs, out, false)
}

/// The checks, a workspace for this call and the launches
/// (`allow_joint`: one launch of both recursions where it fits).
fn with_own_workspace(
    stream: &Stream,
    shape: Shape,
    inputs: &DeviceInputs<'_>,
    out: DeviceOutputs<'_>,
    allow_joint: bool,
) -> Result<()> {
    let io = checked(stream, shape, inputs, out)?;
    if shape.batch() == 0 {
        return Ok(());
    }
    let mut ws = Workspace::new(stream.context(), shape)?;
    launch(stream, &mut ws, shape, inputs.lengths, &io, allow_joint)
}

/// [`forward_backward_dev`] with the caller's [`Workspace`]: after a first
/// call (which loads the kernels), a call allocates nothing. `ws` must
/// belong to `stream`'s context and [fit](Workspace::fits) `shape`; the
/// results are the same bits as [`forward_backward_dev`]'s whatever `ws`
/// held before.
///
/// ```
/// use ptxsmith::kernels::hmm::{self, DeviceInputs, DeviceOutputs, Shape, Workspace};
/// use ptxsmith::runtime::{AsDevice, AsDeviceMut, Context};
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let shape = Shape::new(1, 2, 2)?;
/// let mut ws = Workspace::new(&ctx, shape)?; // once
/// let (pi, a) = (st.upload(&[-0.5f32, -1.0])?, st.upload(&[-0.1f32, -2.4, -2.4, -0.1])?);
/// let b = st.upload(&[-0.2f32, -1.7, -1.7, -0.2])?;
/// let mut outs: Vec<_> = [4, 4, 1, 4, 4].into_iter().map(|n| ctx.alloc::<f32>(n)).collect::<Result<_, _>>()?;
/// let inputs = DeviceInputs { log_pi: pi.as_device(), log_a: a.as_device(), log_b: b.as_device(), lengths: &[2] };
/// for _ in 0..2 {
///     let before = ctx.traffic();
///     let [alpha, beta, ll, gamma, xi] = &mut outs[..] else { unreachable!() };
///     let out = DeviceOutputs {
///         log_alpha: alpha.as_device_mut(),
///         log_beta: beta.as_device_mut(),
///         log_likelihood: ll.as_device_mut(),
///         gamma: gamma.as_device_mut(),
///         xi: xi.as_device_mut(),
///     };
///     hmm::forward_backward_dev_ws(&st, &mut ws, shape, &inputs, out)?;
///     assert_eq!(ctx.traffic().since(&before).allocations, 0); // only the workspace's memory
/// }
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`forward_backward_dev`], and, checked before anything is written:
/// [`Error::WrongContext`](crate::Error::WrongContext) (`what`:
/// `"workspace"`) for a workspace of another context,
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) (`what`:
/// `"workspace"`) naming both shapes for one that does not fit `shape`.
pub fn forward_backward_dev_ws(
    stream: &Stream,
    ws: &mut Workspace,
    shape: Shape,
    inputs: &DeviceInputs<'_>,
    out: DeviceOutputs<'_>,
) -> Result<()> {
    let io = checked(stream, shape, inputs, out)?;
    ws.check(stream, shape)?;
    if shape.batch() == 0 {
        return Ok(());
    }
    launch(stream, ws, shape, inputs.lengths, &io, true)
}

/// Check every length and the lengths' values; the caller's memory as
/// kernel arguments.
fn checked(
    stream: &Stream,
    shape: Shape,
    inputs: &DeviceInputs<'_>,
    mut out: DeviceOutputs<'_>,
) -> Result<Ptrs> {
    validate_lengths(inputs.lengths, shape.batch(), shape.t())?;
    let (n, s) = (shape.elements(), shape.s());
    check::len("hmm", "log_pi", inputs.log_pi.len(), s, "S")?;
    check::len("hmm", "log_a", inputs.log_a.len(), s * s, "S × S")?;
    check::len("hmm", "log_b", inputs.log_b.len(), n, "batch × T × S")?;
    check::len("hmm", "log_alpha", out.log_alpha.len(), n, "batch × T × S")?;
    check::len("hmm", "log_beta", out.log_beta.len(), n, "batch × T × S")?;
    check::len("hmm", "gamma", out.gamma.len(), n, "batch × T × S")?;
    let batch = shape.batch();
    check::len(
        "hmm",
        "log_likelihood",
        out.log_likelihood.len(),
        batch,
        "batch",
    )?;
    check::len("hmm", "xi", out.xi.len(), shape.xi_len(), "batch × S × S")?;
    Ok(Ptrs {
        log_pi: stream.arg("log_pi", &inputs.log_pi)?,
        log_a: stream.arg("log_a", &inputs.log_a)?,
        log_b: stream.arg("log_b", &inputs.log_b)?,
        alpha: stream.arg_mut("log_alpha", &mut out.log_alpha)?,
        beta: stream.arg_mut("log_beta", &mut out.log_beta)?,
        ll: stream.arg_mut("log_likelihood", &mut out.log_likelihood)?,
        gamma: stream.arg_mut("gamma", &mut out.gamma)?,
        xi: stream.arg_mut("xi", &mut out.xi)?,
    })
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

/// `n` CTAs of task counter for `tasks` tasks.
fn task_grid(tasks: u64) -> LaunchConfig {
    LaunchConfig::linear(grid::ctas_within(tasks, 1, 1 << 16), THREADS)
}

fn launch(
    stream: &Stream,
    ws: &mut Workspace,
    shape: Shape,
    lengths: &[u32],
    io: &Ptrs,
    allow_joint: bool,
) -> Result<()> {
    let ctx = stream.context();
    let sm = ctx.sm();
    let (batch, t, s, sp) = (shape.batch(), shape.t(), shape.s(), shape.padded());
    let cap = cap_for(s);
    stream.copy_from_host(&mut ws.lengths.slice_mut(..batch)?, lengths)?;
    let lens_p = stream.arg("lengths", &ws.lengths)?;
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
    stream.launch(memo!(generate_prep_max, sm)?, grid, &pm.args())?;
    let pe = PrepExpArgs {
        log_a: io.log_a,
        prep,
        a_hat,
        a_til,
        s: s32,
        sp: sp32,
    };
    let grid = LaunchConfig::linear(sp.min(1024) as u32, THREADS);
    stream.launch(memo!(generate_prep_exp, sm)?, grid, &pe.args())?;

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
    let cluster = cluster_for(sm, s, sp, cap);
    match cluster {
        // Both recursions in one launch (`ptx/joint.rs`) when their
        // `2·batch·n` CTAs fit the device in one wave: the emission maxima
        // first, then the forward in clusters `0 .. batch` and the
        // backward in the others.
        Some(n) if allow_joint && joint_fits(sm, ctx.multiprocessor_count(), batch, cap, n) => {
            let mx = MaximaArgs {
                log_b: io.log_b,
                lengths: lens_p,
                mb,
                batch: batch as u32,
                t: t32,
                s: s32,
            };
            let cfg = LaunchConfig::linear(maxima_ctas(batch as u64 * t as u64), THREADS);
            stream.launch(memo!(generate_maxima, sm)?, cfg, &mx.args())?;
            let joint = JointArgs {
                log_pi: io.log_pi,
                log_a: io.log_a,
                log_b: io.log_b,
                lengths: lens_p,
                prep,
                a_hat,
                a_til,
                alpha: io.alpha,
                alpha_lo: io.gamma,
                mb,
                cnorm,
                ll: io.ll,
                beta: io.beta,
                beta_lo,
                dnorm,
                w,
                rh,
                rl,
                flags,
                batch: batch as u32,
                t: t32,
                s: s32,
                sp: sp32,
            };
            let mut cfg = LaunchConfig::linear(2 * batch as u32 * n, THREADS);
            cfg.dynamic_smem_bytes = cluster_smem_bytes(sp, n) as u32;
            let m = memo!(generate_fwdbwd_cluster, sm, cap, n)?;
            stream.launch(m, cfg, &joint.args())?;
        }
        // A cluster of `n` CTAs per sequence, `Â` on chip (`ptx/cluster.rs`):
        // the grid is `batch · n`, a multiple of the compiled cluster shape.
        Some(n) => {
            let mut cfg = LaunchConfig::linear(batch as u32 * n, THREADS);
            cfg.dynamic_smem_bytes = cluster_smem_bytes(sp, n) as u32;
            let m = memo!(generate_forward_cluster, sm, cap, n)?;
            stream.launch(m, cfg, &fwd.args())?;
            let m = memo!(generate_backward_cluster, sm, cap, n)?;
            stream.launch(m, cfg, &bwd.args())?;
        }
        None => {
            stream.launch(memo!(generate_forward, sm, cap)?, per_seq, &fwd.args())?;
            stream.launch(memo!(generate_backward, sm, cap)?, per_seq, &bwd.args())?;
        }
    }

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
    stream.launch(
        memo!(generate_posteriors, sm)?,
        task_grid(tasks),
        &post.args(),
    )?;
    let xi_threads = transition_threads(batch, s, sp);
    let groups = transition_groups(s, sp, xi_threads);
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
    let xi_grid = LaunchConfig::linear(grid::ctas_within(tasks, 1, 1 << 16), xi_threads);
    stream.launch(memo!(generate_transitions, sm)?, xi_grid, &xi.args())
}

/// The inputs of [`forward_backward_raw`]: raw device addresses of
/// `log_pi` (`S`), `log_a` (`S × S`) and `log_b` (`batch × T × S`) f32s,
/// and the lengths as a host slice (validated and uploaded).
#[derive(Debug, Clone, Copy)]
pub struct RawInputs<'a> {
    /// `[S]` f32s: initial log-probabilities.
    pub log_pi: CUdeviceptr,
    /// `[S, S]` f32s: transition log-probabilities.
    pub log_a: CUdeviceptr,
    /// `[batch, T, S]` f32s: emission log-probabilities.
    pub log_b: CUdeviceptr,
    /// `[batch]` sequence lengths, each at most `T` (host memory).
    pub lengths: &'a [u32],
}

/// The output addresses of [`forward_backward_raw`]: `log_alpha`,
/// `log_beta`, `gamma` (`batch × T × S`), `log_likelihood` (`batch`) and
/// `xi` (`batch × S × S`) f32s; the fields of [`DeviceOutputs`].
#[derive(Debug, Clone, Copy)]
pub struct RawOutputs {
    /// `[batch, T, S]` f32s.
    pub log_alpha: CUdeviceptr,
    /// `[batch, T, S]` f32s.
    pub log_beta: CUdeviceptr,
    /// `[batch]` f32s.
    pub log_likelihood: CUdeviceptr,
    /// `[batch, T, S]` f32s.
    pub gamma: CUdeviceptr,
    /// `[batch, S, S]` f32s.
    pub xi: CUdeviceptr,
}

/// [`forward_backward_dev`] on raw device addresses of another stack,
/// queued on `stream` (e.g. made from the other stack's stream with
/// [`Stream::from_raw`]): a thin wrapper that views every address as a
/// [`ForeignSlice`](crate::runtime::ForeignSlice) (inputs) or [`ForeignSliceMut`](crate::runtime::ForeignSliceMut) (outputs) of the
/// length the shape gives, so every check of the views applies. The
/// workspace is ptxsmith's.
///
/// ```
/// use ptxsmith::kernels::hmm::{self, RawInputs, RawOutputs, Shape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// // Addresses another stack handed over (here, ptxsmith buffers' own).
/// let (pi, a, b) = (st.upload(&[0.0f32])?, st.upload(&[0.0f32])?, st.upload(&[-1.0f32, -2.0])?);
/// let outs: Vec<_> = [2, 2, 1, 2, 1].into_iter().map(|n| ctx.alloc::<f32>(n)).collect::<Result<_, _>>()?;
/// let inputs = RawInputs { log_pi: pi.device_ptr(), log_a: a.device_ptr(), log_b: b.device_ptr(), lengths: &[2] };
/// let out = RawOutputs {
///     log_alpha: outs[0].device_ptr(),
///     log_beta: outs[1].device_ptr(),
///     log_likelihood: outs[2].device_ptr(),
///     gamma: outs[3].device_ptr(),
///     xi: outs[4].device_ptr(),
/// };
/// // SAFETY: live memory of this context of the lengths the shape gives;
/// // the outputs overlap nothing.
/// unsafe { hmm::forward_backward_raw(&st, Shape::new(1, 2, 1)?, inputs, out)? };
/// assert_eq!(outs[2].to_vec()?, [-3.0]); // one state: the sum of the scores
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Safety
/// * every address is device memory of `stream`'s context with at least
///   the length above, valid until the kernels have run;
/// * the outputs overlap no input and each other, and nothing else
///   accesses them until then.
///
/// # Errors
/// As [`forward_backward_dev`], and the checks of
/// [`ForeignSlice::from_raw_parts`](crate::runtime::ForeignSlice::from_raw_parts).
pub unsafe fn forward_backward_raw(
    stream: &Stream,
    shape: Shape,
    inputs: RawInputs<'_>,
    out: RawOutputs,
) -> Result<()> {
    let (n, s) = (shape.elements(), shape.s());
    let (b, xi) = (shape.batch(), shape.xi_len());
    // SAFETY: the caller's contract covers each range (lengths from the
    // shape, valid once built).
    let (pi, a, lb, mut alpha, mut beta, mut ll, mut gamma, mut xi) = unsafe {
        (
            raw::view::<f32>(stream, inputs.log_pi, s)?,
            raw::view::<f32>(stream, inputs.log_a, s * s)?,
            raw::view::<f32>(stream, inputs.log_b, n)?,
            raw::view_mut::<f32>(stream, out.log_alpha, n)?,
            raw::view_mut::<f32>(stream, out.log_beta, n)?,
            raw::view_mut::<f32>(stream, out.log_likelihood, b)?,
            raw::view_mut::<f32>(stream, out.gamma, n)?,
            raw::view_mut::<f32>(stream, out.xi, xi)?,
        )
    };
    let inputs = DeviceInputs {
        log_pi: pi.as_device(),
        log_a: a.as_device(),
        log_b: lb.as_device(),
        lengths: inputs.lengths,
    };
    let out = DeviceOutputs {
        log_alpha: alpha.as_device_mut(),
        log_beta: beta.as_device_mut(),
        log_likelihood: ll.as_device_mut(),
        gamma: gamma.as_device_mut(),
        xi: xi.as_device_mut(),
    };
    forward_backward_dev(stream, shape, &inputs, out)
}

/// Upload the inputs, run [`forward_backward_dev`] on `stream`, download
/// every output.
///
/// ```
/// use ptxsmith::kernels::hmm::{self, Inputs, Shape};
/// use ptxsmith::runtime::Context;
///
/// let st = Context::sim(ptxsmith::Sm::Sm80).default_stream();
/// let shape = Shape::new(2, 2, 1)?;
/// let inputs = Inputs { log_pi: &[0.0], log_a: &[-0.5], log_b: &[-1.0, -2.0, -4.0, -8.0], lengths: &[2, 1] };
/// let p = hmm::forward_backward_on(&st, shape, &inputs)?;
/// assert_eq!(p.log_likelihood, [-3.5, -4.0]); // −1 − 0.5 − 2; −4
/// assert_eq!(p.gamma, [1.0, 1.0, 1.0, 0.0]); // 0 past a length
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`forward_backward_dev`].
pub fn forward_backward_on(
    stream: &Stream,
    shape: Shape,
    inputs: &Inputs<'_>,
) -> Result<Posteriors> {
    on(stream, None, shape, inputs)
}

/// [`forward_backward_on`] with the caller's [`Workspace`]: the kernels'
/// scratch is not allocated again (the uploads of the inputs and the
/// outputs still are; [`forward_backward_dev_ws`] on resident buffers
/// allocates nothing).
///
/// ```
/// use ptxsmith::kernels::hmm::{self, Inputs, Shape, Workspace};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let mut ws = Workspace::new(&ctx, Shape::new(2, 2, 1)?)?;
/// let shape = Shape::new(2, 2, 1)?;
/// let inputs = Inputs { log_pi: &[0.0], log_a: &[-0.5], log_b: &[-1.0, -2.0, -4.0, -8.0], lengths: &[2, 1] };
/// let p = hmm::forward_backward_on_ws(&st, &mut ws, shape, &inputs)?;
/// assert_eq!(p.log_likelihood, [-3.5, -4.0]);
/// // A smaller shape reuses it.
/// let one = Inputs { log_b: &[-1.0, -2.0], lengths: &[2], ..inputs };
/// assert_eq!(hmm::forward_backward_on_ws(&st, &mut ws, Shape::new(1, 2, 1)?, &one)?.log_likelihood, [-3.5]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`forward_backward_dev_ws`].
pub fn forward_backward_on_ws(
    stream: &Stream,
    ws: &mut Workspace,
    shape: Shape,
    inputs: &Inputs<'_>,
) -> Result<Posteriors> {
    on(stream, Some(ws), shape, inputs)
}

fn on(
    stream: &Stream,
    ws: Option<&mut Workspace>,
    shape: Shape,
    inputs: &Inputs<'_>,
) -> Result<Posteriors> {
    inputs.validate(shape)?;
    if let Some(ws) = &ws {
        ws.check(stream, shape)?;
    }
    let ctx = stream.context();
    let (pi, a, bb) = (
        stream.upload(inputs.log_pi)?,
        stream.upload(inputs.log_a)?,
        stream.upload(inputs.log_b)?,
    );
    let n = shape.elements();
    let mut alpha = ctx.alloc::<f32>(n)?;
    let mut beta = ctx.alloc::<f32>(n)?;
    let mut ll = ctx.alloc::<f32>(shape.batch())?;
    let mut gamma = ctx.alloc::<f32>(n)?;
    let mut xi = ctx.alloc::<f32>(shape.xi_len())?;
    let dev_in = DeviceInputs {
        log_pi: pi.as_device(),
        log_a: a.as_device(),
        log_b: bb.as_device(),
        lengths: inputs.lengths,
    };
    let dev_out = DeviceOutputs {
        log_alpha: alpha.as_device_mut(),
        log_beta: beta.as_device_mut(),
        log_likelihood: ll.as_device_mut(),
        gamma: gamma.as_device_mut(),
        xi: xi.as_device_mut(),
    };
    match ws {
        Some(ws) => forward_backward_dev_ws(stream, ws, shape, &dev_in, dev_out)?,
        None => forward_backward_dev(stream, shape, &dev_in, dev_out)?,
    }
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
/// ```
/// use ptxsmith::kernels::hmm::{self, Inputs, Shape};
/// use ptxsmith::runtime::Backend;
///
/// // Two sticky states; the emissions favour 0, then 1.
/// let shape = Shape::new(1, 2, 2)?;
/// let inputs = Inputs {
///     log_pi: &[-0.7, -0.7],
///     log_a: &[-0.1, -2.4, -2.4, -0.1],
///     log_b: &[-0.2, -1.7, -1.7, -0.2],
///     lengths: &[2],
/// };
/// let (p, _ran) = hmm::forward_backward(Backend::Sim, shape, &inputs)?;
/// assert_eq!(p, hmm::host::forward_backward(shape, &inputs)?); // bit-exact
/// assert!(p.gamma[0] > p.gamma[1] && p.gamma[3] > p.gamma[2]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`forward_backward_dev`], checked before anything runs;
/// [`Error::NoDevice`](crate::Error::NoDevice) for `Backend::Cuda` without
/// a GPU.
pub fn forward_backward(
    backend: Backend,
    shape: Shape,
    inputs: &Inputs<'_>,
) -> Result<(Posteriors, Ran)> {
    inputs.validate(shape)?;
    dispatch(
        backend,
        || host::forward_backward(shape, inputs),
        |st| forward_backward_on(st, shape, inputs),
    )
}
