//! Backend dispatch shared by every slice-API kernel entry point: one
//! function that turns a [`Backend`] into "run the host model" or "run this
//! launch sequence on a stream (GPU or simulator)", and reports which ran.

use crate::error::Result;
use crate::runtime::backend::{Backend, Ran, Resolved, resolve};
use crate::runtime::context::{Context, Stream};
use crate::target::Sm;

/// The SM whose variants `Backend::Sim` runs when the caller does not pick
/// one: the live device's when there is a GPU, else sm_80. Use a kernel's
/// device entry point on `Context::sim(sm)` to simulate another target.
pub fn default_sim_sm() -> Sm {
    crate::runtime::device_sm().unwrap_or(Sm::Sm80)
}

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
    tracing::debug!(target: "ptxsmith::backend", %backend, ran = %resolved.ran(), "dispatch");
    match resolved {
        Resolved::Host => Ok((host()?, Ran::Host)),
        Resolved::Cuda(ctx) => Ok((device(&ctx.default_stream())?, Ran::Cuda)),
        Resolved::Sim => {
            let ctx = Context::sim(default_sim_sm());
            Ok((device(&ctx.default_stream())?, Ran::Sim))
        }
    }
}
