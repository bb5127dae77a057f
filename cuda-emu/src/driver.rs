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
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::config::{Config, DeviceSpec};
use crate::context::Context;
use crate::error::*;
use crate::stream::{LEGACY, Stream};

/// What a handle names (its top 16 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Context = 0xC0C7,
    Stream = 0x5EA0,
    Event = 0xE7E7,
    Module = 0x30D0,
    Function = 0xF0F0,
}

/// `CU_STREAM_LEGACY` and `CU_STREAM_PER_THREAD`, the special stream
/// handles (`cuda.h`).
pub const CU_STREAM_LEGACY: u64 = 0x1;
pub const CU_STREAM_PER_THREAD: u64 = 0x2;

/// The emulated address space: device `d`'s allocations lie in
/// `[(d + 1) << 43, (d + 2) << 43)`, each context (each activation of a
/// primary context too) in its own `1 << 38` slice of it.
pub const DEVICE_SPAN_SHIFT: u32 = 43;
pub const CONTEXT_SPAN_SHIFT: u32 = 38;

/// `[start, end)` of the whole emulated device address space: a host
/// pointer in it is refused (it is a device pointer given as a host one).
pub fn device_address_space(devices: usize) -> (u64, u64) {
    (
        1 << DEVICE_SPAN_SHIFT,
        ((devices as u64) + 1) << DEVICE_SPAN_SHIFT,
    )
}

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
/// `cuInit`).
pub fn with<T>(f: impl FnOnce(&mut Driver) -> Res<T>) -> Res<T> {
    let mut g = lock();
    let d = g.as_mut().ok_or(CUDA_ERROR_NOT_INITIALIZED)?;
    f(d)
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
        let h = ((kind as u64) << 48) | self.next_serial;
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
        if h >> 48 != kind as u64 {
            return Err(CUDA_ERROR_INVALID_HANDLE);
        }
        let ctx = *self.owners.get(&h).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
        self.check_ctx(ctx).map_err(|_| CUDA_ERROR_INVALID_HANDLE)?;
        Ok(ctx)
    }

    /// Resolve a `CUstream` argument to `(context, stream key)`: 0 and
    /// `CU_STREAM_LEGACY` are the current context's legacy default stream,
    /// `CU_STREAM_PER_THREAD` this thread's default stream in it, anything
    /// else a live stream. With `in_current`, the stream must belong to the
    /// current context (`CUDA_ERROR_INVALID_HANDLE` otherwise).
    pub fn resolve_stream(&mut self, h: u64, in_current: bool) -> Res<(u64, u64)> {
        match h {
            0 | CU_STREAM_LEGACY => Ok((self.current_handle()?, LEGACY)),
            CU_STREAM_PER_THREAD => {
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
