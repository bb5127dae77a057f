//! Backend dispatch shared by every slice-API kernel entry point: one
//! function that turns a [`Backend`] into "run the host model" or "run this
//! launch sequence on a stream (GPU or simulator)", and reports which ran.

use crate::error::Result;
use crate::runtime::backend::{Backend, Ran, resolve};
use crate::runtime::context::Stream;

pub use crate::runtime::backend::default_sim_sm;

/// Run `host` or `device` according to `backend`.
///
/// * `Cuda`: `device` on device 0's default stream; `Error::NoDevice`
///   without one.
/// * `Auto`: the GPU when present, else `host`.
/// * `Host`: `host`.
/// * `Sim`: `device` on a fresh simulator context for [`default_sim_sm`].
pub fn dispatch<T>(
    backend: Backend,
    host: impl FnOnce() -> Result<T>,
    device: impl FnOnce(&Stream) -> Result<T>,
) -> Result<(T, Ran)> {
    let resolved = resolve(backend)?;
    let ran = resolved.ran();
    tracing::debug!(target: "ptxsmith::backend", %backend, %ran, "dispatch");
    match resolved.context() {
        None => Ok((host()?, ran)),
        Some(ctx) => Ok((device(&ctx.default_stream())?, ran)),
    }
}
