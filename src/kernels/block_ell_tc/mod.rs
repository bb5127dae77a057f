//! Block-ELL sparse linear layers on the **tensor cores** (issue 31): the
//! layout, topology tools and `-1` slots of [`block_ell`](super::block_ell),
//! with bf16 or f16 inputs (or f32 inputs converted to tf32 in the
//! kernel), `mma.sync` with fp32 accumulation, fp32 output, and a host
//! model per SM that predicts every bit ([`host`]).
//!
//! The FP32 CUDA-core path ([`block_ell`](super::block_ell)) stays the
//! SM-independent contract; this path is the one whose bits depend on the
//! device's SM, because the tensor cores' block FMA does
//! ([`tensor_core`](crate::tensor_core), `docs/tensor-cores.md`).
//!
//! # Precisions and storage ([`TcPrecision`])
//! * [`TcPrecision::Bf16`], [`TcPrecision::F16`]: `x`, `values` (and `gy`
//!   for the gradients) are stored as `u16` bit patterns (half the bytes of
//!   f32). Convert from f32 with round-to-nearest-even by
//!   [`to_bf16`] / [`to_f16`] (`cvt.rn.bf16.f32` / `cvt.rn.f16.f32`:
//!   [`tensor_core::f32_to_bf16_rn`](crate::tensor_core::f32_to_bf16_rn),
//!   [`tensor_core::f32_to_f16_rn`](crate::tensor_core::f32_to_f16_rn)).
//!   MMA shape `m16n8k16`: the reduction runs in chunks of 16.
//! * [`TcPrecision::Tf32`]: the inputs are `f32`; the kernel converts each
//!   operand with `cvt.rna.tf32.f32` (to nearest, ties away, 10 fraction
//!   bits), and so does the host model
//!   ([`tensor_core::f32_to_tf32_rna`](crate::tensor_core::f32_to_tf32_rna)).
//!   MMA shape `m16n8k8`: chunks of 8.
//!
//! Accumulation and `bias` are `f32`. The forward and grad-input outputs
//! (`y`, `gx`) are `f32`, or, by [`TcOutput::Bf16`], bf16 (`u16` bits):
//! each f32 result of the contract below rounded **once**, at the store,
//! by `cvt.rn.bf16.f32` (to nearest even; overflow gives ±∞; every NaN
//! gives `0x7FFF`; the host model is [`to_bf16`] of the f32 result,
//! [`host::output`]). Nothing else changes: the accumulation, its order
//! and the bias `add.rn` are the f32 output's. Grad-values (`gv`) is
//! always `f32`.
//! `B` ∈ [`TC_BLOCK_SIZES`] = {16, 32, 64} (`B = 8` is refused: an
//! `m16` tile does not fit an 8-wide block).
//!
//! # Contract
//! `tc(acc, chunk)` is **one `mma.sync`**: the block FMA of the device's SM
//! ([`tensor_core::params`](crate::tensor_core::params)`(sm, format)`,
//! i.e. [`BlockFma::dot`](crate::tensor_core::BlockFma::dot)) over the
//! chunk's pairs in ascending order with `acc` as its `c`. A chunk holds
//! 16 pairs (bf16/f16) or 8 (tf32); the published block widths (8 or 16,
//! resp. 4 or 8) divide it, so a `k16` instruction on a width-8 SM is two
//! chained blocks, low `k` first. Operands are bf16/f16 bits, or
//! `cvt.rna.tf32.f32` of the f32 input.
//! * **Forward** `y[n][r·B+i]`: `acc = +0.0`; for the filled slots `k` of
//!   row `r` in ascending **(input block `c = col[r,k]`, slot `k`)** order
//!   ([`host::row_order`]; empty slots skipped), for chunks `j0 = 0, q, 2q,
//!   …` ascending (`q` the chunk size): `acc = tc(acc, (values[r, k, i,
//!   j0+e], x[n][c·B+j0+e]) for e in 0..q)`; then, with a bias, `acc =
//!   add.rn(acc, bias[r·B+i])`. For a row that lists its blocks ascending
//!   (what [`from_dense`](super::block_ell::from_dense) and the topology
//!   tools build) this is slot order; a row may hold its blocks in any
//!   slots and gets the same bits ([`validate_col`] refuses a block twice
//!   in one row, so the slot never breaks a tie). (Until the grouped
//!   kernels the order was the slots'.)
//! * **Grad-input** `gx[n][c·B+j]`: `acc = +0.0`; for each entry `(r,k)`
//!   of column block `c` in the [`TransposedIndex`] (ascending), for chunks
//!   `i0` ascending: `acc = tc(acc, (values[r,k,i0+e,j], gy[n][r·B+i0+e]) for
//!   e in 0..q)`.
//! * **Grad-values** `gv[r,k,i,j]` (non-empty slot, `c = col[r,k]`): the
//!   N-chunk tree of the FP32 path (chunks of
//!   [`N_CHUNK`](super::block_ell::N_CHUNK) = 256 rows, partials joined with
//!   `add.rn` in ascending order): a partial is `+0.0` then `acc = tc(acc,
//!   (gy[n0+e][r·B+i], x[n0+e][c·B+j]) for e in 0..q)` for `n0` = the
//!   chunk's first row, `+q`, … ascending (256 is a multiple of `q`, so the
//!   MMA chunks never straddle two N-chunks). Rows `n ≥ N` of the last
//!   MMA chunk are padded with `+0` operands. Empty slots give `+0.0`.
//!
//! **Padding and zeros.** In the model a zero product takes no part in a
//! block (its exponent does not join the alignment), so a padded `+0 × +0`
//! pair changes nothing — **except** that a block whose products are all
//! zero turns a `c` of `−0.0` into `+0.0` (`tensor_core` step 6). So the
//! host model feeds the padded pairs to the model exactly as the kernel
//! does rather than skipping them (only grad-values pads; the forward and
//! grad-input reductions run over `B`, a multiple of 16).
//!
//! **Empty slots** are skipped, never multiplied (their `values` may hold
//! NaN). Infinities and NaN in the inputs propagate as the block FMA says
//! (`∞·0` is NaN, `+∞ + −∞` is NaN, every NaN is
//! [`CANONICAL_NAN`](crate::tensor_core::CANONICAL_NAN)); the bias `add.rn`
//! is IEEE.
//!
//! # SMs
//! Every target from sm_80 has the variants ([`ptx::variants`]: forward,
//! grad-input and grad-values × bf16, f16, tf32 × `B` ∈ {16, 32, 64}, 27
//! modules); sm_70 and sm_75 have none, and a request there is refused
//! with [`Error::UnsupportedFeature`](crate::Error::UnsupportedFeature)
//! naming [`Feature::MmaSync`](crate::Feature::MmaSync) (the host model
//! refuses it the same way: the tensor cores of those SMs are not
//! modelled). The host model takes the SM of the device the kernels run
//! on — on the simulator and the driver emulator, the emulated device's
//! SM, not the module's `.target`.
//!
//! # Speed
//! The forward and grad-input kernels compute a CTA tile of many tokens ×
//! the `G·B` features of `G` output blocks ([`ptx::grouped`]): each input
//! block's tile is staged once for all `G` (the union of their entries,
//! merged in the contract's order), with the values block of every output
//! block that has an entry on it — `cp.async` double-buffered copies into
//! dynamic shared memory, `ldmatrix` fragments (tf32 grad-input's `B`
//! fragments by `ld.shared`), warp tiles of several MMAs, vectorised
//! stores. Every row length runs: the forward pass ranks a long row's
//! slots a window at a time ([`ptx::grouped::window`]). At bf16/f16 `B`
//! 32 and 64 and tf32 `B` 32 on sm_90, sm_100 and sm_100a both run in
//! clusters of four
//! CTAs (adjacent token tiles of one group) whose values blocks land by
//! one tensor-map multicast a block, read from L2 once for the four
//! ([`ptx::grouped::forward_cluster`],
//! [`ptx::grouped::grad_input_cluster`]), and whose input tiles (`x`,
//! `gy`) land by one tensor-map copy a step (tf32: f32 tiles landed
//! unrounded, each tile rounded once in shared memory by `cvt.rna`: the
//! bits of rounding at staging); there warp 0 alone merges the lists and hands the other
//! warps each step's key. The bf16/f16 forward at `B` 32 and 64 runs in
//! clusters of eight instead (2 token tiles × 4 groups): each step's
//! input tile is multicast to the four groups of its token tile, and all
//! eight CTAs walk the union schedule of the cluster's rows, merged one
//! list a lane of warp 0. The modeled
//! figures are in `docs/perf.md` ("Tensor-core block-ELL"). Grad-values
//! at `B` ≤ 32 is staged the same way, one CTA the filled slots of a tile
//! of block rows × column blocks over double-buffered token tiles of `gy`
//! (one a row) and `x` (one a column block), each staged once for all of
//! the tile's slots that use it
//! ([`ptx::values_tiles`](mod@ptx::values_tiles): 8 × 8 tiles of 32 slots
//! a CTA at `B` = 16 on sm_90 and sm_100; 4 × 8 or 4 × 4 elsewhere; at
//! bf16/f16 `B` = 32 and 64 and tf32 `B` = 32 on sm_90, sm_100 and
//! sm_100a in clusters of 4 CTAs along the block rows whose `x` tiles
//! land in all four by one tensor-map multicast each (tf32: landed
//! unrounded, rounded once in shared memory), [`ptx::values_cluster`]); at
//! `B` = 64 one CTA a
//! group of consecutive slots of one block row, its `gy` tile staged once
//! and one `x` tile a slot ([`ptx::tiled_values`]). Staging changes no
//! bit: each output element's chain of `mma.sync` steps is the contract's.

pub mod host;
pub mod launch;
pub mod ptx;

pub use super::block_ell::{DeviceTopology, Dims, TransposedIndex, validate_col};
pub use host::{TC_BLOCK_SIZES, TcElem, TcOutElem, TcOutput, TcPrecision, to_bf16, to_f16};
pub use launch::{forward_dev, grad_input_dev, grad_values_dev};
