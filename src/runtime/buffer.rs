//! Typed device memory: [`DeviceBuffer<T>`] owns an allocation of one
//! [`Context`]; [`DeviceSlice`] / [`DeviceSliceMut`] borrow a range of it;
//! [`ForeignSlice`] / [`ForeignSliceMut`] are views of memory another stack
//! owns (a cudarc `CudaSlice`, a PyTorch tensor), usable wherever a buffer
//! is.
//!
//! # Lifetimes and synchronisation
//!
//! * A buffer keeps its context alive. Views borrow the buffer, so a view
//!   cannot outlive it, and a buffer cannot be written through two views
//!   at once (`&` / `&mut` rules).
//! * Kernels and device copies are queued on a [`Stream`] and may still
//!   run after the call that queued them returned. Dropping a buffer never
//!   frees memory under queued work: the free is deferred until every
//!   stream of the context is known idle (see
//!   [`Context`](crate::runtime::Context#freeing-memory)).
//! * Host copies go straight between the caller's slice and device memory
//!   through `bytemuck` byte views (no staging vector); they return when
//!   the bytes have landed.
//! * Using a buffer with a stream of another context is
//!   [`Error::WrongContext`], never undefined behaviour.

use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};

use bytemuck::Pod;

use crate::dsl::types::{Elem, F32, S32, U8, U16, U32, U64};
#[cfg(doc)]
use crate::error::Error;
use crate::error::{ArgError, Result};
use crate::runtime::context::Context;
#[cfg(doc)]
use crate::runtime::context::Stream;

/// An element type that can live in device memory: plain bytes
/// (`bytemuck::Pod`), with the DSL element type kernels declare for it.
pub trait DeviceRepr: Pod + Send + Sync {
    /// The DSL element type of a kernel pointer to `Self`.
    type Elem: Elem;
}

macro_rules! device_repr {
    ($($t:ty => $e:ty),*) => {$(
        impl DeviceRepr for $t {
            type Elem = $e;
        }
    )*};
}
device_repr!(f32 => F32, u32 => U32, i32 => S32, u64 => U64, u8 => U8, u16 => U16);

/// `range` of a slice of `len` elements as `(start, end)`, or an error
/// naming the values.
fn resolve_range(range: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match range.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(s), Some(e)) if s <= e && e <= len => Ok((s, e)),
        _ => {
            let r = format!("{:?}..{:?}", range.start_bound(), range.end_bound());
            Err(
                ArgError::new("range", format!("within 0..{len}"), r.clone())
                    .with_message(format!(
                        "range {r} is out of bounds of a device slice of {len} elements"
                    ))
                    .into(),
            )
        }
    }
}

/// A shared view of `len` elements of device memory in one context.
#[derive(Debug)]
pub struct DeviceSlice<'a, T> {
    pub(crate) ctx: u64,
    pub(crate) addr: u64,
    pub(crate) len: usize,
    _p: PhantomData<&'a [T]>,
}

impl<T> Clone for DeviceSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DeviceSlice<'_, T> {}

/// An exclusive view of `len` elements of device memory in one context.
#[derive(Debug)]
pub struct DeviceSliceMut<'a, T> {
    pub(crate) ctx: u64,
    pub(crate) addr: u64,
    pub(crate) len: usize,
    _p: PhantomData<&'a mut [T]>,
}

macro_rules! view_common {
    ($name:ident) => {
        impl<'a, T: DeviceRepr> $name<'a, T> {
            /// Number of elements.
            pub fn len(&self) -> usize {
                self.len
            }

            /// Whether the view has no elements.
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// Size in bytes.
            pub fn bytes(&self) -> usize {
                self.len * size_of::<T>()
            }

            /// The device address of the first element (for interop and
            /// diagnostics; the memory stays owned by its buffer).
            pub fn device_ptr(&self) -> u64 {
                self.addr
            }

            /// The id of the context the memory belongs to.
            pub fn context_id(&self) -> u64 {
                self.ctx
            }

            /// Fail unless the view's address is a multiple of `align`
            /// bytes (vectorised kernels need 16, for example).
            pub fn check_aligned(&self, what: &str, align: u64) -> Result<()> {
                if self.addr.is_multiple_of(align) {
                    return Ok(());
                }
                Err(ArgError::new(
                    what,
                    format!("a {align}-byte aligned device address"),
                    format!("{:#x}", self.addr),
                )
                .with_message(format!(
                    "{what}: device address {:#x} is not {align}-byte aligned (offset {} bytes into a 256-byte aligned allocation); slice at a multiple of {} elements",
                    self.addr,
                    self.addr % 256,
                    align / size_of::<T>().max(1) as u64
                ))
                .into())
            }
        }
    };
}
view_common!(DeviceSlice);
view_common!(DeviceSliceMut);

impl<'a, T: DeviceRepr> DeviceSlice<'a, T> {
    pub(crate) fn new(ctx: u64, addr: u64, len: usize) -> Self {
        Self {
            ctx,
            addr,
            len,
            _p: PhantomData,
        }
    }

    /// The sub-slice `range` (element indices).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `range` is out of bounds.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'a, T>> {
        let (s, e) = resolve_range(range, self.len)?;
        Ok(DeviceSlice::new(
            self.ctx,
            self.addr + (s * size_of::<T>()) as u64,
            e - s,
        ))
    }
}

impl<'a, T: DeviceRepr> DeviceSliceMut<'a, T> {
    pub(crate) fn new(ctx: u64, addr: u64, len: usize) -> Self {
        Self {
            ctx,
            addr,
            len,
            _p: PhantomData,
        }
    }

    /// The exclusive sub-slice `range`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `range` is out of bounds.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        let (s, e) = resolve_range(range, self.len)?;
        Ok(DeviceSliceMut::new(
            self.ctx,
            self.addr + (s * size_of::<T>()) as u64,
            e - s,
        ))
    }

    /// Two exclusive views `[0, mid)` and `[mid, len)`.
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let mut buf = ctx.upload(&[1u32, 2, 3])?;
    /// let (mut a, mut b) = buf.slice_mut(..)?.split_at_mut(1)?;
    /// ctx.default_stream().copy(&mut a, &b.slice_mut(1..)?)?;
    /// assert_eq!(buf.to_vec()?, [3, 2, 3]);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `mid > len`.
    pub fn split_at_mut(
        self,
        mid: usize,
    ) -> Result<(DeviceSliceMut<'a, T>, DeviceSliceMut<'a, T>)> {
        if mid > self.len {
            return Err(
                ArgError::new("mid", format!("at most {}", self.len), mid.to_string())
                    .with_message(format!(
                        "split at {mid} of a device slice of {} elements",
                        self.len
                    ))
                    .into(),
            );
        }
        let at = self.addr + (mid * size_of::<T>()) as u64;
        Ok((
            DeviceSliceMut::new(self.ctx, self.addr, mid),
            DeviceSliceMut::new(self.ctx, at, self.len - mid),
        ))
    }
}

/// Anything that reads as a device slice of `T`s: buffers and views.
pub trait AsDevice<T: DeviceRepr> {
    /// A shared view of the whole thing.
    fn as_device(&self) -> DeviceSlice<'_, T>;
}

/// Anything that can be written as a device slice of `T`s.
pub trait AsDeviceMut<T: DeviceRepr>: AsDevice<T> {
    /// An exclusive view of the whole thing.
    fn as_device_mut(&mut self) -> DeviceSliceMut<'_, T>;
}

impl<T: DeviceRepr> AsDevice<T> for DeviceSlice<'_, T> {
    fn as_device(&self) -> DeviceSlice<'_, T> {
        *self
    }
}

impl<T: DeviceRepr> AsDevice<T> for DeviceSliceMut<'_, T> {
    fn as_device(&self) -> DeviceSlice<'_, T> {
        DeviceSlice::new(self.ctx, self.addr, self.len)
    }
}

impl<T: DeviceRepr> AsDeviceMut<T> for DeviceSliceMut<'_, T> {
    fn as_device_mut(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut::new(self.ctx, self.addr, self.len)
    }
}

/// `len` elements of `T` in device memory of one [`Context`], released on
/// drop (freed once no queued work can use it: see the
/// [module docs](self)).
///
/// Made by [`Context::alloc`], [`Context::alloc_zeroed`],
/// [`Context::upload`] or [`Stream::upload`]. An empty buffer is valid
/// (it owns a minimal allocation so its address is distinct).
pub struct DeviceBuffer<T: DeviceRepr> {
    ctx: Context,
    addr: u64,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: DeviceRepr> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("type", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("addr", &format_args!("{:#x}", self.addr))
            .field("context", &self.ctx.id())
            .finish()
    }
}

impl<T: DeviceRepr> DeviceBuffer<T> {
    /// Wrap an allocation the context just made.
    pub(crate) fn from_raw_parts(ctx: Context, addr: u64, len: usize) -> Self {
        Self {
            ctx,
            addr,
            len,
            _t: PhantomData,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The context that owns the memory.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The device address of the first element: a `CUdeviceptr` on a GPU,
    /// a simulated address on Sim. The buffer keeps owning the memory.
    pub fn device_ptr(&self) -> u64 {
        self.addr
    }

    /// A shared view of elements `range`.
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let buf = ctx.upload(&[1u32, 2, 3, 4])?;
    /// let mid = buf.slice(1..3)?;
    /// assert_eq!((mid.len(), ctx.default_stream().to_vec(&mid)?), (2, vec![2, 3]));
    /// assert!(buf.slice(3..9).is_err()); // out of bounds: a typed error
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `range` is out of bounds.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Result<DeviceSlice<'_, T>> {
        self.as_device().slice(range)
    }

    /// An exclusive view of elements `range`.
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let mut buf = ctx.upload(&[1u32, 2, 3, 4])?;
    /// ctx.default_stream().zero(&mut buf.slice_mut(..2)?)?;
    /// assert_eq!(buf.to_vec()?, [0, 0, 3, 4]);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `range` is out of bounds.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<DeviceSliceMut<'_, T>> {
        let (s, e) = resolve_range(range, self.len)?;
        Ok(DeviceSliceMut::new(
            self.ctx.id(),
            self.addr + (s * size_of::<T>()) as u64,
            e - s,
        ))
    }

    /// Overwrite the whole buffer with `src` (same length) on the
    /// context's default stream; returns when the bytes have landed.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the lengths differ.
    pub fn copy_from_host(&mut self, src: &[T]) -> Result<()> {
        self.ctx.default_stream().copy_from_host(self, src)
    }

    /// Copy the whole buffer into `dst` (same length) on the context's
    /// default stream, after the work queued there; returns when done.
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let buf = ctx.upload(&[1.5f32])?;
    /// let mut out = [0.0];
    /// buf.download(&mut out)?;
    /// assert_eq!(out, [1.5]);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the lengths differ; errors of
    /// queued work on the default stream.
    pub fn download(&self, dst: &mut [T]) -> Result<()> {
        self.ctx.default_stream().copy_to_host(self, dst)
    }

    /// The buffer's contents as a vector (default stream; see
    /// [`download`](Self::download)).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.ctx.default_stream().to_vec(self)
    }
}

impl<T: DeviceRepr> AsDevice<T> for DeviceBuffer<T> {
    fn as_device(&self) -> DeviceSlice<'_, T> {
        DeviceSlice::new(self.ctx.id(), self.addr, self.len)
    }
}

impl<T: DeviceRepr> AsDeviceMut<T> for DeviceBuffer<T> {
    fn as_device_mut(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut::new(self.ctx.id(), self.addr, self.len)
    }
}

impl<T: DeviceRepr> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        self.ctx.release(self.addr, self.len * size_of::<T>());
    }
}

/// A view of `len` elements of device memory that another stack owns
/// (cudarc, PyTorch, a plain `cuMemAlloc`), in one [`Context`]: it works
/// wherever a [`DeviceBuffer`] does (every `*_dev` entry point, host and
/// device copies), read-only. [`ForeignSliceMut`] is the writable twin.
///
/// The constructor is `unsafe`: the caller vouches that the memory exists
/// and stays valid; ptxsmith still checks what it can, before anything is
/// queued:
/// * the length: the entry points check it against the request's shape
///   like any buffer's, and on a GPU the driver's pointer attributes must
///   show the whole range inside one allocation;
/// * the alignment of `addr` for `T` (and each kernel's vector alignment,
///   as for buffers);
/// * the context: on a GPU the allocation must belong to the context's
///   primary context, else [`Error::WrongContext`].
///
/// On the simulator the memory is simulated memory (e.g. from
/// [`Context::with_sim`]); every access is bounds-checked there anyway.
///
/// ```
/// use ptxsmith::runtime::{Context, ForeignSlice, ForeignSliceMut};
/// use ptxsmith::Sm;
///
/// let ctx = Context::sim(Sm::Sm80);
/// // Memory "another stack" allocated: here, simulated memory no
/// // ptxsmith buffer owns.
/// let addr = ctx.with_sim(|sim| {
///     let a = sim.alloc(16).unwrap();
///     sim.write(a, bytemuck::cast_slice(&[1.0f32, 2.0, 3.0, 4.0])).unwrap();
///     a
/// }).unwrap();
/// // SAFETY: 16 bytes of live simulated memory, freed only after the view.
/// let view = unsafe { ForeignSlice::<f32>::from_raw_parts(&ctx, addr, 4)? };
/// assert_eq!(ctx.default_stream().to_vec(&view)?, [1.0, 2.0, 3.0, 4.0]);
/// # Ok::<(), ptxsmith::Error>(())
/// ```
pub struct ForeignSlice<'a, T: DeviceRepr> {
    ctx: Context,
    addr: u64,
    len: usize,
    _p: PhantomData<&'a [T]>,
}

/// The writable twin of [`ForeignSlice`]: an exclusive view of foreign
/// device memory that kernels may write (outputs of `*_dev` entry points,
/// copy destinations). Same checks, same safety contract, plus: nothing
/// else reads or writes the memory while the work queued on it runs
/// (unless ordered with it on the device).
pub struct ForeignSliceMut<'a, T: DeviceRepr> {
    ctx: Context,
    addr: u64,
    len: usize,
    _p: PhantomData<&'a mut [T]>,
}

/// Check and adopt a foreign range for a view of `len` `T`s at `addr`.
fn adopt<T: DeviceRepr>(ctx: &Context, addr: u64, len: usize) -> Result<()> {
    let bytes = len.checked_mul(size_of::<T>()).ok_or_else(|| {
        ArgError::new("len", "a byte size that fits in usize", len.to_string()).with_message(
            format!(
                "foreign view of {len} elements of {} bytes overflows",
                size_of::<T>()
            ),
        )
    })?;
    let align = align_of::<T>() as u64;
    if !addr.is_multiple_of(align) {
        return Err(ArgError::new(
            "addr",
            format!(
                "a {align}-byte aligned device address (for {})",
                std::any::type_name::<T>()
            ),
            format!("{addr:#x}"),
        )
        .with_message(format!(
            "foreign view: device address {addr:#x} is not {align}-byte aligned for {}",
            std::any::type_name::<T>()
        ))
        .into());
    }
    if addr == 0 && len > 0 {
        return Err(ArgError::new("addr", "a device address", "null")
            .with_message(format!(
                "foreign view of {len} elements at the null address"
            ))
            .into());
    }
    ctx.adopt_foreign(addr, bytes)
}

macro_rules! foreign_common {
    ($name:ident) => {
        impl<'a, T: DeviceRepr> $name<'a, T> {
            /// A view of `len` elements of `T` at device address `addr` in
            /// `ctx` (see the type's docs for what is checked). A view of
            /// length 0 may have any address, null included.
            ///
            /// # Safety
            /// `[addr, addr + len · size_of::<T>())` is device memory of
            /// `ctx`'s context (on a GPU: memory allocated in the device's
            /// primary context, which cudarc and the CUDA runtime use too)
            /// that stays allocated for `'a` and until every kernel and
            /// copy queued on the view has run, holding valid `T`s where
            /// it is read.
            ///
            /// # Errors
            /// [`Error::InvalidArgument`]
            /// for a misaligned or null address, a size that overflows, or
            /// (GPU) a range past its allocation or an address the driver
            /// does not know; [`Error::WrongContext`]
            /// for memory of another context or device.
            // An `unsafe fn` for its contract only: no unsafe operation inside.
            #[allow(unsafe_code)]
            pub unsafe fn from_raw_parts(ctx: &Context, addr: u64, len: usize) -> Result<Self> {
                if len > 0 {
                    adopt::<T>(ctx, addr, len)?;
                }
                Ok(Self {
                    ctx: ctx.clone(),
                    addr,
                    len,
                    _p: PhantomData,
                })
            }

            /// Number of elements.
            pub fn len(&self) -> usize {
                self.len
            }

            /// Whether the view has no elements.
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// The device address of the first element.
            pub fn device_ptr(&self) -> u64 {
                self.addr
            }

            /// The context the view was made in.
            pub fn context(&self) -> &Context {
                &self.ctx
            }
        }

        impl<T: DeviceRepr> Drop for $name<'_, T> {
            fn drop(&mut self) {
                if self.len > 0 {
                    self.ctx
                        .forget_foreign(self.addr, self.len * size_of::<T>());
                }
            }
        }

        impl<T: DeviceRepr> std::fmt::Debug for $name<'_, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("type", &std::any::type_name::<T>())
                    .field("len", &self.len)
                    .field("addr", &format_args!("{:#x}", self.addr))
                    .field("context", &self.ctx.id())
                    .finish()
            }
        }

        impl<T: DeviceRepr> AsDevice<T> for $name<'_, T> {
            fn as_device(&self) -> DeviceSlice<'_, T> {
                DeviceSlice::new(self.ctx.id(), self.addr, self.len)
            }
        }
    };
}
foreign_common!(ForeignSlice);
foreign_common!(ForeignSliceMut);

impl<T: DeviceRepr> AsDeviceMut<T> for ForeignSliceMut<'_, T> {
    fn as_device_mut(&mut self) -> DeviceSliceMut<'_, T> {
        DeviceSliceMut::new(self.ctx.id(), self.addr, self.len)
    }
}

/// A `DeviceBuffer` is only ever used through its context's lock.
const _: () = {
    const fn send_sync<X: Send + Sync>() {}
    send_sync::<DeviceBuffer<f32>>();
    send_sync::<ForeignSlice<'static, f32>>();
    send_sync::<ForeignSliceMut<'static, f32>>();
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn ranges_resolve_or_name_the_bounds() {
        assert_eq!(resolve_range(.., 5).unwrap(), (0, 5));
        assert_eq!(resolve_range(1..3, 5).unwrap(), (1, 3));
        assert_eq!(resolve_range(2..=4, 5).unwrap(), (2, 5));
        assert_eq!(resolve_range(5.., 5).unwrap(), (5, 5));
        let e = resolve_range(3..6, 5).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains("5 elements")),
            "{e}"
        );
        let (hi, lo) = (4, 2);
        assert!(resolve_range(hi..lo, 5).is_err());
        assert!(resolve_range(..=usize::MAX, 5).is_err());
    }
}
