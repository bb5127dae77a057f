//! Score GEMM with top-s routing: every input row is scored against every
//! atom of a dictionary, and each row keeps its `s` strongest atoms.
//!
//! Inputs are row-major `f32`: `x` is `rows × P`, the dictionary `D` is
//! `K × P` (one atom per row). The host model in [`host`] is the
//! specification every other implementation (fast CPU path, simulator,
//! GPU) must match bit for bit.
//!
//! # Contract
//!
//! **Scores.** `scores[r][a]` is computed as
//!
//! ```text
//! acc = +0.0
//! for c = 0, 1, …, P−1:   acc = add.rn(acc, mul.rn(x[r][c], d[a][c]))
//! scores[r][a] = acc
//! ```
//!
//! i.e. separate rounding of every product and every sum, columns in
//! ascending order. It is equal under `to_bits()` to the Rust loop
//! `acc += x * d` (no `mul_add`, no reassociation, no splitting of the sum
//! over `c`). Because the sum starts from `+0.0`, a score is never `−0.0`
//! (`+0.0 + −0.0` and exact cancellation both give `+0.0`); an
//! implementation that starts from the first product instead differs
//! exactly there. A fused multiply-add rounds once instead of twice and can
//! change a score by an ulp and with it the routing; see
//! [`host::fma_sensitive_case`] for data that detects contraction.
//!
//! **Top-s.** A row's top-s is its `s` atoms first in the order keyed by
//! `(is_nan ascending, |score| descending, atom ascending)`, returned in
//! that order as `(atom: u32, score: f32)` ([`host::rank_cmp`],
//! [`host::rank_key`]). Consequences:
//! * ties in `|score|` go to the smaller atom index, including
//!   `|−0.0| == |+0.0|`;
//! * `+Inf` and `−Inf` rank above every finite score (and tie with each
//!   other by atom index);
//! * a NaN score ranks below every number, even below `±0.0`; among NaN
//!   scores, the smaller atom index comes first;
//! * the order is strict and total on `(atom, score)` pairs of distinct
//!   atoms, so the result does not depend on how `K` is tiled or in which
//!   order tiles are visited ([`host::TopSState`]).
//!
//! The returned score keeps its sign and bits. A NaN score is passed through
//! as computed; its payload is whatever the arithmetic produced (on the
//! host, x86 rules; PTX leaves f32 NaN payloads unspecified, so device
//! comparisons should treat NaN scores as "is NaN").
//!
//! **Arguments.** `1 ≤ s ≤ K` (no cap; `s = 0` or `s > K` is
//! [`Error::InvalidArgument`](crate::Error::InvalidArgument), never a
//! clamp). `rows`, `K` and `P` must each be at least 1: an empty problem
//! is an error, not an empty result. `K ≤ u32::MAX` (atom indices are
//! `u32`), `rows·P`, `K·P` and `rows·K` must fit in `usize`, and `x`/`D`
//! must hold exactly `rows·P`/`K·P` elements. Every error message names the
//! offending values ([`host::validate`]).
//!
//! # Entry points
//!
//! * [`host::score_block`]: the full `rows × K` score block (readable).
//! * [`host::route_top_s`]: per-row top-s as a flat [`host::TopS`]
//!   (`rows × s`, row-major), readable: plain loop + full sort.
//! * [`host::route_top_s_fast`]: the same result, bit for bit, from an
//!   atom-tiled, vectorised, multi-threaded CPU path whose working memory
//!   does not grow with `K`.

//!
//! # Device kernels ([`ptx`], [`launch`])
//!
//! * One request per operation: [`ScoreShape`] `{ rows, k, p }` for the
//!   score block, [`Route`] `{ shape, s }` for routing, each with an
//!   optional [`ScoreTuning`]. [`score_block`]`(backend, shape, x, d)` and
//!   [`route_top_s`]`(backend, route, tuning, x, d)` run on a
//!   [`Backend`](crate::runtime::Backend) (`Cuda` fails loud without a
//!   device, `Auto` falls back to the host model, `Host`, `Sim`) and report
//!   which one ran; [`score_block_on`] / [`route_top_s_on`] are the same
//!   launch sequence on a given stream, [`score_block_dev`] /
//!   [`route_top_s_dev`] on device buffers or foreign views,
//!   [`score_block_raw`] / [`route_top_s_raw`] on another stack's raw
//!   addresses.
//!   Results equal the host model's under `to_bits()` (NaN scores: "is
//!   NaN", their bits are unspecified on a device).
//! * The score kernels accumulate with `mul.rn` + `add.rn` only (ptxas
//!   never contracts them: zero `FFMA` in the SASS), each accumulator in
//!   ascending `c`, in a register-tiled loop that is ≥ 90 % `FMUL`+`FADD`
//!   on sm_80 and sm_90 at the default tuning ([`ptx::ScoreTuning`]).
//! * The route keeps `x`, `D`, every score and the running top-s on the
//!   device: a CTA scores its rows against one atom tile at a time in
//!   shared memory and folds the tile into per-row top-s lists in device
//!   memory (a warp per row); `K` may also be split across CTAs, whose
//!   partial lists a second kernel merges ([`launch::RoutePlan`]). Device
//!   memory besides `x` and `D` is `O(splits · rows · s)`, independent of
//!   `K`; the host downloads exactly `rows · s · 8` bytes, the final
//!   `(atom u32, score f32)` pairs.

pub mod host;
pub mod launch;
pub mod ptx;

pub use host::{Route, ScoreShape, TopS};
pub use launch::{
    DeviceTopS, RoutePlan, route_top_s, route_top_s_dev, route_top_s_on, route_top_s_planned_dev,
    route_top_s_planned_on, route_top_s_raw, score_block, score_block_dev, score_block_on,
    score_block_raw,
};
pub use ptx::ScoreTuning;
