//! Streams, events and the execution of queued work.
//!
//! Every copy, fill and launch is queued on a stream and runs **only when
//! something synchronises**: `cuStreamSynchronize`, `cuCtxSynchronize`,
//! `cuEventSynchronize`, a synchronous device → host copy, a second
//! `cuStreamQuery`/`cuEventQuery` of pending work (the first one answers
//! `CUDA_ERROR_NOT_READY`). Then exactly the work the synchronising call
//! waits for runs, and nothing else: the target's earlier work on its
//! stream and, transitively, what that work was ordered after. A host read
//! without the right synchronisation therefore sees the old bytes, every
//! time, instead of winning a race on a GPU most of the time.
//!
//! Ordering (CUDA Driver API, "Stream synchronization behavior"):
//! * work on one stream runs in the order it was queued;
//! * the legacy default stream (handle 0 or `CU_STREAM_LEGACY`) waits for
//!   all earlier work of every *blocking* stream of its context, and every
//!   blocking stream (created without `CU_STREAM_NON_BLOCKING`) waits for
//!   earlier work of the legacy stream; non-blocking streams do neither;
//! * `cuStreamWaitEvent` makes later work of a stream wait for the work the
//!   event captured when it was recorded, in any context.
//!
//! Every dependency points to work queued earlier, so running the needed
//! operations in the order the program queued them respects all of them.

use std::collections::HashMap;
use std::sync::Arc;

use crate::context::report;
use crate::driver::{Driver, WAIT_HOST, host_function_returned};
use crate::error::*;
use crate::handles::{CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, Kind, LEGACY};
use crate::host::HostFn;
use crate::ops::{Dep, Event, HostTask, NON_BLOCKING, Op, OpKind, Stream};

/// Stream priorities: `cuCtxGetStreamPriorityRange` reports
/// `(least, greatest)` = `(0, -5)`; priorities only order nothing here.
pub const PRIORITY_RANGE: (i32, i32) = (0, -5);

/// `CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS`.
const EVENT_FLAGS: u32 = 0x7;
const EVENT_DISABLE_TIMING: u32 = 0x2;
const EVENT_INTERPROCESS: u32 = 0x4;

/// What a call queued and must still wait for before it returns: the
/// first `seq` operations of stream `key` of context `ctx`
/// ([`Driver::sync_to`], run through `driver::with_sync`).
pub type SyncTarget = (u64, u64, u64);

/// Start `task` on a thread of its own (without the driver's lock: it may
/// call the driver); `false` if no thread could be started.
fn spawn_host_function(task: Arc<HostTask>) -> bool {
    std::thread::Builder::new()
        .name("ptxsmith-emu-host-fn".into())
        .spawn(move || {
            task.call.call(CUDA_SUCCESS);
            task.finish();
            host_function_returned();
        })
        .is_ok()
}

impl Driver {
    /// `cuCtxSynchronize`: run everything queued in the current context.
    pub fn ctx_synchronize(&mut self) -> Res<()> {
        let h = self.current_handle()?;
        self.refuse_unsafe_during_capture(h)?;
        self.contexts[&h].usable()?;
        let keys: Vec<u64> = self.contexts[&h].streams.keys().copied().collect();
        let targets: Vec<(u64, u64, u64)> = keys
            .into_iter()
            .map(|k| (h, k, self.contexts[&h].streams[&k].next_seq()))
            .collect();
        self.run(&targets)?;
        self.contexts[&h].usable()
    }

    /// Queue `kind` on stream `key` of context `ctx` after `deps` and the
    /// legacy-stream rules; returns its position on the stream.
    /// On a capturing stream the operation is recorded into the capture's
    /// graph instead (see `graph.rs`); the legacy stream refuses work while
    /// a blocking stream of its context captures.
    pub fn enqueue(&mut self, ctx: u64, key: u64, kind: OpKind, mut deps: Vec<Dep>) -> Res<u64> {
        let kind = match self.capture_intercept(ctx, key, kind)? {
            Ok(seq) => return Ok(seq),
            Err(kind) => kind,
        };
        let gid = self.next_op;
        self.next_op += 1;
        let c = self.contexts.get_mut(&ctx).expect("a live context");
        let epoch = c.instance;
        let dep = |stream: u64, s: &Stream| Dep {
            ctx,
            epoch,
            stream,
            seq: s.next_seq,
        };
        if key == LEGACY {
            for (&k, s) in &c.streams {
                if k != LEGACY && s.blocking() && s.pending() {
                    deps.push(dep(k, s));
                }
            }
        } else if c.streams[&key].blocking() {
            let legacy = &c.streams[&LEGACY];
            if legacy.pending() {
                deps.push(dep(LEGACY, legacy));
            }
        }
        let s = c.streams.get_mut(&key).expect("a live stream");
        let seq = s.next_seq;
        s.next_seq += 1;
        s.polled = false;
        s.queue.push_back(Op {
            seq,
            gid,
            deps,
            kind,
        });
        Ok(seq)
    }

    /// Run the first `seq` operations of each `(ctx, stream, seq)` target
    /// and everything they were ordered after, in queue order; nothing
    /// else. A fault poisons its context (see `Context::poison`); callers
    /// check the context they care about afterwards. A host function
    /// reached is started on a thread of its own; until it has returned,
    /// nothing queued after it runs and the answer is
    /// `Err(WAIT_HOST)` (see `driver::with_sync`).
    pub fn run(&mut self, targets: &[(u64, u64, u64)]) -> Res<()> {
        let mut need: HashMap<(u64, u64), u64> = HashMap::new();
        let mut work = targets.to_vec();
        while let Some((c, k, n)) = work.pop() {
            let Some(s) = self.contexts.get(&c).and_then(|x| x.streams.get(&k)) else {
                continue;
            };
            let have = need.get(&(c, k)).copied().unwrap_or(s.done_seq);
            if n <= have {
                continue;
            }
            need.insert((c, k), n);
            for op in s.queue.iter().filter(|op| op.seq >= have && op.seq < n) {
                for d in &op.deps {
                    if self
                        .contexts
                        .get(&d.ctx)
                        .is_some_and(|x| x.instance == d.epoch)
                    {
                        work.push((d.ctx, d.stream, d.seq));
                    }
                }
            }
        }
        let log = self.config.log.clone();
        let mut blocked = false;
        loop {
            let mut best: Option<(u64, u64, u64)> = None;
            for (&(c, k), &n) in &need {
                let s = self.contexts.get(&c).and_then(|x| x.streams.get(&k));
                if let Some(s) = s
                    && s.done_seq < n
                    && let Some(op) = s.queue.front()
                    && best.is_none_or(|b| op.gid < b.0)
                {
                    best = Some((op.gid, c, k));
                }
            }
            let Some((_, c, k)) = best else { break };
            let host = self.contexts[&c].streams[&k]
                .queue
                .front()
                .and_then(|op| match &op.kind {
                    OpKind::Host(t) if !t.done() => Some(Arc::clone(t)),
                    _ => None,
                });
            if let Some(task) = host {
                if task.start() && !spawn_host_function(Arc::clone(&task)) {
                    let ctx = self.contexts.get_mut(&c).expect("picked above");
                    ctx.poison(
                        CUDA_ERROR_OUT_OF_MEMORY,
                        "no thread could be started for a host function",
                        log.as_deref(),
                    );
                    continue;
                }
                blocked = true;
                break;
            }
            let ctx = self.contexts.get_mut(&c).expect("picked above");
            let op = ctx
                .streams
                .get_mut(&k)
                .and_then(|s| s.queue.pop_front())
                .expect("picked above");
            match ctx.perform_op(op.kind) {
                Ok(()) => {
                    for w in ctx.warnings.drain(..) {
                        report(&w, log.as_deref());
                    }
                    ctx.streams.get_mut(&k).expect("picked above").done_seq += 1
                }
                Err((code, text)) => {
                    ctx.poison(code, &text, log.as_deref());
                    if ctx.primary {
                        let dev = ctx.device;
                        self.devices[dev].fault.get_or_insert(code);
                    }
                }
            }
        }
        self.collect_streams();
        if blocked { Err(WAIT_HOST) } else { Ok(()) }
    }

    /// Run every queued operation that reads or writes host memory in
    /// `[addr, addr + len)`, and what it waits for (page-locked memory is
    /// about to be freed or unregistered: no copy may touch it later).
    pub fn run_host_users(&mut self, addr: usize, len: usize) -> Res<()> {
        let mut targets = Vec::new();
        for (&c, ctx) in &self.contexts {
            for (&k, s) in &ctx.streams {
                if let Some(last) = s
                    .queue
                    .iter()
                    .filter(|op| op.kind.touches_host(addr, len))
                    .map(|op| op.seq)
                    .max()
                {
                    targets.push((c, k, last + 1));
                }
            }
        }
        self.run(&targets)
    }

    /// Release destroyed streams whose work has all run.
    fn collect_streams(&mut self) {
        let mut gone = Vec::new();
        for c in self.contexts.values_mut() {
            c.streams.retain(|&k, s| {
                let keep = !s.destroyed || s.pending();
                if !keep {
                    gone.push(k);
                }
                keep
            });
        }
        for k in gone {
            self.owners.remove(&k);
        }
    }

    /// Run everything queued so far on `(ctx, key)`; the context's sticky
    /// error if it faulted (now or before).
    pub fn sync_stream(&mut self, ctx: u64, key: u64) -> Res<()> {
        let n = self.contexts[&ctx].streams[&key].next_seq;
        self.sync_to((ctx, key, n))
    }

    /// Run the first `seq` operations of stream `key` of context `ctx`
    /// (what a call queued before it returned a [`SyncTarget`]); the
    /// context's sticky error if it faulted.
    pub fn sync_to(&mut self, (ctx, key, seq): SyncTarget) -> Res<()> {
        self.check_ctx(ctx)?;
        self.run(&[(ctx, key, seq)])?;
        self.contexts[&ctx].usable()
    }

    /// `cuStreamCreate` / `cuStreamCreateWithPriority` in the current
    /// context.
    pub fn stream_create(&mut self, flags: u32, priority: i32) -> Res<u64> {
        if flags & !NON_BLOCKING != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let ctx = self.current_handle()?;
        self.contexts[&ctx].usable()?;
        let h = self.new_handle(Kind::Stream);
        let (least, greatest) = PRIORITY_RANGE;
        let priority = priority.clamp(greatest, least);
        let c = self.contexts.get_mut(&ctx).expect("checked");
        c.streams.insert(h, Stream::new(flags, priority));
        self.owners.insert(h, ctx);
        Ok(h)
    }

    /// `cuStreamDestroy`: queued work still runs when something waits for
    /// it; the handle is invalid at once.
    pub fn stream_destroy(&mut self, h: u64) -> Res<()> {
        if h == 0 || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD {
            return Err(CUDA_ERROR_INVALID_HANDLE);
        }
        let (ctx, key) = self.resolve_stream(h, false)?;
        self.contexts[&ctx].usable()?;
        let c = self.contexts.get_mut(&ctx).expect("resolved");
        let s = c.streams.get_mut(&key).expect("resolved");
        s.destroyed = true;
        self.collect_streams();
        Ok(())
    }

    /// `cuStreamSynchronize`.
    pub fn stream_synchronize(&mut self, h: u64) -> Res<()> {
        let (ctx, key) = self.resolve_stream(h, false)?;
        self.refuse_sync_in_capture(ctx, key)?;
        self.contexts[&ctx].usable()?;
        self.sync_stream(ctx, key)
    }

    /// `cuStreamQuery`: `CUDA_ERROR_NOT_READY` the first time pending work
    /// is seen, the work runs at the next query.
    pub fn stream_query(&mut self, h: u64) -> Res<()> {
        let (ctx, key) = self.resolve_stream(h, false)?;
        self.refuse_sync_in_capture(ctx, key)?;
        self.contexts[&ctx].usable()?;
        let s = self
            .contexts
            .get_mut(&ctx)
            .and_then(|c| c.streams.get_mut(&key))
            .expect("resolved");
        if !s.pending() {
            return Ok(());
        }
        if !s.polled {
            s.polled = true;
            return Err(CUDA_ERROR_NOT_READY);
        }
        match self.sync_stream(ctx, key) {
            // A host function is still running: not ready, without waiting.
            Err(WAIT_HOST) => Err(CUDA_ERROR_NOT_READY),
            r => r,
        }
    }

    /// `(flags, priority)` of a stream (`cuStreamGetFlags` /
    /// `cuStreamGetPriority`).
    pub fn stream_info(&mut self, h: u64) -> Res<(u32, i32)> {
        let (ctx, key) = self.resolve_stream(h, false)?;
        let s = &self.contexts[&ctx].streams[&key];
        Ok((s.flags, s.priority))
    }

    /// `cuStreamWaitEvent`.
    pub fn stream_wait_event(&mut self, h: u64, ev: u64, flags: u32) -> Res<()> {
        if flags != 0 {
            // CU_EVENT_WAIT_EXTERNAL (external event nodes in a capture)
            // is not emulated.
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let (ctx, key) = self.resolve_stream(h, false)?;
        self.contexts[&ctx].usable()?;
        let ectx = self.owner(ev, Kind::Event)?;
        if !self.contexts[&ectx].events.contains_key(&ev) {
            return Err(CUDA_ERROR_INVALID_HANDLE);
        }
        if self.wait_in_capture(ctx, key, ev)? {
            return Ok(());
        }
        let ec = &self.contexts[&ectx];
        let e = ec.events.get(&ev).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
        let deps = match e.recorded {
            None => Vec::new(),
            Some((stream, seq)) => vec![Dep {
                ctx: ectx,
                epoch: ec.instance,
                stream,
                seq,
            }],
        };
        self.enqueue(ctx, key, OpKind::Wait, deps)?;
        Ok(())
    }

    /// `cuEventCreate` in the current context.
    pub fn event_create(&mut self, flags: u32) -> Res<u64> {
        if flags & !EVENT_FLAGS != 0
            || (flags & EVENT_INTERPROCESS != 0 && flags & EVENT_DISABLE_TIMING == 0)
        {
            return Err(CUDA_ERROR_INVALID_VALUE);
        }
        let ctx = self.current_handle()?;
        self.contexts[&ctx].usable()?;
        let h = self.new_handle(Kind::Event);
        let c = self.contexts.get_mut(&ctx).expect("checked");
        c.events.insert(
            h,
            Event {
                flags,
                recording: 0,
                recorded: None,
                time: None,
                polled: false,
            },
        );
        self.owners.insert(h, ctx);
        Ok(h)
    }

    /// `cuEventDestroy` (a pending recording is simply dropped).
    pub fn event_destroy(&mut self, ev: u64) -> Res<()> {
        let ctx = self.owner(ev, Kind::Event)?;
        self.contexts[&ctx].usable()?;
        let c = self.contexts.get_mut(&ctx).expect("owner");
        c.events.remove(&ev).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
        self.owners.remove(&ev);
        Ok(())
    }

    /// `cuEventRecord`: capture the work queued on the stream so far. The
    /// stream must belong to the event's context.
    pub fn event_record(&mut self, ev: u64, h: u64) -> Res<()> {
        let ectx = self.owner(ev, Kind::Event)?;
        let (ctx, key) = self.resolve_stream(h, false)?;
        if ctx != ectx {
            return Err(CUDA_ERROR_INVALID_HANDLE);
        }
        self.contexts[&ctx].usable()?;
        if !self.contexts[&ctx].events.contains_key(&ev) {
            return Err(CUDA_ERROR_INVALID_HANDLE);
        }
        if self.record_in_capture(ev, ctx, key)? {
            return Ok(());
        }
        let c = self.contexts.get_mut(&ctx).expect("resolved");
        let e = c.events.get_mut(&ev).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
        e.recording += 1;
        e.time = None;
        e.polled = false;
        let recording = e.recording;
        let seq = self.enqueue(
            ctx,
            key,
            OpKind::Record {
                event: ev,
                recording,
            },
            Vec::new(),
        )?;
        let e = self
            .contexts
            .get_mut(&ctx)
            .and_then(|c| c.events.get_mut(&ev))
            .expect("recorded above");
        e.recorded = Some((key, seq + 1));
        Ok(())
    }

    fn event_target(&self, ev: u64) -> Res<(u64, Option<(u64, u64)>)> {
        let ctx = self.owner(ev, Kind::Event)?;
        let c = &self.contexts[&ctx];
        c.usable()?;
        let e = c.events.get(&ev).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
        Ok((ctx, e.recorded))
    }

    /// `cuEventSynchronize`.
    pub fn event_synchronize(&mut self, ev: u64) -> Res<()> {
        let (ctx, rec) = self.event_target(ev)?;
        self.refuse_captured_event(ev)?;
        if let Some((key, seq)) = rec {
            self.run(&[(ctx, key, seq)])?;
        }
        self.contexts[&ctx].usable()
    }

    /// `cuEventQuery`: like `cuStreamQuery`, `CUDA_ERROR_NOT_READY` once,
    /// then the captured work runs at the next query.
    pub fn event_query(&mut self, ev: u64) -> Res<()> {
        let (ctx, _) = self.event_target(ev)?;
        self.refuse_captured_event(ev)?;
        let c = self.contexts.get_mut(&ctx).expect("owner");
        let e = &c.events[&ev];
        if c.event_done(e) {
            return Ok(());
        }
        let e = c.events.get_mut(&ev).expect("owner");
        if !e.polled {
            e.polled = true;
            return Err(CUDA_ERROR_NOT_READY);
        }
        match self.event_synchronize(ev) {
            Err(WAIT_HOST) => Err(CUDA_ERROR_NOT_READY),
            r => r,
        }
    }

    /// `cuLaunchHostFunc` / `cuStreamAddCallback`: queue `call` on stream
    /// `h` of the current context.
    pub fn launch_host_function(&mut self, h: u64, call: HostFn) -> Res<()> {
        let (ctx, key) = self.resolve_stream(h, true)?;
        self.contexts[&ctx].usable()?;
        let task = Arc::new(HostTask::new(call));
        self.enqueue(ctx, key, OpKind::Host(task), Vec::new())?;
        Ok(())
    }

    /// `cuEventElapsedTime`, in milliseconds of host time between the
    /// points the two events' work ran at.
    pub fn event_elapsed(&mut self, start: u64, end: u64) -> Res<f32> {
        let mut times = [None; 2];
        for (i, ev) in [start, end].into_iter().enumerate() {
            let ctx = self.owner(ev, Kind::Event)?;
            self.refuse_captured_event(ev)?;
            let c = &self.contexts[&ctx];
            c.usable()?;
            let e = c.events.get(&ev).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
            if e.flags & EVENT_DISABLE_TIMING != 0 || e.recorded.is_none() {
                return Err(CUDA_ERROR_INVALID_HANDLE);
            }
            if !c.event_done(e) {
                return Err(CUDA_ERROR_NOT_READY);
            }
            // Recorded and done but discarded by a fault: no time.
            times[i] = Some(e.time.ok_or(CUDA_ERROR_INVALID_HANDLE)?);
        }
        let (a, b) = (times[0].expect("set"), times[1].expect("set"));
        let ms = if b >= a {
            (b - a).as_secs_f64() * 1e3
        } else {
            -((a - b).as_secs_f64() * 1e3)
        };
        Ok(ms as f32)
    }
}
