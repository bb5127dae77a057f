//! Device memory: allocations in the context's own address range (never
//! host pointers), and copies and fills checked against the live
//! allocations of the current context when they are queued.
//!
//! Synchronisation of the synchronous calls follows the Driver API's "API
//! synchronization behavior" section:
//! * `cuMemcpyHtoD`: the legacy stream's earlier work runs first, the bytes
//!   are staged, and the copy itself is queued on the legacy stream
//!   ("the DMA to final destination may not have completed") — except from
//!   page-locked memory (`cuMemAllocHost`, `cuMemHostRegister`), where it
//!   completes before the call returns;
//! * `cuMemcpyDtoH`: queued on the legacy stream and run before returning;
//! * `cuMemcpyDtoD`, `cuMemsetD*`: queued on the legacy stream, not waited
//!   for;
//! * the `*Async` forms queue on the given stream; an asynchronous host →
//!   device copy stages its bytes when queued, an asynchronous device →
//!   host copy into page-locked memory writes the host buffer when its
//!   stream is synchronised, one into pageable memory runs its stream up
//!   to it and returns when the bytes have landed ("For transfers from
//!   device memory to pageable host memory, the function will return only
//!   once the copy has completed", API synchronization behavior,
//!   Asynchronous; cudarc's `memcpy_dtoh` into a `Vec` relies on it).

use crate::context::alloc_charge;
use crate::driver::Driver;
use crate::error::*;
use crate::handles::{CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, LEGACY, device_address_space};
use crate::host::{HostDst, HostSrc};
use crate::ops::{Dep, OpKind};
use crate::stream::SyncTarget;

/// What `cuPointerGetAttribute` knows about an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PointerInfo {
    /// The owning context (0 for page-locked host memory).
    pub ctx: u64,
    /// Device memory (else page-locked host memory).
    pub device: bool,
    pub ordinal: i32,
    pub base: u64,
    pub size: usize,
}

/// Which stream a copy or fill goes to: the synchronous API (legacy
/// stream, with the call's own waiting rule) or an `*Async` call's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum On {
    Sync,
    Stream(u64),
}

impl Driver {
    /// `[addr, addr + len)` must lie in one live allocation of the current
    /// context (`CUDA_ERROR_INVALID_VALUE`: unknown, freed, another
    /// context's, or running off the end).
    pub fn check_device(&self, ctx: u64, addr: u64, len: usize) -> Res<()> {
        if len == 0 {
            return Ok(());
        }
        let c = &self.contexts[&ctx];
        let inside = c
            .allocs
            .range(..=addr)
            .next_back()
            .is_some_and(|(&base, &size)| {
                (addr - base)
                    .checked_add(len as u64)
                    .is_some_and(|end| end <= size)
            });
        if inside {
            Ok(())
        } else {
            Err(CUDA_ERROR_INVALID_VALUE)
        }
    }

    /// A host range: not null, not inside the emulated device address
    /// space (a device pointer passed as a host pointer).
    pub fn check_host(&self, addr: usize, len: usize) -> Res<()> {
        if len == 0 {
            return Ok(());
        }
        if addr == 0 || addr.checked_add(len).is_none() {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let (lo, hi) = device_address_space(self.devices.len());
        let (a, b) = (addr as u64, (addr + len) as u64);
        if a < hi && b > lo {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        Ok(())
    }

    /// Whether `[addr, addr + len)` is page-locked host memory.
    pub fn is_pinned(&self, addr: usize, len: usize) -> bool {
        self.pinned
            .range(..=addr)
            .next_back()
            .is_some_and(|(&base, &(size, _))| addr - base + len <= size)
    }

    /// The context and stream a copy goes to.
    fn target(&mut self, on: On) -> Res<(u64, u64)> {
        let (ctx, key) = match on {
            On::Sync => {
                let ctx = self.current_handle()?;
                self.refuse_unsafe_during_capture(ctx)?;
                if crate::driver::per_thread_default() {
                    // A `_ptds` entry point: the per-thread default stream.
                    self.resolve_stream(CU_STREAM_PER_THREAD, true)?
                } else {
                    (ctx, LEGACY)
                }
            }
            On::Stream(h) => self.resolve_stream(h, true)?,
        };
        self.contexts[&ctx].usable()?;
        Ok((ctx, key))
    }

    /// `cuMemAlloc`.
    pub fn mem_alloc(&mut self, bytes: usize) -> Res<u64> {
        if bytes == 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let cur = self.current_handle()?;
        self.refuse_unsafe_during_capture(cur)?;
        let c = self.current_ctx()?;
        let dev = c.device;
        let charge = alloc_charge(bytes as u64);
        let d = &self.devices[dev];
        if d.used.saturating_add(charge) > d.spec.memory {
            return Err(CUDA_ERROR_OUT_OF_MEMORY);
        }
        let c = self.current_ctx()?;
        let addr = c.sim.alloc(bytes).map_err(|_| CUDA_ERROR_OUT_OF_MEMORY)?;
        if addr + bytes as u64 > c.range.1 {
            // This context's slice of the address space is used up
            // (addresses are never reused, so use after free is caught).
            let _ = c.sim.free(addr);
            return Err(CUDA_ERROR_OUT_OF_MEMORY);
        }
        c.allocs.insert(addr, bytes as u64);
        self.devices[dev].used += charge;
        Ok(addr)
    }

    /// `cuMemFree`: the allocation must start at `ptr` and belong to the
    /// current context; 0 is accepted and does nothing (as `free(NULL)`,
    /// `cudaFree(0)` and the driver's `cuMemFree(0)`), with a usable
    /// current context. Queued work is not waited for: work that still
    /// uses the memory faults when it runs (the driver "may" synchronise).
    pub fn mem_free(&mut self, ptr: u64) -> Res<()> {
        let cur = self.current_handle()?;
        self.refuse_unsafe_during_capture(cur)?;
        let c = self.current_ctx()?;
        if ptr == 0 {
            return Ok(());
        }
        if c.modules
            .values()
            .any(|m| m.program.global_base() == Some(ptr))
        {
            // a module's variables: freed with the module
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let size = c.allocs.remove(&ptr).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        c.sim.free(ptr).map_err(|_| CUDA_ERROR_UNKNOWN)?;
        let dev = c.device;
        let d = &mut self.devices[dev];
        d.used = d.used.saturating_sub(alloc_charge(size));
        Ok(())
    }

    /// `cuMemAllocAsync`: stream-ordered allocation on `stream` (of the
    /// current context). The memory is allocated at the call, so it is
    /// usable before the stream reaches the allocation (looser than the
    /// driver, which only promises it from there on). 0 bytes give the
    /// address 0 (what cudarc's empty slices ask for).
    pub fn mem_alloc_async(&mut self, bytes: usize, stream: u64) -> Res<u64> {
        let (ctx, key) = self.target(On::Stream(stream))?;
        self.refuse_in_capture(ctx, key)?;
        if bytes == 0 {
            return Ok(0);
        }
        self.mem_alloc(bytes)
    }

    /// `cuMemFreeAsync`: the allocation at `ptr` (of the current context,
    /// made by either `cuMemAlloc` or `cuMemAllocAsync`) is gone for every
    /// call from now on (a later copy or free is refused), and its memory
    /// is released when `stream` reaches the free: work queued before it
    /// still uses it; work that runs later (later on the stream, or an
    /// unordered stream) faults. 0 is accepted and does nothing.
    pub fn mem_free_async(&mut self, ptr: u64, stream: u64) -> Res<()> {
        let (ctx, key) = self.target(On::Stream(stream))?;
        self.refuse_in_capture(ctx, key)?;
        if ptr == 0 {
            return Ok(());
        }
        let c = self.contexts.get_mut(&ctx).expect("resolved");
        if c.modules
            .values()
            .any(|m| m.program.global_base() == Some(ptr))
        {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let size = c.allocs.remove(&ptr).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let dev = c.device;
        let d = &mut self.devices[dev];
        d.used = d.used.saturating_sub(alloc_charge(size));
        self.enqueue(ctx, key, OpKind::Free { ptr }, Vec::new())?;
        Ok(())
    }

    /// `cuMemGetInfo`: `(free, total)` of the current context's device.
    pub fn mem_info(&mut self) -> Res<(usize, usize)> {
        let dev = self.current_ctx()?.device;
        let d = &self.devices[dev];
        Ok((
            (d.spec.memory - d.used.min(d.spec.memory)) as usize,
            d.spec.memory as usize,
        ))
    }

    /// `cuMemGetAddressRange`: the allocation holding `ptr`.
    pub fn address_range(&mut self, ptr: u64) -> Res<(u64, usize)> {
        let c = self.current_ctx()?;
        c.allocs
            .range(..=ptr)
            .next_back()
            .filter(|(base, size)| ptr - **base < **size)
            .map(|(&b, &s)| (b, s as usize))
            .ok_or(CUDA_ERROR_NOT_FOUND)
    }

    /// Host → device from `src`. The device range is checked before the
    /// host memory is touched. From pageable memory the bytes are staged
    /// now (`CUDA_ERROR_OUT_OF_MEMORY` if the host cannot hold the
    /// staging buffer); from page-locked memory they are read when the
    /// copy runs, as a GPU's copy engine reads them.
    ///
    /// Returns what the call must still wait for before it returns (a
    /// synchronous copy from page-locked memory completes first), to be
    /// passed to [`Driver::sync_to`] through `driver::with_sync`.
    pub fn copy_htod(&mut self, dst: u64, src: HostSrc, on: On) -> Res<Option<SyncTarget>> {
        let (ctx, key) = self.target(on)?;
        self.check_device(ctx, dst, src.len())?;
        self.check_host(src.addr(), src.len())?;
        if src.is_empty() {
            return Ok(None);
        }
        let pinned = self.is_pinned(src.addr(), src.len());
        if on == On::Sync {
            self.sync_stream(ctx, key)?;
        }
        let kind = if pinned {
            OpKind::HtoDPinned { dst, src }
        } else {
            let data = src.stage().ok_or(CUDA_ERROR_OUT_OF_MEMORY)?;
            OpKind::HtoD { dst, data }
        };
        let seq = self.enqueue(ctx, key, kind, Vec::new())?;
        Ok((on == On::Sync && pinned).then_some((ctx, key, seq + 1)))
    }

    /// Device → host into `dst` (written when the copy runs). Returns what
    /// the call must still wait for (a synchronous copy, or one into
    /// pageable memory), as [`Driver::copy_htod`].
    pub fn copy_dtoh(&mut self, dst: HostDst, src: u64, on: On) -> Res<Option<SyncTarget>> {
        let (ctx, key) = self.target(on)?;
        self.check_device(ctx, src, dst.len())?;
        self.check_host(dst.addr(), dst.len())?;
        if dst.is_empty() {
            return Ok(None);
        }
        let pinned = self.is_pinned(dst.addr(), dst.len());
        if !pinned {
            // The call would wait for the copy: not on a capturing stream.
            self.refuse_in_capture(ctx, key)?;
        }
        let seq = self.enqueue(ctx, key, OpKind::DtoH { src, dst }, Vec::new())?;
        Ok((on == On::Sync || !pinned).then_some((ctx, key, seq + 1)))
    }

    /// Device → device within the current context.
    pub fn copy_dtod(&mut self, dst: u64, src: u64, len: usize, on: On) -> Res<()> {
        let (ctx, key) = self.target(on)?;
        self.check_device(ctx, dst, len)?;
        self.check_device(ctx, src, len)?;
        if len > 0 {
            self.enqueue(ctx, key, OpKind::DtoD { dst, src, len }, Vec::new())?;
        }
        Ok(())
    }

    /// `cuMemsetD8/D16/D32`: `count` elements of `elem` bytes; the address
    /// must be aligned to the element.
    pub fn memset(&mut self, dst: u64, value: u32, elem: usize, count: usize, on: On) -> Res<()> {
        let (ctx, key) = self.target(on)?;
        if !dst.is_multiple_of(elem as u64) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let len = count.checked_mul(elem).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        self.check_device(ctx, dst, len)?;
        if count > 0 {
            let kind = OpKind::Memset {
                dst,
                value,
                elem,
                count,
            };
            self.enqueue(ctx, key, kind, Vec::new())?;
        }
        Ok(())
    }

    /// `cuMemcpyPeer(Async)`: from `src` in context `src_ctx` to `dst` in
    /// `dst_ctx`. The source context's queued work runs first and the bytes
    /// are read then (staged); the write is queued like a host → device
    /// copy (the legacy stream of `dst_ctx` for the synchronous form, which
    /// then waits for it).
    pub fn copy_peer(
        &mut self,
        dst: u64,
        dst_ctx: u64,
        src: u64,
        src_ctx: u64,
        len: usize,
        on: On,
    ) -> Res<Option<SyncTarget>> {
        self.check_ctx(dst_ctx)?;
        self.check_ctx(src_ctx)?;
        self.contexts[&dst_ctx].usable()?;
        self.contexts[&src_ctx].usable()?;
        self.check_device(dst_ctx, dst, len)?;
        self.check_device(src_ctx, src, len)?;
        let mut deps = Vec::new();
        let key = match on {
            On::Sync => LEGACY,
            // The default stream (as the driver, which accepts it): the
            // destination context's legacy stream, after the work queued
            // so far on the current context's legacy stream.
            On::Stream(0 | CU_STREAM_LEGACY | CU_STREAM_PER_THREAD) => {
                let cur = self.current_handle()?;
                if cur != dst_ctx {
                    let c = &self.contexts[&cur];
                    deps.push(Dep {
                        ctx: cur,
                        epoch: c.instance,
                        stream: LEGACY,
                        seq: c.streams[&LEGACY].next_seq(),
                    });
                }
                LEGACY
            }
            On::Stream(h) => {
                let (c, k) = self.resolve_stream(h, false)?;
                if c != dst_ctx {
                    return Err(CUDA_ERROR_INVALID_HANDLE);
                }
                k
            }
        };
        if len == 0 {
            return Ok(None);
        }
        let all: Vec<(u64, u64, u64)> = self.contexts[&src_ctx]
            .streams
            .iter()
            .map(|(&k, s)| (src_ctx, k, s.next_seq()))
            .collect();
        self.run(&all)?;
        self.contexts[&src_ctx].usable()?;
        let mut data = Vec::new();
        data.try_reserve_exact(len)
            .map_err(|_| CUDA_ERROR_OUT_OF_MEMORY)?;
        data.resize(len, 0);
        let sc = self.contexts.get_mut(&src_ctx).expect("checked");
        sc.sim
            .read(src, &mut data)
            .map_err(|_| CUDA_ERROR_INVALID_VALUE)?;
        let seq = self.enqueue(dst_ctx, key, OpKind::HtoD { dst, data }, deps)?;
        Ok((on == On::Sync).then_some((dst_ctx, LEGACY, seq + 1)))
    }

    /// The allocation holding `ptr`, in any context, or page-locked host
    /// memory.
    pub fn find_pointer(&self, ptr: u64) -> Option<PointerInfo> {
        for (&h, c) in &self.contexts {
            if let Some((&base, &size)) = c.allocs.range(..=ptr).next_back()
                && ptr - base < size
            {
                return Some(PointerInfo {
                    ctx: h,
                    device: true,
                    ordinal: c.device as i32,
                    base,
                    size: size as usize,
                });
            }
        }
        let p = usize::try_from(ptr).ok()?;
        self.pinned
            .range(..=p)
            .next_back()
            .filter(|(b, (s, _))| p - **b < *s)
            .map(|(&b, &(s, _))| PointerInfo {
                ctx: 0,
                device: false,
                ordinal: -1,
                base: b as u64,
                size: s,
            })
    }

    /// `cuMemAllocHost`: page-locked host memory (ordinary, page-aligned
    /// host memory here).
    pub fn mem_alloc_host(&mut self, bytes: usize) -> Res<usize> {
        self.current_ctx()?;
        if bytes == 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let p = crate::host::pinned_alloc(bytes).ok_or(CUDA_ERROR_OUT_OF_MEMORY)?;
        let addr = p.as_ptr() as usize;
        self.pinned.insert(addr, (bytes, true));
        Ok(addr)
    }

    /// `cuMemFreeHost`: the size of the allocation to release, removed from
    /// the table (the caller frees it). Queued copies that read or write
    /// it run first (`run_host_users`), so none touches freed memory.
    pub fn mem_free_host(&mut self, addr: usize) -> Res<usize> {
        match self.pinned.get(&addr) {
            Some(&(bytes, true)) => {
                self.run_host_users(addr, bytes)?;
                self.pinned.remove(&addr);
                Ok(bytes)
            }
            _ => Err(CUDA_ERROR_INVALID_VALUE),
        }
    }

    /// `cuMemHostRegister`: treat `[addr, addr + bytes)` as page-locked.
    pub fn host_register(&mut self, addr: usize, bytes: usize) -> Res<()> {
        self.current_ctx()?;
        if bytes == 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        self.check_host(addr, bytes)?;
        let overlaps = self
            .pinned
            .range(..addr + bytes)
            .next_back()
            .is_some_and(|(&b, &(s, _))| b + s > addr);
        if overlaps {
            return Err(oxicuda_driver::ffi::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
        }
        self.pinned.insert(addr, (bytes, false));
        Ok(())
    }

    /// `cuMemHostUnregister`.
    pub fn host_unregister(&mut self, addr: usize) -> Res<()> {
        match self.pinned.get(&addr) {
            Some(&(bytes, false)) => {
                self.run_host_users(addr, bytes)?;
                self.pinned.remove(&addr);
                Ok(())
            }
            _ => Err(oxicuda_driver::ffi::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED),
        }
    }
}
