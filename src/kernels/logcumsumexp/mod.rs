//! `logcumsumexp` along the last axis of a `[rows, T]` f32 matrix, forward
//! and backward, exact: every backend gives the same bits, and the tree of
//! combinations is fixed by the contract, not by the launch.
//!
//! # Contract
//! `log_add_exp(a, b)` is [`crate::math::log_add_exp`]: NaN if either is
//! NaN; `−inf` if both are `−inf`; `+inf` if either is `+inf`; else
//! `max + log1p(e^(min − max))`, evaluated as one exact f32 routine (45
//! SASS instructions on sm_80..sm_120; within 1 ulp of the correctly
//! rounded `log(e^a + e^b)` except where the result nearly cancels or the
//! f32 difference `min − max` rounds, see [`crate::math`] for the bounds).
//!
//! **Forward**, per row, with chunks of [`CHUNK`] = 256 elements (the last
//! one shorter): within chunk `c`, `s_0 = x_0` and `s_k =
//! log_add_exp(s_{k−1}, x_k)`; the carries are `carry_1 = tot_0` and
//! `carry_c = log_add_exp(carry_{c−1}, tot_{c−1})` where `tot_c` is chunk
//! `c`'s last `s`; the output is `s_k` in chunk 0 and
//! `log_add_exp(carry_c, s_k)` in chunk `c ≥ 1`. For `T ≤ 256` this is the
//! plain sequential scan. Runs of `−inf` give `−inf` (never NaN); a `+inf`
//! makes every later output `+inf`; a NaN every later output NaN.
//!
//! **Backward**, given `x`, the forward output `y` and the upstream
//! gradient `g`: `gx_i = Σ_{t ≥ i} g_t · exp(x_i − y_t)`, evaluated stably
//! (no `exp(x − y)` products that overflow) as
//! `gx_i = exp(x_i + P_i) − exp(x_i + N_i)` (`add.rn`, `sub.rn`), where
//! `P` and `N` are the forward tree applied to the **reversed** row of
//! `a_t = log(g_t) − y_t` (for `g_t > 0`) and `b_t = log(−g_t) − y_t` (for
//! `g_t < 0`); a term is `−inf` when its sign does not apply or `y_t =
//! −inf`, so an output of `−inf` contributes gradient 0, never NaN. A NaN
//! in `g` makes both terms NaN.
//!
//! Accuracy against the exact math (`tests/logcumsumexp.rs`): against an
//! f64 sequential reference the forward output stays within
//! `16 · 2^-23 · max(1, |y|)` (measured worst 5.3 over rows of 100 to 5000
//! elements, `cargo test --release --test logcumsumexp host_is_close --
//! --nocapture`); the gradient agrees with f64 finite differences to
//! `1e-4 · (1 + |gx|)`.

pub mod host;
pub mod launch;
pub mod ptx;

pub use host::CHUNK;
pub use launch::{backward, backward_dev, forward, forward_dev};
