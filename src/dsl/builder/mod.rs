//! [`KernelBuilder`]: a typed, structured builder for one PTX entry.
//!
//! Methods append instructions and return fresh typed registers. Misuse
//! that the types cannot rule out (an instruction the target lacks, a
//! constant index past a shared array, too much static shared memory, a
//! register of another builder, a loop-body value read after its loop) is
//! recorded with the caller's source location (the methods are
//! `#[track_caller]`) and returned by [`KernelBuilder::finish`] as a typed
//! error ([`BuildError`] inside [`Error::Build`](crate::Error::Build)):
//! the builder never prints invalid PTX. See the [`dsl`](crate::dsl)
//! module for the register model: typed registers owned by their builder,
//! predicates, and [`Var`] for loop-carried values.
//!
//! `core` owns the builder itself: the [`KernelBuilder`] type, entry
//! directives, register and label allocation, recording instructions
//! (feature checks and the minimal `.version`), plain moves, and module
//! assembly ([`KernelBuilder::finish`]). The instruction groups live in
//! further `impl KernelBuilder` blocks, one file each:
//!
//! * `int`: integer arithmetic, logic and bit manipulation;
//! * `float`: float arithmetic, always with explicit rounding;
//! * `convert`: conversions and bit reinterpretation;
//! * `block_scale`: the FP4 (E2M1) and UE8M0 conversions and 8-bit plumbing;
//! * `memory`: typed pointers, parameters and addresses, loads and stores
//!   (global, shared, vector), atomics;
//! * `mma`: packed f16/bf16/tf32 conversions and `mma.sync` with its
//!   fragments ([`FragA`], [`FragB`], [`FragC`]);
//! * `ldmatrix`: `ldmatrix` into `mma.sync` fragments;
//! * `async_copy`: `cp.async` and its commit/wait groups;
//! * `bulk_copy`: shared-memory barriers (`mbarrier`) and bulk copies
//!   (`cp.async.bulk`, optionally multicast to the CTAs of a cluster);
//! * `control`: predicates, branches and structured control flow,
//!   barriers and warp operations;
//! * `loops`: grid-stride loops;
//! * `special`: special registers and global thread indices;
//! * `var`: loop-carried variables ([`Var`]);
//! * `func`: device functions ([`DeviceFn`], [`KernelBuilder::device_fn`])
//!   and calls ([`KernelBuilder::call`]); `func_def`: a built function as
//!   the modules calling it print it;
//! * `error`: [`BuildError`], the misuses the builder refuses;
//! * [`params`]: typed parameter lists ([`kernel_params!`](crate::kernel_params))
//!   and [`KernelBuilder::params`].

mod async_copy;
mod block_scale;
mod bulk_copy;
mod cluster;
mod control;
mod convert;
mod core;
mod error;
mod float;
mod func;
mod func_def;
mod int;
mod ldmatrix;
mod loops;
mod memory;
mod mma;
pub mod params;
mod special;
mod tensor_copy;
mod var;

pub use self::core::{KernelBuilder, Label};
pub use async_copy::CpAsyncSize;
pub use bulk_copy::{ClusterMbarrier, SharedMbarrier};
pub use cluster::ClusterPtr;
pub use error::BuildError;
pub use func::{DeviceFn, FnArg, FnReg, FnVal, FnValues, IntoArg, IntoArgs};
pub use ldmatrix::LdmatrixInput;
pub use memory::{GlobalPtr, SharedArray, SharedPtr};
pub use mma::{FragA, FragB, FragC};
pub use tensor_copy::{TensorMapParam, TensorMapRef};
pub use var::Var;
