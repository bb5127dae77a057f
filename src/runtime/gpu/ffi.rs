//! The only `unsafe` code in ptxsmith's runtime (layer 1 of the fence
//! described in [`crate::runtime`]).
//!
//! What lives here and nowhere else:
//!
//! * [`ArgPack`], the launch argument pack (one 8-byte slot per parameter)
//!   and [`launch`], which hands it to `cuLaunchKernel` on a raw stream.
//! * [`DeviceAlloc`], an owned `cuMemAlloc` allocation, and the copies and
//!   fills ([`copy_htod`], [`copy_dtoh`], [`copy_dtod`], [`zero`]) on a
//!   [`Mem`]: a range of one of those allocations, checked against it, or
//!   foreign memory ([`Mem::Foreign`]) that the caller of an `unsafe`
//!   foreign-view constructor vouched for and the driver's pointer
//!   attributes ([`pointer_info`]) confirmed to lie in one allocation of
//!   the context.
//! * event-based cross-stream waits ([`stream_wait`]), and the primary-context handle
//!   ([`primary_context`], [`reset_primary_context`]).
//!
//! Host slices cross as `&[u8]` / `&mut [u8]` views (made with `bytemuck`
//! by the typed layer): no staging copy. A host → device copy of a borrowed
//! slice waits for the copy to land before returning, so the borrow is
//! honoured even for page-locked memory the driver would read later.
//!
//! Everything above this module (device, cache, executor, context,
//! buffers) is safe Rust compiled under `#![deny(unsafe_code)]`.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::ffi::c_void;
use std::sync::Arc;

use oxicuda_driver::context::Context;
use oxicuda_driver::device::Device;
use oxicuda_driver::error::{CudaError, CudaResult};
use oxicuda_driver::event::Event;
use oxicuda_driver::ffi::{CUcontext, CUevent, CUstream};
use oxicuda_driver::loader::try_driver;
use oxicuda_driver::module::Function;
use oxicuda_driver::primary_context::PrimaryContext;

use crate::abi::{ArgValue, ParamDesc, check_args};
use crate::error::Result;
use crate::exec::{LaunchConfig, RawStream};

/// Size and alignment of one parameter slot: every [`ArgValue`] is at most
/// 8 bytes, and 8 is the strictest alignment any kernel parameter we emit
/// needs (`.u64`/`.f64`/pointers).
pub(crate) const SLOT_BYTES: usize = 8;

/// One parameter value, little-endian, zero-padded to 8 bytes.
#[repr(C, align(8))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Slot([u8; SLOT_BYTES]);

/// Launch arguments packed for `cuLaunchKernel`: one [`Slot`] per kernel
/// parameter (a tensor map's 128 bytes for a [`ParamKind::TensorMap`](crate::abi::ParamKind::TensorMap)), in parameter order.
///
/// Only [`ArgPack::new`] builds one, after [`check_args`] accepted the
/// arguments against the module's [`ParamDesc`]s, and the runtime checks
/// those descriptions against the entry signature parsed from the PTX
/// text before the first launch (`runtime::gpu::cuda`), so the driver never
/// reads more or larger values than the pack holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArgPack {
    slots: Vec<Slot>,
    /// The tensor maps by parameter index (boxed: 64-byte aligned, at a
    /// stable address); their slots are unused.
    maps: Vec<(usize, Box<crate::tensor_map::TensorMap>)>,
}

impl ArgPack {
    /// Check `args` against `params` (count, kinds, pointer alignment) and
    /// pack them.
    pub(crate) fn new(kernel: &str, params: &[ParamDesc], args: &[ArgValue]) -> Result<Self> {
        check_args(kernel, params, args)?;
        let slots = args
            .iter()
            .map(|a| {
                let mut slot = Slot::default();
                a.write_le(&mut slot.0);
                slot
            })
            .collect();
        let maps = args
            .iter()
            .enumerate()
            .filter_map(|(i, a)| match a {
                ArgValue::TensorMap(m) => Some((i, Box::new(*m))),
                _ => None,
            })
            .collect();
        Ok(Self { slots, maps })
    }

    /// Number of packed arguments.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The raw bytes of slot `i`.
    #[cfg(test)]
    pub(crate) fn slot_bytes(&self, i: usize) -> Option<[u8; SLOT_BYTES]> {
        self.slots.get(i).map(|s| s.0)
    }

    /// One pointer per slot, as `cuLaunchKernel`'s `kernelParams` wants.
    fn param_ptrs(&self) -> Vec<*mut c_void> {
        self.slots
            .iter()
            .enumerate()
            .map(|(i, s)| match self.maps.iter().find(|(k, _)| *k == i) {
                Some((_, m)) => std::ptr::from_ref(&**m).cast_mut().cast::<c_void>(),
                None => std::ptr::from_ref(s).cast_mut().cast::<c_void>(),
            })
            .collect()
    }
}

/// The driver's stream handle for a [`RawStream`].
fn cu_stream(s: RawStream) -> CUstream {
    CUstream(s.0 as usize as *mut c_void)
}

/// Queue `function` on `stream` with the packed `args`.
///
/// The caller (the safe executor in `runtime::gpu::cuda`) has checked the pack
/// against the entry's parameters, the launch shape against the device
/// limits, and every pointer argument against its live buffers; the raw
/// entry points (`unsafe` in their public signature) pass the pointer
/// obligation on to their callers.
pub(crate) fn launch(
    function: &Function,
    cfg: &LaunchConfig,
    stream: RawStream,
    args: &ArgPack,
) -> CudaResult<()> {
    let api = try_driver()?;
    let mut ptrs = args.param_ptrs();
    // SAFETY: `function` is a live `CUfunction` of a loaded module (the
    // caller's `LoadedKernel` holds the module). `ptrs` has exactly one entry per kernel
    // parameter (ArgPack invariant), each pointing into `args.slots` (a
    // slot or a boxed tensor map, the parameter's size), which
    // is borrowed for this whole call; `cuLaunchKernel` copies the values
    // into the launch before returning. `extra` is null. A stream that is
    // not valid in the current context makes the driver return an error.
    let rc = unsafe {
        (api.cu_launch_kernel)(
            function.raw(),
            cfg.grid.0,
            cfg.grid.1,
            cfg.grid.2,
            cfg.block.0,
            cfg.block.1,
            cfg.block.2,
            cfg.dynamic_smem_bytes,
            cu_stream(stream),
            ptrs.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    oxicuda_driver::check(rc)
}

/// An owned device allocation (`cuMemAlloc`), freed on drop.
///
/// Dropping it frees immediately: the owner (the executor in
/// `runtime::gpu::cuda`) synchronises the context first, so no queued work can
/// still use the memory.
#[derive(Debug)]
pub(crate) struct DeviceAlloc {
    addr: u64,
    bytes: usize,
    /// Set when the context was lost: the memory went with it, and a
    /// `cuMemFree` could hit a new allocation at the same address.
    leaked: bool,
}

impl DeviceAlloc {
    /// Allocate `bytes` (at least 1: the driver refuses empty allocations;
    /// the size is rounded up to 4 so [`zero`] can fill whole words).
    pub(crate) fn new(bytes: usize) -> CudaResult<Self> {
        let api = try_driver()?;
        let size = bytes.max(1).next_multiple_of(4);
        let mut addr = 0u64;
        // SAFETY: `addr` is a valid out-pointer for the duration of the call.
        let rc = unsafe { (api.cu_mem_alloc_v2)(&mut addr, size) };
        oxicuda_driver::check(rc)?;
        Ok(Self {
            addr,
            bytes: size,
            leaked: false,
        })
    }

    /// Device address of the first byte.
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }

    /// Forget the memory without `cuMemFree` (after the context was lost).
    pub(crate) fn leak(&mut self) {
        self.leaked = true;
    }

    /// `[offset, offset + len)` must lie inside the allocation.
    fn check(&self, offset: usize, len: usize) -> CudaResult<u64> {
        match offset.checked_add(len) {
            Some(end) if end <= self.bytes => Ok(self.addr + offset as u64),
            _ => Err(CudaError::InvalidValue),
        }
    }
}

impl Drop for DeviceAlloc {
    fn drop(&mut self) {
        if self.leaked {
            return;
        }
        if let Ok(api) = try_driver() {
            // SAFETY: `addr` came from `cuMemAlloc` and is freed once (this
            // drop); the owner synchronised the context before dropping, so
            // no queued work uses it. Errors cannot be reported from drop.
            let _ = unsafe { (api.cu_mem_free_v2)(self.addr) };
        }
    }
}

/// Device memory a copy or fill addresses.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mem<'a> {
    /// Byte `offset` of one of ptxsmith's allocations; the range is
    /// checked against it.
    Own(&'a DeviceAlloc, usize),
    /// A foreign device address whose range the executor found inside a
    /// foreign view: memory the caller of an `unsafe` foreign-view
    /// constructor vouched for (valid device memory of this context, of at
    /// least the view's length, until the queued work has run), which the
    /// driver confirmed to lie in one allocation of the context.
    Foreign(u64),
}

impl Mem<'_> {
    /// The device address of `[at, at + len)`, checked for own memory.
    fn range(self, len: usize) -> CudaResult<u64> {
        match self {
            Mem::Own(a, offset) => a.check(offset, len),
            Mem::Foreign(addr) => Ok(addr),
        }
    }
}

/// Copy `src` to `dst`, ordered on `stream`, and wait for the copy to land
/// (so `src` may be reused, whatever memory it is in).
pub(crate) fn copy_htod(dst: Mem<'_>, src: &[u8], stream: RawStream) -> CudaResult<()> {
    let at = dst.range(src.len())?;
    if src.is_empty() {
        return Ok(());
    }
    let api = try_driver()?;
    // SAFETY: `[at, at + src.len())` lies inside the live allocation `dst`
    // (checked above) or inside vouched-for foreign memory (`Mem::Foreign`).
    // `src` is a valid host slice borrowed until we return, and we
    // synchronise `stream` before returning.
    let rc = unsafe {
        (api.cu_memcpy_htod_async_v2)(at, src.as_ptr().cast(), src.len(), cu_stream(stream))
    };
    oxicuda_driver::check(rc)?;
    synchronize(stream)
}

/// Copy from `src` into `dst`, ordered on `stream`, and wait for it to
/// land.
pub(crate) fn copy_dtoh(src: Mem<'_>, dst: &mut [u8], stream: RawStream) -> CudaResult<()> {
    let at = src.range(dst.len())?;
    if dst.is_empty() {
        return Ok(());
    }
    let api = try_driver()?;
    // SAFETY: `[at, at + dst.len())` lies inside the live allocation `src`
    // or inside vouched-for foreign memory (`Mem::Foreign`); `dst` is an exclusively borrowed host slice, and the stream is
    // synchronised before we return, so the driver's writes complete while
    // the borrow is held.
    let rc = unsafe {
        (api.cu_memcpy_dtoh_async_v2)(dst.as_mut_ptr().cast(), at, dst.len(), cu_stream(stream))
    };
    oxicuda_driver::check(rc)?;
    synchronize(stream)
}

/// Queue a device → device copy of `bytes` bytes (asynchronous).
pub(crate) fn copy_dtod(
    dst: Mem<'_>,
    src: Mem<'_>,
    bytes: usize,
    stream: RawStream,
) -> CudaResult<()> {
    let d = dst.range(bytes)?;
    let s = src.range(bytes)?;
    if bytes == 0 {
        return Ok(());
    }
    let api = try_driver()?;
    let f = api.cu_memcpy_dtod_async_v2.ok_or(CudaError::NotSupported)?;
    // SAFETY: both ranges lie inside live allocations (checked above), which
    // the executor keeps alive until the context has been synchronised, or
    // inside vouched-for foreign memory (`Mem::Foreign`).
    let rc = unsafe { f(d, s, bytes, cu_stream(stream)) };
    oxicuda_driver::check(rc)
}

/// Zero bytes, readable from `'static` memory by an asynchronous copy.
static ZEROS: [u8; 4] = [0; 4];

/// Queue zeroing `bytes` bytes of `dst` (asynchronous): whole 32-bit
/// words with `cuMemsetD32Async`, an unaligned head or tail (at most 3
/// bytes each) copied from a static zero word.
pub(crate) fn zero(dst: Mem<'_>, bytes: usize, stream: RawStream) -> CudaResult<()> {
    let start = dst.range(bytes)?;
    if bytes == 0 {
        return Ok(());
    }
    let api = try_driver()?;
    let end = start + bytes as u64;
    let mid_start = start.next_multiple_of(4).min(end);
    let mid_end = (end / 4 * 4).max(mid_start);
    let copy_zeros = |at: u64, n: u64| -> CudaResult<()> {
        if n == 0 {
            return Ok(());
        }
        // SAFETY: `[at, at + n)` lies inside `dst` (a sub-range of the
        // checked or vouched-for range), `n <= 3`, and `ZEROS` is `'static`, so the
        // asynchronous read of it stays valid however late it happens.
        let rc = unsafe {
            (api.cu_memcpy_htod_async_v2)(at, ZEROS.as_ptr().cast(), n as usize, cu_stream(stream))
        };
        oxicuda_driver::check(rc)
    };
    copy_zeros(start, mid_start - start)?;
    if mid_end > mid_start {
        let f = api.cu_memset_d32_async.ok_or(CudaError::NotSupported)?;
        // SAFETY: `[mid_start, mid_end)` is 4-aligned, lies inside `dst`
        // (checked or vouched for), and holds `(mid_end - mid_start) / 4` words.
        let rc = unsafe {
            f(
                mid_start,
                0,
                ((mid_end - mid_start) / 4) as usize,
                cu_stream(stream),
            )
        };
        oxicuda_driver::check(rc)?;
    }
    copy_zeros(mid_end, end - mid_end)
}

/// Wait for everything queued on `stream`.
pub(crate) fn synchronize(stream: RawStream) -> CudaResult<()> {
    let api = try_driver()?;
    // SAFETY: a stream handle is a plain value; an invalid one makes the
    // driver return an error rather than touch memory.
    oxicuda_driver::check(unsafe { (api.cu_stream_synchronize)(cu_stream(stream)) })
}

/// Make `waiter` wait (on the device, without blocking the host) for the
/// work queued on `waited` so far: an event recorded on one, waited on by
/// the other, then destroyed (the driver keeps it until the wait resolves).
pub(crate) fn stream_wait(waiter: RawStream, waited: RawStream) -> CudaResult<()> {
    let api = try_driver()?;
    let mut ev = CUevent::default();
    // CU_EVENT_DISABLE_TIMING: ordering only.
    const DISABLE_TIMING: u32 = 0x2;
    // SAFETY: `ev` is a valid out-pointer.
    oxicuda_driver::check(unsafe { (api.cu_event_create)(&mut ev, DISABLE_TIMING) })?;
    // SAFETY: `ev` is the live event created above; the stream handles are
    // plain values the driver validates.
    let r = oxicuda_driver::check(unsafe { (api.cu_event_record)(ev, cu_stream(waited)) })
        .and_then(|()| {
            // SAFETY: as above.
            oxicuda_driver::check(unsafe { (api.cu_stream_wait_event)(cu_stream(waiter), ev, 0) })
        });
    // SAFETY: `ev` is destroyed once; destroying an event with a pending
    // wait is allowed (the driver releases it when the wait completes).
    let _ = unsafe { (api.cu_event_destroy_v2)(ev) };
    r
}

/// A timing event (`cuEventCreate`, timing on) recorded on `stream`
/// (`cuEventRecord`); destroyed when dropped.
pub(crate) fn timing_event(stream: RawStream) -> CudaResult<Event> {
    let api = try_driver()?;
    let ev = Event::new()?;
    // SAFETY: `ev` is a live event of the current context; the stream
    // handle is a plain value the driver validates.
    oxicuda_driver::check(unsafe { (api.cu_event_record)(ev.raw(), cu_stream(stream)) })?;
    Ok(ev)
}

/// What the driver knows about a device address (`cuPointerGetAttribute`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PointerInfo {
    /// The context the allocation belongs to (`CU_POINTER_ATTRIBUTE_CONTEXT`;
    /// 0 when the driver does not tie it to one).
    pub(crate) context: usize,
    /// The allocation's first byte (`CU_POINTER_ATTRIBUTE_RANGE_START_ADDR`).
    pub(crate) base: u64,
    /// The allocation's size (`CU_POINTER_ATTRIBUTE_RANGE_SIZE`).
    pub(crate) size: usize,
}

/// The allocation holding device address `addr`, as the driver reports it;
/// an error (`CUDA_ERROR_INVALID_VALUE`) for an address that is not device
/// memory the driver knows.
pub(crate) fn pointer_info(addr: u64) -> CudaResult<PointerInfo> {
    const CONTEXT: u32 = 1;
    const RANGE_START_ADDR: u32 = 11;
    const RANGE_SIZE: u32 = 12;
    let api = try_driver()?;
    let mut ctx = CUcontext::default();
    let mut base = 0u64;
    let mut size = 0usize;
    // SAFETY: each out-pointer is valid for a write of the attribute's type
    // (CUcontext, CUdeviceptr, size_t); the address is a plain value the
    // driver looks up.
    unsafe {
        oxicuda_driver::check((api.cu_pointer_get_attribute)(
            (&raw mut ctx).cast(),
            CONTEXT,
            addr,
        ))?;
        oxicuda_driver::check((api.cu_pointer_get_attribute)(
            (&raw mut base).cast(),
            RANGE_START_ADDR,
            addr,
        ))?;
        oxicuda_driver::check((api.cu_pointer_get_attribute)(
            (&raw mut size).cast(),
            RANGE_SIZE,
            addr,
        ))?;
    }
    Ok(PointerInfo {
        context: ctx.0 as usize,
        base,
        size,
    })
}

/// `cuTensorMapEncodeTiled` of a validated description into `map` (the
/// driver's opaque 128 bytes); `CUDA_ERROR_NOT_SUPPORTED` when the loaded
/// driver lacks the entry point (before CUDA 12.0).
pub(crate) fn tensor_map_encode_tiled(
    map: &mut crate::tensor_map::TensorMap,
    d: &crate::tensor_map::TiledDesc,
) -> CudaResult<()> {
    let api = try_driver()?;
    let f = api
        .cu_tensor_map_encode_tiled
        .ok_or(CudaError::NotSupported)?;
    let rank = d.rank();
    if rank == 0
        || d.global_strides.len() + 1 != rank
        || d.box_dims.len() != rank
        || d.element_strides.len() != rank
    {
        return Err(CudaError::InvalidValue);
    }
    // SAFETY: `map` is 128 bytes, 64-byte aligned (`TensorMap`'s repr), and
    // exclusively borrowed; each array holds the entries the driver reads
    // for `rank` (checked above: `rank` dims, box dims and element
    // strides, `rank - 1` strides); the global address is a plain value the
    // driver stores, never dereferenced by the call.
    let rc = unsafe {
        f(
            map.0.as_mut_ptr().cast(),
            d.dtype as u32,
            rank as u32,
            d.global_address as *mut c_void,
            d.global_dims.as_ptr(),
            d.global_strides.as_ptr(),
            d.box_dims.as_ptr(),
            d.element_strides.as_ptr(),
            d.interleave as u32,
            d.swizzle as u32,
            d.l2_promotion as u32,
            d.oob_fill as u32,
        )
    };
    oxicuda_driver::check(rc)
}

/// Wait for every stream of the current context.
pub(crate) fn context_synchronize() -> CudaResult<()> {
    let api = try_driver()?;
    // SAFETY: no arguments; acts on the calling thread's current context.
    oxicuda_driver::check(unsafe { (api.cu_ctx_synchronize)() })
}

/// Retain `device`'s primary context (the one the CUDA runtime, cudarc and
/// most libraries share) and wrap it as an `Arc<Context>` for the
/// `oxicuda` APIs (streams, modules) that want one. The retain is never
/// released: ptxsmith keeps the context for the life of the process.
pub(crate) fn primary_context(device: &Device) -> CudaResult<Arc<Context>> {
    let primary = PrimaryContext::retain(device)?;
    let raw = primary.raw();
    // Keep the driver's reference for the life of the process.
    std::mem::forget(primary);
    // SAFETY: `raw` is a live primary context whose retain was forgotten
    // above, so it stays live for the rest of the process, longer than the
    // borrowed wrapper and everything created from it.
    Ok(Arc::new(unsafe {
        Context::from_raw_borrowed(raw, *device)
    }))
}

/// Reset `device`'s primary context after a sticky fault: every
/// allocation, module and stream in it is destroyed (they were already
/// unusable). Real drivers keep the fault for the process, and the next
/// retain returns it.
pub(crate) fn reset_primary_context(device: &Device) -> CudaResult<()> {
    let api = try_driver()?;
    // SAFETY: plain device ordinal; the caller has forgotten every handle
    // into the old context (see `Gpu::mark_lost`), so nothing touches the
    // destroyed objects afterwards.
    oxicuda_driver::check(unsafe { (api.cu_device_primary_ctx_reset_v2)(device.raw()) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{ParamKind, ScalarType};
    use crate::error::Error;

    fn params() -> Vec<ParamDesc> {
        vec![
            ParamDesc {
                name: "out".into(),
                kind: ParamKind::GlobalPtr {
                    elem: ScalarType::F32,
                    align: 16,
                },
            },
            ParamDesc {
                name: "n".into(),
                kind: ParamKind::Scalar(ScalarType::U32),
            },
            ParamDesc {
                name: "scale".into(),
                kind: ParamKind::Scalar(ScalarType::F64),
            },
            ParamDesc {
                name: "bias".into(),
                kind: ParamKind::Scalar(ScalarType::S32),
            },
        ]
    }

    #[test]
    fn packs_little_endian_zero_padded_aligned_slots() {
        let args = [
            ArgValue::Ptr(0x7f00_0000_1000),
            ArgValue::U32(0xdead_beef),
            ArgValue::F64(1.5),
            ArgValue::S32(-2),
        ];
        let pack = ArgPack::new("k", &params(), &args).unwrap();
        assert_eq!(pack.len(), 4);
        assert_eq!(
            pack.slot_bytes(0).unwrap(),
            0x7f00_0000_1000u64.to_le_bytes()
        );
        assert_eq!(
            pack.slot_bytes(1).unwrap(),
            [0xef, 0xbe, 0xad, 0xde, 0, 0, 0, 0]
        );
        assert_eq!(pack.slot_bytes(2).unwrap(), 1.5f64.to_le_bytes());
        assert_eq!(
            pack.slot_bytes(3).unwrap(),
            [0xfe, 0xff, 0xff, 0xff, 0, 0, 0, 0]
        );
        assert_eq!(pack.slot_bytes(4), None);

        let ptrs = pack.param_ptrs();
        assert_eq!(ptrs.len(), 4);
        for (i, p) in ptrs.iter().enumerate() {
            assert_eq!(*p as usize % 8, 0, "slot {i} must be 8-byte aligned");
        }
        for w in ptrs.windows(2) {
            assert_eq!(w[1] as usize - w[0] as usize, SLOT_BYTES);
        }
    }

    #[test]
    fn a_tensor_map_argument_points_at_its_128_bytes() {
        let p = vec![
            ParamDesc {
                name: "map".into(),
                kind: ParamKind::TensorMap,
            },
            ParamDesc {
                name: "n".into(),
                kind: ParamKind::Scalar(ScalarType::U32),
            },
        ];
        let m = crate::tensor_map::TensorMap([7; 128]);
        let pack = ArgPack::new("k", &p, &[ArgValue::TensorMap(m), ArgValue::U32(5)]).unwrap();
        let ptrs = pack.param_ptrs();
        assert_eq!(ptrs[0] as usize % 64, 0);
        // SAFETY: the pointer is the boxed map's, alive with `pack`.
        let bytes = unsafe { std::slice::from_raw_parts(ptrs[0].cast::<u8>(), 128) };
        assert_eq!(bytes, &[7u8; 128][..]);
        assert_eq!(pack.slot_bytes(1).unwrap(), [5, 0, 0, 0, 0, 0, 0, 0]);
        assert!(ArgPack::new("k", &p, &[ArgValue::U64(1), ArgValue::U32(5)]).is_err());
    }

    #[test]
    fn refuses_args_that_do_not_match_the_params() {
        let p = params();
        let short = [ArgValue::Ptr(0x1000), ArgValue::U32(1)];
        assert!(
            matches!(ArgPack::new("k", &p, &short), Err(Error::InvalidArgument(m)) if m.contains("takes 4"))
        );
        let wrong = [
            ArgValue::Ptr(0x1000),
            ArgValue::S32(1),
            ArgValue::F64(0.0),
            ArgValue::S32(0),
        ];
        assert!(
            matches!(ArgPack::new("k", &p, &wrong), Err(Error::InvalidArgument(m)) if m.contains("`n`"))
        );
        let misaligned = [
            ArgValue::Ptr(0x1004),
            ArgValue::U32(1),
            ArgValue::F64(0.0),
            ArgValue::S32(0),
        ];
        assert!(
            matches!(ArgPack::new("k", &p, &misaligned), Err(Error::InvalidArgument(m)) if m.contains("16-byte"))
        );
    }

    #[test]
    fn empty_pack_has_no_pointers() {
        let pack = ArgPack::new("k", &[], &[]).unwrap();
        assert_eq!(pack.len(), 0);
        assert!(pack.param_ptrs().is_empty());
    }
}
