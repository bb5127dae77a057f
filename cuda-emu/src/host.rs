//! Host memory the driver touches after the call that named it returned:
//! the destination of a queued device → host copy ([`HostDst`]), the
//! source of a host → device copy ([`HostSrc`]: staged at the call from
//! pageable memory, read when the copy runs from page-locked memory), and
//! page-locked allocations (`cuMemAllocHost`). The only `unsafe` outside
//! `exports/`.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::alloc::Layout;
use std::ffi::c_void;
use std::ptr::NonNull;

/// The host destination of a device → host copy that runs when its stream
/// is synchronised, as on a GPU (where the DMA engine writes it later).
#[derive(Debug, Clone)]
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

    /// Write `data` at byte `offset` of the destination (the range must
    /// lie inside it).
    pub fn write_at(&self, offset: usize, data: &[u8]) {
        assert!(
            offset
                .checked_add(data.len())
                .is_some_and(|end| end <= self.len),
            "HostDst::write_at: {offset} + {} past {}",
            data.len(),
            self.len
        );
        // SAFETY: `new`'s contract: the range is valid for `len` writes and
        // exclusively the driver's until the copy has run, which is now;
        // `[offset, offset + data.len())` lies inside it (checked above).
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.as_ptr().add(offset), data.len())
        };
    }

    /// Whether `[addr, addr + len)` overlaps the destination.
    pub fn overlaps(&self, addr: usize, len: usize) -> bool {
        overlap((self.addr(), self.len), (addr, len))
    }
}

/// Whether two host ranges `(start, len)` overlap.
fn overlap(a: (usize, usize), b: (usize, usize)) -> bool {
    a.0 < b.0.saturating_add(b.1) && b.0 < a.0.saturating_add(a.1)
}

/// Bytes a queued copy moves at a time between host and simulator memory
/// (so that no copy needs a host buffer of its full size).
pub const CHUNK: usize = 1 << 20;

/// The host source of a host → device copy.
#[derive(Debug, Clone)]
pub struct HostSrc {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: as for `HostDst`: a promise about host memory (see `new`), read
// under the driver's global lock from whichever thread runs the copy.
unsafe impl Send for HostSrc {}

impl HostSrc {
    /// # Safety
    /// `ptr` must be valid for reads of `len` bytes for as long as the
    /// driver may read it: until the call returns if the copy is staged
    /// ([`HostSrc::stage`]), until the copy has run (its stream
    /// synchronised, or its context destroyed) if it is queued as is —
    /// the contract of `cuMemcpyHtoDAsync` for page-locked memory.
    pub unsafe fn new(ptr: NonNull<u8>, len: usize) -> Self {
        HostSrc { ptr, len }
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the source is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address.
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Copy `buf.len()` bytes from byte `offset` of the source into `buf`
    /// (the range must lie inside the source).
    pub fn read_at(&self, offset: usize, buf: &mut [u8]) {
        assert!(
            offset
                .checked_add(buf.len())
                .is_some_and(|end| end <= self.len),
            "HostSrc::read_at: {offset} + {} past {}",
            buf.len(),
            self.len
        );
        // SAFETY: `new`'s contract: readable for `len` bytes while the
        // driver may read it, which is now; the range lies inside it.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.ptr.as_ptr().add(offset),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
    }

    /// All the bytes, copied now (a staged copy); `None` when the host
    /// cannot allocate the staging buffer.
    pub fn stage(&self) -> Option<Vec<u8>> {
        let mut v = Vec::new();
        v.try_reserve_exact(self.len).ok()?;
        v.resize(self.len, 0);
        self.read_at(0, &mut v);
        Some(v)
    }

    /// Whether `[addr, addr + len)` overlaps the source.
    pub fn overlaps(&self, addr: usize, len: usize) -> bool {
        overlap((self.addr(), self.len), (addr, len))
    }
}

/// A host function queued on a stream (`cuLaunchHostFunc`,
/// `cuStreamAddCallback`), called when the stream reaches it, on a thread
/// of its own and without the driver's lock.
#[derive(Debug, Clone, Copy)]
pub enum HostFn {
    /// `void fn(void *userData)`.
    Func {
        f: unsafe extern "C" fn(*mut c_void),
        data: usize,
    },
    /// `void fn(CUstream hStream, CUresult status, void *userData)`.
    Callback {
        f: unsafe extern "C" fn(*mut c_void, u32, *mut c_void),
        stream: usize,
        data: usize,
    },
}

impl HostFn {
    /// # Safety
    /// `f` may be called once with `data`, from any thread, at any later
    /// time (the contract of `cuLaunchHostFunc`).
    pub unsafe fn func(f: unsafe extern "C" fn(*mut c_void), data: *mut c_void) -> Self {
        HostFn::Func {
            f,
            data: data.expose_provenance(),
        }
    }

    /// # Safety
    /// `f` may be called once with the stream handle, a status and
    /// `data`, from any thread, at any later time (the contract of
    /// `cuStreamAddCallback`).
    pub unsafe fn callback(
        f: unsafe extern "C" fn(*mut c_void, u32, *mut c_void),
        stream: *mut c_void,
        data: *mut c_void,
    ) -> Self {
        HostFn::Callback {
            f,
            stream: stream.expose_provenance(),
            data: data.expose_provenance(),
        }
    }

    /// Call it (`status` for a callback: `CUDA_SUCCESS`, or the error that
    /// ended the stream's work).
    pub fn call(&self, status: u32) {
        match *self {
            // SAFETY: `func`'s contract: callable once with `data`, from
            // any thread; the queue calls each host function once.
            HostFn::Func { f, data } => unsafe { f(std::ptr::with_exposed_provenance_mut(data)) },
            // SAFETY: `callback`'s contract, as above.
            HostFn::Callback { f, stream, data } => unsafe {
                f(
                    std::ptr::with_exposed_provenance_mut(stream),
                    status,
                    std::ptr::with_exposed_provenance_mut(data),
                )
            },
        }
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
        d.write_at(0, &[1, 2]);
        d.write_at(2, &[3, 4]);
        assert!(std::panic::catch_unwind(|| d.write_at(3, &[5, 6])).is_err());
        assert_eq!(buf, [0, 0, 1, 2, 3, 4, 0, 0]);
        assert!(d.overlaps(d.addr() + 3, 1) && !d.overlaps(d.addr() + 4, 9));
    }

    #[test]
    fn host_src_reads_exactly_its_range() {
        let buf = [1u8, 2, 3, 4, 5, 6];
        let p = NonNull::new(buf[1..].as_ptr().cast_mut()).unwrap();
        // SAFETY: `buf[1..5]` lives until the end of the test.
        let s = unsafe { HostSrc::new(p, 4) };
        assert_eq!(s.stage().unwrap(), [2, 3, 4, 5]);
        let mut two = [0u8; 2];
        s.read_at(2, &mut two);
        assert_eq!(two, [4, 5]);
        assert!(std::panic::catch_unwind(|| s.read_at(3, &mut [0u8; 2])).is_err());
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
