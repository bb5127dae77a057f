//! Contexts: the primary context of each device (retain, release, reset,
//! flags, state) and contexts made with `cuCtxCreate`, each with its own
//! simulator (its own device memory, in its own address range), streams,
//! events and modules, and its sticky error.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use std::time::Instant;

use ptxsmith::sim::{Sim, SimError};

use crate::error::*;
use crate::handles::{CONTEXT_SPAN_SHIFT, DEVICE_SPAN_SHIFT};
use crate::host::CHUNK;
use crate::jit::{Function, Module};
use crate::ops::{Event, OpKind, Stream};

/// `CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX |
/// CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS`:
/// the flags a context may be created with (`cuda.h`, `CUctx_flags`).
pub const CTX_FLAGS_MASK: u32 = 0xFF;
/// The scheduling bits: at most one of SPIN (1), YIELD (2), BLOCKING_SYNC (4).
const SCHED_MASK: u32 = 0x07;

/// Address slices per device (a context's slice is reused after this many
/// contexts were created on its device).
pub const SLICES: u64 = 1 << (DEVICE_SPAN_SHIFT - CONTEXT_SPAN_SHIFT);

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
    /// Streams by handle; the legacy default stream under [`LEGACY`](crate::handles::LEGACY).
    pub streams: HashMap<u64, Stream>,
    pub events: HashMap<u64, Event>,
    pub modules: HashMap<u64, Module>,
    pub functions: HashMap<u64, Function>,
    /// The sticky error a device fault left (returned by every later call
    /// in the context until it is reset or destroyed).
    pub sticky: Option<CUresult>,
    /// `cuCtxSetLimit` values by limit id.
    pub limits: HashMap<u32, usize>,
    /// Warnings of the launches run since the last look (same-value
    /// write-write conflicts: `LaunchReport::same_value_writes`), written
    /// to the log by whoever ran them.
    pub warnings: Vec<String>,
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

pub fn check_flags(flags: u32) -> Res<()> {
    if flags & !CTX_FLAGS_MASK != 0 || (flags & SCHED_MASK).count_ones() > 1 {
        return Err(CUDA_ERROR_INVALID_VALUE);
    }
    Ok(())
}

impl Context {
    /// Whether the work event `e` captured has run (or it was never
    /// recorded).
    pub fn event_done(&self, e: &Event) -> bool {
        match e.recorded {
            None => true,
            Some((k, seq)) => self.streams.get(&k).is_none_or(|s| s.done_seq >= seq),
        }
    }
}

impl Context {
    /// Perform one queued operation on this context (its simulator, its
    /// events). `Err` is a device fault: its code and the finding's text.
    pub fn perform_op(&mut self, kind: OpKind) -> Result<(), (CUresult, String)> {
        let c = self;
        let mem = |what: &str, e: SimError| (CUDA_ERROR_ILLEGAL_ADDRESS, format!("{what}: {e}"));
        match kind {
            OpKind::Launch(op) => {
                if let Some(w) = op.run_on_sim(&mut c.sim)? {
                    c.warnings.push(w);
                }
                Ok(())
            }
            OpKind::HtoD { dst, data } => c
                .sim
                .write(dst, &data)
                .map_err(|e| mem("host → device copy", e)),
            OpKind::HtoDPinned { dst, src } => {
                let mut buf = vec![0u8; src.len().min(CHUNK)];
                for off in (0..src.len()).step_by(CHUNK) {
                    let n = CHUNK.min(src.len() - off);
                    src.read_at(off, &mut buf[..n]);
                    c.sim
                        .write(dst + off as u64, &buf[..n])
                        .map_err(|e| mem("host → device copy", e))?;
                }
                Ok(())
            }
            OpKind::DtoH { src, dst } => {
                let mut buf = vec![0u8; dst.len().min(CHUNK)];
                for off in (0..dst.len()).step_by(CHUNK) {
                    let n = CHUNK.min(dst.len() - off);
                    c.sim
                        .read(src + off as u64, &mut buf[..n])
                        .map_err(|e| mem("device → host copy", e))?;
                    dst.write_at(off, &buf[..n]);
                }
                Ok(())
            }
            OpKind::DtoD { dst, src, len } => c
                .sim
                .copy_within(dst, src, len)
                .map_err(|e| mem("device → device copy", e)),
            OpKind::Memset {
                dst,
                value,
                elem,
                count,
            } => {
                let r = if value == 0 {
                    c.sim.fill_zero(dst, elem * count)
                } else {
                    // In pieces of at most CHUNK bytes, so that no host
                    // buffer of the fill's full size is needed.
                    let per = CHUNK / elem;
                    let unit = &value.to_le_bytes()[..elem];
                    let piece = unit.repeat(per.min(count));
                    (0..count).step_by(per).try_for_each(|first| {
                        let n = per.min(count - first);
                        c.sim.write(dst + (first * elem) as u64, &piece[..n * elem])
                    })
                };
                r.map_err(|e| mem("memset", e))
            }
            OpKind::Record { event, recording } => {
                if let Some(e) = c.events.get_mut(&event)
                    && e.recording == recording
                {
                    e.time = Some(Instant::now());
                }
                Ok(())
            }
            OpKind::Free { ptr } => c
                .sim
                .free(ptr)
                .map_err(|e| (CUDA_ERROR_ILLEGAL_ADDRESS, format!("cuMemFreeAsync: {e}"))),
            // Run (and returned) before the queue let it go.
            OpKind::Wait | OpKind::Host(_) => Ok(()),
        }
    }
}

/// What an allocation of `bytes` counts against the device's memory: the
/// simulator's 256-byte granule.
pub fn alloc_charge(bytes: u64) -> u64 {
    bytes.max(1).div_ceil(256).saturating_mul(256)
}
