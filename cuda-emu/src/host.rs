//! Host memory the driver touches after the call that named it returned:
//! the destination of a queued device → host copy ([`HostDst`]), and
//! page-locked allocations (`cuMemAllocHost`). The only `unsafe` outside
//! `exports/`.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::alloc::Layout;
use std::ptr::NonNull;

/// The host destination of a device → host copy that runs when its stream
/// is synchronised, as on a GPU (where the DMA engine writes it later).
#[derive(Debug)]
pub struct HostDst {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a `HostDst` is only a promise about host memory (see `new`); the
// driver's global lock serialises every write through it, from whichever
// thread synchronises the stream.
unsafe impl Send for HostDst {}

impl HostDst {
    /// # Safety
    /// `ptr` must be valid for writes of `len` bytes from now until the
    /// copy has run (the stream it was queued on has been synchronised, or
    /// its context destroyed), and not be read or written by anyone else
    /// meanwhile: the contract of `cuMemcpyDtoHAsync`.
    pub unsafe fn new(ptr: NonNull<u8>, len: usize) -> Self {
        HostDst { ptr, len }
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the destination is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address (to refuse a destination inside device address ranges).
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Write `data` (exactly `len` bytes) to the destination.
    pub fn write(&self, data: &[u8]) {
        assert_eq!(data.len(), self.len, "HostDst::write: length");
        // SAFETY: `new`'s contract: the range is valid for `len` writes and
        // exclusively the driver's until the copy has run, which is now.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.as_ptr(), self.len) };
    }
}

/// Alignment of `cuMemAllocHost` memory (a page, as the driver's).
const PINNED_ALIGN: usize = 4096;

/// Allocate `bytes` (> 0) of "page-locked" host memory: ordinary host
/// memory, page aligned and zeroed. `None` when the allocator refuses.
pub fn pinned_alloc(bytes: usize) -> Option<NonNull<u8>> {
    let layout = Layout::from_size_align(bytes.max(1), PINNED_ALIGN).ok()?;
    // SAFETY: the layout has a non-zero size.
    NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })
}

/// Free memory from [`pinned_alloc`] of `bytes`.
///
/// # Safety
/// `ptr` came from `pinned_alloc(bytes)` and is freed once, with no queued
/// copy still targeting it.
pub unsafe fn pinned_free(ptr: NonNull<u8>, bytes: usize) {
    let layout = Layout::from_size_align(bytes.max(1), PINNED_ALIGN)
        .expect("the layout pinned_alloc accepted");
    // SAFETY: the caller's contract: allocated by `pinned_alloc` with this
    // layout, freed once.
    unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_dst_writes_exactly_its_range() {
        let mut buf = [0u8; 8];
        let p = NonNull::new(buf[2..].as_mut_ptr()).unwrap();
        // SAFETY: `buf[2..6]` lives until the end of the test, nobody else
        // touches it meanwhile.
        let d = unsafe { HostDst::new(p, 4) };
        d.write(&[1, 2, 3, 4]);
        assert_eq!(buf, [0, 0, 1, 2, 3, 4, 0, 0]);
    }

    #[test]
    fn pinned_memory_is_page_aligned_and_zeroed() {
        let p = pinned_alloc(10_000).unwrap();
        assert_eq!(p.as_ptr() as usize % PINNED_ALIGN, 0);
        // SAFETY: freshly allocated, 10 000 bytes, freed once below.
        unsafe {
            assert!(
                std::slice::from_raw_parts(p.as_ptr(), 10_000)
                    .iter()
                    .all(|&b| b == 0)
            );
            pinned_free(p, 10_000);
        }
    }
}
