//! Public building blocks for kernels written with the DSL: warp and block
//! reductions, a warp scan, grid-stride loops with a vector body and a
//! tail, and "thread 0 of the block" helpers.
//!
//! Every block has a **fixed evaluation order**, stated in its doc comment,
//! and a host mirror in [`host`] that follows that order bit for bit: a
//! kernel built from these blocks has a host model built from the mirrors
//! (`tests/dsl_blocks.rs` checks each block against its mirror on the
//! simulator, with NaN, infinities and signed zeros among the inputs).
//!
//! The blocks only call [`KernelBuilder`](crate::dsl::KernelBuilder)'s public methods; they are what
//! the library's own kernels use (the FP8 absmax, the HMM and block-scaled
//! kernels).
//!
//! | block | order |
//! |---|---|
//! | [`warp_reduce`] | butterfly `shfl.sync.bfly`, offsets 16, 8, 4, 2, 1; every lane ends with the same value |
//! | [`warp_argmax_f32`] | the same butterfly on (value, index) pairs; ties go to the lowest index |
//! | [`block_reduce`], [`block_reduce_all`] | warp butterfly, one partial per warp in shared memory, `bar.sync`, warp 0's butterfly over the partials (lanes past the last warp hold a fill value) |
//! | [`warp_scan_inclusive_sum`] | Hillis–Steele with `shfl.sync.up`, offsets 1, 2, 4, 8, 16 |
//! | [`grid_stride_vec4`] | groups of four elements, grid-stride; the `n mod 4` tail one element per thread |
//! | [`is_thread0`], [`if_thread0`] | `%tid.x == 0` |
//!
//! The shapes these blocks assume: a one-dimensional block whose
//! `%ntid.x` is a multiple of 32, with every thread of it calling the
//! block (they shuffle with the full mask `0xffffffff` and the block ones
//! `bar.sync`).

mod loops;
mod reduce;
mod scan;

pub mod host;

pub use loops::{grid_stride_vec4, if_thread0, is_thread0};
pub use reduce::FULL_MASK;
pub use reduce::{
    ReduceElem, ReduceOp, block_reduce, block_reduce_all, block_reduce_with_fill, identity,
    warp_argmax_f32, warp_reduce,
};
pub use scan::{ScanElem, warp_scan_inclusive_sum};
