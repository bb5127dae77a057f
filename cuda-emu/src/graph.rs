//! Stream capture and graphs (CUDA Driver API §6.18 "Stream Management",
//! §6.24 "Graph Management"), as cudarc and the CUDA runtime use them.
//!
//! `cuStreamBeginCapture` makes a stream record, instead of queueing, the
//! kernel launches, copies, fills and host functions queued on it, in
//! order, into a graph; `cuStreamEndCapture` hands the graph out;
//! `cuGraphInstantiateWithFlags` copies it into an executable graph and
//! `cuGraphLaunch` queues a copy of each recorded operation on the launch
//! stream, in the recorded order (a graph is one chain of nodes here).
//!
//! The driver's rules for illegal calls during capture, as the emulator
//! applies them:
//! * synchronising or querying the capturing stream, recording an event
//!   on it and then querying or synchronising that event, a stream-ordered
//!   allocation or free on it, an asynchronous device → host copy into
//!   pageable memory on it (the driver would wait for it):
//!   `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` (`CUDA_ERROR_CAPTURED_EVENT`
//!   for the event), and the capture is invalidated;
//! * work queued on the legacy stream while a blocking stream of its
//!   context captures: `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`, invalidated;
//! * "potentially unsafe" calls (`cuMemAlloc`, `cuMemFree`, synchronous
//!   copies and fills, `cuCtxSynchronize`) while a capture in
//!   `CU_STREAM_CAPTURE_MODE_GLOBAL` runs in the context (from any thread),
//!   or one in `THREAD_LOCAL` mode on the calling thread:
//!   `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`, invalidated; `RELAXED`
//!   captures allow them;
//! * waiting (`cuStreamWaitEvent`) on an event recorded outside the
//!   capture: `CUDA_ERROR_STREAM_CAPTURE_ISOLATION`, invalidated; another
//!   stream joining the capture by waiting on a captured event
//!   (cross-stream capture) is `CUDA_ERROR_NOT_SUPPORTED`;
//! * every later call on an invalidated capture:
//!   `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`, and `cuStreamEndCapture`
//!   returns that code with a null graph.

use crate::driver::Driver;
use crate::error::*;
use crate::handles::{Kind, LEGACY};
use crate::ops::{CAPTURE_GLOBAL, CAPTURE_RELAXED, CAPTURE_THREAD_LOCAL, Capture, Graph, OpKind};

/// `CUstreamCaptureStatus`.
pub const STATUS_NONE: u32 = 0;
pub const STATUS_ACTIVE: u32 = 1;
pub const STATUS_INVALIDATED: u32 = 2;

/// `CUgraphInstantiate_flags`: `AUTO_FREE_ON_LAUNCH`, `UPLOAD`,
/// `DEVICE_LAUNCH`, `USE_NODE_PRIORITY`.
const AUTO_FREE_ON_LAUNCH: u64 = 1;
const UPLOAD: u64 = 2;
const DEVICE_LAUNCH: u64 = 4;
const USE_NODE_PRIORITY: u64 = 8;

impl Driver {
    fn capture_of(&mut self, ctx: u64, key: u64) -> Option<&mut Capture> {
        self.contexts
            .get_mut(&ctx)?
            .streams
            .get_mut(&key)?
            .capture
            .as_mut()
    }

    /// Invalidate the capture on `(ctx, key)` and answer `code`.
    fn invalidate(&mut self, ctx: u64, key: u64, code: CUresult) -> CUresult {
        if let Some(c) = self.capture_of(ctx, key) {
            c.invalid = true;
        }
        code
    }

    /// The capture rules at queue time: `Ok(Ok(seq))` when the operation
    /// was recorded into a capture, `Ok(Err(kind))` to queue it as usual.
    pub fn capture_intercept(
        &mut self,
        ctx: u64,
        key: u64,
        kind: OpKind,
    ) -> Res<Result<u64, OpKind>> {
        if let Some(cap) = self.capture_of(ctx, key) {
            if cap.invalid {
                return Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
            }
            let graph = cap.graph;
            if matches!(kind, OpKind::Wait) {
                return Ok(Ok(self.seq_before(ctx, key)));
            }
            if kind.replicate().is_none() {
                return Err(self.invalidate(ctx, key, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED));
            }
            if let Some(g) = self.graphs.get_mut(&graph) {
                g.ops.push(kind);
            }
            return Ok(Ok(self.seq_before(ctx, key)));
        }
        if key == LEGACY {
            let capturing: Vec<u64> = self.contexts[&ctx]
                .streams
                .iter()
                .filter(|(_, s)| s.blocking() && s.capture.as_ref().is_some_and(|c| !c.invalid))
                .map(|(&k, _)| k)
                .collect();
            if !capturing.is_empty() {
                for k in capturing {
                    self.invalidate(ctx, k, 0);
                }
                return Err(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
            }
        }
        Ok(Err(kind))
    }

    /// The position a call that waits "for everything queued so far" on
    /// the stream gets (a captured operation is not queued).
    fn seq_before(&self, ctx: u64, key: u64) -> u64 {
        self.contexts[&ctx].streams[&key].next_seq.wrapping_sub(1)
    }

    /// Refuse an operation capture cannot record, or a wait for the
    /// capturing stream (`cuStreamSynchronize`, `cuStreamQuery`,
    /// stream-ordered allocation, a copy the call would wait for).
    pub fn refuse_in_capture(&mut self, ctx: u64, key: u64) -> Res<()> {
        match self.capture_of(ctx, key) {
            Some(c) if c.invalid => Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
            Some(_) => Err(self.invalidate(ctx, key, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)),
            None => Ok(()),
        }
    }

    /// `cuStreamSynchronize` / `cuStreamQuery`: refused on a capturing
    /// stream; on the legacy stream as a potentially unsafe call.
    pub fn refuse_sync_in_capture(&mut self, ctx: u64, key: u64) -> Res<()> {
        self.refuse_in_capture(ctx, key)?;
        if key == LEGACY {
            self.refuse_unsafe_during_capture(ctx)?;
        }
        Ok(())
    }

    /// A "potentially unsafe" call in context `ctx`: refused (and the
    /// capture invalidated) while a global-mode capture runs there, or a
    /// thread-local one on this thread.
    pub fn refuse_unsafe_during_capture(&mut self, ctx: u64) -> Res<()> {
        let me = std::thread::current().id();
        let Some(c) = self.contexts.get_mut(&ctx) else {
            return Ok(());
        };
        let mut hit = false;
        for s in c.streams.values_mut() {
            if let Some(cap) = s.capture.as_mut()
                && (cap.mode == CAPTURE_GLOBAL
                    || (cap.mode == CAPTURE_THREAD_LOCAL && cap.thread == me))
            {
                cap.invalid = true;
                hit = true;
            }
        }
        if hit {
            Err(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
        } else {
            Ok(())
        }
    }

    /// Any capture (active or invalidated) on a stream of `ctx`.
    pub fn any_capture(&self, ctx: u64) -> bool {
        self.contexts
            .get(&ctx)
            .is_some_and(|c| c.streams.values().any(|s| s.capture.is_some()))
    }

    /// `cuStreamBeginCapture_v2`: not on the legacy stream
    /// (`CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`); `CUDA_ERROR_ILLEGAL_STATE`
    /// if the stream already captures; `CUDA_ERROR_INVALID_VALUE` for an
    /// unknown mode.
    pub fn begin_capture(&mut self, h: u64, mode: u32) -> Res<()> {
        if ![CAPTURE_GLOBAL, CAPTURE_THREAD_LOCAL, CAPTURE_RELAXED].contains(&mode) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let (ctx, key) = self.resolve_stream(h, false)?;
        self.contexts[&ctx].usable()?;
        if key == LEGACY {
            return Err(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        }
        if self.capture_of(ctx, key).is_some() {
            return Err(CUDA_ERROR_ILLEGAL_STATE);
        }
        let graph = self.new_handle(Kind::Graph);
        let id = graph & ((1 << 48) - 1);
        self.graphs.insert(
            graph,
            Graph {
                ctx,
                ops: Vec::new(),
            },
        );
        let s = self
            .contexts
            .get_mut(&ctx)
            .and_then(|c| c.streams.get_mut(&key))
            .expect("resolved");
        s.capture = Some(Capture {
            graph,
            mode,
            thread: std::thread::current().id(),
            id,
            invalid: false,
        });
        Ok(())
    }

    /// `cuStreamEndCapture`: the graph, or `CUDA_ERROR_ILLEGAL_STATE` (not
    /// capturing), `CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD` (a
    /// thread-local capture ended on another thread),
    /// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED` (the capture ends, no graph).
    pub fn end_capture(&mut self, h: u64) -> Res<u64> {
        let (ctx, key) = self.resolve_stream(h, false)?;
        let me = std::thread::current().id();
        let cap = self.capture_of(ctx, key).ok_or(CUDA_ERROR_ILLEGAL_STATE)?;
        if cap.mode == CAPTURE_THREAD_LOCAL && cap.thread != me {
            return Err(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
        }
        let s = self
            .contexts
            .get_mut(&ctx)
            .and_then(|c| c.streams.get_mut(&key))
            .expect("resolved");
        let cap = s.capture.take().expect("checked");
        self.captured_events.retain(|_, g| *g != cap.graph);
        if cap.invalid {
            self.graphs.remove(&cap.graph);
            return Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
        }
        Ok(cap.graph)
    }

    /// `cuStreamIsCapturing` / `cuStreamGetCaptureInfo`: the status, and
    /// the capture's id and graph when one runs. The legacy stream while
    /// a blocking stream captures is `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`.
    pub fn capture_info(&mut self, h: u64) -> Res<(u32, u64, u64)> {
        let (ctx, key) = self.resolve_stream(h, false)?;
        if key == LEGACY
            && self.contexts[&ctx]
                .streams
                .values()
                .any(|s| s.blocking() && s.capture.is_some())
        {
            return Err(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
        }
        Ok(match self.capture_of(ctx, key) {
            None => (STATUS_NONE, 0, 0),
            Some(c) if c.invalid => (STATUS_INVALIDATED, c.id, 0),
            Some(c) => (STATUS_ACTIVE, c.id, c.graph),
        })
    }

    /// `cuEventRecord` on a capturing stream: the event now marks a
    /// point inside the capture (querying or synchronising it is
    /// `CUDA_ERROR_CAPTURED_EVENT`); `Ok(false)` when the stream does not
    /// capture.
    pub fn record_in_capture(&mut self, ev: u64, ctx: u64, key: u64) -> Res<bool> {
        match self.capture_of(ctx, key) {
            None => {
                self.captured_events.remove(&ev);
                Ok(false)
            }
            Some(c) if c.invalid => Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
            Some(c) => {
                let g = c.graph;
                self.captured_events.insert(ev, g);
                Ok(true)
            }
        }
    }

    /// A query, synchronisation or timing of an event recorded inside a
    /// capture: `CUDA_ERROR_CAPTURED_EVENT`, and that capture is
    /// invalidated.
    pub fn refuse_captured_event(&mut self, ev: u64) -> Res<()> {
        let Some(&g) = self.captured_events.get(&ev) else {
            return Ok(());
        };
        for c in self.contexts.values_mut() {
            for s in c.streams.values_mut() {
                if let Some(cap) = s.capture.as_mut()
                    && cap.graph == g
                {
                    cap.invalid = true;
                }
            }
        }
        Err(CUDA_ERROR_CAPTURED_EVENT)
    }

    /// `cuStreamWaitEvent` and capture: `Ok(true)` when the wait is inside
    /// one capture (nothing to do), `Ok(false)` when no capture is
    /// involved.
    pub fn wait_in_capture(&mut self, ctx: u64, key: u64, ev: u64) -> Res<bool> {
        let captured = self.captured_events.get(&ev).copied();
        match (
            self.capture_of(ctx, key).map(|c| (c.graph, c.invalid)),
            captured,
        ) {
            (None, None) => Ok(false),
            (Some((_, true)), _) => Err(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
            (Some((g, false)), Some(e)) if g == e => Ok(true),
            (Some(_), _) => Err(self.invalidate(ctx, key, CUDA_ERROR_STREAM_CAPTURE_ISOLATION)),
            (None, Some(_)) => Err(CUDA_ERROR_NOT_SUPPORTED),
        }
    }

    fn graph(&self, g: u64) -> Res<&Graph> {
        if !crate::handles::is(g, Kind::Graph) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        self.graphs.get(&g).ok_or(CUDA_ERROR_INVALID_VALUE)
    }

    /// `cuGraphDestroy` (a graph still being captured into is refused:
    /// `CUDA_ERROR_INVALID_VALUE`, as an unknown one).
    pub fn graph_destroy(&mut self, g: u64) -> Res<()> {
        self.graph(g)?;
        let capturing = self
            .contexts
            .values()
            .flat_map(|c| c.streams.values())
            .any(|s| s.capture.as_ref().is_some_and(|c| c.graph == g));
        if capturing {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        self.graphs.remove(&g);
        Ok(())
    }

    /// `cuGraphInstantiateWithFlags`: `CUDA_ERROR_INVALID_VALUE` for
    /// unknown flags or `DEVICE_LAUNCH` with `AUTO_FREE_ON_LAUNCH`;
    /// `DEVICE_LAUNCH` alone is `CUDA_ERROR_NOT_SUPPORTED`; the others are
    /// accepted (no allocation nodes to free, upload is a no-op,
    /// priorities order nothing).
    pub fn graph_instantiate(&mut self, g: u64, flags: u64) -> Res<u64> {
        if flags & !(AUTO_FREE_ON_LAUNCH | UPLOAD | DEVICE_LAUNCH | USE_NODE_PRIORITY) != 0
            || (flags & DEVICE_LAUNCH != 0 && flags & AUTO_FREE_ON_LAUNCH != 0)
        {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let graph = self.graph(g)?;
        if flags & DEVICE_LAUNCH != 0 {
            return Err(CUDA_ERROR_NOT_SUPPORTED);
        }
        self.check_ctx(graph.ctx)?;
        let exec = Graph {
            ctx: graph.ctx,
            ops: graph.ops.iter().filter_map(|o| o.replicate()).collect(),
        };
        let h = self.new_handle(Kind::GraphExec);
        self.graph_execs.insert(h, exec);
        Ok(h)
    }

    fn graph_exec(&self, e: u64) -> Res<&Graph> {
        if !crate::handles::is(e, Kind::GraphExec) {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        self.graph_execs.get(&e).ok_or(CUDA_ERROR_INVALID_VALUE)
    }

    /// `cuGraphExecDestroy`.
    pub fn graph_exec_destroy(&mut self, e: u64) -> Res<()> {
        self.graph_exec(e)?;
        self.graph_execs.remove(&e);
        Ok(())
    }

    /// `cuGraphLaunch` (and, with `queue` false, `cuGraphUpload`): queue
    /// a copy of each recorded operation on stream `h`, in order. The
    /// stream must be of the graph's context (`CUDA_ERROR_INVALID_VALUE`
    /// otherwise); page-locked host memory a copy of the graph uses must
    /// still be page-locked (`CUDA_ERROR_INVALID_VALUE`, nothing queued).
    /// On a capturing stream the operations are captured in turn.
    pub fn graph_launch(&mut self, e: u64, h: u64, queue: bool) -> Res<()> {
        self.graph_exec(e)?;
        let (ctx, key) = self.resolve_stream(h, false)?;
        self.contexts[&ctx].usable()?;
        let exec = self.graph_exec(e)?;
        if exec.ctx != ctx {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        for op in &exec.ops {
            if let Some((addr, len)) = op.host_range()
                && !self.is_pinned(addr, len)
            {
                return Err(CUDA_ERROR_INVALID_VALUE);
            }
        }
        if !queue {
            return Ok(());
        }
        let ops: Vec<OpKind> = exec.ops.iter().filter_map(|o| o.replicate()).collect();
        for op in ops {
            self.enqueue(ctx, key, op, Vec::new())?;
        }
        Ok(())
    }
}
