//! The values blocks of the grouped forward and grad-input multicast
//! across a cluster of two CTAs by tensor-map copies (issue 31, the L2
//! step; bf16/f16 `B` 32 and 64 on sm_90, sm_100, sm_100a: [`enabled`],
//! [`grad_input_enabled`]; built for `B` 16 too). Both passes use the
//! same map: grad-input's `B[k][f]` = `values[s, k, f]` is the block's
//! row `k`, read by `ldmatrix.trans` at [`lanes`]' addresses.
//!
//! The two CTAs of a cluster take the same group of output blocks and
//! adjacent token tiles (`2·p + rank`; the second tile of an odd count
//! still runs, its rows `n ≥ N` zero-filled and never stored). Their
//! schedules depend only on the topology and the group, so they stage the
//! same values blocks in the same order. A 2D tensor map over the values
//! array (rows of `B` elements, `R·K·B` rows; box `B × B`, the swizzle
//! whose span is a row: 32, 64, 128 bytes at bf16/f16 `B` 16, 32, 64;
//! [`values_map`]) lets **one** thread copy a whole block: per step
//! the lane `elect.sync` picks in warp 0 of rank `r` issues
//! `cp.async.bulk.tensor` multicast (mask
//! `0b11`) of the taken blocks `g ≡ r (mod 2)`, at coordinates `(0,
//! slot·B)`, into block `g`'s unpadded slot of the buffer in both CTAs'
//! shared memory (aligned to the swizzle's repeat), completing on the
//! buffer's "full" mbarrier in each. The same lane announces the step's
//! bytes into its own CTA (`B·B·e` per taken block, both CTAs' blocks); every
//! thread waits on the buffer's phase. `ldmatrix` reads the swizzled rows
//! at [`b_lanes`]' addresses. `x` stays on `cp.async`, per CTA.
//!
//! Buffer reuse across the CTAs: after a step's MMAs every thread fences
//! its generic reads before the async proxy's writes and arrives at the
//! cluster barrier (release); the wait comes just before the next copies
//! into a buffer (one step later), after the CTA's own `x` copies. Each
//! CTA tile's prologue waits and arrives once more (nothing read in
//! between), the kernel arrives once after the barriers' init and waits
//! once before it exits, so arrives and waits alternate.

use crate::dsl::types::{Pred, Reg, U32, U64};
use crate::dsl::{ClusterArrive, Cmp, KernelBuilder, Label, SharedMbarrier, TensorMapRef, Var};
use crate::target::Sm;
use crate::tensor_map::{Swizzle, TensorDataType, TiledDesc};

use super::super::host::TcPrecision;

use super::common::sptr;
use super::grouped::{GroupTile, NONE};
use super::shape::Shape;

/// CTAs of a cluster.
pub(super) const CLUSTER: u32 = 2;

/// Bytes of the kernel's static shared memory (the two mbarriers), which
/// the schedule window leaves beside the dynamic shared memory.
pub(super) const STATIC_BYTES: u64 = 16;

/// Whether the grouped forward of `prec` at `B` = `bs` multicasts its
/// values blocks on `sm` (sm_90, sm_100, sm_100a): bf16/f16 at `B` 32 and
/// 64, where the roofline model reads the cluster kernel faster (H200,
/// 50 %: `B` 32 43.1 → 38.4 µs, `B` 64 39.4 → 23.7 µs; docs/perf.md). The
/// kernel is built and correct at `B` 16 too ([`buildable`]; tested on
/// the simulator), but no roofline problem measures `B` 16, so it keeps
/// the kernel without a cluster. The copies are issued by the lane
/// `elect.sync` picks in warp 0: under a `tid == 0` branch ptxas wrapped
/// each tensor copy in a loop over the active lanes (`ELECT` …
/// `BRA.U.ANY`), which took the step loop out of the model's innermost
/// loops. tf32 rounds its values at staging, so they cannot land by a
/// tensor copy unchanged: it keeps the kernel without a cluster (sm_120
/// lowers the multicast to a software loop: no cluster there either).
pub(super) fn enabled(sm: Sm, prec: TcPrecision, bs: u32) -> bool {
    buildable(sm, prec, bs) && bs >= 32
}

/// Whether the grouped grad-input of `prec` at `B` = `bs` multicasts its
/// values blocks on `sm`: the forward's rule ([`enabled`]; the same map,
/// each block's rows `k` read by `ldmatrix.trans` through the swizzle,
/// [`lanes`]), where the roofline model reads the cluster kernel faster
/// (H200, 50 %: `B` 32 47.4 → 35.2 µs, `B` 64 43.8 → 24.3 µs;
/// docs/perf.md).
pub(super) fn grad_input_enabled(sm: Sm, prec: TcPrecision, bs: u32) -> bool {
    enabled(sm, prec, bs)
}

/// Whether the cluster kernel exists for `prec` at `B` = `bs` on `sm`
/// (forward and grad-input): bf16/f16 at every `B` on sm_90, sm_100,
/// sm_100a.
pub(super) fn buildable(sm: Sm, prec: TcPrecision, bs: u32) -> bool {
    matches!(sm, Sm::Sm90 | Sm::Sm100 | Sm::Sm100a)
        && prec != TcPrecision::Tf32
        && matches!(bs, 16 | 32 | 64)
}

/// The shared-memory swizzle of a values block whose rows are `rowb`
/// bytes (the span equals the row: 32, 64 or 128 bytes).
pub(super) fn swizzle(rowb: u32) -> Swizzle {
    match rowb {
        32 => Swizzle::B32,
        64 => Swizzle::B64,
        _ => Swizzle::B128,
    }
}

/// Bytes the values area's start may move up to reach the swizzle's
/// repeat (the dynamic shared memory is only 16-byte aligned).
pub(super) fn align_slack(rowb: u32) -> u64 {
    u64::from(swizzle(rowb).pattern_bytes())
}

/// The tensor map's description of the values array at `address` (`u16`
/// elements of `prec`, `slots` = `R·K` blocks of `B × B` = `bs`): rows of
/// `B` elements, box `B × B`, the swizzle whose span is a row (32, 64 or
/// 128 bytes).
pub fn values_map(prec: TcPrecision, bs: u32, address: u64, slots: u64) -> TiledDesc {
    let dtype = match prec {
        TcPrecision::F16 => TensorDataType::F16,
        TcPrecision::Bf16 => TensorDataType::Bf16,
        TcPrecision::Tf32 => TensorDataType::F32,
    };
    let e = u64::from(dtype.size_bytes());
    let b = u64::from(bs);
    TiledDesc::new(dtype, address, &[b, slots * b], &[b * e], &[bs, bs])
        .swizzle(swizzle(bs * e as u32))
}

/// Per-thread constants of the multicast staging.
pub(super) struct Mc {
    /// `full[0]` (8 bytes each)
    full: Reg<U32>,
    pub(super) rank: Reg<U32>,
    /// warp 0 (whose elected lane issues a step's copies)
    warp0: Reg<Pred>,
    /// rank 1
    odd: Reg<Pred>,
    map: TensorMapRef,
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

/// Declare and initialise the barriers and the kernel's first cluster
/// arrive.
pub(super) fn setup(b: &mut KernelBuilder, gt: &GroupTile, tid: Reg<U32>, map: TensorMapRef) -> Mc {
    assert!(gt.g.is_multiple_of(CLUSTER));
    let bars = b.shared_array::<U64>("full", 2, 8);
    let full = b.shared_elem(&bars, 0u32).reg;
    let rank = b.cluster_ctarank();
    let first = b.setp(Cmp::Eq, tid, 0u32);
    let warp0 = b.setp(Cmp::Lt, tid, 32u32);
    let odd = b.setp(Cmp::Ne, rank, 0u32);
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
    Mc {
        full,
        rank,
        warp0,
        odd,
        map,
        phases,
        slow,
        resume,
        wbar,
        wpar,
    }
}

/// The values area's start (buffer 0, block 0): `at` rounded up to the
/// swizzle's repeat ([`align_slack`] bytes are reserved for it).
pub(super) fn values_base(b: &mut KernelBuilder, sh: &Shape, at: Reg<U32>) -> Reg<U32> {
    let p = swizzle(sh.rowb).pattern_bytes();
    let up = b.add(at, p - 1);
    b.and(up, !(p - 1))
}

/// The lane's `ldmatrix` row address of each MMA chunk `kc` of a values
/// block at `vs0` (buffer 0, block 0) in the forward orientation: row `f`
/// (the lane's feature within the block), 16-byte chunk `mid + 2·kc`,
/// through the swizzle. Every block and buffer offset, and the 16 rows
/// of a fragment pair, are multiples of the swizzle's repeat, so they add
/// to these unchanged.
pub(super) fn b_lanes(
    b: &mut KernelBuilder,
    sh: &Shape,
    vs0: Reg<U32>,
    f: Reg<U32>,
    mid: Reg<U32>,
) -> Vec<Reg<U32>> {
    lanes(b, sh, vs0, f, mid, sh.chunks())
}

/// The lane's `ldmatrix` row address in a values block at `vs0` of row
/// `row`, 16-byte chunks `c0 + 2·i` for `i < n`, through the swizzle: the
/// forward's [`b_lanes`] (row `f`, a chunk per MMA chunk), or grad-input's
/// (`.trans`: row `k` = `mid·8 + l8`, a chunk per pair of 8-feature
/// fragments; its MMA chunks are 16 rows apart, whole repeats).
pub(super) fn lanes(
    b: &mut KernelBuilder,
    sh: &Shape,
    vs0: Reg<U32>,
    row: Reg<U32>,
    c0: Reg<U32>,
    n: u32,
) -> Vec<Reg<U32>> {
    let s = swizzle(sh.rowb);
    assert!((16 * sh.rowb).is_multiple_of(s.pattern_bytes()));
    (0..n)
        .map(|i| {
            let c = b.add(c0, 2 * i);
            b.swizzled_chunk(sptr::<U32>(vs0), s, sh.rowb, row, c).reg
        })
        .collect()
}

fn bar(b: &mut KernelBuilder, mc: &Mc, buf: Reg<U32>) -> SharedMbarrier {
    SharedMbarrier {
        reg: b.mad_lo(buf, 8u32, mc.full),
    }
}

/// One lane of warp 0, chosen by `elect.sync`, announces the step's bytes
/// on buffer `buf`'s barrier and multicasts the taken blocks of its rank's
/// parity, each from the slot it took (none: no copy), into `vbase`
/// (buffer `buf`'s values area). Under `elect.sync` ptxas knows one lane
/// issues the copies, so it emits each `UTMALDG` once, without the loop
/// over active lanes it builds under a `tid == 0` branch.
pub(super) fn issue_values(
    b: &mut KernelBuilder,
    sh: &Shape,
    mc: &Mc,
    taken: &[Reg<U32>],
    vbase: Reg<U32>,
    buf: Reg<U32>,
) {
    let fb = bar(b, mc, buf);
    b.if_(mc.warp0, |b| {
        let (_, leader) = b.elect_sync(u32::MAX);
        b.if_(leader, |b| issue_elected(b, sh, mc, taken, vbase, fb));
    });
}

/// The elected lane's part of [`issue_values`].
fn issue_elected(
    b: &mut KernelBuilder,
    sh: &Shape,
    mc: &Mc,
    taken: &[Reg<U32>],
    vbase: Reg<U32>,
    fb: SharedMbarrier,
) {
    let mut bytes = b.mov(0u32);
    for &s in taken {
        let t = b.setp(Cmp::Ne, s, NONE);
        let more = b.add(bytes, sh.bs * sh.rowb);
        bytes = b.selp(t, more, bytes);
    }
    let _ = b.mbarrier_arrive_expect_tx(fb, bytes);
    // block `2·j + rank`
    let own = b.mad_lo(mc.rank, sh.vbuf(), vbase);
    for (j, pair) in taken.chunks(2).enumerate() {
        let slot = b.selp(mc.odd, pair[1], pair[0]);
        let go = b.setp(Cmp::Ne, slot, NONE);
        b.if_(go, |b| {
            let row = b.shl(slot, sh.bs.trailing_zeros());
            let row = b.u32_as_s32(row);
            let d = b.add(own, 2 * j as u32 * sh.vbuf());
            let coords = [0i32.into(), row.into()];
            b.cp_async_bulk_tensor_multicast(sptr::<U32>(d), mc.map, &coords, fb, 0b11u32);
        });
    }
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
