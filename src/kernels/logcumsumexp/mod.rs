//! `logcumsumexp` along the last axis of a `[rows, T]` f32 matrix, forward
//! and backward, exact: every backend gives the same bits, and the tree of
//! combinations is fixed by the contract (a function of `T` and the
//! constants below alone), never by the launch.
//!
//! # Contract
//! `lae(a, b)` is [`crate::math::log_add_exp`] (`a` the earlier operand):
//! NaN if either is NaN; `−∞` if both are `−∞`; `+∞` if either is `+∞`;
//! else `max + log1p(e^(min − max))`, one exact f32 routine (45 SASS
//! instructions on sm_80..sm_120; within 1 ulp of the correctly rounded
//! `ln(eᵃ + eᵇ)` except where the result nearly cancels or the f32
//! difference `min − max` rounds, see [`crate::math`] for the bounds). `exp`, `log` are
//! [`crate::math::exp_f32`], [`crate::math::log_f32`]; `fma` is `fma.rn`
//! (`f32::mul_add`); every `+`, `−`, `·`, `/` is one IEEE operation rounded
//! to nearest (`add.rn`, `sub.rn`, `mul.rn`, `div.rn`).
//!
//! ## Tiles and segments
//!
//! [`SEG`] = 32 elements make a *segment* (one thread's share), [`NSEG`] =
//! 128 segments a *tile* of [`TILE`] = 4096 elements (one CTA's share). A
//! row of length `T` is cut into `n_τ = ⌈T / TILE⌉` tiles `τ`, tile `τ`
//! into segments `σ = 0..NSEG` of positions `τ·TILE + σ·SEG + k`,
//! `k = 0..SEG`. Positions `≥ T` (only in the last tile) are *padding*:
//! `x = −∞` (and `g = +0` in the backward); they are never stored. Segment
//! `σ` has *lane* `ℓ = σ mod 32` and *warp* `w = ⌊σ / 32⌋` (`WARPS` = 4).
//!
//! ## The tile tree
//!
//! For an operation `a ⊗ b` (`a` earlier) and segment aggregates `A_σ`,
//! the tile tree gives each segment an exclusive prefix `E_σ` ("none" for
//! `σ = 0`) and the tile total `T_τ`:
//! 1. Kogge–Stone within each warp: `I_σ ← A_σ`; for `d = 1, 2, 4, 8, 16`
//!    (each step reading the previous step's values),
//!    `I_σ ← I_{σ−d} ⊗ I_σ` when `ℓ ≥ d`, else unchanged.
//! 2. Warp totals `W_w = I_{32w+31}`; warp prefixes `Q_0` = none,
//!    `Q_1 = W_0`, `Q_{w+1} = Q_w ⊗ W_w` for `w = 1..WARPS`; the tile
//!    total is `T_τ = Q_WARPS`.
//! 3. `E_σ` = `Q_w` when `ℓ = 0` (none for `σ = 0`); `I_{σ−1}` when
//!    `w = 0, ℓ ≥ 1`; `Q_w ⊗ I_{σ−1}` otherwise.
//!
//! ## The carry tree
//!
//! The tile carries `C_τ` of a row of `n_τ` tiles with totals `T_τ` come
//! from runs of `L = max(RUN, ⌈n_τ / RUNS⌉)` tiles ([`host::RUN`] = 32,
//! [`host::RUNS`] = 128 = `NSEG`; `L` = 32 up to 4 096 tiles, so at most
//! 128 runs): run `j` is tiles `jL .. min(jL + L, n_τ)`.
//! 1. Run aggregates, left to right: `G_j = T_{jL} ⊗ T_{jL+1} ⊗ … ⊗
//!    T_{jL+L−1}` for every run wholly before the last tile
//!    (`jL + L < n_τ`; the others' are never read).
//! 2. Run prefixes: the tile tree above over `G_0 … G_{RUNS−1}` in the
//!    place of the segment aggregates; run `j`'s prefix `P_j` is its
//!    exclusive value `E_j` (none for `j = 0`; `E_j` reads only
//!    `G_0 … G_{j−1}`).
//! 3. Carries: `C_0` = none, `C_1 = T_0`; a run's first tile `C_{jL} =
//!    P_j` (`j ≥ 1`); within a run `C_{τ+1} = C_τ ⊗ T_τ`.
//!
//! A row of at most 64 tiles (`T ≤ 2¹⁸`) has one run, or two with `P_1 =
//! G_0 = C_32`: its carries are the chain `C_{τ+1} = C_τ ⊗ T_τ`, bit for
//! bit. From 65 tiles on the third run's prefix is `G_0 ⊗ G_1`, not the
//! chain's, so the bits differ from a chain's (the contract before the
//! tree). The longest dependent path is `2L` combines plus the tree's
//! (about 10): 74 for 4 096 tiles instead of 4 095.
//!
//! A segment's carry is `K_σ = C_τ ⊗ E_σ`, or whichever of the two is not
//! none (none when both are). Only full tiles' totals are ever used, so
//! padding never reaches a stored value except through the segment
//! aggregates (where it is exact, see below) and the backward's reverse
//! tree (where it is part of the contract).
//!
//! ## Forward
//!
//! 1. Segment aggregate (a log-sum with one `exp` per element): `m` = the
//!    maximum of the segment's non-NaN values (`−∞` if none), `m' = m`
//!    when finite, else `+0`; `s = e_0 + e_1 + … + e_31` left to right
//!    with `e_k = exp(x_k − m')`; `A_σ = m' + log(s)`. So `A` is NaN if any
//!    value is, `±∞` when `m` is, else `m + log(Σ exp(x − m))`; padding adds
//!    exact zeros. (The sign of a zero `m` does not change `A`.)
//! 2. The tile tree and tile carries with `⊗ = lae`.
//! 3. Outputs, one `lae` per element: `y_first = lae(K_σ, x_first)`, or
//!    `x_first` itself when `K_σ` is none (the row's first element: keeps
//!    `−0`), then `y_k = lae(y_{k−1}, x_k)` along the segment.
//!
//! Runs of `−∞` give `−∞` (never NaN); a `+∞` makes every later output
//! `+∞`; a NaN every later output NaN. For `T ≤ SEG` this is the plain
//! sequential scan.
//!
//! ## Backward
//!
//! `gx_i = Σ_{t ≥ i} g_t · exp(x_i − y_t)` with `y` the exact log-cumsum
//! of `x`: the forward output is **not** an input (its rounding error,
//! `2⁻²⁴·|y|`, would be the error of `exp(x_i − y_t)`). Every exponent is
//! a difference of two input values, so a row and the same row shifted by
//! a constant (exactly) give the same bits.
//!
//! *Pairs.* The forward is recomputed as pairs `(m, S)` (running maximum,
//! `S = Σ exp(x_j − m)`), identity `𝟙 = (−f32::MAX, +0)`:
//! `(m₁, S₁) ⊕ (m₂, S₂)`: `d = +0` if `m₂ == m₁` else `m₂ − m₁`;
//! `e = exp(−|d|)`; if `m₂ > m₁` the result is `(m₂, fma(S₁, e, S₂))`,
//! else `(m₁, fma(S₂, e, S₁))`. An element step is `P ⊕ (x_t, 1)`; its `e`
//! is `e_t` and `n_t = (x_t > m)` says it set a new maximum. A segment's
//! aggregate is `𝟙 ⊕ (x_0, 1) ⊕ … ⊕ (x_31, 1)` left to right; the tile
//! tree and tile carries use `⊕`. A segment then walks its elements again
//! from `K_σ` (from `𝟙` when none), giving at each `t`: `(m_t, S_t)`,
//! `e_t`, `n_t`, and `r_t = +0` if `S_t == 0` (all of `x_0..=x_t` are
//! `−∞`) else `g_t / S_t` (`div.rn`).
//!
//! *Reverse scan.* With `f_t = exp(x_t − m_t)` (`1` if `n_t`, else `e_t`)
//! and `v_t = exp(m_{t−1} − m_t)` (`e_t` if `n_t`, else `1`), the
//! gradient is `gx_t = f_t · U_t` with `U_t = r_t + Z_{t+1}`,
//! `Z_t = v_t · U_t`, `Z_T = +0`: element `t` is the affine map
//! `Z ↦ v_t·(r_t + Z)`. Affine pairs `(a, b)` mean `Z ↦ a + b·Z`:
//! * a segment's aggregate, left to right from `(+0, 1)`: per element
//!   `b ← n_t ? b·e_t : b`, then `a ← fma(b, r_t, a)`;
//! * the reverse tile tree is the tile tree above applied to the
//!   segments in reverse order (`ρ = NSEG − 1 − σ`, so lanes and warps are
//!   mirrored) with `E ⊗ L = L ∘ E = (fma(b_L, a_E, a_L), b_L·b_E)` (`E`
//!   the block to the right, `L` the one to its left); it gives each
//!   segment the composition `E'_σ` of the segments to its right in the
//!   tile (none for `σ = NSEG − 1`) and the tile's map `(a_τ, b_τ)`;
//!   padding elements are maps like any other (`r = +0`, `n = false`);
//! * reverse carries by the carry tree over the tile maps in reverse
//!   order (`ρ = n_τ − 1 − τ`, map `M_ρ = (a_τ, b_τ)`, `⊗` as in the
//!   reverse tile tree), runs of `L` maps counted from the last tile:
//!   `Zc` of `ρ = 0` (the last tile) is `+0`, of a run's first `ρ = jL`
//!   (`j ≥ 1`) `fma(b_P, +0, a_P)` with `(a_P, b_P) = P_j`, and within a
//!   run `Zc_{τ−1} = fma(b_τ, Zc_τ, a_τ)` (up to 64 tiles: the chain
//!   `Zc_{n_τ−1} = +0`, `Zc_{τ−1} = fma(b_τ, Zc_τ, a_τ)`, bit for bit, `b`
//!   being finite and `a` never `−0`);
//!   a segment starts from `Z = Zc_τ` (`E'_σ` none) or
//!   `Z = fma(b_E, Zc_τ, a_E)`;
//! * outputs, right to left along the segment: `u = r_t + Z`,
//!   `p = e_t·u`, `gx_t = n_t ? u : p`, `Z ← n_t ? p : u`.
//!
//! *Special values.* A NaN anywhere in a row's `x` makes the row's whole
//! gradient NaN. A NaN (or `±∞`) in `g_t` makes `gx_i` NaN (or infinite)
//! for `i ≤ t`, except that `g_t` is ignored where `y_t = −∞` (`S_t = 0`:
//! `x_0..=x_t` all `−∞`). A `−∞` in `x` gets gradient `±0` (NaN only
//! through a NaN or infinite `g` as above); prefixes that are all `−∞`
//! contribute 0, never NaN. `+∞` entries take the limit of equal values
//! growing together: they share the mass of every later output
//! (`gx_i = Σ_{t≥i} g_t / n_t` with `n_t` the number of `+∞` among
//! `x_0..=x_t`), finite entries after the first `+∞` get `±0`, finite
//! entries before it keep only the outputs before it; no `∞ − ∞` reaches
//! a result. `g = 0` gives `±0`; `T = 1` gives `gx = g` (finite `x`).
//!
//! ## Accuracy
//!
//! Measured by `cargo test --release --test logcumsumexp -- --nocapture`
//! against f64 references computed in the test from the same f32 inputs
//! (the forward: a sequential max-shifted log-sum; the backward: the
//! shift-invariant sum with `S_t` and `exp(m_t − m_{t+1})` in f64):
//! * forward: `|y − ref| ≤ 16 · 2⁻²³ · max(1, |ref|)` asserted; measured
//!   worst 8.64 over rows of 100 to 2¹⁶ elements, values within ±0.01 to
//!   ±30 of 0 and rows shifted by ±1e4, 1e12, −1e30 (the largest at
//!   `T = 2¹⁶`, values ±0.01; with the carry tree 11.8 at `T = 2²⁰` and
//!   11.6 at `T = 2²²` (`PTXSMITH_LCSE_LONG=1`), where a chain of
//!   tile carries gave 12.6);
//! * backward: `|gx_i − ref_i| ≤ 1e-5 · (1 + Σ_{t≥i} |g_t|·exp(x_i − y_t))`
//!   asserted for `T` = 1, 2, 31, 33, 4095, 4096, 4097, 12365, 28672,
//!   2¹⁶ on rows uniform in ±8, ±0.05, ±60, slowly rising and slowly
//!   falling (a new maximum at every step), with mixed-sign and all-one
//!   `g`: measured worst 1.7e-6 (at `T = 2¹⁶`, ±60, `g = 1`; 2.0e-6 at
//!   `T = 2²⁰`). Rows on a grid shifted by ±1e4, ±1e12, ±1e30 give the
//!   unshifted rows' bits (asserted), so the bound holds for any finite
//!   magnitude; finite differences in f64 agree to `1e-5 · (1 + |fd|)`.
//!
//! # Entry points
//!
//! One request, [`Shape`] (`rows`, `T`; checked when built), first after
//! the backend or stream for all of them: [`forward`] / [`backward`] (host
//! slices, any [`Backend`](crate::runtime::Backend)), [`forward_on`] /
//! [`backward_on`] (a given stream), [`forward_dev`] / [`backward_dev`]
//! (device buffers or foreign views), [`forward_raw`] / [`backward_raw`]
//! (another stack's raw addresses, viewed as foreign slices). The
//! `*_path` variants take a [`Path`] after the shape (row or split path,
//! the same bits). The host models are [`host::forward`] and
//! [`host::backward`].
//!
//! ```
//! use ptxsmith::kernels::logcumsumexp::{self, Shape};
//! use ptxsmith::runtime::Backend;
//!
//! let shape = Shape::new(2, 3)?;
//! let x = [0.0, 1.0, 2.0, -1.0, f32::NEG_INFINITY, 5.0];
//! let (y, _ran) = logcumsumexp::forward(Backend::Sim, shape, &x)?;
//! assert_eq!(y, logcumsumexp::host::forward(shape, &x)?); // bit-exact
//! let g = [1.0; 6];
//! let (gx, _ran) = logcumsumexp::backward(Backend::Sim, shape, &x, &g)?;
//! assert_eq!(gx, logcumsumexp::host::backward(shape, &x, &g)?);
//! # Ok::<(), ptxsmith::Error>(())
//! ```
//!
//! # Kernels and launch
//!
//! One CTA of [`NSEG`] threads per row walks the row's tiles in order (the
//! *row path*): a tile is staged in shared memory with coalesced (16-byte
//! when `T` and the pointers allow) loads and stores, each thread works on
//! its segment from shared memory, the carries stay on chip. The forward's
//! CTA takes [`ptx::FWD_CHAINS`] = 2 rows at once and each thread walks
//! segment `σ` of both, interleaved: two independent `log_add_exp` chains
//! in flight per thread, the same bits (the contract fixes the order of
//! the combines, not the thread). The forward moves 8 B per element; the
//! backward 12 B per element for `T ≤ TILE` and 16 B above (a first pass
//! over `x` computes the tile carries `C_τ`, the second walks the tiles
//! from the last). When the rows are too few to fill the device
//! ([`launch::split_rule`]), the *split path* gives every tile its own CTA.
//! The forward's is one launch, `lcse_fwd_split` (8 B per element: `x` read
//! once): a CTA takes a tile by a ticket (an atomic counter, so that it
//! only ever waits for tiles whose CTAs started before it), stages it,
//! publishes its total `T_τ`, then gets its carry by a *look-back* that
//! follows the carry tree exactly: the last tile of a run folds and
//! publishes the run's aggregate `G_j`; a run's first tile computes `P_j`
//! by the tile tree over the published `G_0 … G_{j−1}`; any other tile
//! starts from the nearest inclusive carry `C_{k+1}` published in its run
//! and folds the totals `T_{k+1} … T_{τ−1}` after it left to right (a
//! state of the contract's chain: the same bits whichever `k` it finds).
//! Each published value travels with its flag in one 8-byte atomic word
//! (no fence needed), in a scratch of `2·rows·n_τ + 128·rows + 1` words
//! (totals, inclusive carries, run aggregates, the ticket: 66 KB for a row
//! of 2²⁴) allocated and zeroed on the stream per call. The backward's
//! split path is still four launches and no CTA waits for another: the
//! pair tile totals, the carry tree (`lcse_bwd_carry`, `lcse_bwd_zcarry`:
//! one CTA of 128 threads per row, thread `j` on run `j`: its aggregate,
//! the tile tree over the runs, then the run's chain of carries, about
//! `2L + 10` dependent combines a row instead of `n_τ − 1`), the tile maps,
//! and the tile kernel recomputing each tile from its carries (24 B per
//! element) — the same bits. On the row path the CTA walking the row keeps
//! the run aggregates in its tile buffer's padding and computes a run's
//! prefix (the tile tree over the finished runs) when it reaches the run's
//! first tile, the backward for both its passes.
//!
//! Cost on sm_90 (pinned ptxas; `docs/tuning.md`, `docs/perf.md`,
//! sections *logcumsumexp at the roof* and *logcumsumexp forward: where
//! the SASS goes*): `lcse_fwd`'s segment log-sum loop is 113 SASS
//! instructions per 4 elements (an `exp` each, without its upper clamp:
//! `x − m'` is `≤ 0` but for `m = +∞`, set after the sum) and its output
//! loop 173 per 4 (a `log_add_exp` each): 71.4 per element that the
//! contract fixes, 85.7 in all with the tile tree (about 9), the maximum
//! and the tile copies (a full tile copied unguarded, 2.4). No schedule of
//! these routines gets under about 85, so the forward stays issue-bound on
//! an H200 (44.5 µs modeled at `[4096, 4096]`, against 31 µs of memory)
//! and the issue's 35 µs goal (≤ 69 per element) is out of reach under
//! this contract. `lcse_fwd` keeps six CTAs an SM on sm_90
//! (80 registers, two staged tiles: 36.9 KB), 48 chains in flight. The backward's per-element walk is 122
//! per 2 elements (an `exp` and a `div.rn` each), its pair aggregates 36 per
//! element, about 125 per element in all; `lcse_bwd` is built for six CTAs
//! an SM (`.minnctapersm`, 80 registers) to hide its dependent chains.

pub mod host;
pub mod launch;
pub mod ptx;

pub use host::{NSEG, SEG, Shape, TILE};
pub use launch::{
    Path, backward, backward_dev, backward_dev_path, backward_on, backward_on_path, backward_raw,
    forward, forward_dev, forward_dev_path, forward_on, forward_on_path, forward_raw, split_rule,
};
