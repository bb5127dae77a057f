//! Retired: the one-block staged kernel (one CTA a tile of tokens × one
//! output block). tf32 grad-input was its last user; every forward and
//! grad-input kernel is now [`super::grouped`]. The fragment helpers it
//! shared live in the `common` module; they are re-exported here under
//! their old path for [`super::tiled_values`].

pub(super) use super::common::{gptr, ldsm4, log2, sptr, tf32_operand};
