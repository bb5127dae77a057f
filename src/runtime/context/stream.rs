//! [`Stream`]: an ordered queue of copies and launches on one [`Context`]
//! (see the parent module's docs for ordering, synchronisation and
//! freeing), and the owner that destroys a stream made by
//! [`Context::new_stream`].

use super::*;
use crate::dsl::{Kernel, KernelParams};

/// Destroys a stream made by [`Context::new_stream`] when its last handle
/// drops.
pub(super) struct StreamOwner {
    pub(super) ctx: Context,
    pub(super) raw: RawStream,
}

impl Drop for StreamOwner {
    fn drop(&mut self) {
        let mut st = self.ctx.state();
        let _ = st.ex.destroy_stream(self.raw);
        st.extra_streams -= 1;
        st.per_stream.remove(&self.raw.0);
    }
}

/// An ordered queue of copies and launches on one [`Context`]. Cloning
/// gives another handle to the same queue.
#[derive(Clone)]
pub struct Stream {
    pub(super) ctx: Context,
    pub(super) raw: RawStream,
    pub(super) _owner: Option<Arc<StreamOwner>>,
    /// What keeps a foreign stream alive while this handle is used (the
    /// other stack's stream object, e.g. a cudarc `Arc<CudaStream>`).
    pub(super) keep: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// A stream ptxsmith did not make (see `State::foreign_work`).
    pub(super) borrowed: bool,
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("context", &self.ctx.id())
            .field("raw", &format_args!("{:#x}", self.raw.0))
            .finish()
    }
}

fn length_mismatch(op: &str, device: usize, host: usize) -> Error {
    ArgError::new(
        "host slice",
        format!("{device} elements (the device slice's length)"),
        format!("{host} elements"),
    )
    .with_message(format!(
        "{op}: device slice has {device} elements, host slice {host}"
    ))
    .into()
}

impl Stream {
    /// A [`Stream`] over a stream another stack created (cudarc's
    /// `CudaStream::cu_stream()`, PyTorch's current stream, a plain
    /// `cuStreamCreate`) in `ctx`'s context: kernels queued on it run in
    /// that stack's order, and [`wait_for`](Self::wait_for) orders
    /// ptxsmith's own streams against it (and it against them) with events
    /// on the device, without a host synchronisation. ptxsmith never
    /// destroys it. [`RawStream::NULL`] is the legacy default stream.
    ///
    /// ```
    /// use ptxsmith::runtime::{Context, Executor, Stream};
    /// use ptxsmith::Sm;
    ///
    /// let ctx = Context::sim(Sm::Sm80);
    /// // A stream "another stack" made (on the simulator: one it handed out).
    /// let raw = ctx.with_sim(|sim| sim.create_stream().unwrap()).unwrap();
    /// // SAFETY: a live stream of this context, never destroyed.
    /// let theirs = unsafe { Stream::from_raw(&ctx, raw)? };
    /// let ours = ctx.new_stream()?;
    /// ours.wait_for(&theirs)?; // ours runs after the work queued on theirs
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    ///
    /// # Safety
    /// `raw` is a stream of `ctx`'s context (on a GPU: a `CUstream` of the
    /// device's primary context, or the legacy stream) that stays alive
    /// while the returned stream or a clone of it is used and until the
    /// work queued through it has run.
    ///
    /// # Errors
    /// [`Error::WrongContext`] (owner [`FOREIGN_CONTEXT`](crate::FOREIGN_CONTEXT))
    /// when the backend refuses the stream: a GPU one of another context or
    /// an invalid handle (an event of this context cannot be recorded on
    /// it), the simulator one it did not hand out.
    // An `unsafe fn` for its contract only: no unsafe operation inside.
    #[allow(unsafe_code)]
    pub unsafe fn from_raw(ctx: &Context, raw: RawStream) -> Result<Stream> {
        if let Err(e) = ctx.state().ex.verify_stream(raw) {
            tracing::debug!(target: "ptxsmith::interop", stream = %format_args!("{:#x}", raw.0), error = %e, "foreign stream refused");
            return Err(match e {
                Error::InvalidArgument(_)
                | Error::Driver {
                    code:
                        DriverCode::INVALID_HANDLE
                        | DriverCode::INVALID_CONTEXT
                        | DriverCode::CONTEXT_IS_DESTROYED
                        | DriverCode::INVALID_VALUE,
                    ..
                } => Error::WrongContext {
                    what: format!("stream {:#x} ({e})", raw.0),
                    owner: crate::error::FOREIGN_CONTEXT,
                    used: ctx.id(),
                },
                e => e,
            });
        }
        Ok(ctx.borrowed_stream(raw))
    }

    /// This stream keeping `owner` (the foreign stream object) alive.
    #[cfg_attr(not(feature = "cudarc"), allow(dead_code))]
    pub(crate) fn keeping(mut self, owner: Arc<dyn std::any::Any + Send + Sync>) -> Stream {
        self.keep = Some(owner);
        self
    }

    /// The foreign stream object this stream keeps alive, if any.
    #[cfg_attr(not(feature = "cudarc"), allow(dead_code))]
    pub(crate) fn kept(&self) -> Option<&Arc<dyn std::any::Any + Send + Sync>> {
        self.keep.as_ref()
    }

    /// The stream's context.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The backend's handle: the `CUstream` value on a GPU (hand it to
    /// other CUDA code), an id on the simulator.
    pub fn raw(&self) -> RawStream {
        self.raw
    }

    /// What went through this stream so far: its copies and launches
    /// (allocations are the context's; see [`Context::traffic`]). Unlike
    /// the context's counters, other streams' work does not show here, so
    /// code sharing a device (tests, libraries) can measure its own.
    pub fn traffic(&self) -> Traffic {
        self.ctx
            .state()
            .per_stream
            .get(&self.raw.0)
            .copied()
            .unwrap_or_default()
    }

    /// Wait until everything queued here has run. Errors of queued work
    /// surface here, naming the kernels.
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let st = ctx.default_stream();
    /// let s = ctx.new_stream()?;
    /// let mut buf = ctx.alloc::<u32>(1)?;
    /// s.zero(&mut buf)?; // queued
    /// s.synchronize()?; // done, or the error of what was queued
    /// assert_eq!(s.to_vec(&buf)?, [0]);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        let mut st = self.ctx.state();
        st.ex.synchronize(Some(self.raw))?;
        st.synced(self.raw);
        Ok(())
    }

    /// Run `work`, which queues on this stream, and measure it on the
    /// device: a timing event is recorded here before and after `work`,
    /// the stream is synchronised, and the device time between the two
    /// events is returned (`cuEventElapsedTime`: what the GPU spent on the
    /// work queued in between, without the host's launch overhead). On the
    /// simulator, which has no device clock, the time is `None` (and the
    /// stream is synchronised all the same). Work queued on this stream by
    /// other threads meanwhile counts too.
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let s = ctx.new_stream()?;
    /// let mut buf = ctx.alloc::<u32>(1 << 10)?;
    /// let ((), device_time) = s.timed(|s| s.zero(&mut buf))?;
    /// assert!(device_time.is_none()); // the simulator has no device clock
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    ///
    /// # Errors
    /// The error of `work`, or of the queued work (surfaced by the
    /// synchronisation, naming the kernels), or of the driver's event calls.
    pub fn timed<T>(
        &self,
        work: impl FnOnce(&Stream) -> Result<T>,
    ) -> Result<(T, Option<std::time::Duration>)> {
        // The state lock is not held while `work` runs: it uses the stream.
        let timing = self.ctx.state().ex.timing_start(self.raw)?;
        let out = work(self);
        let mut st = self.ctx.state();
        let time = match (timing, &out) {
            (true, Ok(_)) => st.ex.timing_end(self.raw)?,
            (true, Err(_)) => {
                // Close the timing; `work`'s own error is the one to report.
                let _ = st.ex.timing_end(self.raw);
                None
            }
            (false, _) => None,
        };
        let out = out?;
        st.ex.synchronize(Some(self.raw))?;
        st.synced(self.raw);
        Ok((out, time))
    }

    /// Make later work on this stream wait for the work queued on `other`
    /// so far (on the device; the host does not block).
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let st = ctx.default_stream();
    /// let other = ctx.new_stream()?;
    /// let mut buf = ctx.alloc::<u32>(2)?;
    /// other.copy_from_host(&mut buf, &[5, 6])?;
    /// st.wait_for(&other)?; // later work on st runs after other's
    /// let mut copy = ctx.alloc::<u32>(2)?;
    /// st.copy(&mut copy, &buf)?;
    /// assert_eq!(st.to_vec(&copy)?, [5, 6]);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::WrongContext`] when `other` belongs to another context.
    pub fn wait_for(&self, other: &Stream) -> Result<()> {
        self.ctx
            .check_owner("the stream waited for", other.ctx.id())?;
        self.ctx.state().ex.stream_wait(self.raw, other.raw)
    }

    /// A new buffer holding a copy of `data`, copied on this stream.
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let st = ctx.default_stream();
    /// let buf = st.upload(&[1u16, 2])?;
    /// assert_eq!(st.to_vec(&buf)?, [1, 2]);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    pub fn upload<T: DeviceRepr>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        let mut buf = self.ctx.alloc(data.len())?;
        self.copy_from_host(&mut buf, data)?;
        Ok(buf)
    }

    /// Copy `src` into `dst` (same length), in order after the work queued
    /// here; returns when the bytes have landed.
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let st = ctx.default_stream();
    /// let mut buf = ctx.alloc::<f32>(2)?;
    /// st.copy_from_host(&mut buf.slice_mut(1..)?, &[9.0])?; // a sub-range
    /// st.copy_from_host(&mut buf.slice_mut(..1)?, &[8.0])?;
    /// assert_eq!(st.to_vec(&buf)?, [8.0, 9.0]);
    /// // Lengths must match.
    /// assert!(st.copy_from_host(&mut buf, &[1.0]).is_err());
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the lengths differ,
    /// [`Error::WrongContext`] for a buffer of another context.
    pub fn copy_from_host<T: DeviceRepr>(
        &self,
        dst: &mut impl AsDeviceMut<T>,
        src: &[T],
    ) -> Result<()> {
        let d = dst.as_device_mut();
        self.ctx.check_owner("the destination buffer", d.ctx)?;
        if d.len != src.len() {
            return Err(length_mismatch("copy_from_host", d.len, src.len()));
        }
        let mut st = self.ctx.state();
        st.ex
            .copy_htod(self.raw, d.addr, bytemuck::cast_slice(src))?;
        st.count(self.raw, |t| {
            t.bytes_uploaded += size_of_val(src) as u64;
            t.uploads += 1;
        });
        st.synced(self.raw);
        Ok(())
    }

    /// Copy `src` into `dst` (same length), after the work queued here;
    /// returns when done.
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let st = ctx.default_stream();
    /// let buf = st.upload(&[3i32, -4])?;
    /// let mut out = [0i32; 2];
    /// st.copy_to_host(&buf, &mut out)?;
    /// assert_eq!(out, [3, -4]);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`copy_from_host`](Self::copy_from_host), plus errors of queued
    /// work on this stream.
    pub fn copy_to_host<T: DeviceRepr>(&self, src: &impl AsDevice<T>, dst: &mut [T]) -> Result<()> {
        let s = src.as_device();
        self.ctx.check_owner("the source buffer", s.ctx)?;
        if s.len != dst.len() {
            return Err(length_mismatch("copy_to_host", s.len, dst.len()));
        }
        let mut st = self.ctx.state();
        st.ex
            .copy_dtoh(self.raw, s.addr, bytemuck::cast_slice_mut(dst))?;
        st.count(self.raw, |t| {
            t.bytes_downloaded += size_of_val(dst) as u64;
            t.downloads += 1;
        });
        st.synced(self.raw);
        Ok(())
    }

    /// `src` as a new vector (see [`copy_to_host`](Self::copy_to_host)).
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let st = ctx.default_stream();
    /// let buf = st.upload(&[1u8, 2, 3])?;
    /// assert_eq!(st.to_vec(&buf.slice(1..)?)?, [2, 3]);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    pub fn to_vec<T: DeviceRepr>(&self, src: &impl AsDevice<T>) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); src.as_device().len];
        self.copy_to_host(src, &mut out)?;
        Ok(out)
    }

    /// Queue a device → device copy of `src` into `dst` (same length).
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let st = ctx.default_stream();
    /// let (src, mut dst) = (st.upload(&[1u64, 2])?, ctx.alloc::<u64>(2)?);
    /// st.copy(&mut dst, &src)?; // device to device, queued
    /// assert_eq!(st.to_vec(&dst)?, [1, 2]);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the lengths differ,
    /// [`Error::WrongContext`] for a buffer of another context.
    pub fn copy<T: DeviceRepr>(
        &self,
        dst: &mut impl AsDeviceMut<T>,
        src: &impl AsDevice<T>,
    ) -> Result<()> {
        let (d, s) = (dst.as_device_mut(), src.as_device());
        self.ctx.check_owner("the destination buffer", d.ctx)?;
        self.ctx.check_owner("the source buffer", s.ctx)?;
        if d.len != s.len {
            return Err(ArgError::new(
                "destination",
                format!("{} elements (the source's length)", s.len),
                format!("{} elements", d.len),
            )
            .with_message(format!(
                "device copy: destination has {} elements, source {}",
                d.len, s.len
            ))
            .into());
        }
        let bytes = s.len * size_of::<T>();
        let mut st = self.ctx.state();
        st.ex.copy_dtod(self.raw, d.addr, s.addr, bytes)?;
        st.count(self.raw, |t| t.bytes_copied_on_device += bytes as u64);
        st.foreign_work |= self.borrowed;
        Ok(())
    }

    /// Queue zeroing `dst`.
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let st = ctx.default_stream();
    /// let mut buf = st.upload(&[1.0f32, 2.0, 3.0])?;
    /// st.zero(&mut buf.slice_mut(1..)?)?;
    /// assert_eq!(st.to_vec(&buf)?, [1.0, 0.0, 0.0]);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    pub fn zero<T: DeviceRepr>(&self, dst: &mut impl AsDeviceMut<T>) -> Result<()> {
        let d = dst.as_device_mut();
        self.ctx.check_owner("the buffer to zero", d.ctx)?;
        let mut st = self.ctx.state();
        st.ex.zero(self.raw, d.addr, d.len * size_of::<T>())?;
        st.foreign_work |= self.borrowed;
        Ok(())
    }

    /// The kernel argument for a buffer the kernel reads.
    ///
    /// # Errors
    /// [`Error::WrongContext`] for a buffer of another context.
    pub fn arg<T: DeviceRepr>(
        &self,
        what: &str,
        src: &impl AsDevice<T>,
    ) -> Result<DevPtr<T::Elem>> {
        let s = src.as_device();
        self.ctx.check_owner(what, s.ctx)?;
        Ok(DevPtr::new(s.addr))
    }

    /// The kernel argument for a buffer the kernel writes (exclusive
    /// borrow, so it cannot alias an input).
    ///
    /// # Errors
    /// [`Error::WrongContext`] for a buffer of another context.
    pub fn arg_mut<T: DeviceRepr>(
        &self,
        what: &str,
        dst: &mut impl AsDeviceMut<T>,
    ) -> Result<DevPtr<T::Elem>> {
        let d = dst.as_device_mut();
        self.ctx.check_owner(what, d.ctx)?;
        Ok(DevPtr::new(d.addr))
    }

    /// Queue `module` with `args`, checked against the module's parameters
    /// and its PTX entry signature; every pointer argument must lie in a live
    /// buffer of this context.
    ///
    /// ```
    /// use ptxsmith::dsl::params::KernelParams;
    /// use ptxsmith::kernels::dot::ptx::{self, DotRowsArgs};
    /// use ptxsmith::runtime::{Context, LaunchConfig};
    ///
    /// // A kernel launched by hand: the row dot product's module and arguments.
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let st = ctx.default_stream();
    /// let (x, y, mut out) = (st.upload(&[1.0f32, 2.0])?, st.upload(&[3.0f32, 4.0])?, ctx.alloc::<f32>(1)?);
    /// let args = DotRowsArgs {
    ///     x: st.arg("x", &x)?,
    ///     y: st.arg("y", &y)?,
    ///     out: st.arg_mut("out", &mut out)?,
    ///     rows: 1,
    ///     n: 2,
    /// };
    /// let module = ptx::generate(ctx.sm())?;
    /// st.launch(&module, LaunchConfig::linear(1, ptx::BLOCK), &args.args())?;
    /// assert_eq!(st.to_vec(&out)?, [11.0]);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    pub fn launch(&self, module: &PtxModule, cfg: LaunchConfig, args: &[ArgValue]) -> Result<()> {
        tracing::debug!(
            target: "ptxsmith::launch",
            kernel = %module.kernel,
            sm = %module.sm,
            grid = ?cfg.grid,
            block = ?cfg.block,
            dynamic_smem = cfg.dynamic_smem_bytes,
            stream = %format_args!("{:#x}", self.raw.0),
            context = self.ctx.id(),
            "launch"
        );
        let mut st = self.ctx.state();
        if let Err(e) = st.ex.launch(self.raw, module, cfg, args) {
            match &e {
                Error::Sim(finding) => tracing::warn!(
                    target: "ptxsmith::sim",
                    kernel = %module.kernel,
                    %finding,
                    "simulator finding"
                ),
                e => tracing::debug!(
                    target: "ptxsmith::launch",
                    kernel = %module.kernel,
                    error = %e,
                    "launch refused"
                ),
            }
            return Err(e);
        }
        st.count(self.raw, |t| t.launches += 1);
        st.foreign_work |= self.borrowed;
        Ok(())
    }

    /// Queue `kernel` with `args`: its own argument struct, and no other
    /// (another kernel's struct is a compile error, see
    /// [`Kernel`](crate::dsl::Kernel)). The arguments are converted here
    /// ([`KernelParams::args`](crate::dsl::KernelParams::args), no trait
    /// import needed) and checked as by [`launch`](Self::launch).
    ///
    /// ```
    /// use ptxsmith::dsl::{Kernel, params::Ptr, types::U32};
    /// use ptxsmith::runtime::{Context, LaunchConfig};
    /// use ptxsmith::{Sm, kernel_params};
    /// kernel_params! { pub struct SevenArgs => SevenRegs { out: Ptr<U32> } }
    ///
    /// let ctx = Context::sim(Sm::Sm90);
    /// let k = Kernel::<SevenArgs>::generate("seven", ctx.sm(), |b, p| b.st_global(p.out, 0, 7u32))?;
    /// let st = ctx.default_stream();
    /// let mut out = ctx.alloc::<u32>(1)?;
    /// st.launch_kernel(&k, LaunchConfig::linear(1, 1), SevenArgs { out: st.arg_mut("out", &mut out)? })?;
    /// assert_eq!(st.to_vec(&out)?, [7]);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`launch`](Self::launch).
    pub fn launch_kernel<A: KernelParams>(
        &self,
        kernel: &Kernel<A>,
        cfg: LaunchConfig,
        args: A,
    ) -> Result<()> {
        self.launch(kernel.module(), cfg, &args.args())
    }
}

// Contexts, buffers and streams move between threads.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Context>();
    send_sync::<Stream>();
};
