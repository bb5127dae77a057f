//! CPU PTX simulator (placeholder until the simulator lands).

/// An error found or raised by the simulator.
#[derive(Debug, thiserror::Error)]
#[error("simulator: {0}")]
pub struct SimError(pub String);
