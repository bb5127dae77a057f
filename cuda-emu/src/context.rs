//! Contexts: the primary context of each device (retain, release, reset,
//! flags, state) and contexts made with `cuCtxCreate`, each with its own
//! simulator (its own device memory, in its own address range), streams,
//! events and modules, and its sticky error.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use ptxsmith::sim::{Sim, SimOptions};

use crate::driver::{CONTEXT_SPAN_SHIFT, DEVICE_SPAN_SHIFT, Driver, Kind};
use crate::error::*;
use crate::module::{Function, Module};
use crate::stream::{Event, LEGACY, Stream};

/// `CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX |
/// CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS`:
/// the flags a context may be created with (`cuda.h`, `CUctx_flags`).
pub const CTX_FLAGS_MASK: u32 = 0xFF;
/// The scheduling bits: at most one of SPIN (1), YIELD (2), BLOCKING_SYNC (4).
const SCHED_MASK: u32 = 0x07;

/// Address slices per device (a context's slice is reused after this many
/// contexts were created on its device).
const SLICES: u64 = 1 << (DEVICE_SPAN_SHIFT - CONTEXT_SPAN_SHIFT);

/// One live context.
pub struct Context {
    pub handle: u64,
    pub device: usize,
    pub primary: bool,
    pub flags: u32,
    /// Which activation this is (a reset primary context comes back with
    /// a new one): a wait on an event of an earlier one is void.
    pub instance: u64,
    /// Device memory and kernel execution.
    pub sim: Sim,
    /// `[start, end)` of this context's device addresses.
    pub range: (u64, u64),
    /// Live allocations: address → size asked for.
    pub allocs: BTreeMap<u64, u64>,
    /// Streams by handle; the legacy default stream under [`LEGACY`].
    pub streams: HashMap<u64, Stream>,
    pub events: HashMap<u64, Event>,
    pub modules: HashMap<u64, Module>,
    pub functions: HashMap<u64, Function>,
    /// The sticky error a device fault left (returned by every later call
    /// in the context until it is reset or destroyed).
    pub sticky: Option<CUresult>,
    /// `cuCtxSetLimit` values by limit id.
    pub limits: HashMap<u32, usize>,
}

impl Context {
    /// Refuse use after a fault.
    pub fn usable(&self) -> Res<()> {
        self.sticky.map_or(Ok(()), Err)
    }

    /// A fault happened: remember `code` for every later call, drop all
    /// queued work (it will never run), and report `text`.
    pub fn poison(&mut self, code: CUresult, text: &str, log: Option<&std::path::Path>) {
        if self.sticky.is_none() {
            self.sticky = Some(code);
        }
        for s in self.streams.values_mut() {
            s.discard();
        }
        let kind = if self.primary {
            "as on the real driver, the device's primary context is unusable in this process from now on: the process must restart"
        } else {
            "destroy it with cuCtxDestroy"
        };
        let msg = format!(
            "ptxsmith-emu: device {} context {:#x}: {}: {text}; the context is unusable from now on ({kind})\n",
            self.device,
            self.handle,
            name(code)
        );
        report(&msg, log);
    }
}

/// Write a finding to the log file (appending) or to stderr.
pub fn report(msg: &str, log: Option<&std::path::Path>) {
    if let Some(path) = log {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        if let Ok(mut f) = file
            && f.write_all(msg.as_bytes()).is_ok()
        {
            return;
        }
    }
    let _ = std::io::stderr().write_all(msg.as_bytes());
}

fn check_flags(flags: u32) -> Res<()> {
    if flags & !CTX_FLAGS_MASK != 0 || (flags & SCHED_MASK).count_ones() > 1 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    Ok(())
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
    /// not clear it (see [`Device::fault`](crate::driver::Device::fault)):
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
        crate::driver::push_current(h);
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
        crate::driver::pop_if_current(h);
        Ok(())
    }

    /// `cuCtxGetDevice`: the current context's device.
    pub fn ctx_device(&self) -> Res<i32> {
        let h = self.current_handle()?;
        Ok(self.contexts[&h].device as i32)
    }

    /// `cuCtxSynchronize`: run everything queued in the current context.
    pub fn ctx_synchronize(&mut self) -> Res<()> {
        let h = self.current_handle()?;
        self.contexts[&h].usable()?;
        let keys: Vec<u64> = self.contexts[&h].streams.keys().copied().collect();
        let targets: Vec<(u64, u64, u64)> = keys
            .into_iter()
            .map(|k| (h, k, self.contexts[&h].streams[&k].next_seq()))
            .collect();
        self.run(&targets);
        self.contexts[&h].usable()
    }
}

/// What an allocation of `bytes` counts against the device's memory: the
/// simulator's 256-byte granule.
pub fn alloc_charge(bytes: u64) -> u64 {
    bytes.max(1).div_ceil(256) * 256
}
