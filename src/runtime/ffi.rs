//! The only `unsafe` code in ptxsmith's runtime (layer 1 of the fence
//! described in [`crate::runtime`]).
//!
//! Two things live here and nowhere else:
//!
//! * [`ArgPack`], the launch argument pack: one 8-byte-aligned slot per
//!   kernel parameter, filled from [`ArgValue::to_le_bytes`], and the
//!   `unsafe impl oxicuda_launch::KernelArgs` that hands the driver one
//!   pointer per slot.
//! * [`copy_htod_prefix`] / [`copy_dtoh_prefix`]: host/device copies of a
//!   *prefix* of a device buffer, which `oxicuda_memory::DeviceBuffer` does
//!   not offer (its copies require the host slice to match the whole buffer).
//!
//! Everything above this module (device, cache, executor, backends) is
//! safe Rust and is compiled under `#![deny(unsafe_code)]`.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use std::ffi::c_void;

use oxicuda_driver::error::{CudaError, CudaResult};
use oxicuda_driver::loader::try_driver;
use oxicuda_driver::stream::Stream;
use oxicuda_launch::KernelArgs;
use oxicuda_memory::DeviceBuffer;

use crate::dsl::params::{ArgValue, ParamDesc, check_args};
use crate::error::{Error, Result};

/// Size and alignment of one parameter slot: every [`ArgValue`] is at most
/// 8 bytes, and 8 is the strictest alignment any kernel parameter we emit
/// needs (`.u64`/`.f64`/pointers).
pub(crate) const SLOT_BYTES: usize = 8;

/// One parameter value, little-endian, zero-padded to 8 bytes.
#[repr(C, align(8))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Slot([u8; SLOT_BYTES]);

/// Launch arguments packed for `cuLaunchKernel`: one [`Slot`] per kernel
/// parameter, in parameter order.
///
/// An `ArgPack` can only be built by [`ArgPack::new`], which first runs
/// [`check_args`] against the kernel's [`ParamDesc`]s, so every pack that
/// exists matches, one for one, the parameter list it was checked against.
/// The type is crate-private on purpose: `oxicuda_launch::Kernel::launch`
/// is a safe function that accepts any `KernelArgs`, so a public pack could
/// be launched against a kernel other than the one it was checked for.
/// `runtime::cuda` builds the pack from the very `PtxModule` whose entry it
/// then launches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ArgPack {
    slots: Vec<Slot>,
}

impl ArgPack {
    /// Check `args` against `params` (count, kinds, pointer alignment) and
    /// pack them.
    pub(crate) fn new(kernel: &str, params: &[ParamDesc], args: &[ArgValue]) -> Result<Self> {
        check_args(kernel, params, args)?;
        let slots = args
            .iter()
            .zip(params)
            .map(|(a, p)| {
                let bytes = a.to_le_bytes();
                if bytes.len() > SLOT_BYTES {
                    return Err(Error::InvalidArgument(format!(
                        "kernel `{kernel}` parameter `{}`: value of {} bytes does not fit an {SLOT_BYTES}-byte slot",
                        p.name,
                        bytes.len()
                    )));
                }
                let mut slot = Slot::default();
                slot.0[..bytes.len()].copy_from_slice(&bytes);
                Ok(slot)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { slots })
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
}

// SAFETY: `KernelArgs` requires that (1) the returned pointers are valid
// pointers to the argument values, (2) they stay valid until
// `cuLaunchKernel` returns, and (3) the values match the kernel's
// parameters.
// (1) Each pointer is the address of one element of `self.slots`, an
//     initialised, 8-byte-aligned, 8-byte `Slot`; the driver reads at most
//     the parameter's size (4 or 8 bytes for every `ArgValue`) from it.
// (2) The pointers borrow from `&self`; `Kernel::launch` holds that borrow
//     across the `cuLaunchKernel` call (which copies the values into the
//     launch's parameter buffer before returning), and nothing can mutate
//     or drop `slots` while it is shared.
// (3) `ArgPack::new` is the only constructor and runs `check_args` against
//     the `PtxModule`'s `ParamDesc`s (same list the entry's parameters were
//     printed from); the type is crate-private and `runtime::cuda` launches
//     a pack only on the module it was built from.
unsafe impl KernelArgs for ArgPack {
    fn as_param_ptrs(&self) -> Vec<*mut c_void> {
        self.slots
            .iter()
            .map(|s| std::ptr::from_ref(s).cast_mut().cast::<c_void>())
            .collect()
    }
}

/// Copy `src` to the first `src.len()` bytes of `dst`, ordered on `stream`,
/// and wait until the copy has landed.
///
/// Fails with `CudaError::InvalidValue` if `src` is longer than `dst`
/// (callers check first and report the lengths).
pub(crate) fn copy_htod_prefix(
    dst: &mut DeviceBuffer<u8>,
    src: &[u8],
    stream: &Stream,
) -> CudaResult<()> {
    if src.len() > dst.byte_size() {
        return Err(CudaError::InvalidValue);
    }
    if src.is_empty() {
        return Ok(());
    }
    let api = try_driver()?;
    // SAFETY: `dst.as_device_ptr()` is the start of a live device
    // allocation of `dst.byte_size() >= src.len()` bytes, kept alive (and
    // exclusively borrowed) by `dst` for this whole function. `src` is a
    // valid host slice of `src.len()` bytes, borrowed until we return; the
    // copy is asynchronous, so we synchronise `stream` below before
    // returning, and if enqueueing fails nothing was enqueued.
    let rc = unsafe {
        (api.cu_memcpy_htod_async_v2)(
            dst.as_device_ptr(),
            src.as_ptr().cast::<c_void>(),
            src.len(),
            stream.raw(),
        )
    };
    oxicuda_driver::check(rc)?;
    stream.synchronize()
}

/// Copy the first `dst.len()` bytes of `src` to `dst`, ordered on `stream`,
/// and wait until the copy has landed.
///
/// Fails with `CudaError::InvalidValue` if `dst` is longer than `src`.
pub(crate) fn copy_dtoh_prefix(
    dst: &mut [u8],
    src: &DeviceBuffer<u8>,
    stream: &Stream,
) -> CudaResult<()> {
    if dst.len() > src.byte_size() {
        return Err(CudaError::InvalidValue);
    }
    if dst.is_empty() {
        return Ok(());
    }
    let api = try_driver()?;
    // SAFETY: `dst` is a valid, exclusively borrowed host slice of
    // `dst.len()` bytes; `src.as_device_ptr()` is the start of a live device
    // allocation of at least `dst.len()` bytes kept alive by `src`. The
    // stream is synchronised before we return, so the driver's write into
    // `dst` completes while the borrow is still held.
    let rc = unsafe {
        (api.cu_memcpy_dtoh_async_v2)(
            dst.as_mut_ptr().cast::<c_void>(),
            src.as_device_ptr(),
            dst.len(),
            stream.raw(),
        )
    };
    oxicuda_driver::check(rc)?;
    stream.synchronize()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::params::{ParamKind, ScalarType};

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

        let ptrs = pack.as_param_ptrs();
        assert_eq!(ptrs.len(), 4);
        for (i, p) in ptrs.iter().enumerate() {
            assert_eq!(*p as usize % 8, 0, "slot {i} must be 8-byte aligned");
        }
        // Consecutive slots, 8 bytes apart, all pointing into the pack.
        for w in ptrs.windows(2) {
            assert_eq!(w[1] as usize - w[0] as usize, SLOT_BYTES);
        }
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
        assert!(pack.as_param_ptrs().is_empty());
    }
}
