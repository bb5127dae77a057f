//! # ptxsmith
//!
//! Hand-written GPU kernels generated as PTX from a typed Rust DSL, one
//! variant per NVIDIA SM (sm_70 to sm_120), JIT-loaded through the CUDA
//! driver API (no NVRTC, no nvcc, no toolkit), each with a bit-exact CPU
//! host model. See the README for the verification layers.
//!
//! Writing kernels of your own: the [guide] (`docs/writing-kernels.md`):
//! the DSL ([`dsl`]), the public building blocks ([`dsl::blocks`]) with
//! their host mirrors, testing on the simulator for every SM, inspection
//! and launches; `examples/custom_softmax.rs` is a complete one.

#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

pub mod abi;
pub mod dsl;
pub mod error;
pub mod exec;
pub mod kernels;
pub mod math;
pub mod nvtools;
pub mod occupancy;
pub mod prelude;
#[cfg(feature = "report")]
#[cfg_attr(docsrs, doc(cfg(feature = "report")))]
pub mod report;
pub mod runtime;
pub mod sim;
pub mod target;
pub mod tensor_core;
pub mod tensor_map;
pub mod testing;
pub mod tune;

/// The guide to writing your own kernels (`docs/writing-kernels.md`);
/// every code block in it is a doctest.
#[doc = include_str!("../docs/writing-kernels.md")]
pub mod guide {}

/// The README's code blocks, compiled and run as doctests (the quick start
/// and one snippet per kernel family).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub use error::{ArgError, DriverCode, Error, FOREIGN_CONTEXT, Result};
pub use target::{Feature, PtxVersion, Sm};
