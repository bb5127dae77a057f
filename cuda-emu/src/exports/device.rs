//! Initialisation, version, devices and error strings.

use std::ffi::{c_char, c_int};

use oxicuda_driver::ffi::{CUdevice, CUresult};

use super::{guard, put};
use crate::driver;
use crate::error::*;

/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuInit(flags: u32) -> CUresult {
    guard("cuInit", || driver::init(flags))
}

/// # Safety
/// `version` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CUresult {
    guard("cuDriverGetVersion", || {
        let v = driver::driver_version()?;
        // SAFETY: the caller's contract for `version`.
        unsafe { put(version, v) }
    })
}

/// # Safety
/// `count` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CUresult {
    guard("cuDeviceGetCount", || {
        let n = driver::with(|d| Ok(d.devices.len() as c_int))?;
        // SAFETY: the caller's contract for `count`.
        unsafe { put(count, n) }
    })
}

/// # Safety
/// `device` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGet(device: *mut CUdevice, ordinal: c_int) -> CUresult {
    guard("cuDeviceGet", || {
        driver::with(|d| d.device(ordinal).map(drop))?;
        // SAFETY: the caller's contract for `device`.
        unsafe { put(device, ordinal) }
    })
}

/// # Safety
/// `name` is null or valid for writes of `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: CUdevice) -> CUresult {
    guard("cuDeviceGetName", || {
        let text = driver::with(|d| Ok(d.device(dev)?.spec.name(dev as usize)))?;
        if name.is_null() || len <= 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let n = text.len().min(len as usize - 1);
        // SAFETY: `name` is valid for `len` bytes (caller's contract) and
        // `n + 1 <= len` bytes are written.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr(), name.cast::<u8>(), n);
            name.add(n).write(0);
        }
        Ok(())
    })
}

/// # Safety
/// `pi` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    pi: *mut c_int,
    attrib: c_int,
    dev: CUdevice,
) -> CUresult {
    guard("cuDeviceGetAttribute", || {
        let v =
            driver::with(|d| crate::device::attribute(&d.device(dev)?.spec, dev as usize, attrib))?;
        // SAFETY: the caller's contract for `pi`.
        unsafe { put(pi, v) }
    })
}

/// # Safety
/// `bytes` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: CUdevice) -> CUresult {
    guard("cuDeviceTotalMem_v2", || {
        let v = driver::with(|d| Ok(d.device(dev)?.spec.memory as usize))?;
        // SAFETY: the caller's contract for `bytes`.
        unsafe { put(bytes, v) }
    })
}

/// Deprecated form of the compute-capability attributes.
///
/// # Safety
/// `major` and `minor` are null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceComputeCapability(
    major: *mut c_int,
    minor: *mut c_int,
    dev: CUdevice,
) -> CUresult {
    guard("cuDeviceComputeCapability", || {
        let (a, b) = driver::with(|d| Ok(d.device(dev)?.spec.cc()))?;
        // SAFETY: the caller's contract for both.
        unsafe {
            put(major, a as c_int)?;
            put(minor, b as c_int)
        }
    })
}

fn uuid(dev: CUdevice) -> [u8; 16] {
    let mut u = *b"ptxsmith-emu-dev";
    u[15] = b'0' + (dev as u8 % 10);
    u
}

/// # Safety
/// `out` is null or valid for a write of 16 bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetUuid(out: *mut [u8; 16], dev: CUdevice) -> CUresult {
    guard("cuDeviceGetUuid", || {
        driver::with(|d| d.device(dev).map(drop))?;
        // SAFETY: the caller's contract for `out`.
        unsafe { put(out, uuid(dev)) }
    })
}

/// # Safety
/// As [`cuDeviceGetUuid`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetUuid_v2(out: *mut [u8; 16], dev: CUdevice) -> CUresult {
    // SAFETY: same contract.
    unsafe { cuDeviceGetUuid(out, dev) }
}

/// No emulated device can access another's memory.
///
/// # Safety
/// `can_access` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceCanAccessPeer(
    can_access: *mut c_int,
    dev: CUdevice,
    peer: CUdevice,
) -> CUresult {
    guard("cuDeviceCanAccessPeer", || {
        driver::with(|d| {
            d.device(dev)?;
            d.device(peer).map(drop)
        })?;
        // SAFETY: the caller's contract for `can_access`.
        unsafe { put(can_access, 0) }
    })
}

fn error_text(error: CUresult, p: *mut *const c_char, want_name: bool) -> Res<()> {
    let found = describe(error);
    let s = found.map_or(std::ptr::null(), |(n, d)| {
        if want_name { n.as_ptr() } else { d.as_ptr() }
    });
    // SAFETY: `p` is null (refused) or valid for a write (the caller's
    // contract); the strings are `'static`.
    unsafe { super::put(p, s)? };
    found.map(drop).ok_or(CUDA_ERROR_INVALID_VALUE)
}

/// Works without `cuInit`, like the driver's.
///
/// # Safety
/// `p` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorName(error: CUresult, p: *mut *const c_char) -> CUresult {
    guard("cuGetErrorName", || error_text(error, p, true))
}

/// # Safety
/// `p` is null or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorString(error: CUresult, p: *mut *const c_char) -> CUresult {
    guard("cuGetErrorString", || error_text(error, p, false))
}
