//! Backend dispatch shared by every kernel entry point: one function that
//! turns a [`Backend`] into "run the host model" or "run this launch
//! sequence on an executor (GPU or simulator)", and reports which ran.

use crate::error::Result;
use crate::runtime::backend::{Backend, Ran, Resolved, resolve};
use crate::runtime::exec::Executor;
use crate::target::Sm;

/// The SM whose variants `Backend::Sim` runs when the caller does not pick
/// one: the live device's when there is a GPU, else sm_80. Use a kernel's
/// `run_on(&mut Sim::new(sm), …)` to simulate another target.
pub fn default_sim_sm() -> Sm {
    crate::runtime::device_sm().unwrap_or(Sm::Sm80)
}

/// Run `host` or `device` according to `backend`.
///
/// * `Cuda`: `device` on the shared GPU; `Error::NoDevice` without one.
/// * `Auto`: the GPU when present, else `host`.
/// * `Host`: `host`.
/// * `Sim`: `device` on a fresh [`crate::sim::Sim`] for [`default_sim_sm`].
pub fn dispatch<T>(
    backend: Backend,
    host: impl FnOnce() -> Result<T>,
    device: impl FnOnce(&mut dyn Executor) -> Result<T>,
) -> Result<(T, Ran)> {
    match resolve(backend)? {
        Resolved::Host => Ok((host()?, Ran::Host)),
        Resolved::Cuda(gpu) => {
            let mut guard = gpu.lock();
            Ok((device(&mut *guard)?, Ran::Cuda))
        }
        Resolved::Sim => {
            let mut sim = crate::sim::Sim::new(default_sim_sm());
            Ok((device(&mut sim)?, Ran::Sim))
        }
    }
}
