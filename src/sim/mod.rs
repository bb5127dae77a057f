//! CPU PTX simulator.
pub mod error;
pub mod exec;
mod executor;
pub mod fp;
pub mod ir;
pub mod parse;
pub use error::{SimError, Site};
pub use exec::{LaunchReport, Sim, SimOptions};
pub use parse::Program;
