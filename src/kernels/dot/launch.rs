//! Launch code for [`super`], written once against [`Executor`] so the GPU
//! and the simulator run the same sequence.

use super::ptx::{BLOCK, DotRowsArgs, generate};
use crate::dsl::params::KernelParams;
use crate::error::{Error, Result};
use crate::kernels::dispatch::dispatch;
use crate::runtime::backend::{Backend, Ran};
use crate::runtime::exec::{Executor, LaunchConfig, download_vec, upload_new};

/// Check the shapes of a row dot product; returns `(rows, n)` as u32.
pub fn validate(x: &[f32], y: &[f32], rows: usize, n: usize) -> Result<(u32, u32)> {
    let want = rows.checked_mul(n).ok_or_else(|| {
        Error::InvalidArgument(format!("rows × n overflows: rows = {rows}, n = {n}"))
    })?;
    if x.len() != want {
        return Err(Error::InvalidArgument(format!(
            "x has {} elements, expected rows × n = {rows} × {n} = {want}",
            x.len()
        )));
    }
    if y.len() != n {
        return Err(Error::InvalidArgument(format!(
            "y has {} elements, expected n = {n}",
            y.len()
        )));
    }
    // The kernel's grid-stride loop adds the grid size to a u32 row index,
    // so keep rows well below the wrap point.
    let rows32 = u32::try_from(rows)
        .ok()
        .filter(|r| *r <= u32::MAX / 2)
        .ok_or_else(|| Error::InvalidArgument(format!("rows = {rows} exceeds {}", u32::MAX / 2)))?;
    let n32 =
        u32::try_from(n).map_err(|_| Error::InvalidArgument(format!("n = {n} exceeds u32")))?;
    Ok((rows32, n32))
}

/// Run the kernel on `ex` (GPU or simulator) and download the result.
pub fn run_on(
    ex: &mut dyn Executor,
    x: &[f32],
    y: &[f32],
    rows: usize,
    n: usize,
) -> Result<Vec<f32>> {
    let (rows32, n32) = validate(x, y, rows, n)?;
    if rows == 0 {
        return Ok(Vec::new());
    }
    let module = generate(ex.sm())?;
    let bx = upload_new(ex, x)?;
    let by = upload_new(ex, y)?;
    let bo = ex.alloc(rows * 4)?;
    let args = DotRowsArgs {
        x: bx.into(),
        y: by.into(),
        out: bo.into(),
        rows: rows32,
        n: n32,
    };
    let blocks = rows32
        .div_ceil(BLOCK)
        .min(ex.multiprocessor_count().max(1) * 8);
    let result = ex
        .launch(&module, LaunchConfig::linear(blocks, BLOCK), &args.args())
        .and_then(|()| download_vec::<f32>(ex, bo, rows));
    for b in [bx, by, bo] {
        ex.free(b)?;
    }
    result
}

/// `out[r] = Σ_c x[r·n + c] · y[c]` with separate rounding in ascending `c`
/// (see the [module contract](super)) on `backend`; returns the result and
/// which implementation ran. Every backend gives the same bits.
pub fn dot_rows(
    backend: Backend,
    x: &[f32],
    y: &[f32],
    rows: usize,
    n: usize,
) -> Result<(Vec<f32>, Ran)> {
    validate(x, y, rows, n)?;
    dispatch(
        backend,
        || Ok(super::host::dot_rows(x, y, rows, n)),
        |ex| run_on(ex, x, y, rows, n),
    )
}
