//! Separate-rounding row dot products (`out = X · y`), the smallest
//! end-to-end kernel: DSL → PTX → ptxas → Sim/GPU → host model.
//!
//! # Contract
//! `out[r]` = for c = 0, 1, …, n−1 in order: `acc = add.rn(acc,
//! mul.rn(x[r][c], y[c]))`, starting from +0.0. Equal under `to_bits()` to
//! the Rust loop `acc += x * y` (never `mul_add`). NaN and Inf propagate as
//! IEEE arithmetic does (NaN bits are not part of the contract: PTX returns
//! an unspecified NaN, so results are compared as "both NaN"). `n = 0`
//! gives +0.0 for every row; `rows = 0` gives an empty result.
//!
//! # Entry points
//! One request, [`Shape`] `{ rows, n }`, for all of them:
//! [`dot_rows`] (host slices, any [`Backend`](crate::runtime::Backend)),
//! [`dot_rows_on`] (host slices, a given stream), [`dot_rows_dev`] (device
//! buffers or foreign views), [`dot_rows_raw`] (another stack's raw
//! addresses). The host model is [`host::dot_rows`].

pub mod host;
pub mod launch;
pub mod ptx;

pub use launch::{Shape, dot_rows, dot_rows_dev, dot_rows_on, dot_rows_raw};
