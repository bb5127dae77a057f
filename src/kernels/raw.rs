//! The views every `*_raw` entry point builds of another stack's device
//! addresses (cudarc's `CudaSlice::device_ptr()`, a driver allocation):
//! written once, so each wrapper only names its addresses and lengths.
//!
//! Like [`ForeignSlice::from_raw_parts`], which they call, these are
//! `unsafe fn`s for their contract only; each `*_raw` wrapper passes its
//! own `# Safety` contract on to them in one `unsafe` block.

use crate::error::Result;
use crate::exec::CUdeviceptr;
use crate::runtime::buffer::{DeviceRepr, ForeignSlice, ForeignSliceMut};
use crate::runtime::context::Stream;

/// A read-only view of `len` elements of `T` at `addr` in `stream`'s
/// context.
///
/// # Safety
/// As [`ForeignSlice::from_raw_parts`]: `[addr, addr + len · size_of::<T>())`
/// is device memory of `stream`'s context that stays allocated for `'a` and
/// until every kernel and copy queued on the view has run, holding valid
/// `T`s. A `*_raw` wrapper's `# Safety` section promises this for each of
/// its addresses at the lengths its request implies.
///
/// # Errors
/// As [`ForeignSlice::from_raw_parts`] (null or misaligned address,
/// overflowing size, memory of another context).
pub(crate) unsafe fn view<'a, T: DeviceRepr>(
    stream: &Stream,
    addr: CUdeviceptr,
    len: usize,
) -> Result<ForeignSlice<'a, T>> {
    // SAFETY: passed on from the caller.
    unsafe { ForeignSlice::from_raw_parts(stream.context(), addr, len) }
}

/// The writable twin of [`view`].
///
/// # Safety
/// As [`view`], and nothing else reads or writes the range while the view
/// is used.
///
/// # Errors
/// As [`view`].
pub(crate) unsafe fn view_mut<'a, T: DeviceRepr>(
    stream: &Stream,
    addr: CUdeviceptr,
    len: usize,
) -> Result<ForeignSliceMut<'a, T>> {
    // SAFETY: passed on from the caller.
    unsafe { ForeignSliceMut::from_raw_parts(stream.context(), addr, len) }
}

/// [`view`] of an optional address (`None` stays `None`).
///
/// # Safety
/// As [`view`], for `addr` when it is `Some`.
///
/// # Errors
/// As [`view`].
pub(crate) unsafe fn view_opt<'a, T: DeviceRepr>(
    stream: &Stream,
    addr: Option<CUdeviceptr>,
    len: usize,
) -> Result<Option<ForeignSlice<'a, T>>> {
    // SAFETY: passed on from the caller.
    addr.map(|a| unsafe { view(stream, a, len) }).transpose()
}
