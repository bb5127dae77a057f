//! The driver's global state: configuration, devices, contexts and the
//! handles of every object, behind one lock.
//!
//! Handles (`CUcontext`, `CUstream`, `CUevent`, `CUmodule`, `CUfunction`)
//! are opaque values, never host pointers: a 16-bit kind tag over a serial
//! number that is never reused, so a stale or foreign handle is found out
//! (`CUDA_ERROR_INVALID_HANDLE` / `CUDA_ERROR_INVALID_CONTEXT`) instead of
//! naming another object, and a program that dereferences one faults on a
//! non-canonical address.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use ptxsmith::sim::{Sim, SimOptions};

use crate::config::{Config, DeviceSpec};
use crate::context::{Context, SLICES, alloc_charge, check_flags};
use crate::error::*;
use crate::handles::{
    self, CONTEXT_SPAN_SHIFT, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, DEVICE_SPAN_SHIFT, Kind,
    LEGACY,
};
use crate::ops::Stream;

/// A device and its primary context's bookkeeping.
#[derive(Debug)]
pub struct Device {
    pub spec: DeviceSpec,
    /// The primary context's handle (the same for every activation).
    pub primary: u64,
    pub primary_refs: u32,
    pub primary_flags: u32,
    /// Contexts created on the device so far (address slices).
    pub instances: u64,
    /// Bytes allocated on the device (all its contexts).
    pub used: u64,
    /// The first device fault of the primary context. As on the real
    /// driver, it outlives the context: the CUDA documentation has the
    /// process terminated and relaunched after such an error, and an H200
    /// (driver 580.159.04) refused `cuDevicePrimaryCtxRetain` with the
    /// fault's code after `cuDevicePrimaryCtxReset` had succeeded. Every
    /// primary context made afterwards starts poisoned with it, and
    /// retaining the primary context returns it. (The documentation makes
    /// any such fault process-wide; contexts made with `cuCtxCreate` are
    /// kept independent here, so that fault tests can share a process.)
    pub fault: Option<CUresult>,
}

/// The whole driver state.
pub struct Driver {
    pub config: Config,
    pub devices: Vec<Device>,
    /// Live contexts by handle (an inactive primary context is absent).
    pub contexts: HashMap<u64, Context>,
    /// The context owning each stream, event, module and function handle.
    pub owners: HashMap<u64, u64>,
    /// Handles of contexts destroyed with `cuCtxDestroy`.
    pub destroyed: HashSet<u64>,
    /// Page-locked host ranges: address → (bytes, made by
    /// `cuMemAllocHost` rather than `cuMemHostRegister`).
    pub pinned: BTreeMap<usize, (usize, bool)>,
    /// Libraries (`cuLibraryLoadData`), by handle: they belong to no
    /// context.
    pub libraries: HashMap<u64, crate::jit::Library>,
    /// Kernel handles (`cuLibraryGetKernel`): their library and entry.
    pub kernels: HashMap<u64, (u64, String)>,
    /// Graphs (`cuStreamEndCapture`) and executable graphs
    /// (`cuGraphInstantiateWithFlags`), by handle.
    pub graphs: HashMap<u64, crate::ops::Graph>,
    pub graph_execs: HashMap<u64, crate::ops::Graph>,
    /// Events last recorded inside a capture: the capture's graph.
    pub captured_events: HashMap<u64, u64>,
    next_serial: u64,
    /// Global enqueue counter: every queued operation's position in the
    /// order the program issued them.
    pub next_op: u64,
}

static DRIVER: Mutex<Option<Driver>> = Mutex::new(None);

fn lock() -> MutexGuard<'static, Option<Driver>> {
    DRIVER.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `cuInit`: read the configuration once; later calls are no-ops.
pub fn init(flags: u32) -> Res<()> {
    if flags != 0 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    let mut g = lock();
    if g.is_some() {
        return Ok(());
    }
    let config = Config::from_env().map_err(|e| {
        eprintln!("ptxsmith-emu: cuInit: {e}");
        CUDA_ERROR_INVALID_VALUE
    })?;
    if config.devices.is_empty() {
        return Err(CUDA_ERROR_NO_DEVICE);
    }
    *g = Some(Driver::new(config));
    Ok(())
}

/// The configured driver version, before or after `cuInit`.
pub fn driver_version() -> Res<i32> {
    if let Some(d) = lock().as_ref() {
        return Ok(d.config.driver_version);
    }
    Config::from_env()
        .map(|c| c.driver_version)
        .map_err(|_| CUDA_ERROR_INVALID_VALUE)
}

/// Run `f` on the initialised driver (`CUDA_ERROR_NOT_INITIALIZED` before
/// `cuInit`). `f` must not wait for host functions (see [`with_sync`]).
pub fn with<T>(f: impl FnOnce(&mut Driver) -> Res<T>) -> Res<T> {
    match with_raw(f) {
        Err(WAIT_HOST) => {
            eprintln!(
                "ptxsmith-emu: internal error: a call waited for a host function outside with_sync"
            );
            Err(CUDA_ERROR_UNKNOWN)
        }
        r => r,
    }
}

fn with_raw<T>(f: impl FnOnce(&mut Driver) -> Res<T>) -> Res<T> {
    let mut g = lock();
    let d = g.as_mut().ok_or(CUDA_ERROR_NOT_INITIALIZED)?;
    f(d)
}

/// Internal: a synchronisation reached a host function that has not
/// returned yet. Never returned to a caller: [`with_sync`] waits for it
/// without the lock and tries again.
pub const WAIT_HOST: CUresult = 0x7FFF_0001;

/// How many host functions have returned (and its condition variable).
static HOST_RETURNS: Mutex<u64> = Mutex::new(0);
static HOST_RETURNED: Condvar = Condvar::new();

/// A host function returned (called from its thread, without the lock).
pub fn host_function_returned() {
    let mut n = HOST_RETURNS.lock().unwrap_or_else(PoisonError::into_inner);
    *n += 1;
    HOST_RETURNED.notify_all();
}

/// Run `f` on the driver as [`with`] does; while it answers
/// [`WAIT_HOST`] (work it waits for is behind a running host function),
/// release the lock until a host function returns and run it again. `f`
/// must return `WAIT_HOST` only before it changed anything, so that
/// running it again is the same call; every synchronising call goes
/// through here.
pub fn with_sync<T>(mut f: impl FnMut(&mut Driver) -> Res<T>) -> Res<T> {
    loop {
        let seen = *HOST_RETURNS.lock().unwrap_or_else(PoisonError::into_inner);
        match with_raw(&mut f) {
            Err(WAIT_HOST) => {
                let n = HOST_RETURNS.lock().unwrap_or_else(PoisonError::into_inner);
                // (A timeout only makes it look again.)
                let _ = HOST_RETURNED
                    .wait_timeout_while(n, Duration::from_millis(100), |n| *n == seen)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            r => return r,
        }
    }
}

/// Whether failing calls should be traced (`PTXSMITH_EMU_TRACE`).
pub fn tracing() -> bool {
    lock().as_ref().is_some_and(|d| d.config.trace)
}

thread_local! {
    /// The calling thread's context stack (`cuCtxPushCurrent` /
    /// `cuCtxSetCurrent` replace or push its top).
    static STACK: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
    /// The per-thread default stream of each context on this thread.
    static PER_THREAD: RefCell<HashMap<u64, u64>> = RefCell::new(HashMap::new());
    /// A `_ptsz`/`_ptds` entry point is running on this thread: the
    /// default stream (handle 0, and the stream of synchronous copies and
    /// fills) is the per-thread default stream instead of the legacy one.
    static PER_THREAD_DEFAULT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` (a `_ptsz`/`_ptds` entry point's base) with the default stream
/// meaning this thread's per-thread default stream.
pub fn with_per_thread_default<T>(f: impl FnOnce() -> T) -> T {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            PER_THREAD_DEFAULT.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(PER_THREAD_DEFAULT.with(|c| c.replace(true)));
    f()
}

/// Whether the default stream is the per-thread one for this call.
pub fn per_thread_default() -> bool {
    PER_THREAD_DEFAULT.with(std::cell::Cell::get)
}

/// The calling thread's current context handle, if any.
pub fn current() -> Option<u64> {
    STACK.with(|s| s.borrow().last().copied())
}

/// `cuCtxSetCurrent`: replace the top of the stack (pop it for 0).
pub fn set_current(h: u64) {
    STACK.with(|s| {
        let mut s = s.borrow_mut();
        s.pop();
        if h != 0 {
            s.push(h);
        }
    });
}

/// `cuCtxPushCurrent`.
pub fn push_current(h: u64) {
    STACK.with(|s| s.borrow_mut().push(h));
}

/// `cuCtxPopCurrent`: the popped handle.
pub fn pop_current() -> Option<u64> {
    STACK.with(|s| s.borrow_mut().pop())
}

/// Pop `h` from the top of this thread's stack if it is there.
pub fn pop_if_current(h: u64) {
    STACK.with(|s| {
        let mut s = s.borrow_mut();
        if s.last() == Some(&h) {
            s.pop();
        }
    });
}

impl Driver {
    fn new(config: Config) -> Driver {
        let mut d = Driver {
            devices: Vec::new(),
            contexts: HashMap::new(),
            owners: HashMap::new(),
            destroyed: HashSet::new(),
            pinned: BTreeMap::new(),
            libraries: HashMap::new(),
            kernels: HashMap::new(),
            graphs: HashMap::new(),
            graph_execs: HashMap::new(),
            captured_events: HashMap::new(),
            next_serial: 1,
            next_op: 0,
            config,
        };
        for spec in d.config.devices.clone() {
            let primary = d.new_handle(Kind::Context);
            d.devices.push(Device {
                spec,
                primary,
                primary_refs: 0,
                primary_flags: 0,
                instances: 0,
                fault: None,
                used: 0,
            });
        }
        d
    }

    /// A fresh handle of `kind`.
    pub fn new_handle(&mut self, kind: Kind) -> u64 {
        let h = handles::make(kind, self.next_serial);
        self.next_serial += 1;
        h
    }

    /// The device of ordinal `dev` (`CUDA_ERROR_INVALID_DEVICE`).
    pub fn device(&self, dev: i32) -> Res<&Device> {
        usize::try_from(dev)
            .ok()
            .and_then(|d| self.devices.get(d))
            .ok_or(CUDA_ERROR_INVALID_DEVICE)
    }

    /// Check a context handle names a usable context: live, not destroyed,
    /// not an inactive primary context.
    pub fn check_ctx(&self, h: u64) -> Res<()> {
        if self.contexts.contains_key(&h) {
            return Ok(());
        }
        if self.destroyed.contains(&h) || self.devices.iter().any(|d| d.primary == h) {
            return Err(CUDA_ERROR_CONTEXT_IS_DESTROYED);
        }
        Err(CUDA_ERROR_INVALID_CONTEXT)
    }

    /// The calling thread's current context (`CUDA_ERROR_INVALID_CONTEXT`
    /// when none is current; `CUDA_ERROR_CONTEXT_IS_DESTROYED` when it was
    /// destroyed or reset under the thread).
    pub fn current_handle(&self) -> Res<u64> {
        let h = current().ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        self.check_ctx(h)?;
        Ok(h)
    }

    /// The current context, refusing one that a fault made unusable (its
    /// sticky error).
    pub fn current_ctx(&mut self) -> Res<&mut Context> {
        let h = self.current_handle()?;
        let c = self.contexts.get_mut(&h).expect("checked");
        c.usable()?;
        Ok(c)
    }

    /// The context owning object `h` of `kind` (`CUDA_ERROR_INVALID_HANDLE`
    /// for an unknown, destroyed or foreign handle).
    pub fn owner(&self, h: u64, kind: Kind) -> Res<u64> {
        if !handles::is(h, kind) {
            return Err(CUDA_ERROR_INVALID_HANDLE);
        }
        let ctx = *self.owners.get(&h).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
        self.check_ctx(ctx).map_err(|_| CUDA_ERROR_INVALID_HANDLE)?;
        Ok(ctx)
    }

    /// Resolve a `CUstream` argument to `(context, stream key)`: 0 and
    /// `CU_STREAM_LEGACY` are the current context's legacy default stream,
    /// `CU_STREAM_PER_THREAD` (and 0 in a `_ptsz` entry point) this
    /// thread's default stream in it, anything
    /// else a live stream. With `in_current`, the stream must belong to the
    /// current context (`CUDA_ERROR_INVALID_HANDLE` otherwise).
    pub fn resolve_stream(&mut self, h: u64, in_current: bool) -> Res<(u64, u64)> {
        let per_thread = h == CU_STREAM_PER_THREAD || (h == 0 && per_thread_default());
        match h {
            _ if per_thread => {
                let ctx = self.current_handle()?;
                let known = PER_THREAD.with(|m| m.borrow().get(&ctx).copied());
                if let Some(s) = known
                    && self.contexts[&ctx].streams.contains_key(&s)
                {
                    return Ok((ctx, s));
                }
                let s = self.new_handle(Kind::Stream);
                self.contexts
                    .get_mut(&ctx)
                    .expect("checked")
                    .streams
                    .insert(s, Stream::new(0, 0));
                self.owners.insert(s, ctx);
                PER_THREAD.with(|m| m.borrow_mut().insert(ctx, s));
                Ok((ctx, s))
            }
            0 | CU_STREAM_LEGACY => Ok((self.current_handle()?, LEGACY)),
            _ => {
                let ctx = self.owner(h, Kind::Stream)?;
                let live = self.contexts[&ctx]
                    .streams
                    .get(&h)
                    .is_some_and(|s| !s.destroyed);
                if !live {
                    return Err(CUDA_ERROR_INVALID_HANDLE);
                }
                if in_current && current() != Some(ctx) {
                    self.current_handle()?;
                    return Err(CUDA_ERROR_INVALID_HANDLE);
                }
                Ok((ctx, h))
            }
        }
    }

    /// Forget every object handle of context `ctx` (it was destroyed or
    /// reset).
    pub fn forget_objects(&mut self, ctx: u64) {
        self.owners.retain(|_, owner| *owner != ctx);
    }
}

impl Driver {
    /// Make a new context on device `dev` under handle `handle`.
    fn make_context(&mut self, dev: usize, handle: u64, primary: bool, flags: u32) -> Res<()> {
        let d = &mut self.devices[dev];
        let instance = d.instances;
        d.instances += 1;
        let start =
            ((dev as u64 + 1) << DEVICE_SPAN_SHIFT) + ((instance % SLICES) << CONTEXT_SPAN_SHIFT);
        let mut sim = Sim::new(d.spec.sm);
        sim.set_global_base(start).map_err(|_| CUDA_ERROR_UNKNOWN)?;
        sim.set_options(SimOptions {
            checks: self.config.checks,
            max_instructions: self.config.max_instructions,
            approx: self.config.approx,
            // PTXSMITH_SIM_THREADS, else every core
            ..SimOptions::default()
        });
        let mut streams = HashMap::new();
        streams.insert(LEGACY, Stream::new(0, 0));
        self.contexts.insert(
            handle,
            Context {
                handle,
                device: dev,
                primary,
                flags,
                instance,
                sim,
                range: (start, start + (1 << CONTEXT_SPAN_SHIFT)),
                allocs: BTreeMap::new(),
                streams,
                events: HashMap::new(),
                modules: HashMap::new(),
                functions: HashMap::new(),
                sticky: if primary {
                    self.devices[dev].fault
                } else {
                    None
                },
                limits: HashMap::new(),
                warnings: Vec::new(),
            },
        );
        Ok(())
    }

    /// Drop context `h` and everything in it (memory, queued work, streams,
    /// events, modules).
    fn drop_context(&mut self, h: u64) {
        if let Some(c) = self.contexts.remove(&h) {
            let bytes: u64 = c.allocs.values().map(|&b| alloc_charge(b)).sum();
            let d = &mut self.devices[c.device];
            d.used = d.used.saturating_sub(bytes);
        }
        self.forget_objects(h);
    }

    /// `cuDevicePrimaryCtxRetain`.
    pub fn primary_retain(&mut self, dev: i32) -> Res<u64> {
        let d = self.device(dev)?;
        if let Some(code) = d.fault {
            return Err(code);
        }
        let (h, flags) = (d.primary, d.primary_flags);
        if !self.contexts.contains_key(&h) {
            self.make_context(dev as usize, h, true, flags)?;
        }
        self.devices[dev as usize].primary_refs += 1;
        Ok(h)
    }

    /// `cuDevicePrimaryCtxRelease`: at zero references the context is
    /// destroyed (CUDA 11+ semantics).
    pub fn primary_release(&mut self, dev: i32) -> Res<()> {
        let d = self.device(dev)?;
        let h = d.primary;
        if d.primary_refs == 0 {
            return Err(CUDA_ERROR_INVALID_CONTEXT);
        }
        let d = &mut self.devices[dev as usize];
        d.primary_refs -= 1;
        if d.primary_refs == 0 {
            self.drop_context(h);
        }
        Ok(())
    }

    /// `cuDevicePrimaryCtxReset`: destroy every allocation and object of
    /// the primary context. It succeeds after a device fault too, but does
    /// not clear it (see [`Device::fault`]):
    /// the replacement context starts poisoned. Resetting does not
    /// release: while references remain, a fresh context (no objects, a new
    /// address range, so old pointers fault) takes its place under the same
    /// handle; without references it stays inactive until retained.
    pub fn primary_reset(&mut self, dev: i32) -> Res<()> {
        let h = self.device(dev)?.primary;
        self.drop_context(h);
        let d = &mut self.devices[dev as usize];
        if d.primary_refs > 0 {
            let flags = d.primary_flags;
            self.make_context(dev as usize, h, true, flags)?;
        }
        Ok(())
    }

    /// `cuDevicePrimaryCtxSetFlags`.
    pub fn primary_set_flags(&mut self, dev: i32, flags: u32) -> Res<()> {
        self.device(dev)?;
        check_flags(flags)?;
        let d = &mut self.devices[dev as usize];
        d.primary_flags = flags;
        if let Some(c) = self.contexts.get_mut(&d.primary) {
            c.flags = flags;
        }
        Ok(())
    }

    /// `cuDevicePrimaryCtxGetState`: `(flags, active)`.
    pub fn primary_state(&self, dev: i32) -> Res<(u32, bool)> {
        let d = self.device(dev)?;
        Ok((d.primary_flags, self.contexts.contains_key(&d.primary)))
    }

    /// `cuCtxCreate`: a new context, pushed on the calling thread.
    pub fn ctx_create(&mut self, flags: u32, dev: i32) -> Res<u64> {
        self.device(dev)?;
        check_flags(flags)?;
        let h = self.new_handle(Kind::Context);
        self.make_context(dev as usize, h, false, flags)?;
        push_current(h);
        Ok(h)
    }

    /// `cuCtxDestroy`: a context made by `cuCtxCreate` (the primary context
    /// is refused: release it instead).
    pub fn ctx_destroy(&mut self, h: u64) -> Res<()> {
        self.check_ctx(h)?;
        if self.contexts[&h].primary {
            return Err(CUDA_ERROR_INVALID_CONTEXT);
        }
        self.drop_context(h);
        self.destroyed.insert(h);
        pop_if_current(h);
        Ok(())
    }

    /// `cuCtxGetDevice`: the current context's device.
    pub fn ctx_device(&self) -> Res<i32> {
        let h = self.current_handle()?;
        Ok(self.contexts[&h].device as i32)
    }
}
