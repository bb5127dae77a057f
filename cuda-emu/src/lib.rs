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
//! Safe modules hold the driver: [`config`] (environment), [`driver`]
//! (global state, handles, the current context), [`context`], [`memory`],
//! [`stream`] (queues, events and execution), [`module`], [`launch`],
//! [`device`] (attributes, occupancy), [`error`] (result codes, the
//! finding → fault mapping). `unsafe` lives in `exports/` (the C ABI:
//! reading and writing the caller's pointers) and [`host`] (host memory
//! written after a call returned).

#![deny(unsafe_code)]

pub mod config;
pub mod context;
pub mod device;
pub mod driver;
pub mod error;
/// The C ABI (`cuInit`, `cuMemAlloc_v2`, ...): what a program loading the
/// library calls; the crate's own tests call them directly.
#[allow(unsafe_code)]
pub mod exports;
#[allow(unsafe_code)]
pub mod host;
pub mod launch;
pub mod memory;
pub mod module;
pub mod stream;
