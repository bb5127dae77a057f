//! # ptxsmith-cuda-emu: a CUDA driver on the PTX simulator
//!
//! This crate builds `libptxsmith_cuda_emu.so`, a replacement for the CUDA
//! driver library (`libcuda.so.1`) that runs every kernel on ptxsmith's CPU
//! PTX simulator, with the simulator's memory, race, barrier and
//! initialisation checks on. A program that loads PTX through the driver
//! API (ptxsmith's runtime, oxicuda, cudarc, ...) finds it through
//! `LD_LIBRARY_PATH` (`cuda-emu/with-emu.sh` sets that up) and runs its GPU
//! code on any machine. See `README.md` for the configuration, the strict
//! behaviours and what is not emulated.
//!
//! # Layout
//!
//! Safe modules hold the driver, in layers (each uses only those below it;
//! `tests/layering.rs` checks there is no import circle): leaves
//! [`config`] (environment), [`error`] (result codes, the finding → fault
//! mapping), [`handles`] (handle values, the address space), [`host`];
//! [`ops`] (queued operations, streams, events) and [`jit`] (module and
//! function records, the JIT's header checks); [`context`] (one context's
//! state, performing an operation on it); [`driver`] (the global state
//! behind one lock, the context stack, context lifecycles); then the calls
//! on the driver: [`stream`] (queueing and running work, events),
//! [`module`], [`memory`], [`launch`], [`device`] (attributes, occupancy).
//! `unsafe` lives in `exports/` (the C ABI: reading and writing the
//! caller's pointers) and [`host`] (host memory written after a call
//! returned).

#![deny(unsafe_code)]

pub mod cluster;
pub mod config;
pub mod context;
pub mod device;
pub mod driver;
pub mod error;
/// The C ABI (`cuInit`, `cuMemAlloc_v2`, ...): what a program loading the
/// library calls; the crate's own tests call them directly.
#[allow(unsafe_code)]
pub mod exports;
pub mod graph;
pub mod handles;
#[allow(unsafe_code)]
pub mod host;
pub mod jit;
pub mod launch;
pub mod library;
pub mod memory;
pub mod module;
pub mod ops;
pub mod stream;
