//! Handle values and the emulated address space: what a `CUcontext`,
//! `CUstream`, `CUevent`, `CUmodule` or `CUfunction` value is made of, the
//! special stream handles, and where device addresses lie. A leaf: no
//! other module of the crate is used here.

/// What a handle names (its tag, bits 48 to 62 of the value). Every tag
/// is below `0x8000`, so that a handle is positive when read as a signed
/// 64-bit integer (cuda.core, under numba-cuda, converts handles to
/// `int64`), and has a bit among 57 to 62 set, so that a program that
/// dereferences a handle faults on a non-canonical address (4- and
/// 5-level paging alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Context = 0x40C7,
    Stream = 0x1EA0,
    Event = 0x27E7,
    Module = 0x30D0,
    Function = 0x70F0,
    Library = 0x11B7,
    Kernel = 0x2E4E,
    Graph = 0x6A90,
    GraphExec = 0x6AE0,
    Link = 0x1174,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_positive_non_canonical_and_keep_their_kind() {
        let kinds = [
            Kind::Context,
            Kind::Stream,
            Kind::Event,
            Kind::Module,
            Kind::Function,
            Kind::Library,
            Kind::Kernel,
            Kind::Graph,
            Kind::GraphExec,
            Kind::Link,
        ];
        for k in kinds {
            for serial in [1, (1 << 48) - 1] {
                let h = make(k, serial);
                assert!((h as i64) > 0, "{k:?}: {h:#x}");
                // Canonical under 5-level paging: bits 56..63 all equal.
                let top = h >> 56;
                assert!(top != 0 && top != 0xFF, "{k:?}: {h:#x}");
                assert!(is(h, k));
                for other in kinds.iter().filter(|&&o| o != k) {
                    assert!(!is(h, *other));
                }
            }
        }
    }
}
