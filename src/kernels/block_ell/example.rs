//! The set-up the family's examples share, written once: one 8 × 8 block
//! (`R = C = K = 1`, `B = 8`) holding `W = 0.5 · I`, its topology uploaded
//! to a simulator context for sm_80. Public only for the doctests
//! (`#[doc(hidden)]`), not API.

use super::host::Dims;
use super::launch::DeviceTopology;
use crate::error::Result;
use crate::runtime::context::{Context, Stream};
use crate::target::Sm;

/// What [`example`] builds.
#[doc(hidden)]
pub struct Example {
    /// `R = C = K = 1`, `B = 8`.
    pub dims: Dims,
    /// `[0]`: the block sits in column block 0.
    pub col: Vec<i32>,
    /// The 64 values of `0.5 · I`.
    pub values: Vec<f32>,
    /// A simulator context for sm_80.
    pub ctx: Context,
    /// Its default stream.
    pub st: Stream,
    /// `dims` and `col` on the device.
    pub topo: DeviceTopology,
}

/// One 8 × 8 block holding `0.5 · I` on a fresh sm_80 simulator context.
///
/// # Errors
/// Never in practice (the sizes are valid and the simulator allocates).
#[doc(hidden)]
pub fn example() -> Result<Example> {
    let dims = Dims::new(1, 1, 1, 8)?;
    let col = vec![0];
    let values: Vec<f32> = (0..64)
        .map(|i| if i % 9 == 0 { 0.5 } else { 0.0 })
        .collect();
    let ctx = Context::sim(Sm::Sm80);
    let st = ctx.default_stream();
    let topo = DeviceTopology::upload(&st, &dims, &col)?;
    Ok(Example {
        dims,
        col,
        values,
        ctx,
        st,
        topo,
    })
}
