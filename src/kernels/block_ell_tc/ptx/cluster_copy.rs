//! The cluster-copy protocol of the block-ELL tensor-core kernels that
//! multicast a tile by tensor map across a cluster (issue 31): the
//! grouped forward and grad-input (`grouped_mcast.rs`, the values blocks
//! and the input tile) and the grad-values kernel in clusters
//! (`values_cluster.rs`, the `x` tiles). One place for the
//! synchronisation every one of them runs:
//!
//! - two "full" mbarriers (one a buffer, [`declare`]), initialised by
//!   thread 0 for one arrival, then the kernel's first cluster arrive
//!   ([`init`]);
//! - a step's copies issued by the lane `elect.sync` picks in warp 0
//!   ([`elected`]: under a `tid == 0` branch ptxas wraps each tensor copy
//!   in a loop over the active lanes), which announces the step's bytes
//!   on its own CTA's barrier of the buffer ([`bar`]) before the copies;
//! - every thread's wait on the buffer's phase, one `try_wait` and the
//!   retry out of line after the kernel's `ret` ([`wait_full`],
//!   [`slow_path`]), so the step loop stays an innermost loop;
//! - after a step's reads of a buffer, `fence.proxy.async` and the
//!   cluster arrive (release) that lets the peers copy into it again
//!   ([`release`]); the matching `barrier.cluster.wait` comes just before
//!   the next copies into the buffer, in the caller.

use crate::dsl::types::{Pred, Reg, U32, U64};
use crate::dsl::{ClusterArrive, KernelBuilder, Label, SharedMbarrier, Var};

/// The buffers' "full" barriers and the state of the wait's out-of-line
/// retry.
pub(super) struct Full {
    /// `full[0]` (8 bytes each)
    full: Reg<U32>,
    /// bit `b`: the parity of buffer `b`'s next phase
    phases: Var<U32>,
    /// the wait's retry loop, out of line after the kernel's end (so the
    /// step loop stays an innermost loop): entered when the first
    /// `try_wait` fails, back at `resume`; the barrier and parity it
    /// waits on
    slow: Label,
    resume: Label,
    wbar: Var<U32>,
    wpar: Var<U32>,
}

/// Declare the two "full" mbarriers (static shared memory); their first's
/// address.
pub(super) fn declare(b: &mut KernelBuilder) -> Reg<U32> {
    let bars = b.shared_array::<U64>("full", 2, 8);
    b.shared_elem(&bars, 0u32).reg
}

/// Thread `first` (`tid == 0`) initialises the barriers at `full` for one
/// arrival each; then the kernel's first cluster arrive.
pub(super) fn init(b: &mut KernelBuilder, full: Reg<U32>, first: Reg<Pred>) -> Full {
    b.if_(first, |b| {
        for i in 0..2u32 {
            let a = b.add(full, 8 * i);
            b.mbarrier_init(SharedMbarrier { reg: a }, 1u32);
        }
        b.fence_mbarrier_init();
    });
    let phases = b.var::<U32>(0u32);
    b.cluster_arrive(ClusterArrive::Release);
    let (slow, resume) = (b.label(), b.label());
    let (wbar, wpar) = (b.var::<U32>(0u32), b.var::<U32>(0u32));
    Full {
        full,
        phases,
        slow,
        resume,
        wbar,
        wpar,
    }
}

/// Buffer `buf`'s "full" barrier.
pub(super) fn bar(b: &mut KernelBuilder, fl: &Full, buf: Reg<U32>) -> SharedMbarrier {
    SharedMbarrier {
        reg: b.mad_lo(buf, 8u32, fl.full),
    }
}

/// `issue` run by one lane of warp 0 (`warp0`), the one `elect.sync`
/// picks: under `elect.sync` ptxas knows one lane issues the copies, so
/// it emits each `UTMALDG` once, without the loop over active lanes it
/// builds under a `tid == 0` branch.
pub(super) fn elected(
    b: &mut KernelBuilder,
    warp0: Reg<Pred>,
    issue: impl FnOnce(&mut KernelBuilder),
) {
    b.if_(warp0, |b| {
        let (_, leader) = b.elect_sync(u32::MAX);
        b.if_(leader, issue);
    });
}

/// Every thread waits for buffer `buf`'s current phase (its bulk copies
/// have landed) and flips the buffer's parity: one `try_wait`, and the
/// retry loop out of line ([`slow_path`]) when it fails; the warp
/// reconverges (`bar.warp.sync`) before its MMAs.
pub(super) fn wait_full(b: &mut KernelBuilder, fl: &Full, buf: Reg<U32>) {
    let fb = bar(b, fl, buf);
    let ph = b.get(&fl.phases);
    let par = b.shr(ph, buf);
    let par = b.and(par, 1u32);
    b.set(&fl.wbar, fb.reg);
    b.set(&fl.wpar, par);
    let done = b.mbarrier_try_wait_parity(fb, par);
    b.bra_if(done, true, fl.slow);
    b.place(fl.resume);
    b.bar_warp_sync(u32::MAX);
    let bit = b.shl(1u32, buf);
    let ph = b.xor(ph, bit);
    b.set(&fl.phases, ph);
}

/// After a step's reads of a buffer: fence them before the async proxy's
/// writes, and arrive at the cluster barrier (release).
pub(super) fn release(b: &mut KernelBuilder) {
    b.fence_proxy_async_shared();
    b.cluster_arrive(ClusterArrive::Release);
}

/// The end of the kernel: `ret`, then the wait's retry loop (see
/// [`Full::slow`]), which branches back to the step.
pub(super) fn slow_path(b: &mut KernelBuilder, fl: &Full) {
    b.ret();
    b.place(fl.slow);
    let fb = SharedMbarrier {
        reg: b.get(&fl.wbar),
    };
    let par = b.get(&fl.wpar);
    b.mbarrier_wait(fb, par);
    b.bra(fl.resume);
}
