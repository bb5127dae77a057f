//! [`Context`]: one device (a GPU or the simulator), its buffers and its
//! streams. [`Stream`]: an ordered queue of copies and launches.
//!
//! # Devices and contexts
//!
//! [`Context::cuda`]`(ordinal)` returns the process-wide context of that
//! GPU, opened once on the device's **primary context** (the one the CUDA
//! runtime and cudarc use, so their memory and streams work with ours) and
//! shared by every clone. Each device's kernels are built for its own SM
//! ([`Context::sm`]). [`Context::sim`] makes a CPU simulator context with
//! the same API; its buffers live in host memory.
//!
//! # Streams and synchronisation
//!
//! Every context has a default stream ([`Context::default_stream`]) and
//! makes more on request ([`Context::new_stream`]). Launches, device copies
//! and fills are queued and return at once; host copies
//! ([`Stream::copy_to_host`], [`DeviceBuffer::download`], …) wait for the
//! work queued before them on their stream and return when the bytes have
//! landed; [`Stream::synchronize`] waits for a stream. Work on different
//! streams is unordered unless [`Stream::wait_for`] orders it. A failure of
//! queued work is returned by the next synchronising call on that stream,
//! naming the kernels queued since the last one.
//!
//! # Freeing memory
//!
//! Dropping a [`DeviceBuffer`] never frees memory under queued work: the
//! memory is freed at the next point where every stream of the context is
//! known idle ([`Context::synchronize`], or a synchronising call on the
//! default stream while the context has no other stream and no raw-pointer
//! call has queued work on a caller's stream since the last
//! `Context::synchronize`), and when more
//! than 64 MiB or 256 buffers are waiting, the drop synchronises the
//! context and frees at once. The simulator frees at once.
//!
//! # Faults
//!
//! A device-side fault (illegal address, trap) destroys a CUDA context for
//! everyone using it. The call that observes it returns the error once
//! ([`Error::Launch`] naming the kernels); the context then answers
//! [`Error::DeviceLost`] to every use. The CUDA driver keeps such a fault
//! for the rest of the process (its documentation of
//! `CUDA_ERROR_ILLEGAL_ADDRESS`: "the process must be terminated and
//! relaunched"; an H200 with driver 580.159.04 refused a fresh primary
//! context after the reset), so [`Context::cuda`] answers
//! [`Error::DeviceLost`] for that device too, saying the process must
//! restart; it retries a reset and a fresh context each time, in case a
//! driver recovers.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::dsl::PtxModule;
use crate::dsl::params::{ArgValue, DevPtr};
use crate::error::{ArgError, DriverCode, Error, Result};
use crate::exec::{Executor, LaunchConfig, RawStream, Traffic};
use crate::runtime::buffer::{AsDevice, AsDeviceMut, DeviceBuffer, DeviceRepr};
use crate::runtime::gpu::cache::CacheStats;
use crate::runtime::gpu::{Gpu, GpuInfo, cuda_unavailable_reason};
use crate::sim::Sim;
use crate::target::Sm;

mod stream;
pub use stream::Stream;
use stream::StreamOwner;

/// What a [`Context`] runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeviceKind {
    /// CUDA device `ordinal`.
    Cuda {
        /// The driver's device number.
        ordinal: u32,
    },
    /// The CPU PTX simulator.
    Sim,
}

/// Memory of dropped buffers waits here until every stream is known idle.
/// Past either limit, the drop synchronises the context and frees at once.
const DEFERRED_FREE_BYTES: usize = 64 << 20;
const DEFERRED_FREE_COUNT: usize = 256;

/// The backend of a context. The simulator is kept as itself, so
/// [`Context::with_sim`] reaches it without the [`Executor`] trait naming
/// the concrete simulator; any other backend (a GPU, the report's
/// recorder, a user's) sits behind the trait. Either way it dereferences
/// to `dyn Executor`.
pub(crate) enum AnyExecutor {
    /// The CPU PTX simulator.
    Sim(Box<Sim>),
    /// Any other backend.
    Other(Box<dyn Executor>),
}

impl std::ops::Deref for AnyExecutor {
    type Target = dyn Executor;
    fn deref(&self) -> &Self::Target {
        match self {
            AnyExecutor::Sim(s) => &**s,
            AnyExecutor::Other(e) => &**e,
        }
    }
}

impl std::ops::DerefMut for AnyExecutor {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            AnyExecutor::Sim(s) => &mut **s,
            AnyExecutor::Other(e) => &mut **e,
        }
    }
}

/// The backend and the bookkeeping that must change with it atomically.
pub(crate) struct State {
    pub(crate) ex: AnyExecutor,
    /// Allocations of dropped buffers, not yet freed.
    dead: Vec<u64>,
    dead_bytes: usize,
    /// Streams made by `new_stream` that are still alive.
    extra_streams: usize,
    /// Work was queued on a stream ptxsmith did not make (a raw entry
    /// point's caller's stream, or the legacy stream) since the last
    /// context-wide synchronisation: a synchronisation of the default
    /// stream alone does not make dropped buffers safe to free.
    foreign_work: bool,
    /// What went through each stream (copies and launches queued there).
    per_stream: HashMap<u64, Traffic>,
}

impl State {
    /// Free the dropped buffers: every stream has just been synchronised.
    fn flush(&mut self) {
        for addr in self.dead.drain(..) {
            let _ = self.ex.free(addr);
        }
        self.dead_bytes = 0;
        self.foreign_work = false;
    }

    /// Count work queued on stream `s`.
    fn count(&mut self, s: RawStream, f: impl FnOnce(&mut Traffic)) {
        f(self.per_stream.entry(s.0).or_default());
    }

    /// A synchronising call on `s` succeeded: if no other stream can still
    /// hold work, the dropped buffers are safe to free.
    fn synced(&mut self, s: RawStream) {
        if self.extra_streams == 0 && !self.foreign_work && s == self.ex.default_stream() {
            self.flush();
        }
    }
}

struct Inner {
    id: u64,
    kind: DeviceKind,
    sm: Sm,
    multiprocessors: u32,
    info: Option<GpuInfo>,
    default_stream: RawStream,
    state: Mutex<State>,
}

/// A device and everything allocated or queued on it. Cloning is cheap and
/// shares the device; the context lives while any clone, buffer or stream
/// of it does. `Send + Sync`: operations from several threads are
/// serialised per call.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("id", &self.inner.id)
            .field("kind", &self.inner.kind)
            .field("sm", &self.inner.sm)
            .finish_non_exhaustive()
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Context {
    /// A context over any backend (the simulator, a GPU, or a custom one).
    pub fn from_executor(kind: DeviceKind, info: Option<GpuInfo>, exec: Box<dyn Executor>) -> Self {
        Self::over(kind, info, AnyExecutor::Other(exec))
    }

    fn over(kind: DeviceKind, info: Option<GpuInfo>, exec: AnyExecutor) -> Self {
        Context {
            inner: Arc::new(Inner {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                kind,
                sm: exec.sm(),
                multiprocessors: exec.multiprocessor_count(),
                default_stream: exec.default_stream(),
                info,
                state: Mutex::new(State {
                    ex: exec,
                    dead: Vec::new(),
                    dead_bytes: 0,
                    extra_streams: 0,
                    foreign_work: false,
                    per_stream: HashMap::new(),
                }),
            }),
        }
    }

    /// A fresh CPU-simulator context for `sm` (checks on).
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm90);
    /// let buf = ctx.upload(&[1u32, 2, 3])?;
    /// assert_eq!(buf.to_vec()?, [1, 2, 3]);
    /// assert_eq!(ctx.traffic().bytes_uploaded, 12);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    pub fn sim(sm: Sm) -> Self {
        Self::over(
            DeviceKind::Sim,
            None,
            AnyExecutor::Sim(Box::new(Sim::new(sm))),
        )
    }

    /// The process-wide context of CUDA device `ordinal` (see the
    /// [module docs](self)): opened on first use, shared afterwards; after
    /// a device fault, reopened only if the driver allows it.
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// match Context::cuda(0) {
    ///     Ok(ctx) => println!("{}", ctx.info().expect("a GPU")),
    ///     // Without a driver or device: a typed error with the loader's reason.
    ///     Err(ptxsmith::Error::NoDevice(reason)) => println!("no GPU: {reason}"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NoDevice`] without a driver or for an ordinal the driver
    /// does not report; [`Error::DeviceBusy`] when the device refuses a
    /// context (exclusive-process mode); [`Error::UnsupportedSm`] for cards
    /// older than sm_70; [`Error::DeviceLost`] after a device fault when
    /// the driver refuses a fresh context (the CUDA driver keeps a fault
    /// for the rest of the process: it must restart).
    pub fn cuda(ordinal: u32) -> Result<Context> {
        static CUDA: Mutex<BTreeMap<u32, Context>> = Mutex::new(BTreeMap::new());
        if let Some(reason) = cuda_unavailable_reason() {
            return Err(Error::NoDevice(reason.to_string()));
        }
        let mut registry = CUDA.lock().unwrap_or_else(PoisonError::into_inner);
        let gpu = match registry.get(&ordinal) {
            Some(ctx) => {
                let Some(fault) = ctx.lost() else {
                    return Ok(ctx.clone());
                };
                // CUDA documents device faults as lasting for the rest of
                // the process (an H200 refused a fresh primary context after
                // the reset), but a reset costs nothing more now: try it.
                let fresh = Gpu::reset_primary(ordinal).and_then(|()| Gpu::open(ordinal));
                let gpu = fresh.map_err(|e| Error::DeviceLost {
                    ordinal,
                    fault: format!(
                        "{fault}; a fresh context was refused ({e}): the CUDA driver keeps a \
                         device fault for the rest of the process, which must restart to use \
                         device {ordinal} again"
                    ),
                })?;
                registry.remove(&ordinal);
                gpu
            }
            None => Gpu::open(ordinal)?,
        };
        let info = gpu.info().clone();
        tracing::info!(target: "ptxsmith::device", %info, "opened CUDA device");
        let ctx = Self::from_executor(DeviceKind::Cuda { ordinal }, Some(info), Box::new(gpu));
        registry.insert(ordinal, ctx.clone());
        Ok(ctx)
    }

    /// A unique id (buffers and streams remember it).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// What the context runs on.
    pub fn kind(&self) -> DeviceKind {
        self.inner.kind
    }

    /// The SM the context's kernels are built for.
    pub fn sm(&self) -> Sm {
        self.inner.sm
    }

    /// Number of streaming multiprocessors (grid sizing).
    pub fn multiprocessor_count(&self) -> u32 {
        self.inner.multiprocessors
    }

    /// The GPU's properties (`None` on the simulator).
    pub fn info(&self) -> Option<&GpuInfo> {
        self.inner.info.as_ref()
    }

    /// The backend and its bookkeeping, locked for one operation.
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The context's default stream.
    pub fn default_stream(&self) -> Stream {
        Stream {
            ctx: self.clone(),
            raw: self.inner.default_stream,
            _owner: None,
            keep: None,
            borrowed: false,
        }
    }

    /// A new stream, destroyed (after synchronising) when its last clone
    /// drops.
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let (a, b) = (ctx.new_stream()?, ctx.new_stream()?);
    /// let mut buf = ctx.alloc_zeroed::<f32>(4)?;
    /// a.copy_from_host(&mut buf, &[1.0; 4])?;
    /// b.wait_for(&a)?; // b's later work runs after a's
    /// assert_eq!(b.to_vec(&buf)?, [1.0; 4]);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    pub fn new_stream(&self) -> Result<Stream> {
        let mut st = self.state();
        let raw = st.ex.create_stream()?;
        st.extra_streams += 1;
        drop(st);
        Ok(Stream {
            ctx: self.clone(),
            raw,
            _owner: Some(Arc::new(StreamOwner {
                ctx: self.clone(),
                raw,
            })),
            keep: None,
            borrowed: false,
        })
    }

    /// Vouch for a foreign range (see [`ForeignSlice`](crate::runtime::ForeignSlice)).
    pub(crate) fn adopt_foreign(&self, addr: u64, bytes: usize) -> Result<()> {
        self.state()
            .ex
            .adopt_foreign(addr, bytes)
            .map_err(|e| match e {
                Error::WrongContext { what, owner, .. } => Error::WrongContext {
                    what,
                    owner,
                    used: self.id(),
                },
                e => e,
            })
    }

    /// A foreign view was dropped.
    pub(crate) fn forget_foreign(&self, addr: u64, bytes: usize) {
        self.state().ex.forget_foreign(addr, bytes);
    }

    /// Entries the context keeps about queued work and foreign memory
    /// (kernel names per stream, foreign views, dropped buffers waiting to
    /// be freed). Bounded however the streams are synchronised: a foreign
    /// stream synchronised only by its owner's stack does not make it
    /// grow (see `tests/foreign_interop.rs`).
    pub fn bookkeeping(&self) -> usize {
        let st = self.state();
        st.ex.bookkeeping() + st.dead.len()
    }

    /// The driver's handle of this context's `CUcontext` (its device's
    /// primary context) as an integer; `None` on the simulator.
    pub fn driver_context(&self) -> Option<usize> {
        self.state().ex.driver_context()
    }

    /// A [`Stream`] over a foreign stream handle (for the raw-pointer entry
    /// points); never destroyed by ptxsmith.
    pub(crate) fn borrowed_stream(&self, raw: RawStream) -> Stream {
        Stream {
            ctx: self.clone(),
            raw,
            _owner: None,
            keep: None,
            borrowed: raw != self.inner.default_stream,
        }
    }

    fn alloc_inner<T: DeviceRepr>(&self, len: usize, zeroed: bool) -> Result<DeviceBuffer<T>> {
        let bytes = len.checked_mul(size_of::<T>()).ok_or_else(|| {
            Error::invalid(format!(
                "allocation of {len} elements of {} bytes overflows",
                size_of::<T>()
            ))
        })?;
        let addr = self.state().ex.alloc(bytes, zeroed)?;
        Ok(DeviceBuffer::from_raw_parts(self.clone(), addr, len))
    }

    /// `len` uninitialised elements (the simulator reports a kernel read of
    /// a byte nobody wrote).
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let mut buf = ctx.alloc::<u8>(3)?; // uninitialised (the simulator tracks it)
    /// buf.copy_from_host(&[7, 8, 9])?;
    /// assert_eq!(buf.to_vec()?, [7, 8, 9]);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    pub fn alloc<T: DeviceRepr>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        self.alloc_inner(len, false)
    }

    /// `len` zeroed elements.
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// assert_eq!(ctx.alloc_zeroed::<i32>(2)?.to_vec()?, [0, 0]);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    pub fn alloc_zeroed<T: DeviceRepr>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        self.alloc_inner(len, true)
    }

    /// A new buffer holding a copy of `data` (default stream).
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// let buf = ctx.upload(&[0.5f32, 1.5])?;
    /// assert_eq!(buf.len(), 2);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    pub fn upload<T: DeviceRepr>(&self, data: &[T]) -> Result<DeviceBuffer<T>> {
        self.default_stream().upload(data)
    }

    /// Wait for every stream of the context (and free the memory of
    /// dropped buffers).
    ///
    /// ```
    /// use ptxsmith::runtime::Context;
    ///
    /// let ctx = Context::sim(ptxsmith::Sm::Sm80);
    /// drop(ctx.upload(&[1u8])?);
    /// ctx.synchronize()?; // every stream idle: dropped buffers are freed
    /// assert_eq!(ctx.deferred_frees(), 0);
    /// # Ok::<(), ptxsmith::Error>(())
    /// ```
    pub fn synchronize(&self) -> Result<()> {
        let mut st = self.state();
        st.ex.synchronize(None)?;
        st.flush();
        Ok(())
    }

    /// Bytes moved, launches and allocations so far (all streams).
    pub fn traffic(&self) -> Traffic {
        self.state().ex.traffic()
    }

    /// JIT-compile `module` now (GPU; a no-op on the simulator), e.g. to
    /// keep compilation out of a timed region.
    pub fn load(&self, module: &PtxModule) -> Result<()> {
        self.state().ex.load(module)
    }

    /// The JIT module cache's counters: loads (compilations), hits, and
    /// module texts hashed (zero for the kernel families' memoised
    /// modules, see [`crate::dsl::memo`]). `None` on the simulator, which
    /// compiles nothing.
    pub fn module_cache_stats(&self) -> Option<CacheStats> {
        self.state().ex.module_cache_stats()
    }

    /// Make this context current on the calling thread (GPU; a no-op on
    /// the simulator), so CUDA code of another stack on this thread (cudarc,
    /// plain `cuMemAlloc`) allocates in the context ptxsmith uses: the
    /// device's primary context.
    pub fn make_current(&self) -> Result<()> {
        self.state().ex.make_current()
    }

    /// Why the context is unusable (a device fault), if it is.
    pub fn lost(&self) -> Option<String> {
        self.state().ex.lost()
    }

    /// Run `f` on the simulator behind this context (`None` for a GPU, or
    /// a context over another backend made by [`Context::from_executor`]):
    /// its counters, options, or memory that no ptxsmith buffer owns (the
    /// way a foreign allocator's memory looks to the raw entry points).
    pub fn with_sim<R>(&self, f: impl FnOnce(&mut Sim) -> R) -> Option<R> {
        match &mut self.state().ex {
            AnyExecutor::Sim(sim) => Some(f(sim)),
            AnyExecutor::Other(_) => None,
        }
    }

    /// A buffer of `bytes` bytes at `addr` was dropped: free it once no
    /// queued work can use it (see [`DeviceBuffer`]'s docs).
    pub(crate) fn release(&self, addr: u64, bytes: usize) {
        let mut st = self.state();
        st.dead.push(addr);
        st.dead_bytes += bytes;
        if st.ex.is_synchronous()
            || st.dead.len() > DEFERRED_FREE_COUNT
            || st.dead_bytes > DEFERRED_FREE_BYTES
        {
            // A failure of queued work surfaces here too; the backend keeps
            // a sticky fault for the next call.
            let _ = st.ex.synchronize(None);
            st.flush();
        }
    }

    /// Number of dropped buffers whose memory is not freed yet.
    pub fn deferred_frees(&self) -> usize {
        self.state().dead.len()
    }

    /// `what` (owned by context `owner`) may be used here.
    pub(crate) fn check_owner(&self, what: &str, owner: u64) -> Result<()> {
        if owner == self.id() {
            return Ok(());
        }
        Err(Error::WrongContext {
            what: what.to_string(),
            owner,
            used: self.id(),
        })
    }
}
