//! Queued work: the operations a stream holds ([`OpKind`], with their
//! dependencies [`Dep`]), the queues ([`Stream`]) and the events that mark
//! points in them ([`Event`]). Data only, plus running a launch on a
//! simulator: when they are queued and run is `stream.rs`, how one runs on
//! a context is [`Context::perform_op`](crate::context::Context::perform_op).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use ptxsmith::runtime::LaunchConfig;
use ptxsmith::sim::{Program, Sim, SimError};

use crate::error::*;
use crate::host::{HostDst, HostFn, HostSrc};

/// `CU_STREAM_NON_BLOCKING`.
pub const NON_BLOCKING: u32 = 0x1;
/// Work that must have run before an operation: the first `seq`
/// operations of `stream` in context `ctx` (void if that context has been
/// reset since: `epoch` is its instance then).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dep {
    pub ctx: u64,
    pub epoch: u64,
    pub stream: u64,
    pub seq: u64,
}

/// What a queued operation does.
pub enum OpKind {
    Launch(Box<LaunchOp>),
    /// Host → device; the bytes were staged when the copy was queued
    /// (pageable host memory, or a peer copy's source).
    HtoD {
        dst: u64,
        data: Vec<u8>,
    },
    /// Host → device from page-locked memory: the bytes are read when the
    /// copy runs, as the GPU's copy engine reads them.
    HtoDPinned {
        dst: u64,
        src: HostSrc,
    },
    DtoH {
        src: u64,
        dst: HostDst,
    },
    DtoD {
        dst: u64,
        src: u64,
        len: usize,
    },
    /// `count` elements of `elem` bytes set to the low bytes of `value`.
    Memset {
        dst: u64,
        value: u32,
        elem: usize,
        count: usize,
    },
    /// The point an event was recorded at (`recording`: which one).
    Record {
        event: u64,
        recording: u64,
    },
    /// `cuMemFreeAsync`: the simulator's memory at `ptr` is released.
    Free {
        ptr: u64,
    },
    /// A `cuStreamWaitEvent`: only its dependency.
    Wait,
    /// A host function (`cuLaunchHostFunc`, `cuStreamAddCallback`): run
    /// on a thread of its own when the stream reaches it; the stream's
    /// later work waits until it has returned.
    Host(Arc<HostTask>),
}

/// A queued host function and how far it got.
#[derive(Debug)]
pub struct HostTask {
    pub call: HostFn,
    state: AtomicU8,
}

/// [`HostTask`] states.
const QUEUED: u8 = 0;
const RUNNING: u8 = 1;
const DONE: u8 = 2;

impl HostTask {
    pub fn new(call: HostFn) -> Self {
        HostTask {
            call,
            state: AtomicU8::new(QUEUED),
        }
    }

    /// Mark it started; `false` if it already was.
    pub fn start(&self) -> bool {
        self.state
            .compare_exchange(QUEUED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Mark it returned.
    pub fn finish(&self) {
        self.state.store(DONE, Ordering::Release);
    }

    /// Whether it has returned.
    pub fn done(&self) -> bool {
        self.state.load(Ordering::Acquire) == DONE
    }
}

impl OpKind {
    /// A fresh copy of a capturable operation (a graph holds them and
    /// queues a copy at each launch); `None` for the kinds capture does
    /// not record (event records, waits, frees).
    pub fn replicate(&self) -> Option<OpKind> {
        Some(match self {
            OpKind::Launch(op) => OpKind::Launch(op.clone()),
            OpKind::HtoD { dst, data } => OpKind::HtoD {
                dst: *dst,
                data: data.clone(),
            },
            OpKind::HtoDPinned { dst, src } => OpKind::HtoDPinned {
                dst: *dst,
                src: src.clone(),
            },
            OpKind::DtoH { src, dst } => OpKind::DtoH {
                src: *src,
                dst: dst.clone(),
            },
            &OpKind::DtoD { dst, src, len } => OpKind::DtoD { dst, src, len },
            &OpKind::Memset {
                dst,
                value,
                elem,
                count,
            } => OpKind::Memset {
                dst,
                value,
                elem,
                count,
            },
            OpKind::Host(task) => OpKind::Host(Arc::new(HostTask::new(task.call))),
            OpKind::Record { .. } | OpKind::Free { .. } | OpKind::Wait => return None,
        })
    }

    /// The page-locked host range the operation reads or writes when it
    /// runs, if any.
    pub fn host_range(&self) -> Option<(usize, usize)> {
        match self {
            OpKind::HtoDPinned { src, .. } => Some((src.addr(), src.len())),
            OpKind::DtoH { dst, .. } => Some((dst.addr(), dst.len())),
            _ => None,
        }
    }

    /// Whether the operation reads or writes host memory in
    /// `[addr, addr + len)` when it runs.
    pub fn touches_host(&self, addr: usize, len: usize) -> bool {
        match self {
            OpKind::HtoDPinned { src, .. } => src.overlaps(addr, len),
            OpKind::DtoH { dst, .. } => dst.overlaps(addr, len),
            _ => false,
        }
    }
}

pub struct Op {
    /// Position on its stream.
    pub seq: u64,
    /// Position in the order the program queued work (all streams).
    pub gid: u64,
    pub deps: Vec<Dep>,
    pub kind: OpKind,
}

/// A stream's queue.
pub struct Stream {
    pub flags: u32,
    pub priority: i32,
    pub queue: VecDeque<Op>,
    pub next_seq: u64,
    pub done_seq: u64,
    /// `cuStreamDestroy` was called; the queue still drains.
    pub destroyed: bool,
    /// A query saw pending work (the next query runs it).
    pub polled: bool,
    /// The capture in progress on this stream (`cuStreamBeginCapture`).
    pub capture: Option<Capture>,
}

/// `CUstreamCaptureMode`s.
pub const CAPTURE_GLOBAL: u32 = 0;
pub const CAPTURE_THREAD_LOCAL: u32 = 1;
pub const CAPTURE_RELAXED: u32 = 2;

/// A stream capture in progress: the graph it records into.
pub struct Capture {
    pub graph: u64,
    pub mode: u32,
    pub thread: std::thread::ThreadId,
    /// The capture's unique id (`cuStreamGetCaptureInfo`).
    pub id: u64,
    /// An illegal call invalidated it (`CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`
    /// from then on, and at `cuStreamEndCapture`).
    pub invalid: bool,
}

/// A graph (`cuStreamEndCapture`) or an executable graph
/// (`cuGraphInstantiateWithFlags`): the operations recorded, in the order
/// they were captured (one chain of nodes), for the context they were
/// captured in.
pub struct Graph {
    pub ctx: u64,
    pub ops: Vec<OpKind>,
}

impl Stream {
    pub fn new(flags: u32, priority: i32) -> Stream {
        Stream {
            flags,
            priority,
            queue: VecDeque::new(),
            next_seq: 0,
            done_seq: 0,
            destroyed: false,
            polled: false,
            capture: None,
        }
    }

    /// The position the next operation gets (everything queued so far is
    /// "the first `next_seq()`").
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Whether queued work has not run yet.
    pub fn pending(&self) -> bool {
        self.done_seq < self.next_seq
    }

    pub fn blocking(&self) -> bool {
        self.flags & NON_BLOCKING == 0
    }

    /// Drop all queued work (the context faulted).
    pub fn discard(&mut self) {
        self.queue.clear();
        self.done_seq = self.next_seq;
    }
}

/// An event: where it was last recorded, and when that point ran.
pub struct Event {
    pub flags: u32,
    pub recording: u64,
    pub recorded: Option<(u64, u64)>,
    pub time: Option<Instant>,
    pub polled: bool,
}

/// A queued launch.
#[derive(Clone)]
pub struct LaunchOp {
    pub program: Arc<Program>,
    pub entry: String,
    pub cfg: LaunchConfig,
    /// The parameter buffer, laid out as the entry declares it.
    pub params: Vec<u8>,
    /// The cluster shape of `cuLaunchKernelEx`'s attribute, if given
    /// (checked by `cluster::launch_shape`).
    pub cluster: Option<(u32, u32, u32)>,
}

impl LaunchOp {
    /// Run the launch on `sim` (a context's simulator). `Err` is a
    /// device fault: its code and the finding's text; `Ok(Some(text))` a
    /// launch that ran with warnings (same-value write-write conflicts,
    /// which compute-sanitizer's racecheck does not grade as errors and a
    /// GPU runs as the program means), the text for the log.
    pub fn run_on_sim(&self, sim: &mut Sim) -> Result<Option<String>, (CUresult, String)> {
        match self.cluster {
            Some(c) => sim.launch_program_bytes_clustered(
                &self.program,
                &self.entry,
                self.cfg,
                c,
                &self.params,
            ),
            None => sim.launch_program_bytes(&self.program, &self.entry, self.cfg, &self.params),
        }
        .map(|r| {
            (r.same_value_writes > 0).then(|| {
                format!(
                    "ptxsmith-emu: warning: kernel `{}` (grid {:?}, block {:?}): {} store{} \
                         wrote the same bytes as an unordered store of another thread (a \
                         same-value write-write conflict, a warning as in compute-sanitizer's \
                         racecheck; the launch ran); the first: {}\n",
                    self.entry,
                    self.cfg.grid,
                    self.cfg.block,
                    r.same_value_writes,
                    if r.same_value_writes == 1 { "" } else { "s" },
                    r.first_same_value_write.as_deref().unwrap_or("(unnamed)")
                )
            })
        })
        .map_err(|e| {
            let code = finding_code(&e);
            if let SimError::Assert { .. } = e {
                // the device prints the failed assertion on stderr
                eprintln!("{e}");
            }
            let text = format!(
                "kernel `{}` (grid {:?}, block {:?}, {} B dynamic shared memory): {e}",
                self.entry, self.cfg.grid, self.cfg.block, self.cfg.dynamic_smem_bytes
            );
            (code, text)
        })
    }
}
