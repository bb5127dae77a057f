//! Viterbi decoding of a batch of sequences in log space: the best state
//! path of a hidden Markov model (or any max-plus chain), exact by
//! construction, bit-identical on every backend.
//!
//! # Contract
//! Inputs: `log_pi [S]`, `log_a [S, S]` (`log_a[i·S + j]`: from state `i`
//! to `j`), `log_b [batch, T, S]` (emission scores, row-major), `lengths
//! [batch]` (each at most `T`). For a sequence of length `L ≥ 1`:
//!
//! * `delta_0[j] = log_pi[j] + log_b[0][j]`;
//! * for `t = 1 … L−1`, for each `j`: scan `i = 0, 1, …, S−1` with
//!   `c = delta_{t−1}[i] + log_a[i][j]`, where `c` replaces the running
//!   best when `c > best`, or when `c` is NaN and the best is not — so
//!   ties keep the **lowest** `i`, and the first NaN wins and is kept;
//!   `psi_t[j]` is that `i`, `delta_t[j] = best + log_b[t][j]`;
//! * the final state is the best `j` of `delta_{L−1}` by the same rule,
//!   the score is its value, and the path follows the backpointers.
//!
//! Every `+` is one `add.rn.f32` (IEEE: `−inf + x = −inf`, `−inf + +inf =
//! NaN`), so the score equals the left-to-right sum along the returned
//! path, and no rounding depends on the launch. Outputs: `paths [batch, T]`
//! (`u32`), [`NO_STATE`] at positions `t ≥ L`; `scores [batch]`. A
//! sequence of length 0 has score `+0.0` (the log of an empty product) and
//! a path of [`NO_STATE`]s.
//!
//! Limits: `1 ≤ S ≤` [`MAX_STATES`]; `T × S < 2^32` and `batch < 2^32`
//! (32-bit indices within a sequence; 64-bit across the batch); the
//! kernel keeps a `[batch, T, S]` `u32` backpointer workspace on the
//! device. Work is `L · S²` per sequence. One CTA decodes one sequence
//! ([`ptx::generate`]); on sm_90 and later, for `65 ≤ S ≤ 256`, a cluster
//! of 8 CTAs does, each holding its 32 columns of `log_a` in shared memory
//! for the whole recursion ([`ptx::cluster`]). Both give the contract's
//! bits: the cluster's CTAs split each state's scan into ascending parts
//! of 32 predecessors and fold the parts' results in ascending order by
//! the same rule, which yields the scan's result.
//!
//! # Entry points
//! One request, [`Shape`] `{ batch, t, s }` and the `lengths` (a host
//! slice), for all of them: [`viterbi`] (host slices, any
//! [`Backend`](crate::runtime::Backend)), [`viterbi_on`] (a given stream),
//! [`viterbi_dev`] (device buffers or foreign views, outputs in
//! [`DeviceOutputs`]), [`viterbi_raw`] (another stack's raw addresses).
//! The host model is [`host::viterbi`].

pub mod host;
pub mod launch;
pub mod ptx;

pub use host::{MAX_STATES, NO_STATE, Shape, Viterbi};
pub use launch::{DeviceOutputs, RawOutputs, viterbi, viterbi_dev, viterbi_on, viterbi_raw};
