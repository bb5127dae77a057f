//! Block-ELL sparse linear layers (`y = x·Wᵀ + bias` with `W` stored as
//! `B×B` blocks, a fixed number `K` of block slots per block row), their
//! gradients, the topology tools a dynamic-sparsity controller needs, and
//! per-block statistics — all in a fixed, documented evaluation order.
//!
//! The host model ([`host`]) is the spec; the kernels ([`ptx`], one module
//! per block size and SM) reproduce it under `to_bits()` on every target,
//! and [`launch`] runs them on a [`Stream`](crate::runtime::context::Stream)
//! (GPU or simulator): [`DeviceTopology`] holds `col` and its transposed
//! index on the device, [`forward_dev`], [`grad_input_dev`],
//! [`grad_values_dev`] and [`grad_bias_dev`] take device buffers,
//! [`forward_raw`], [`grad_input_raw`] and [`grad_values_raw`] take
//! another stack's `CUdeviceptr`s (thin wrappers over foreign views) on a
//! stream, and [`forward`] & co. are the slice API on any
//! [`Backend`](crate::runtime::backend::Backend). The host models, the
//! spec, are reached through [`host`] only ([`host::forward`], …,
//! [`host::block_grad_norms`]). No kernel uses atomics:
//! every output element has one writer, so results never depend on
//! timing or on the launch configuration.
//!
//! # Layout
//! * [`Dims`] `{ r, c, k, b }`: `R` output blocks, `C` input blocks, `K`
//!   slots per block row, block size `B` ∈ [`BLOCK_SIZES`] = {8, 16, 32,
//!   64}. `N` (the batch rows) is given per call.
//! * `x`: `[N, C·B]` row-major `f32`.
//! * `values`: `[R, K, B, B]`; `values[r,k,i,j]` is at `((r·K + k)·B +
//!   i)·B + j`.
//! * `col`: `[R, K]` `i32`. `col[r,k] = c ≥ 0` means block `(r,k)` is
//!   `W[r·B + i][c·B + j] = values[r,k,i,j]`; `-1` marks an empty slot.
//!   Valid entries are `-1..C`, and a column block appears at most once in
//!   a row (any slot position; empty slots may sit anywhere).
//! * `bias` (optional): `[R·B]`. `y`, `gy`: `[N, R·B]`. `gx`: `[N, C·B]`.
//!   `gv`: `[R, K, B, B]`. `gb`: `[R·B]`.
//!
//! An **empty slot is skipped, never multiplied by zero**: its `values`
//! are never read (they may hold anything, NaN included), and an `Inf` or
//! `NaN` in `x`/`gy` reaching only empty slots cannot produce a NaN.
//!
//! # Contract (every `fma` is one `fma.rn.f32`, Rust `a.mul_add(b, c)`;
//! every `+` one `add.rn.f32`; `sqrt` is `sqrt.rn.f32` = [`f32::sqrt`])
//! * **Forward** ([`host::forward`]): `y[n][r·B+i]`: `acc = +0.0`; for `k =
//!   0..K` ascending, skipping empty slots, with `c = col[r,k]`, for `j =
//!   0..B` ascending: `acc = fma(values[r,k,i,j], x[n][c·B+j], acc)`; then,
//!   with a bias, `acc = add(acc, bias[r·B+i])`. A row with no slots gives
//!   `+0.0` (+ bias).
//! * **Grad-input** ([`host::grad_input`]): `gx[n][c·B+j]`: `acc = +0.0`; for
//!   each entry `(r,k)` of column block `c` in the [`TransposedIndex`]
//!   (ascending `(r,k)`), for `i = 0..B` ascending: `acc =
//!   fma(values[r,k,i,j], gy[n][r·B+i], acc)`. A column block no slot
//!   uses gives `+0.0`.
//! * **The N-chunk tree** (grad-values, grad-bias and the activation
//!   norms): the rows `n = 0..N` are cut into chunks of [`N_CHUNK`] = 256
//!   consecutive rows (`[q·256, min((q+1)·256, N))`, `q = 0..⌈N/256⌉`).
//!   Each chunk's partial is a sequential chain from `+0.0` over its rows
//!   in ascending `n` (and, where a row contributes several terms, over
//!   those in ascending order). The result is the first partial, then
//!   `acc = add(acc, partial_q)` for `q = 1, 2, …` ascending. `N = 0`
//!   gives `+0.0`. For `N ≤ 256` this is a single chain. The tree depends
//!   only on `N`, never on a launch configuration, so a kernel may use one
//!   CTA per chunk and a second pass over the partials.
//! * **Grad-values** ([`host::grad_values`]): `gv[r,k,i,j]` for a non-empty slot
//!   with `c = col[r,k]`: the N-chunk tree with the chain step `acc =
//!   fma(gy[n][r·B+i], x[n][c·B+j], acc)`. Empty slots give `+0.0`.
//! * **Grad-bias** ([`host::grad_bias`]): `gb[o]`: the N-chunk tree with `acc =
//!   add(acc, gy[n][o])`.
//!
//! # Topology tools
//! [`validate_col`] and the `validate_*` helpers; [`TransposedIndex`]
//! (CSC-like: `offsets [C+1]`, `slots [nnz]` holding `r·K + k`, ascending
//! within each column block — built by a counting sort, deterministic);
//! [`from_dense`] / [`to_dense`] (dense `[R·B, C·B]` + block mask `[R, C]`
//! ↔ block-ELL with `K` = the largest blocks-per-row, slots filled in
//! ascending column order then `-1` with zero values); [`retopology`]
//! (new `col` lists, surviving blocks keep their weights bit for bit,
//! newcomers and empty slots are zero).
//!
//! # Statistics (for the topology controller)
//! * [`host::block_grad_norms`]: per slot `[R, K]`, `acc = +0.0`; for `i`, then
//!   `j` ascending: `acc = fma(g, g, acc)`; result `sqrt(acc)`. Empty
//!   slots give `+0.0` without reading `gv`.
//! * [`host::input_block_norms`] (`[C]`, over `x`) and [`host::output_block_norms`]
//!   (`[R]`, over `gy`): the N-chunk tree where row `n` contributes the
//!   terms `j = 0..B` ascending with `acc = fma(v, v, acc)`; result
//!   `sqrt` of the tree's sum. `N = 0` gives `+0.0`.
//! * [`host::ema_update`]: `s ← fma(decay, s, mul(sub(1, decay), v))`, i.e.
//!   `decay.mul_add(s, (1.0 - decay) * v)`, with `decay` finite in `[0,
//!   1]`.
//!
//! Each has a device form in [`launch::stats`] ([`block_grad_norms_dev`],
//! [`input_block_norms_dev`], [`output_block_norms_dev`],
//! [`ema_update_dev`]) with the same bits, so a training loop that keeps
//! `gv`, `x` and `gy` on the device reads back only `R·K + R + C` floats.
//!
//! # Sizes and errors
//! `N = 0` gives empty `y`/`gx`, all-`+0.0` `gv`/`gb` and zero norms;
//! `R = 0` or `C = 0` are valid empty layers (with `C = 0` every slot must
//! be `-1`); `K = 0` means no slots (every output is `+0.0` + bias). Every
//! mistake returns [`Error::InvalidArgument`](crate::Error::InvalidArgument)
//! naming the values: an unsupported `B`, a buffer length that does not
//! match its shape, a `col` entry outside `-1..C` or repeated in its row,
//! products that overflow `usize`, `C > i32::MAX` (not representable in
//! `col`), `R·K > u32::MAX` (not representable in the transposed index).
//! Nothing panics on user input.

pub mod host;
pub mod launch;
pub mod ptx;
pub mod stats;
pub mod topology;

mod example;
#[doc(hidden)]
pub use example::{Example, example};

/// The old path of [`launch::stats`].
#[deprecated(
    note = "moved to `block_ell::launch::stats` (a family's parts live in its `launch/`, `ptx/` folders)"
)]
pub mod launch_stats {
    pub use super::launch::stats::*;
}

/// The old path of [`ptx::stats`].
#[deprecated(
    note = "moved to `block_ell::ptx::stats`; `block_ell::ptx::variants` lists its kernels too"
)]
pub mod ptx_stats {
    pub use super::ptx::stats::*;

    /// Every statistics kernel for `sm`.
    pub fn variants(sm: crate::Sm) -> crate::Result<Vec<crate::dsl::PtxModule>> {
        super::ptx::stats::kernels(sm)
    }
}

pub use host::{BLOCK_SIZES, Dims, N_CHUNK, validate_col};
pub use launch::stats::{
    block_grad_norms_dev, ema_update_dev, input_block_norms_dev, output_block_norms_dev,
};
pub use launch::{
    DeviceTopology, forward, forward_dev, forward_raw, grad_bias, grad_bias_dev,
    grad_bias_dev_budget, grad_input, grad_input_dev, grad_input_raw, grad_values, grad_values_dev,
    grad_values_dev_budget, grad_values_raw,
};
pub use topology::{BlockEll, TransposedIndex, from_dense, retopology, to_dense};
