//! cudarc interop (feature `cudarc`): cudarc's device memory and streams
//! work with every ptxsmith entry point, safely and without copies.
//!
//! * [`Context::from_cudarc`]: the ptxsmith context of a cudarc context's
//!   device (both use the device's primary context; anything else is
//!   [`Error::WrongContext`]).
//! * [`Stream::from_cudarc`]: a cudarc `CudaStream` as the stream kernels
//!   are queued on (kept alive while the ptxsmith handle lives).
//! * [`Stream::cudarc_view`] / [`Stream::cudarc_view_mut`] on such a
//!   stream: a `CudaSlice`, `CudaView` or `CudaViewMut` as a read-only or
//!   writable device buffer for the work queued on it. A view follows
//!   cudarc's own protocol for using a slice on a stream: it takes the
//!   pointer with `device_ptr(_mut)` on that stream (which then waits for
//!   the slice's earlier writes, and reads, with cudarc's events), and when
//!   it drops, cudarc records its read/write event after the ptxsmith work
//!   queued meanwhile; cudarc's later use and free of the memory wait for
//!   it. No host synchronisation anywhere. To order ptxsmith's own streams
//!   with it, use [`Stream::wait_for`] both ways.
//!
//! Lengths are the slices' own, so a request whose shape does not match is
//! refused with [`Error::InvalidArgument`] before anything is queued, like
//! for any buffer; memory of another context (another device) is
//! [`Error::WrongContext`].
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cudarc::driver::CudaContext;
//! use ptxsmith::kernels::dot;
//! use ptxsmith::runtime::{Context, Stream};
//!
//! let cu = CudaContext::new(0)?;
//! let cu_stream = cu.default_stream();
//! let x = cu_stream.clone_htod(&[1.0f32, 2.0, 3.0, 4.0])?;
//! let y = cu_stream.clone_htod(&[0.5f32, 0.25])?;
//! let mut out = cu_stream.alloc_zeros::<f32>(2)?;
//!
//! let ctx = Context::from_cudarc(&cu)?;
//! let st = Stream::from_cudarc(&ctx, &cu_stream)?;
//! {
//!     let (vx, vy) = (st.cudarc_view(&x)?, st.cudarc_view(&y)?);
//!     let mut vo = st.cudarc_view_mut(&mut out)?;
//!     dot::dot_rows_dev(&st, dot::Shape { rows: 2, n: 2 }, &vx, &vy, &mut vo)?;
//! } // the views drop: cudarc records its events after the kernel
//! assert_eq!(cu_stream.clone_dtoh(&out)?, [1.0, 2.5]);
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

use ::cudarc::driver::{CudaContext, CudaStream, DevicePtr, DevicePtrMut, SyncOnDrop};

use crate::error::{Error, FOREIGN_CONTEXT, Result};
use crate::exec::RawStream;
use crate::runtime::buffer::{
    AsDevice, AsDeviceMut, DeviceRepr, DeviceSlice, DeviceSliceMut, ForeignSlice, ForeignSliceMut,
};
use crate::runtime::context::{Context, Stream};

fn raw_of(s: &CudaStream) -> RawStream {
    RawStream::from_ptr(s.cu_stream())
}

/// `what` of cudarc context `cu` may be used with `ctx`: the same CUDA
/// context.
fn same_context(ctx: &Context, cu: &CudaContext, what: &str) -> Result<()> {
    if ctx.driver_context() == Some(cu.cu_ctx() as usize) {
        return Ok(());
    }
    Err(Error::WrongContext {
        what: format!("{what} (cudarc, device {})", cu.ordinal()),
        owner: FOREIGN_CONTEXT,
        used: ctx.id(),
    })
}

impl Context {
    /// The ptxsmith context of `cu`'s device ([`Context::cuda`] of its
    /// ordinal). cudarc's `CudaContext::new` uses the device's primary
    /// context, as ptxsmith does, so memory and streams are shared.
    ///
    /// # Errors
    /// As [`Context::cuda`]; [`Error::WrongContext`] when `cu` is not the
    /// device's primary context.
    pub fn from_cudarc(cu: &Arc<CudaContext>) -> Result<Context> {
        let ordinal = u32::try_from(cu.ordinal()).unwrap_or(u32::MAX);
        let ctx = Context::cuda(ordinal)?;
        same_context(&ctx, cu, "context")?;
        Ok(ctx)
    }
}

impl Stream {
    /// `stream` as a ptxsmith stream of `ctx`: kernels are queued on it,
    /// in cudarc's order. The cudarc stream is kept alive while the
    /// returned stream or a clone of it lives. Safe: cudarc vouches for
    /// the stream, ptxsmith checks its context.
    ///
    /// # Errors
    /// [`Error::WrongContext`] for a stream of another context.
    pub fn from_cudarc(ctx: &Context, stream: &Arc<CudaStream>) -> Result<Stream> {
        same_context(ctx, stream.context(), "stream")?;
        // SAFETY: cudarc owns a live stream of this context (checked
        // above), kept alive by the `Arc` the returned handle holds.
        #[allow(unsafe_code)]
        let st = unsafe { Stream::from_raw(ctx, raw_of(stream))? };
        Ok(st.keeping(stream.clone()))
    }

    /// The cudarc stream this stream was made from.
    fn cudarc_stream(&self) -> Result<&CudaStream> {
        self.kept()
            .and_then(|k| k.downcast_ref::<CudaStream>())
            .ok_or_else(|| {
                Error::invalid(
                    "cudarc views need a stream made with Stream::from_cudarc (the cudarc stream the work is ordered on)",
                )
            })
    }

    /// A read-only view of a cudarc slice (`CudaSlice`, `CudaView`,
    /// `CudaViewMut`) for the work queued on this stream, which must come
    /// from [`Stream::from_cudarc`]: the pointer is taken with cudarc's
    /// `device_ptr` on that stream, so it waits for the slice's earlier
    /// writes, and the view's drop records cudarc's read event after the
    /// work queued while it lived.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a stream not made from a cudarc
    /// stream; [`Error::WrongContext`] for memory of another context; the
    /// checks of [`ForeignSlice::from_raw_parts`].
    pub fn cudarc_view<'a, T: DeviceRepr, S: DevicePtr<T>>(
        &'a self,
        slice: &'a S,
    ) -> Result<CudarcView<'a, T>> {
        let stream = self.cudarc_stream()?;
        same_context(self.context(), slice.stream().context(), "slice")?;
        let len = slice.len();
        let (ptr, sync) = slice.device_ptr(stream);
        // SAFETY: cudarc guarantees `len` valid `T`s at `ptr` in the
        // slice's context (checked to be ours) while `slice` is borrowed
        // for 'a, longer than the view; cudarc orders its later use and
        // free of the memory after the event the view records at drop,
        // which follows the work queued on this stream.
        #[allow(unsafe_code)]
        let view = unsafe { ForeignSlice::from_raw_parts(self.context(), ptr, len)? };
        Ok(CudarcView {
            view: Some(view),
            _sync: sync,
        })
    }

    /// A writable view of a cudarc slice (`CudaSlice`, `CudaViewMut`) for
    /// the work queued on this stream; see [`cudarc_view`](Self::cudarc_view)
    /// (`device_ptr_mut`: the stream waits for earlier reads and writes,
    /// the drop records the write event).
    ///
    /// # Errors
    /// As [`cudarc_view`](Self::cudarc_view).
    pub fn cudarc_view_mut<'a, T: DeviceRepr, S: DevicePtrMut<T>>(
        &'a self,
        slice: &'a mut S,
    ) -> Result<CudarcViewMut<'a, T>> {
        let stream = self.cudarc_stream()?;
        same_context(self.context(), slice.stream().context(), "slice")?;
        let len = slice.len();
        let (ptr, sync) = slice.device_ptr_mut(stream);
        // SAFETY: as in `cudarc_view`, for an exclusive borrow.
        #[allow(unsafe_code)]
        let view = unsafe { ForeignSliceMut::from_raw_parts(self.context(), ptr, len)? };
        Ok(CudarcViewMut {
            view: Some(view),
            _sync: sync,
        })
    }
}

macro_rules! view_type {
    ($name:ident, $foreign:ident, $doc:literal) => {
        #[doc = $doc]
        ///
        /// Made by [`Stream::cudarc_view`] / [`Stream::cudarc_view_mut`];
        /// drop it after queuing the work that uses it.
        pub struct $name<'a, T: DeviceRepr> {
            view: Option<$foreign<'a, T>>,
            // Dropped after the view: records cudarc's event on the
            // stream, after the work queued while the view lived.
            _sync: SyncOnDrop<'a>,
        }

        impl<T: DeviceRepr> std::fmt::Debug for $name<'_, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("view", &self.view)
                    .finish()
            }
        }

        impl<T: DeviceRepr> $name<'_, T> {
            fn inner(&self) -> &$foreign<'_, T> {
                self.view.as_ref().expect("present until drop")
            }

            /// Number of elements.
            pub fn len(&self) -> usize {
                self.inner().len()
            }

            /// Whether the view has no elements.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
        }

        impl<T: DeviceRepr> AsDevice<T> for $name<'_, T> {
            fn as_device(&self) -> DeviceSlice<'_, T> {
                self.inner().as_device()
            }
        }
    };
}

view_type!(
    CudarcView,
    ForeignSlice,
    "A cudarc slice seen as a read-only ptxsmith device buffer."
);
view_type!(
    CudarcViewMut,
    ForeignSliceMut,
    "A cudarc slice seen as a writable ptxsmith device buffer."
);

impl<T: DeviceRepr> AsDeviceMut<T> for CudarcViewMut<'_, T> {
    fn as_device_mut(&mut self) -> DeviceSliceMut<'_, T> {
        self.view
            .as_mut()
            .expect("present until drop")
            .as_device_mut()
    }
}
