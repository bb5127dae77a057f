//! HMM forward-backward in log space for a batch of sequences with their
//! own lengths: `log_alpha`, `log_beta`, log-likelihoods, state posteriors
//! and expected transition counts (the Baum-Welch statistics), exact: every
//! backend gives the same bits.
//!
//! # Contract
//! Inputs: `log_pi [S]`, `log_a [S, S]` (`log_a[i·S + j]`: from `i` to
//! `j`), `log_b [batch, T, S]` (emission log-probabilities, so any
//! emission model works), `lengths [batch]` (each at most `T`).
//!
//! **Log-sum over states** ([`host::log_sum`]), terms in ascending state
//! order: NaN if any term is NaN; else `m` = the largest term (strict `>`
//! scanning upwards); if `m` is `−inf` or `+inf` the result is `m`; else
//! `m + log(Σ exp(v − m))` with the sum in ascending order (`add.rn`) and
//! the library's exact `exp`/`log` ([`crate::math`]).
//!
//! For a sequence of length `L ≥ 1` (every `+`/`−` one `add.rn`/`sub.rn`,
//! left to right):
//! * `alpha_0[j] = log_pi[j] + log_b[0][j]`;
//!   `alpha_t[j] = logsum_i(alpha_{t−1}[i] + log_a[i][j]) + log_b[t][j]`;
//! * log-likelihood `ll = logsum_j(alpha_{L−1}[j])`;
//! * `beta_{L−1}[i] = 0`;
//!   `beta_t[i] = logsum_j((log_a[i][j] + log_b[t+1][j]) + beta_{t+1}[j])`;
//! * `gamma_t[i] = exp((alpha_t[i] + beta_t[i]) − ll)`;
//! * expected transition counts, `t` ascending from `+0`:
//!   `xi[i][j] = Σ_{t=0}^{L−2} exp(alpha_t[i] + log_a[i][j] + log_b[t+1][j] + beta_{t+1}[j] − ll)`.
//!
//! Past a sequence's length, `log_alpha` and `log_beta` hold `−inf` and
//! `gamma` holds `0`. A sequence the model cannot produce (log-likelihood
//! `−inf`, e.g. every emission `−inf` at some position) has posteriors
//! `0/0`: its `gamma` and `xi` entries within the length are NaN, as the
//! formulas give (`−inf − (−inf)`); nothing is clamped. A sequence of length 0 has log-likelihood `+0.0`
//! (the empty product), all-`−inf` alpha/beta, zero gamma and xi.
//!
//! **A linear-chain CRF** computes its log-partition with exactly this
//! forward pass on unnormalised scores: pass the start scores as
//! `log_pi`, the transition scores as `log_a`, the per-position label
//! scores as `log_b`; `log_likelihood` is then `log Z` (tested against a
//! brute-force sum over every label sequence), and `gamma` the label
//! marginals.
//!
//! Accuracy against the exact math (`tests/hmm.rs`, `cargo test --release
//! --test hmm host_model -- --nocapture`): against an f64 formulation the
//! log-likelihood is within a relative `1e-5` (measured 1.2e-7) and
//! `gamma` within `1e-5` (measured 2.7e-6); a CRF's log-partition matches a
//! brute-force sum over every label sequence to `1e-5`.
//!
//! Limits: `1 ≤ S ≤` [`MAX_STATES`]; `T × S < 2^31`; `batch < 2^31`. Work
//! is `L · S²` per sequence for each pass and for the transition counts;
//! one CTA handles one sequence.

pub mod host;
pub mod launch;
pub mod ptx;

pub use host::{MAX_STATES, Posteriors, log_sum};
pub use launch::{forward_backward, forward_backward_dev};
