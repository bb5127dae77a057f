//! Score GEMM with top-s routing (module docs come with the host model).
pub mod host;
pub mod launch;
pub mod ptx;
pub use host::*;
