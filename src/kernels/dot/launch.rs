//! Launch code for [`super`], one request ([`Shape`]) for every entry
//! point: the slice API on a [`Backend`] ([`dot_rows`]) or a stream
//! ([`dot_rows_on`]), the device entry point ([`dot_rows_dev`]: buffers
//! or foreign views in and out, nothing crosses the bus) and the
//! raw-pointer twin ([`dot_rows_raw`]). All share one launch, written
//! against [`Stream`], so the GPU and the simulator run the same sequence.

use super::ptx::{BLOCK, DotRowsArgs, generate};
use crate::dsl::params::KernelParams;
#[cfg(doc)]
use crate::error::Error;
use crate::error::{ArgError, Result};
use crate::exec::{CUdeviceptr, LaunchConfig};
use crate::kernels::dispatch::dispatch;
use crate::kernels::{check, grid, memo, raw};
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::buffer::{AsDevice, AsDeviceMut};
use crate::runtime::context::Stream;

/// The shape of a row dot product: `x` is `rows × n` (row-major), `y` is
/// `n`, `out` is `rows`. Any sizes up to the kernel's limits
/// ([`Shape::validate`]); `rows = 0` gives an empty result and `n = 0`
/// rows of `+0.0`.
///
/// ```
/// use ptxsmith::kernels::dot::{self, Shape};
/// use ptxsmith::runtime::Backend;
///
/// let shape = Shape { rows: 2, n: 3 };
/// let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
/// let (out, ran) = dot::dot_rows(Backend::Sim, shape, &x, &[1.0, 0.5, 0.25])?;
/// assert_eq!(out, [2.75, 8.0]);
/// assert_eq!(ran, ptxsmith::runtime::Ran::Sim);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Rows of `x` (and outputs).
    pub rows: usize,
    /// Columns of `x`, the length of `y`.
    pub n: usize,
}

impl Shape {
    /// Check the sizes against the kernel's limits (`rows ≤ 2³¹ − 1`, `n`
    /// a `u32`, `rows × n` a `usize`); returns them as `u32`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the values.
    pub fn validate(&self) -> Result<(u32, u32)> {
        let Shape { rows, n } = *self;
        rows.checked_mul(n).ok_or_else(|| {
            ArgError::new("shape", "rows × n within usize", format!("{rows} × {n}"))
                .with_message(format!("rows × n overflows: rows = {rows}, n = {n}"))
        })?;
        // The kernel's grid-stride loop adds the grid size to a u32 row
        // index, so keep rows well below the wrap point.
        let rows32 = u32::try_from(rows)
            .ok()
            .filter(|r| *r <= u32::MAX / 2)
            .ok_or_else(|| {
                ArgError::new(
                    "rows",
                    format!("at most {}", u32::MAX / 2),
                    rows.to_string(),
                )
                .with_message(format!("rows = {rows} exceeds {}", u32::MAX / 2))
            })?;
        let n32 = u32::try_from(n).map_err(|_| {
            ArgError::new("n", "at most u32::MAX", n.to_string())
                .with_message(format!("n = {n} exceeds u32"))
        })?;
        Ok((rows32, n32))
    }

    /// Check the lengths of `x` (`rows × n`), `y` (`n`) and, when given,
    /// `out` (`rows`) against the shape; returns the sizes as `u32`.
    fn check(&self, x: usize, y: usize, out: Option<usize>) -> Result<(u32, u32)> {
        let dims = self.validate()?;
        let Shape { rows, n } = *self;
        let want = rows * n;
        check::len("dot", "x", x, want, format_args!("rows × n = {rows} × {n}"))?;
        check::len("dot", "y", y, n, "n")?;
        if let Some(out) = out {
            check::len("dot", "out", out, rows, "rows")?;
        }
        Ok(dims)
    }
}

/// Check the shapes of a row dot product on host slices; returns
/// `(rows, n)` as u32.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the values.
pub fn validate(shape: Shape, x: &[f32], y: &[f32]) -> Result<(u32, u32)> {
    shape.check(x.len(), y.len(), None)
}

/// `out[r] = Σ_c x[r·n + c] · y[c]` (the [module contract](super)) on
/// device buffers or foreign views, queued on `stream`: nothing is copied
/// to or from the host. `out` is written when the stream reaches the
/// kernel.
///
/// ```
/// use ptxsmith::kernels::dot::{self, Shape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80); // or Context::cuda(0)?
/// let st = ctx.default_stream();
/// let x = st.upload(&[1.0f32, 2.0, 3.0, 4.0])?;
/// let y = st.upload(&[10.0f32, 1.0])?;
/// let mut out = ctx.alloc::<f32>(2)?;
/// dot::dot_rows_dev(&st, Shape { rows: 2, n: 2 }, &x, &y, &mut out)?;
/// assert_eq!(st.to_vec(&out)?, [12.0, 34.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidArgument`] when a length does not match the shape
/// (naming it, with `what`, `expected` and `got`); [`Error::WrongContext`]
/// for a buffer of another context; JIT and launch errors. Nothing is
/// queued on error.
pub fn dot_rows_dev(
    stream: &Stream,
    shape: Shape,
    x: &impl AsDevice<f32>,
    y: &impl AsDevice<f32>,
    out: &mut impl AsDeviceMut<f32>,
) -> Result<()> {
    let (rows32, n32) = shape.check(
        x.as_device().len(),
        y.as_device().len(),
        Some(out.as_device().len()),
    )?;
    let args = DotRowsArgs {
        x: stream.arg("x", x)?,
        y: stream.arg("y", y)?,
        out: stream.arg_mut("out", out)?,
        rows: rows32,
        n: n32,
    };
    if args.rows == 0 {
        return Ok(());
    }
    let module = memo!(generate, stream.context().sm())?;
    let mp = stream.context().multiprocessor_count();
    let blocks = grid::ctas(args.rows.into(), BLOCK.into(), mp, 8);
    stream.launch(module, LaunchConfig::linear(blocks, BLOCK), &args.args())
}

/// [`dot_rows_dev`] on raw device addresses of another stack (e.g.
/// cudarc's `CudaSlice::device_ptr()`), queued on `stream` (e.g. made
/// from the other stack's stream with [`Stream::from_raw`]): a thin
/// wrapper that views `x`, `y` and `out` as [`ForeignSlice`](crate::runtime::ForeignSlice)s of the
/// lengths the shape gives, so every check of the views applies (on a GPU
/// the driver confirms each range lies in one allocation of the context).
/// The kernel is queued and the call returns; synchronise `stream` before
/// reading `out`.
///
/// ```
/// use ptxsmith::kernels::dot::{self, Shape};
/// use ptxsmith::runtime::Context;
///
/// let ctx = Context::sim(ptxsmith::Sm::Sm80);
/// let st = ctx.default_stream();
/// // Addresses another stack handed over (here, ptxsmith buffers' own).
/// let (x, y, out) = (st.upload(&[1.0f32, 2.0])?, st.upload(&[4.0f32, 0.5])?, ctx.alloc::<f32>(1)?);
/// // SAFETY: 2, 2 and 1 live f32s of this context; out overlaps no input.
/// unsafe {
///     dot::dot_rows_raw(&st, Shape { rows: 1, n: 2 }, x.device_ptr(), y.device_ptr(), out.device_ptr())?;
/// }
/// assert_eq!(out.to_vec()?, [5.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Safety
/// * `x`, `y` and `out` point to device memory valid in `stream`'s
///   context holding `rows × n`, `n` and `rows` `f32`s, and stay valid
///   until the kernel has run;
/// * `out` does not overlap `x` or `y`, and nothing else accesses `out`
///   until the kernel has run.
///
/// # Errors
/// As [`dot_rows_dev`], and the checks of
/// [`ForeignSlice::from_raw_parts`](crate::runtime::ForeignSlice::from_raw_parts).
pub unsafe fn dot_rows_raw(
    stream: &Stream,
    shape: Shape,
    x: CUdeviceptr,
    y: CUdeviceptr,
    out: CUdeviceptr,
) -> Result<()> {
    shape.validate()?;
    // SAFETY: the caller's contract covers each range (lengths from the
    // validated shape).
    let (x, y, mut out) = unsafe {
        (
            raw::view::<f32>(stream, x, shape.rows * shape.n)?,
            raw::view::<f32>(stream, y, shape.n)?,
            raw::view_mut::<f32>(stream, out, shape.rows)?,
        )
    };
    dot_rows_dev(stream, shape, &x, &y, &mut out)
}

/// Upload `x` and `y`, run the kernel on `stream` and download the result.
///
/// ```
/// use ptxsmith::kernels::dot::{self, Shape};
/// use ptxsmith::runtime::Context;
///
/// let st = Context::sim(ptxsmith::Sm::Sm80).default_stream();
/// let out = dot::dot_rows_on(&st, Shape { rows: 2, n: 1 }, &[3.0, -1.0], &[2.0])?;
/// assert_eq!(out, [6.0, -2.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`dot_rows_dev`].
pub fn dot_rows_on(stream: &Stream, shape: Shape, x: &[f32], y: &[f32]) -> Result<Vec<f32>> {
    validate(shape, x, y)?;
    let dx = stream.upload(x)?;
    let dy = stream.upload(y)?;
    let mut out = stream.context().alloc::<f32>(shape.rows)?;
    dot_rows_dev(stream, shape, &dx, &dy, &mut out)?;
    stream.to_vec(&out)
}

/// `out[r] = Σ_c x[r·n + c] · y[c]` with separate rounding in ascending `c`
/// (see the [module contract](super)) on `backend`; returns the result and
/// which implementation ran. Every backend gives the same bits.
///
/// ```
/// use ptxsmith::kernels::dot::{self, Shape};
/// use ptxsmith::runtime::{Backend, Ran};
///
/// let (out, ran) = dot::dot_rows(Backend::Host, Shape { rows: 1, n: 2 }, &[3.0, 4.0], &[2.0, 0.5])?;
/// assert_eq!((out, ran), (vec![8.0], Ran::Host));
/// // A length that does not match the shape is refused, naming it.
/// let e = dot::dot_rows(Backend::Host, Shape { rows: 2, n: 2 }, &[3.0, 4.0], &[2.0, 0.5]);
/// assert!(matches!(e, Err(ptxsmith::Error::InvalidArgument(a)) if a.what == "x"));
/// # Ok::<(), ptxsmith::Error>(())
/// ```
///
/// # Errors
/// As [`dot_rows_dev`], checked before anything runs; [`Error::NoDevice`]
/// for [`Backend::Cuda`] without a device.
pub fn dot_rows(backend: Backend, shape: Shape, x: &[f32], y: &[f32]) -> Result<(Vec<f32>, Ran)> {
    validate(shape, x, y)?;
    dispatch(
        backend,
        || Ok(super::host::dot_rows(x, y, shape.rows, shape.n)),
        |s| dot_rows_on(s, shape, x, y),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn shapes_name_what_is_wrong() {
        let e = validate(Shape { rows: 2, n: 3 }, &[0.0; 5], &[0.0; 3]).unwrap_err();
        let Error::InvalidArgument(a) = e else {
            panic!()
        };
        assert_eq!((a.what.as_str(), a.got.as_str()), ("x", "5 elements"));
        assert_eq!(
            a.message(),
            "dot: x has 5 elements, expected rows × n = 2 × 3 = 6"
        );
        let e = Shape {
            rows: usize::MAX,
            n: 2,
        }
        .validate()
        .unwrap_err();
        assert!(e.to_string().contains("overflows"), "{e}");
    }
}
