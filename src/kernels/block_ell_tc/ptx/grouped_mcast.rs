//! The values blocks of the grouped forward multicast across a cluster of
//! two CTAs (issue 31, the L2 step; bf16/f16 `B` 64 on sm_90, sm_100, sm_100a).
//!
//! The two CTAs of a cluster take the same group of output blocks and
//! adjacent token tiles (`2·p + rank`; the second tile of an odd count
//! still runs, its rows `n ≥ N` zero-filled and never stored). Their
//! schedules depend only on the topology and the group, so they stage the
//! same values blocks in the same order: per step each CTA issues the rows
//! of parity `rank` of the taken blocks as bulk copies (one a padded row,
//! `B·e` bytes, 16-byte aligned) multicast into both CTAs' shared memory,
//! completing on the buffer's "full" mbarrier in each. Thread 0 announces
//! the step's bytes into its own CTA (`B·B·e` per taken block, both CTAs'
//! rows); every thread waits on the buffer's phase. `x` stays on
//! `cp.async`, per CTA.
//!
//! Buffer reuse across the CTAs: after a step's MMAs every thread fences
//! its generic reads before the async proxy's writes and arrives at the
//! cluster barrier (release); the wait comes just before the next copies
//! into a buffer (one step later), after the CTA's own `x` copies. Each
//! CTA tile's prologue waits and arrives once more (nothing read in
//! between), the kernel arrives once after the barriers' init and waits
//! once before it exits, so arrives and waits alternate.

use crate::dsl::types::{Pred, Reg, U32, U64};
use crate::dsl::{ClusterArrive, Cmp, KernelBuilder, Label, SharedMbarrier, Var};
use crate::target::Sm;

use super::super::host::TcPrecision;

use super::common::{gptr, log2, sptr};
use super::grouped::{GroupTile, NONE, THREADS, pick};
use super::shape::Shape;

/// CTAs of a cluster.
pub(super) const CLUSTER: u32 = 2;

/// Bytes of the kernel's static shared memory (the two mbarriers), which
/// the schedule window leaves beside the dynamic shared memory.
pub(super) const STATIC_BYTES: u64 = 16;

/// Whether the grouped forward of `prec` at `B` = `bs` multicasts its
/// values blocks on `sm`: bf16/f16 at `B` = 64 only. At `B` 16/32 and in
/// tf32 the roofline model reads the cluster kernel slower (its weighted
/// SASS/PTX ratio rises from about 0.6 to 1.45: a bulk copy takes its
/// addresses in uniform registers, so ptxas issues a copy whose addresses
/// differ per lane once per lane, a loop of about 9 SASS a lane;
/// docs/perf.md), so those keep the kernel without a cluster.
pub(super) fn enabled(sm: Sm, prec: TcPrecision, bs: u32) -> bool {
    matches!(sm, Sm::Sm90 | Sm::Sm100 | Sm::Sm100a) && prec != TcPrecision::Tf32 && bs == 64
}

/// Per-thread constants of the multicast staging.
pub(super) struct Mc {
    /// `full[0]` (8 bytes each)
    full: Reg<U32>,
    pub(super) rank: Reg<U32>,
    /// thread 0
    first: Reg<Pred>,
    /// the thread has a row (`tid < G·B / 2`): block `gi`, source offset
    /// in a values block, destination offset in a values buffer
    on: Reg<Pred>,
    gi: Reg<U32>,
    src: Reg<U64>,
    dst: Reg<U32>,
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

/// Declare and initialise the barriers, the thread's row, and the kernel's
/// first cluster arrive.
pub(super) fn setup(b: &mut KernelBuilder, sh: &Shape, gt: &GroupTile, tid: Reg<U32>) -> Mc {
    let rows = gt.g * sh.bs;
    assert!(rows.is_multiple_of(CLUSTER) && rows / CLUSTER <= THREADS);
    let bars = b.shared_array::<U64>("full", 2, 8);
    let full = b.shared_elem(&bars, 0u32).reg;
    let rank = b.cluster_ctarank();
    let first = b.setp(Cmp::Eq, tid, 0u32);
    b.if_(first, |b| {
        for i in 0..2u32 {
            let a = b.add(full, 8 * i);
            b.mbarrier_init(SharedMbarrier { reg: a }, 1u32);
        }
        b.fence_mbarrier_init();
    });
    let on = b.setp(Cmp::Lt, tid, rows / CLUSTER);
    let u = b.mad_lo(tid, CLUSTER, rank);
    let gi = b.shr(u, log2(sh.bs));
    let row = b.and(u, sh.bs - 1);
    let src = b.mul_wide_u32(row, sh.rowb);
    let dst = b.mul_lo(gi, sh.vbuf());
    let dst = b.mad_lo(row, sh.pitch, dst);
    let phases = b.var::<U32>(0u32);
    b.cluster_arrive(ClusterArrive::Release);
    let (slow, resume) = (b.label(), b.label());
    let (wbar, wpar) = (b.var::<U32>(0u32), b.var::<U32>(0u32));
    Mc {
        full,
        rank,
        first,
        on,
        gi,
        src,
        dst,
        phases,
        slow,
        resume,
        wbar,
        wpar,
    }
}

fn bar(b: &mut KernelBuilder, mc: &Mc, buf: Reg<U32>) -> SharedMbarrier {
    SharedMbarrier {
        reg: b.mad_lo(buf, 8u32, mc.full),
    }
}

/// Thread 0 announces the step's bytes on buffer `buf`'s barrier; each
/// thread with a row multicasts it from the slot its block took (none: no
/// copy) into `vbase` (buffer `buf`'s values area).
pub(super) fn issue_values(
    b: &mut KernelBuilder,
    sh: &Shape,
    mc: &Mc,
    values: Reg<U64>,
    taken: &[Reg<U32>],
    vbase: Reg<U32>,
    buf: Reg<U32>,
) {
    let fb = bar(b, mc, buf);
    b.if_(mc.first, |b| {
        let mut bytes = b.mov(0u32);
        for &s in taken {
            let t = b.setp(Cmp::Ne, s, NONE);
            let more = b.add(bytes, sh.bs * sh.rowb);
            bytes = b.selp(t, more, bytes);
        }
        let _ = b.mbarrier_arrive_expect_tx(fb, bytes);
    });
    b.if_(mc.on, |b| {
        let slot = pick(b, taken, mc.gi);
        let go = b.setp(Cmp::Ne, slot, NONE);
        b.if_(go, |b| {
            let vb = b.mul_wide_u32(slot, sh.bs * sh.rowb);
            let vb = b.add(vb, values);
            let s = b.add(vb, mc.src);
            let d = b.add(vbase, mc.dst);
            b.cp_async_bulk_multicast(sptr::<U32>(d), gptr(s), sh.rowb, fb, 0b11u32);
        });
    });
}

/// Every thread waits for buffer `buf`'s current phase (its bulk copies
/// have landed) and flips the buffer's parity: one `try_wait`, and the
/// retry loop out of line ([`slow_path`]) when it fails; the warp
/// reconverges (`bar.warp.sync`) before its MMAs.
pub(super) fn wait_full(b: &mut KernelBuilder, mc: &Mc, buf: Reg<U32>) {
    let fb = bar(b, mc, buf);
    let ph = b.get(&mc.phases);
    let par = b.shr(ph, buf);
    let par = b.and(par, 1u32);
    b.set(&mc.wbar, fb.reg);
    b.set(&mc.wpar, par);
    let done = b.mbarrier_try_wait_parity(fb, par);
    b.bra_if(done, true, mc.slow);
    b.place(mc.resume);
    b.bar_warp_sync(u32::MAX);
    let bit = b.shl(1u32, buf);
    let ph = b.xor(ph, bit);
    b.set(&mc.phases, ph);
}

/// After a step's reads of a buffer: fence them before the async proxy's
/// writes, and arrive at the cluster barrier (release).
pub(super) fn release(b: &mut KernelBuilder) {
    b.fence_proxy_async_shared();
    b.cluster_arrive(ClusterArrive::Release);
}

/// The end of the kernel: `ret`, then the wait's retry loop (see
/// [`Mc::slow`]), which branches back to the step.
pub(super) fn slow_path(b: &mut KernelBuilder, mc: &Mc) {
    b.ret();
    b.place(mc.slow);
    let fb = SharedMbarrier {
        reg: b.get(&mc.wbar),
    };
    let par = b.get(&mc.wpar);
    b.mbarrier_wait(fb, par);
    b.bra(mc.resume);
}
