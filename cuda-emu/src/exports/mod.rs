//! The C ABI: one `#[no_mangle] unsafe extern "C"` function per driver
//! entry point. Each reads its pointer arguments (the only place raw
//! caller memory is read or written), calls the safe driver in the crate's
//! other modules, and writes its results. Every body runs under
//! `guard`: a panic becomes `CUDA_ERROR_UNKNOWN`, never an unwind into
//! C, and with `PTXSMITH_EMU_TRACE=1` every failing call is printed.
//!
//! Pointer arguments follow the Driver API's contracts (an out-pointer is
//! valid for one write, a host buffer for its length, ...): a null one is
//! `CUDA_ERROR_INVALID_VALUE`, others are the caller's promise, as with the
//! real driver. Host ranges inside the emulated device address space are
//! refused before they are touched.

#![allow(non_snake_case)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod context;
mod copy2d;
mod device;
mod graph;
mod launch;
mod library;
mod link;
mod memory;
mod module;
mod per_thread;
mod proc;
mod stream;
mod tensor_map;
mod unsupported;

pub use context::*;
pub use copy2d::*;
pub use device::*;
pub use graph::*;
pub use launch::*;
pub use library::*;
pub use link::*;
pub use memory::*;
pub use module::*;
pub use per_thread::*;
pub use proc::*;
pub use stream::*;
pub use tensor_map::*;
pub use unsupported::*;

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::config::MAX_DEVICES;
use crate::error::*;
use crate::handles::device_address_space;

/// Run an entry point's body: its result code, `CUDA_ERROR_UNKNOWN` after
/// a panic (reported on stderr), traced when `PTXSMITH_EMU_TRACE` is set.
pub(crate) fn guard(name: &str, f: impl FnOnce() -> Res<()>) -> CUresult {
    let code = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => CUDA_SUCCESS,
        Ok(Err(c)) => c,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            eprintln!("ptxsmith-emu: internal error in {name}: {msg}");
            CUDA_ERROR_UNKNOWN
        }
    };
    if code != CUDA_SUCCESS && code != CUDA_ERROR_NOT_READY && crate::driver::tracing() {
        eprintln!("ptxsmith-emu: {name} -> {}", crate::error::name(code));
    }
    code
}

/// Finish a call that queued work it must wait for: run it (through
/// `with_sync`, so that host functions it waits for run without the lock).
pub(crate) fn then_sync(queued: Res<Option<crate::stream::SyncTarget>>) -> Res<()> {
    match queued? {
        Some(t) => crate::driver::with_sync(|d| d.sync_to(t)),
        None => Ok(()),
    }
}

/// A handle's value.
pub(crate) fn raw(p: *mut c_void) -> u64 {
    p as usize as u64
}

/// The opaque pointer of a handle value (never dereferenced by anyone).
pub(crate) fn handle(h: u64) -> *mut c_void {
    std::ptr::without_provenance_mut(h as usize)
}

/// Write `v` through the out-pointer `p` (which need not be aligned: a
/// misaligned out-pointer is written byte-wise, as C code of the driver
/// would store through it, instead of being undefined behaviour here).
///
/// # Safety
/// `p` is null (refused) or valid for a write of `size_of::<T>()` bytes.
pub(crate) unsafe fn put<T>(p: *mut T, v: T) -> Res<()> {
    if p.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    // SAFETY: non-null and, by the caller's contract, valid for a write of
    // a `T`'s bytes; `write_unaligned` needs no alignment.
    unsafe { p.write_unaligned(v) };
    Ok(())
}

/// [`put`] for an optional out-pointer: a null `p` is skipped, not
/// refused (the calls whose out-pointers may each be null).
///
/// # Safety
/// `p` is null or valid for a write of `size_of::<T>()` bytes.
pub(crate) unsafe fn put_if<T>(p: *mut T, v: T) -> Res<()> {
    if p.is_null() {
        return Ok(());
    }
    // SAFETY: non-null, writable by the caller's contract.
    unsafe { put(p, v) }
}

/// Refuse a host range that is null or lies in the emulated device address
/// space, before it is touched.
pub(crate) fn host_range_ok(addr: usize, len: usize) -> Res<()> {
    if len == 0 {
        return Ok(());
    }
    if addr == 0 || addr.checked_add(len).is_none() {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let (lo, hi) = device_address_space(MAX_DEVICES);
    if (addr as u64) < hi && (addr + len) as u64 > lo {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    Ok(())
}
