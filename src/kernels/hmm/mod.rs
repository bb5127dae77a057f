//! HMM forward-backward for a batch of sequences with their own lengths:
//! `log_alpha`, `log_beta`, log-likelihoods, state posteriors and expected
//! transition counts (the Baum-Welch statistics), computed in a
//! **normalized, max-shifted** form whose accuracy does not decay with the
//! sequence length or the magnitude of the scores, and exact: every backend
//! (host model, simulator, CUDA on every SM) gives the same bits.
//!
//! # Contract
//! Inputs ([`Inputs`], shape [`Shape`]): `log_pi [S]`, `log_a [S, S]`
//! (`log_a[i·S + j]`: from `i` to `j`), `log_b [batch, T, S]` (emission
//! log-probabilities, so any emission model works), `lengths [batch]`
//! (each at most `T`). Scores need not be normalized (a CRF, below).
//!
//! Every operation is one f32 IEEE operation rounded to nearest (`+`, `−`,
//! `·`, `/`, `fma`), `exp`/`log` are the library's exact routines
//! ([`crate::math`], ≤ 1 ulp), and the evaluation order is the one written
//! here. The host model ([`host`]) is this contract in plain Rust.
//!
//! **Primitives.**
//! * `max` of a set of f32s: NaN-ignoring (NaN only when every element
//!   is), then `+ 0` (a zero maximum is `+0` whatever the order), so the
//!   kernels may reduce in any tree.
//! * *Pairs*: a log-weight is carried as a double-f32 `x = (h, l)` with
//!   `h = fl(h + l)`. `x + y`: `s = x.h + y.h`, `e = (x.h − (s − z)) +
//!   (y.h − z)` with `z = s − x.h` (Knuth's exact two-sum error),
//!   `lo = e + (x.l + y.l)`, then `(h, l) = two_sum(s, lo)`; if `s` is
//!   infinite or NaN the sum is `(s, +0)`. The shift `x ⊖ m` is `x` when
//!   `m.h = −inf`, else `x + (−m.h, −m.l)`; an f32 `a` is the pair `(a, +0)`.
//!   `pmax` of a set of pairs: the largest by `h` (NaN-ignoring), then by
//!   `l`; both parts `+ 0`. `pexp(x) = fma(exp(x.h), x.l, exp(x.h))`.
//!   Differences of large scores are thus exact, and sums of pairs lose a
//!   relative `2^−48` or so: `O(1)` differences between scores of any
//!   magnitude survive every step.
//! * `plse(terms)`, the exact log-sum of pair terms (ascending index):
//!   `M = pmax(terms)`; if `M.h = −inf` the value is `(−inf, +0)` and
//!   `σ = 1`; else `σ = Σ pexp(term ⊖ M)` (sequential, from `+0`) and the
//!   value is `M + (log σ, +0)`.
//! * linear sum `lin_j(x, A) = (c_0 + c_1) + (c_2 + c_3)` with
//!   `c_g = fma(x_k, A[k][j], c_g)` over `k ≡ g (mod 4)` ascending, from
//!   `+0` (four interleaved accumulators; [`CHAINS`]).
//! * compensated sums `Σ̃`: a pair running sum from `(+0, +0)`, each f32
//!   term added as a pair.
//! * [`log_sum`], the f32 log-sum of earlier versions, is kept as a
//!   utility (NaN if any term is NaN; `m` = the largest term; `m` if
//!   `m = ±inf`; else `m + log(Σ exp(v_k − m))`, ascending).
//!
//! **Prep** (once per launch, from `log_a`): `colmax_j = max_i log_a[i][j]`,
//! `rowmax_i = max_j log_a[i][j]`, `Amax = max_j colmax_j`;
//! `dcol_j = colmax_j ⊖ Amax`, `drow_i = rowmax_i ⊖ Amax` (pairs);
//! `lc[i][j] = log_a[i][j] ⊖ colmax_j`, `lr[i][j] = log_a[i][j] ⊖ rowmax_i`
//! (pairs); `Â = pexp(lc)` (column-shifted, for the forward),
//! `Ã = pexp(lr)` (row-shifted, for the backward). An all-`−inf` column or
//! row gives zeros there, never NaN. Per position: `Mb_t = max_j
//! log_b[t][j]`, `e_t[j] = log_b[t][j] ⊖ Mb_t`; `Mpi = max_j log_pi[j]`.
//! Every input is thus shifted by its own maximum before it meets a number
//! of another magnitude; the maxima (which carry the magnitude) enter only
//! the normalizer sums.
//!
//! **Forward** (length `L ≥ 1`; normalized pairs `â_t`, maximum `(0, 0)`):
//! * `X_j = (log_pi[j] ⊖ Mpi) + e_0[j]`; `M_0 = pmax_j X_j`;
//!   `â_0[j] = X_j ⊖ M_0`.
//! * step `t ≥ 1`: `p_i = pexp(â_{t−1}[i])`; `s_j = lin_j(p, Â)`; if
//!   `s_j ≥ τ` ([`TAU`] = 2^−64) `L_j = (log(s_j), +0)`, else (the
//!   **fallback**) `L_j = plse_i(â_{t−1}[i] + lc[i][j])`;
//!   `X_j = (L_j + dcol_j) + e_t[j]`; `M_t = pmax_j X_j`;
//!   `â_t[j] = X_j ⊖ M_t`.
//! * normalizers, three compensated sums: `A` of `Mpi, Mb_0, Mb_1, …`,
//!   `B` of `Amax` once per step `t ≥ 1`, `N` of `M_t.h, M_t.l` per step;
//!   `C_t = (A + B) + N` (pair sums) after step `t`;
//!   `log_alpha_t[j] = (â_t[j].h + C_t.h) + (â_t[j].l + C_t.l)`.
//!   Then `N` takes `log(Σ_j pexp(â_{L−1}[j]))` (sequential) and
//!   `ll = ((A + B) + N).h`. The large maxima cancel exactly in `A`
//!   without rounding the small normalizers in `N`.
//! * If `M_t.h = −inf` (no state can produce the prefix: the sequence is
//!   impossible), the recursion stops: for every later step `â = −inf`
//!   and `C = C_t`.
//!
//! Why the linear sum is exact enough when `s_j ≥ τ`: its terms are
//! non-negative; every product or factor that underflows (to zero or to a
//! subnormal) is off by less than `2^−149`, so all `S ≤ 2^12` of them
//! together by less than `2^−137`, a relative `2^−73` of `s_j`; what is left
//! is the rounding of `S` non-negative terms in four chains (relative
//! `(S/4 + 2)·2^−24` at worst) and of `exp`/`log`. Below `τ` (underflow, or
//! transition log-probabilities spanning more than about 100 nats between
//! the states that matter) the state takes the exact log-space sum. The
//! rule compares bits that every backend computes identically, so every
//! backend takes the same branch.
//!
//! **Backward** (normalized pairs `β̂_t`), `β̂_{L−1} = (0, 0)`,
//! `D_{L−1} = (0, 0)`; for `t = L−2` down to `0`:
//! `r_j = e_{t+1}[j] + β̂_{t+1}[j]`; `M'_t = pmax_j r_j`;
//! `R_t[j] = r_j ⊖ M'_t`; `Q_j = pexp(R_t[j])`; `s_i = lin_i(Q, Ãᵀ)` (the
//! chains run over `j`); if `s_i ≥ τ`, `L_i = (log(s_i), +0)`, else
//! `L_i = plse_j(lr[i][j] + R_t[j])` with its `σ_i` (the fallback); `u_i =
//! L_i + drow_i`; `K_t = pmax_i u_i`; `β̂_t[i] = u_i ⊖ K_t`. Normalizers:
//! `A` of `Mb_{t+1}`, `B` of `Amax`, `N` of `M'_t.h, M'_t.l, K_t.h, K_t.l`
//! per step (descending `t`, as computed); `D_t = (A + B) + N`;
//! `log_beta_t[i] = (β̂_t[i].h + D_t.h) + (β̂_t[i].l + D_t.l)`. If
//! `K_t.h = −inf` the recursion stops: below `t`, `β̂ = −inf`, `D = D_t`,
//! and every state counts as a fallback state with `σ = 1`, `R = −inf`.
//!
//! **Posteriors**: `w_i = â_t[i] + β̂_t[i]`; `m = pmax_i w_i`;
//! `g_i = pexp(w_i ⊖ m)`; `z = Σ_i g_i` by a fixed tree of [`ROW_LANES`] =
//! 32 lanes (lane `k` sums `i ≡ k (mod 32)` ascending from `+0`; then
//! `z_k += z_{k+16}` for `k < 16`, then `+8`, `+4`, `+2`, `+1`; `z = z_0`);
//! `gamma_t[i] = g_i / z`. Only normalized quantities meet: no difference
//! of length-sized numbers.
//!
//! **Transition counts**: for the pair of steps `t → t+1` (`t ≤ L−2`) and
//! the backward step `t`'s state `i`: `x = gamma_t[i] / s_i` (linear) or
//! `gamma_t[i] / σ_i` (fallback), so that `Σ_j x·Ã[i][j]·Q_j =
//! gamma_t[i]` up to rounding for a linear state. Per (`i`, `j`) a Kahan
//! sum `(σ, c) = (+0, +0)` (adding `v`: `y = v − c; t = σ + y; c = (t − σ)
//! − y; σ = t`) runs over the steps in blocks of [`XI_BLOCK`] = 32 (`t ∈
//! [32k, 32k+32) ∩ [0, L−1)`, `k` ascending). In a block, `t` ascending,
//! a linear state's step extends the block's chain `L = fma(x, Q_t[j], L)`
//! (from `+0`: `Ã[i][j]` is out of the per-step product); a fallback
//! state's step with `x ≠ 0` adds its term `x·y` (one rounding) to the
//! Kahan sum at once, `y = pexp(v_j ⊖ pmax_k v_k)` with `v_k = lr[i][k] +
//! R_t[k]` (one with `x = 0` adds nothing). At the block's end `Ã[i][j]·L`
//! (one rounding) is added; `xi[i][j] = σ`. No new overflow or underflow
//! path: `s_i ≥ τ = 2^−64` and `gamma ≤ 1` give `x ≤ 2^64`, `Q ≤ 1`, so
//! `|L| ≤ 32·2^64 = 2^69` stays finite, and `Ã ≤ 1` makes `Ã·L` no larger;
//! a product `x·Q_t[j]` is at least the `x·(Ã·Q_t[j])` of the contract
//! before (which rounded `Ã·Q` first), so nothing underflows that did not
//! before; each term now takes one rounding in its chain (an `fma`) and
//! the block one more, where each took two (a multiply and an `fma`).
//!
//! **Lengths and special values.** Past a sequence's length `log_alpha`
//! and `log_beta` hold `−inf` and `gamma` `0`. A sequence of length 0 has
//! log-likelihood `+0.0` (the empty product) and zero `xi`. A sequence the
//! model cannot produce (log-likelihood `−inf`, e.g. every emission `−inf`
//! at some position) has posteriors `0/0`: `gamma` and `xi` within its
//! length are NaN; nothing is clamped. `−inf` scores are otherwise
//! ordinary: an impossible transition or emission, a state no other state
//! reaches, a row or column of `−inf`. A NaN or `+inf` in an input that a
//! sequence uses (`log_pi`, `log_b` within its length, `log_a` when
//! `L ≥ 2`) makes its log-likelihood NaN (the other outputs are whatever
//! the formulas give, the same on every backend).
//!
//! **A linear-chain CRF** computes its log-partition with exactly this
//! forward pass on unnormalised scores of any finite magnitude: pass the
//! start scores as `log_pi`, the transition scores as `log_a`, the
//! per-position label scores as `log_b`; `log_likelihood` is then `log Z`
//! (tested against a brute-force sum over every label sequence), and
//! `gamma` the label marginals.
//!
//! # Accuracy
//! Against an f64 forward-backward computed from the same f32 inputs
//! (double-f64 log-weights, log-sum-exp over every term; `tests/hmm.rs`,
//! `cargo test --release --test hmm -- --nocapture`), for a mixing chain
//! (every state reaches every other within a few steps), at every length
//! and score magnitude tested, `|gamma − ref| ≤ 1e-5`,
//! `|xi − ref| ≤ 1e-5·(1 + ref)` and `|ll − ref| ≤ 2e-6·max(1, |ref|)`,
//! with no `+inf`/NaN where the reference is finite. Measured worst
//! errors (`xi` since the transition counts' chains leave `Ã` out of the
//! per-step product, 2026-11-30):
//!
//! | inputs | `gamma` | `xi` (rel. `1 + ref`) | `ll` (rel.) |
//! |---|---|---|---|
//! | S = 4, T = 1 … 20 000 (standard-normal emission log-probabilities) | 1.4e-7 | 1.1e-7 | 2.0e-7 |
//! | S = 4, T = 2^20 | 1.4e-7 | 8.8e-8 | 1.4e-8 |
//! | S = 1 … 256, T 40 … 300; S = 1024, T = 8; S = 4096, T = 3 | 1.1e-7 | 1.3e-7 | 1.1e-6 (2.4e-7 up to S = 1024) |
//! | scores shifted to ±1e4, ±1e12, ±1e30 (9 constructions each: per-step and constant emission shifts, transition and start shifts, ties one ulp apart, far outliers, all at once; S 4 and 16, T 2000 and 300) | 1.3e-7 | 4.0e-7 | 5.0e-8 |
//! | S = 4, T = 2^20, emission maxima ±1e30 cancelling in pairs | 4.2e-8 | 4.6e-7 | 3.6e-8 |
//! | transitions of −200 and −1e30 (forced and mixed in), 30 % `−inf` emissions, unreachable states, dead ends | 1.3e-7 | 1.2e-7 | 7.3e-8 |
//! | CRF (S 3, T 5) against brute force, scores 1 … 1e30 | 8.7e-8 | – | 5.4e-8 |
//!
//! Each step adds a rounding error of a few ulps of `O(1)` normalized
//! quantities and a mixing chain forgets it geometrically, so the error of
//! `gamma` does not grow with `T`. The linear sums' chains grow with `S`
//! (`S/4` terms each, a relative `(S/4 + 2)·2^−24` at worst, far less in
//! practice): at `S = 4096` the log-likelihood's measured error is 1.1e-6. The log-likelihood's error is a few
//! roundings of the `O(1)` per-step normalizers each step (at worst
//! `T·2^−24` of them, systematically), so the relative bound needs
//! `|ll|` to be of the order of the sum of their sizes; it is not when the
//! per-step log-normalizers cancel (a normalized HMM whose emissions carry
//! no information has `ll` equal to `T` roundings of the f32 row sums of
//! `A`, about `1e-8` each, which no f32 recursion resolves). The compensated
//! sums themselves lose `2^−48` of their largest partial sum per term. A
//! chain that does not mix (for example the identity transition matrix)
//! accumulates the per-step roundings over `T`, as any f32 recursion must.
//!
//! # Cost and memory
//! Per step of one sequence: the forward and the backward each do `S²`
//! `fma` (four chains, 16-byte loads of the shifted matrices), `S` `exp`
//! and `S` `log` with `O(S)` pair arithmetic, plus the fallback states'
//! exact sums; the posteriors one `exp` and two divisions per state; the
//! transition counts one `fma` per state pair and step (the block's
//! multiply by `Ã` once per 32 steps) and one `exp` per 256 pairs (128
//! at small batches). One CTA runs each sequence's recursions, or on sm_90+
//! for `S16 ≥ 64` a thread-block cluster of up to 8 CTAs, each keeping
//! its share of the shifted matrix in shared memory for the whole
//! recursion (the same bits; [`ptx::cluster_for`] chooses); the transition
//! counts use a thread per 8 states `i` × 4 states `j` (a register tile),
//! a CTA of 256 threads taking 256 states `i` × 32 states `j`, so that each
//! `exp` is computed once a sequence at `S ≤ 256`. At `S = 256` a step
//! costs, in simulated PTX instructions, 315 k (forward), 373 k
//! (backward), 47 k (posteriors) and 163 k (transition counts), against
//! 4.61 M, 5.14 M, 13 k and 3.67 M for the contract this one replaced
//! (`tests/hmm_sim.rs`, `docs/perf.md`).
//!
//! The kernels' device scratch is a [`Workspace`] of
//! [`Workspace::bytes_for`] `= 4·(2·S16² + 6·S16 + 4 + batch +
//! batch·T·(3·S + S16 + 6))` bytes (`S16` = `S` rounded up to a multiple
//! of 16; 264 MB at batch 64, T 1000, S 256: a table per shape is in
//! [`workspace`]). The `_ws` entry points take one the caller keeps, so a
//! warm call allocates nothing; the others allocate one per call.
//!
//! Limits: `1 ≤ S ≤` [`MAX_STATES`]; `T × S16 < 2^31`; `batch < 2^31`.
//!
//! # Entry points
//! One request, [`Shape`] (`batch`, `T`, `S`; checked when built), first
//! after the backend or stream for all of them, then the inputs (each
//! level's inputs carry the `lengths` as a host slice) and, on the device,
//! the outputs: [`forward_backward`] (host slices in [`Inputs`], any
//! [`Backend`](crate::runtime::Backend)), [`forward_backward_on`] (a given
//! stream), [`forward_backward_dev`] (device memory in [`DeviceInputs`]
//! and [`DeviceOutputs`]), [`forward_backward_raw`] (another stack's raw
//! addresses in [`RawInputs`] and [`RawOutputs`], viewed as foreign
//! slices); [`forward_backward_dev_ws`] and [`forward_backward_on_ws`]
//! take a [`Workspace`] the caller keeps. The host model is [`host::forward_backward`] (and
//! [`host::forward`], [`host::backward`] for one direction).
//!
//! ```
//! use ptxsmith::kernels::hmm::{self, Inputs, Shape};
//! use ptxsmith::runtime::Backend;
//!
//! // Two sequences (lengths 3 and 2) over two states.
//! let shape = Shape::new(2, 3, 2)?;
//! let log_b = [-0.2, -1.7, -1.7, -0.2, -0.2, -1.7, -1.0, -1.0, -3.0, -0.1, -9.0, -9.0];
//! let inputs = Inputs {
//!     log_pi: &[-0.7, -0.7],
//!     log_a: &[-0.1, -2.4, -2.4, -0.1],
//!     log_b: &log_b,
//!     lengths: &[3, 2],
//! };
//! let (p, _ran) = hmm::forward_backward(Backend::Sim, shape, &inputs)?;
//! assert_eq!(p, hmm::host::forward_backward(shape, &inputs)?); // bit-exact
//! assert_eq!(&p.gamma[10..], [0.0, 0.0]); // past the second length
//! # Ok::<(), ptxsmith::Error>(())
//! ```

pub mod host;
pub mod launch;
mod pair;
pub mod ptx;
pub mod workspace;

pub use host::{
    CHAINS, Fallbacks, Inputs, MAX_STATES, Posteriors, ROW_LANES, Shape, TAU, XI_BLOCK, log_sum,
};
pub use launch::{
    DeviceInputs, DeviceOutputs, RawInputs, RawOutputs, forward_backward, forward_backward_dev,
    forward_backward_dev_two_launches, forward_backward_dev_ws, forward_backward_on,
    forward_backward_on_ws, forward_backward_raw,
};
pub use workspace::Workspace;
