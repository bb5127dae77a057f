//! The backend interface and launch vocabulary, re-exported from the leaf
//! module [`crate::exec`] (defined there so the simulator can implement
//! [`Executor`] without depending on the runtime).

pub use crate::exec::{CUdeviceptr, CacheStats, Executor, LaunchConfig, RawStream, Traffic};
