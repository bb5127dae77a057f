//! Handle values and the emulated address space: what a `CUcontext`,
//! `CUstream`, `CUevent`, `CUmodule` or `CUfunction` value is made of, the
//! special stream handles, and where device addresses lie. A leaf: no
//! other module of the crate is used here.

/// What a handle names (its tag, the top 16 bits of the value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Context = 0xC0C7,
    Stream = 0x5EA0,
    Event = 0xE7E7,
    Module = 0x30D0,
    Function = 0xF0F0,
}

/// Handles are `tag << 48 | serial`.
const TAG_SHIFT: u32 = 48;

/// The handle of object number `serial` (never reused) of `kind`.
pub fn make(kind: Kind, serial: u64) -> u64 {
    debug_assert!(serial < 1 << TAG_SHIFT);
    ((kind as u64) << TAG_SHIFT) | serial
}

/// Whether handle value `h` carries `kind`'s tag.
pub fn is(h: u64, kind: Kind) -> bool {
    h >> TAG_SHIFT == kind as u64
}

/// `CU_STREAM_LEGACY` and `CU_STREAM_PER_THREAD`, the special stream
/// handles (`cuda.h`).
pub const CU_STREAM_LEGACY: u64 = 0x1;
pub const CU_STREAM_PER_THREAD: u64 = 0x2;

/// The key of a context's legacy default stream in its stream map.
pub const LEGACY: u64 = 0;

/// The emulated address space: device `d`'s allocations lie in
/// `[(d + 1) << 43, (d + 2) << 43)`, each context (each activation of a
/// primary context too) in its own `1 << 38` slice of it.
pub const DEVICE_SPAN_SHIFT: u32 = 43;
pub const CONTEXT_SPAN_SHIFT: u32 = 38;

/// `[start, end)` of the whole emulated device address space: a host
/// pointer in it is refused (it is a device pointer given as a host one).
pub fn device_address_space(devices: usize) -> (u64, u64) {
    (
        1 << DEVICE_SPAN_SHIFT,
        ((devices as u64) + 1) << DEVICE_SPAN_SHIFT,
    )
}
