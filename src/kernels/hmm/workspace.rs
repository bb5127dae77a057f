//! The device scratch of one forward-backward pass, kept by the caller:
//! [`Workspace`], sized once for a capacity [`Shape`] and reused by
//! [`forward_backward_dev_ws`](super::forward_backward_dev_ws) and
//! [`forward_backward_on_ws`](super::forward_backward_on_ws), so that a warm
//! call on device-resident inputs and outputs allocates nothing.
//!
//! # What it holds
//! With `S16` = `S` rounded up to a multiple of 16 and `N = batch · T`
//! (the per-step records), every buffer written by one kernel and read by a
//! later one:
//!
//! | buffer | elements (4 bytes) | written by | read by |
//! |---|---|---|---|
//! | prep vector (maxima, `dcol`, `drow`) | `6·S16 + 4` | prep | all |
//! | `Â`, `Ã` (shifted matrices) | `S16²` each | prep | forward; backward, counts |
//! | `Mb_t` (emission maxima) | `N` | forward | backward |
//! | `C_t`, `D_t` (normalizer pairs) | `2·N` each | forward, backward | posteriors |
//! | fallback flags | `N` | backward | counts |
//! | `β̂` low parts | `N·S` | backward | posteriors |
//! | `s_i`/`σ_i` (row stride `S16`) | `N·S16` | backward | posteriors, counts |
//! | `R_t` pairs (high, low) | `N·S` each | backward | counts |
//! | sequence lengths (u32) | `batch` | upload | all |
//!
//! in all [`Workspace::bytes_for`] `= 4 · (2·S16² + 6·S16 + 4 + batch +
//! N·(3·S + S16 + 6))` bytes (each buffer at least one element). The
//! forward's low parts of `â` live in the caller's `gamma`, which the
//! posteriors then overwrite in place.
//!
//! Nothing here could shrink without changing the kernels: every per-step
//! buffer is written by the forward or backward kernel and still needed by
//! a kernel after it (the transition counts read the backward's records,
//! the posteriors the normalizers of both directions), and the backward
//! kernel writes its transition-count records whatever the caller wants.
//! The only change in size from the workspace each call allocated before
//! is the lengths buffer (`4·batch` bytes), which the call used to upload
//! into a fresh allocation.
//!
//! | shape (batch, T, S) | bytes |
//! |---|---|
//! | 1, 1000, 4 | 0.14 MB (138 452) |
//! | 8, 1000, 256 | 33.5 MB (33 490 480) |
//! | 64, 1000, 256 (the bench) | 264.2 MB (264 210 704) |
//! | 64, 1000, 1024 | 1.06 GB (1 058 525 456) |
//! | 16, 100, 4096 | 0.24 GB (239 212 112) |
//!
//! # Which shapes a workspace serves
//! A workspace made for `(batch₀, T₀, S₀)` serves every shape with
//! `S ≤ S₀`, `batch ≤ batch₀` and `batch · T ≤ batch₀ · T₀` (each buffer's
//! length is monotone in `S` and in `N`, and the kernels index the
//! per-step records as `b · T + t` for the call's own `T`): a workspace for
//! the largest batch of a run serves its ragged tail, and one for
//! `(64, 1000, S)` also serves `(32, 2000, S)`. Every kernel writes each
//! record before it reads it, so what an earlier call left in the scratch
//! never reaches the results (tested: bit-identical to a fresh workspace,
//! also after a larger or a different shape).
//!
//! A workspace belongs to the context that made it. Calls on one stream
//! are ordered, so one workspace serves any number of calls queued there;
//! as with any buffer two streams share, a call on another stream must
//! come after the previous call's work (synchronise that stream, or make
//! the new one [wait](crate::runtime::Stream::wait_for) for it).

use std::fmt;

use super::host::Shape;
use super::ptx::prep_len;
use crate::error::{ArgError, Result};
use crate::runtime::buffer::DeviceBuffer;
use crate::runtime::context::{Context, Stream};

/// Element counts of every buffer of a workspace for `shape` (f32s, and
/// the u32 flags and lengths), each at least 1.
#[derive(Clone, Copy)]
struct Lens {
    prep: usize,
    matrix: usize,
    steps: usize,
    elements: usize,
    w: usize,
    batch: usize,
}

impl Lens {
    fn of(shape: Shape) -> Lens {
        let sp = shape.padded();
        let steps = shape.batch() * shape.t();
        Lens {
            prep: prep_len(sp),
            matrix: (sp * sp).max(1),
            steps: steps.max(1),
            elements: shape.elements().max(1),
            w: (steps * sp).max(1),
            batch: shape.batch().max(1),
        }
    }

    /// Total elements (all 4 bytes): prep, two matrices, `mb`, `cnorm`,
    /// `dnorm`, flags, `beta_lo`, `w`, `rh`, `rl`, lengths.
    fn total(&self) -> usize {
        self.prep + 2 * self.matrix + 6 * self.steps + 3 * self.elements + self.w + self.batch
    }
}

/// The device scratch of the HMM forward-backward pass for every shape up
/// to a capacity (see the [module docs](self) for its buffers, its size
/// per shape and which shapes it serves). Made once with
/// [`Workspace::new`], passed as `&mut` to
/// [`forward_backward_dev_ws`](super::forward_backward_dev_ws) or
/// [`forward_backward_on_ws`](super::forward_backward_on_ws); a warm call
/// of the device entry point then allocates nothing.
///
/// ```
/// use ptxsmith::kernels::hmm::{self, Inputs, Shape, Workspace};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// let shape = Shape::new(2, 3, 2)?;
/// let mut ws = Workspace::new(&ctx, shape)?;
/// assert_eq!(ws.bytes(), Workspace::bytes_for(shape));
/// let log_b = [-0.2, -1.7, -1.7, -0.2, -0.2, -1.7, -1.0, -1.0, -3.0, -0.1, -9.0, -9.0];
/// let inputs = Inputs {
///     log_pi: &[-0.7, -0.7],
///     log_a: &[-0.1, -2.4, -2.4, -0.1],
///     log_b: &log_b,
///     lengths: &[3, 2],
/// };
/// let p = hmm::forward_backward_on_ws(&st, &mut ws, shape, &inputs)?;
/// assert_eq!(p, hmm::host::forward_backward(shape, &inputs)?); // bit-exact
/// // A smaller shape fits; a larger one is an error naming both.
/// assert!(ws.fits(Shape::new(1, 3, 2)?));
/// let big = Shape::new(4, 3, 2)?;
/// assert!(!ws.fits(big));
/// # Ok::<(), ptxsmith::Error>(())
/// ```
pub struct Workspace {
    ctx: Context,
    shape: Shape,
    pub(super) prep: DeviceBuffer<f32>,
    pub(super) a_hat: DeviceBuffer<f32>,
    pub(super) a_til: DeviceBuffer<f32>,
    pub(super) mb: DeviceBuffer<f32>,
    pub(super) cnorm: DeviceBuffer<f32>,
    pub(super) dnorm: DeviceBuffer<f32>,
    pub(super) flags: DeviceBuffer<u32>,
    pub(super) beta_lo: DeviceBuffer<f32>,
    pub(super) w: DeviceBuffer<f32>,
    pub(super) rh: DeviceBuffer<f32>,
    pub(super) rl: DeviceBuffer<f32>,
    pub(super) lengths: DeviceBuffer<u32>,
}

impl fmt::Debug for Workspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workspace")
            .field("context", &self.ctx.id())
            .field("shape", &self.shape)
            .field("bytes", &self.bytes())
            .finish()
    }
}

impl Workspace {
    /// The scratch for `shape` (and every shape it [fits](Self::fits)),
    /// allocated in `ctx`: 12 allocations, [`Workspace::bytes_for`]`(shape)`
    /// bytes in all, uninitialised (every kernel writes a record before it
    /// reads it).
    ///
    /// # Errors
    /// The context's allocation errors (out of memory).
    pub fn new(ctx: &Context, shape: Shape) -> Result<Workspace> {
        let l = Lens::of(shape);
        Ok(Workspace {
            ctx: ctx.clone(),
            shape,
            prep: ctx.alloc(l.prep)?,
            a_hat: ctx.alloc(l.matrix)?,
            a_til: ctx.alloc(l.matrix)?,
            mb: ctx.alloc(l.steps)?,
            cnorm: ctx.alloc(2 * l.steps)?,
            dnorm: ctx.alloc(2 * l.steps)?,
            flags: ctx.alloc(l.steps)?,
            beta_lo: ctx.alloc(l.elements)?,
            w: ctx.alloc(l.w)?,
            rh: ctx.alloc(l.elements)?,
            rl: ctx.alloc(l.elements)?,
            lengths: ctx.alloc(l.batch)?,
        })
    }

    /// [`Workspace::new`] under the name of what it is for.
    ///
    /// # Errors
    /// As [`Workspace::new`].
    pub fn for_shape(ctx: &Context, shape: Shape) -> Result<Workspace> {
        Workspace::new(ctx, shape)
    }

    /// The bytes a workspace for `shape` allocates:
    /// `4 · (2·S16² + 6·S16 + 4 + batch + batch·T·(3·S + S16 + 6))`, each
    /// buffer at least one element (see the [module docs](self)).
    ///
    /// ```
    /// use ptxsmith::kernels::hmm::{Shape, Workspace};
    ///
    /// // The bench shape: about 264 MB.
    /// assert_eq!(Workspace::bytes_for(Shape::new(64, 1000, 256)?), 264_210_704);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    pub fn bytes_for(shape: Shape) -> usize {
        4 * Lens::of(shape).total()
    }

    /// The bytes this workspace holds (the sum of its allocations).
    pub fn bytes(&self) -> usize {
        let f = |b: &DeviceBuffer<f32>| b.len() * 4;
        [
            &self.prep,
            &self.a_hat,
            &self.a_til,
            &self.mb,
            &self.cnorm,
            &self.dnorm,
            &self.beta_lo,
            &self.w,
            &self.rh,
            &self.rl,
        ]
        .into_iter()
        .map(f)
        .sum::<usize>()
            + 4 * (self.flags.len() + self.lengths.len())
    }

    /// The shape it was made for (its capacity).
    pub fn shape(&self) -> Shape {
        self.shape
    }

    /// The context it belongs to.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Whether it serves `shape`: `S ≤ S₀`, `batch ≤ batch₀` and
    /// `batch · T ≤ batch₀ · T₀` for its own shape `(batch₀, T₀, S₀)`.
    pub fn fits(&self, shape: Shape) -> bool {
        let cap = self.shape;
        shape.s() <= cap.s()
            && shape.batch() <= cap.batch()
            && shape.batch() * shape.t() <= cap.batch() * cap.t()
    }

    /// Fail unless the workspace belongs to `stream`'s context and fits
    /// `shape` (nothing written).
    pub(super) fn check(&self, stream: &Stream, shape: Shape) -> Result<()> {
        stream.context().check_owner("workspace", self.ctx.id())?;
        if self.fits(shape) {
            return Ok(());
        }
        let (c, s) = (self.shape, shape);
        Err(ArgError::new(
            "workspace",
            format!(
                "a workspace for batch ≥ {}, batch × T ≥ {}, S ≥ {}",
                s.batch(),
                s.batch() * s.t(),
                s.s()
            ),
            format!(
                "a workspace for batch = {}, T = {}, S = {}",
                c.batch(),
                c.t(),
                c.s()
            ),
        )
        .with_message(format!(
            "hmm: the workspace was made for batch = {}, T = {}, S = {} and cannot serve \
             batch = {}, T = {}, S = {} (needs S ≤ {}, batch ≤ {}, batch × T ≤ {})",
            c.batch(),
            c.t(),
            c.s(),
            s.batch(),
            s.t(),
            s.s(),
            c.s(),
            c.batch(),
            c.batch() * c.t()
        ))
        .into())
    }
}
