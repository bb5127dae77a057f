//! The values blocks of the grouped forward and grad-input multicast
//! across a cluster of [`CLUSTER`] (4) CTAs by tensor-map copies (issue 31, the L2
//! step; bf16/f16 `B` 32 and 64, tf32 `B` 32, on sm_90, sm_100, sm_100a: [`enabled`],
//! [`grad_input_enabled`]; built for `B` 16 too). Both passes use the
//! same map: grad-input's `B[k][f]` = `values[s, k, f]` is the block's
//! row `k`, read by `ldmatrix.trans` at [`lanes`]' addresses.
//!
//! (The bf16/f16 forward at `B` 32 and 64 uses clusters of 8 instead,
//! [`GRID`]: 2 token tiles × 4 groups, the values' multicast mask the 2
//! CTAs of a group, the input tile multicast by group 0's CTA to the 4
//! CTAs of its token tile, the union schedule; what follows describes
//! the [`LINE`] of four, and holds for a GRID with "the CTAs of a group"
//! for the values and "its token tile's CTAs" for the input tile.)
//!
//! The four CTAs of a cluster take the same group of output blocks and
//! adjacent token tiles (`4·p + rank`; where the count is not a multiple
//! of 4 the last run's one to three tiles past it still run, their rows
//! `n ≥ N` zero-filled and never stored). Their
//! schedules depend only on the topology and the group, so they stage the
//! same values blocks in the same order. A 2D tensor map over the values
//! array (rows of `B` elements, `R·K·B` rows; box `B × B`, the swizzle
//! whose span is a row: 32, 64, 128 bytes at bf16/f16 `B` 16, 32, 64;
//! 128 bytes at tf32 `B` 32 (f32 elements, landed unrounded: each tile
//! is rounded by `cvt.rna` in shared memory once it has landed,
//! [`round_in_place`], the same bits as rounding at staging);
//! [`values_map`]) lets **one** thread copy a whole block: per step
//! the lane `elect.sync` picks in warp 0 of rank `r` issues
//! `cp.async.bulk.tensor` multicast (mask
//! `0b1111`) of the taken blocks `g ≡ r (mod 4)` (`G` is a multiple of
//! 4), at coordinates `(0, slot·B)`, into block `g`'s unpadded slot of
//! the buffer in all four CTAs'
//! shared memory (aligned to the swizzle's repeat), completing on the
//! buffer's "full" mbarrier in each. The same lane announces the step's
//! bytes into its own CTA (`B·B·e` per taken block, every rank's blocks,
//! and its input tile's); every
//! thread waits on the buffer's phase. `ldmatrix` reads the swizzled rows
//! at [`b_lanes`]' addresses.
//!
//! The input tile of a step (`tokens × B` elements of block `m`: `x`
//! forward, `gy` grad-input) lands the same way ([`Mc::xmap`]): a second
//! map over the input (`[N, C·B]` or `[N, R·B]`; box `B × tokens`, the
//! same swizzle; [`input_map`]), and
//! the elected lane of each CTA issues **one** copy (no multicast: each
//! CTA has its own token tile) at `(m·B, n0)` into the buffer's tile
//! (aligned to the swizzle's repeat), completing on the same barrier:
//! its `arrive.expect_tx` counts the tile's `tokens·B·e` bytes too, rows
//! `n ≥ N` included (the copy fills them with zeros and counts them,
//! PTX ISA "Tensor Memory Access"; the simulator models the same).
//! `ldmatrix` reads the `A` rows at [`a_lanes`]' addresses (row = token,
//! 16-byte chunk = `k/8`, through the swizzle). The map's address must
//! be 16-byte aligned and its row stride a multiple of 16 bytes (`C·B·e`
//! always is at `B` ≥ 16): the launch encodes it before anything is
//! queued, so a misaligned view of `x` is the map's typed error.
//!
//! The same lane stores the step's `G` taken slots into `took[buf]`
//! (static shared memory, [`Mc::took`]); after the step's `bar.sync`
//! each warp reads its sub-tiles' slots there with one load each
//! ([`took`]) instead of picking them out of the `G` slot registers by a
//! runtime index. (`took` is declared before the barriers: declared
//! after them, ptxas wrapped the barriers' `tid == 0` initialisation in
//! a loop over the active lanes.)
//!
//! Buffer reuse across the CTAs (the protocol in `cluster_copy.rs`):
//! after a step's MMAs every thread fences
//! its generic reads before the async proxy's writes
//! (`fence.proxy.async`: of the values blocks and, where it comes by tensor
//! map, of the input tile, which the CTA's next `bar.sync` then orders
//! before its own lane's next copy into it) and arrives at the
//! cluster barrier (release); the wait comes just before the next copies
//! into a buffer (one step later), before the elected lane's input-tile
//! and values copies. Each
//! CTA tile's prologue waits and arrives once more (nothing read in
//! between), the kernel arrives once after the barriers' init and waits
//! once before it exits, so arrives and waits alternate.

use crate::dsl::types::{Pred, Reg, U32};
use crate::dsl::{Cmp, KernelBuilder, SharedMbarrier, TensorMapRef, Var};
use crate::target::Sm;
use crate::tensor_map::{Swizzle, TensorDataType, TiledDesc};

use super::super::host::TcPrecision;

use super::cluster_copy::{self as cc, Full};
use super::common::{round16_in_place, sptr};
use super::grouped::{GroupTile, NONE};
use super::shape::Shape;

/// CTAs of a cluster: 4, where the roofline model reads the kernels
/// faster than with 2 at every row it measures (H200: the values read
/// from L2 once per four token tiles, not two; docs/perf.md, 2026-11-30).
pub(super) const CLUSTER: u32 = 4;

/// The shape of a cluster: `tok` adjacent token tiles × `grps`
/// consecutive groups of `G` output blocks (rank `t + tok·q`: token tile
/// `t`, group `q`). A values block is multicast to the `tok` CTAs of its
/// group; with `grps > 1` the input tile of a step is multicast to the
/// `grps` CTAs of its token tile (by the CTA of group 0), and all
/// `tok·grps` CTAs walk the union schedule of the cluster's `grps·G`
/// rows (`grouped_union`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Layout {
    pub(super) tok: u32,
    pub(super) grps: u32,
}

impl Layout {
    /// CTAs of the cluster.
    pub(super) fn ctas(self) -> u32 {
        self.tok * self.grps
    }
}

/// Four token tiles of one group (the grad-input, tf32 and `B` 16
/// forward clusters).
pub(super) const LINE: Layout = Layout {
    tok: CLUSTER,
    grps: 1,
};

/// Two token tiles × four groups: the bf16/f16 forward at `B` 32 and 64
/// (issue 31 at 25 %: `x` read from L2 once per four groups, the values
/// once per two token tiles; H200, modeled, docs/perf.md 2026-12-01).
pub(super) const GRID: Layout = Layout { tok: 2, grps: 4 };

/// The forward's cluster layout for `prec` at `B` = `bs` (where
/// [`enabled`]).
pub(super) fn forward_layout(prec: TcPrecision, bs: u32) -> Layout {
    if prec != TcPrecision::Tf32 && bs >= 32 {
        GRID
    } else {
        LINE
    }
}

/// Bytes of the kernel's static shared memory (the two mbarriers, the
/// taken slots of both buffers, [`Mc::took`]: `2·G` words, `G` ≤ 16, and
/// the schedule's broadcast, [`Mc::next`]: `4 + G` words), which the
/// schedule window leaves beside the dynamic shared memory.
pub(super) const STATIC_BYTES: u64 = 16 + 2 * 16 * 4 + (4 + 16) * 4;

/// [`STATIC_BYTES`] of a cluster of layout `lay` for groups of `g`
/// output blocks: the union schedule's broadcast holds `4 + grps·G` words
/// ([`LINE`]: `STATIC_BYTES`).
pub(super) fn static_bytes(lay: Layout, g: u32) -> u64 {
    if lay == LINE {
        STATIC_BYTES
    } else {
        16 + 2 * 16 * 4 + u64::from(4 + lay.grps * g) * 4
    }
}

/// Whether the grouped forward of `prec` at `B` = `bs` multicasts its
/// values blocks on `sm` (sm_90, sm_100, sm_100a): bf16/f16 at `B` 32 and
/// 64, where the roofline model reads the cluster kernel faster (H200,
/// 50 %, the tensor copies' L2 bytes counted, clusters of 4, warp 0
/// alone merging: `B` 32 28.9 µs, L2 205.1 MB against 305.7 MB without a
/// cluster; `B` 64 28.5 µs, 202.0 MB; docs/perf.md). The
/// kernel is built and correct at `B` 16 too ([`buildable`]; tested on
/// the simulator), but no roofline problem measures `B` 16, so it keeps
/// the kernel without a cluster. The copies are issued by the lane
/// `elect.sync` picks in warp 0: under a `tid == 0` branch ptxas wrapped
/// each tensor copy in a loop over the active lanes (`ELECT` …
/// `BRA.U.ANY`), which took the step loop out of the model's innermost
/// loops. tf32 at `B` 32 too (G 8; H200, 50 %: 80.9 → 55.6 µs modeled,
/// L2 574 → 373 MB; its f32 tiles land unrounded and are rounded in
/// shared memory, [`round_in_place`]); tf32 `B` 64's group of 2
/// is no multiple of the cluster, and its 256-byte rows no swizzle span
/// (sm_120 lowers the multicast to a software loop: no cluster there).
pub(super) fn enabled(sm: Sm, prec: TcPrecision, bs: u32) -> bool {
    buildable(sm, prec, bs) && bs >= 32
}

/// Whether the grouped grad-input of `prec` at `B` = `bs` multicasts its
/// values blocks on `sm`: the forward's rule ([`enabled`]; the same map,
/// each block's rows `k` read by `ldmatrix.trans` through the swizzle,
/// [`lanes`]), where the roofline model reads the cluster kernel faster
/// (H200, 50 %, clusters of 4, `gy` by tensor map and warp 0 alone
/// merging: `B` 32 47.4 → 28.9 µs, `B` 64 43.8 → 28.6 µs; docs/perf.md).
pub(super) fn grad_input_enabled(sm: Sm, prec: TcPrecision, bs: u32) -> bool {
    enabled(sm, prec, bs)
}

/// Whether the cluster kernel exists for `prec` at `B` = `bs` on `sm`
/// (forward and grad-input): bf16/f16 at every `B`, tf32 at `B` 32 (rows
/// of 128 bytes, a swizzle span; `G` 8; a values block a whole number of
/// 16-byte units a thread for [`round_in_place`]),
/// on sm_90, sm_100, sm_100a.
pub(super) fn buildable(sm: Sm, prec: TcPrecision, bs: u32) -> bool {
    matches!(sm, Sm::Sm90 | Sm::Sm100 | Sm::Sm100a)
        && match prec {
            TcPrecision::Tf32 => bs == 32,
            _ => matches!(bs, 16 | 32 | 64),
        }
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
/// elements of bf16/f16, `f32` of tf32, `slots` = `R·K` blocks of `B × B` = `bs`): rows of
/// `B` elements, box `B × B`, the swizzle whose span is a row (32, 64 or
/// 128 bytes).
pub fn values_map(prec: TcPrecision, bs: u32, address: u64, slots: u64) -> TiledDesc {
    let dtype = dtype(prec);
    let e = u64::from(dtype.size_bytes());
    let b = u64::from(bs);
    TiledDesc::new(dtype, address, &[b, slots * b], &[b * e], &[bs, bs])
        .swizzle(swizzle(bs * e as u32))
}

/// The tensor map's description of the forward's input `x` (or
/// grad-input's `gy`) at `address` (`u16` elements of bf16/f16, `f32` of
/// tf32, `[n, in_width]` row-major; bf16/f16 `B` = `bs` of 16, 32 or 64,
/// tf32 of 32) for CTA tiles of `tokens` rows: box `B ×
/// tokens` (one input block of a token tile), the swizzle whose span is
/// the box's row (32, 64, 128 bytes), rows `n ≥ N` zero-filled by the
/// copy.
pub fn input_map(
    prec: TcPrecision,
    bs: u32,
    tokens: u32,
    address: u64,
    n: u64,
    in_width: u64,
) -> TiledDesc {
    let dtype = dtype(prec);
    let e = u64::from(dtype.size_bytes());
    TiledDesc::new(
        dtype,
        address,
        &[in_width, n],
        &[in_width * e],
        &[bs, tokens],
    )
    .swizzle(swizzle(bs * e as u32))
}

fn dtype(prec: TcPrecision) -> TensorDataType {
    match prec {
        TcPrecision::F16 => TensorDataType::F16,
        TcPrecision::Bf16 => TensorDataType::Bf16,
        TcPrecision::Tf32 => TensorDataType::F32,
    }
}

/// Per-thread constants of the multicast staging.
pub(super) struct Mc {
    /// the buffers' "full" barriers and the wait's state
    pub(super) fl: Full,
    /// the cluster's layout, the CTA's token tile `t` (= its rank in a
    /// [`LINE`]) and group `q` within it
    pub(super) lay: Layout,
    pub(super) t: Reg<U32>,
    pub(super) q: Reg<U32>,
    /// ([`GRID`]) the values' multicast mask (the `tok` CTAs of group
    /// `q`), the input tile's (the `grps` CTAs of token tile `t`), and
    /// whether this CTA issues the input tile (group 0)
    vmask: Option<Reg<U32>>,
    xmask: Option<(Reg<U32>, Reg<Pred>)>,
    /// warp 0 (whose elected lane issues a step's copies, and which
    /// alone runs the schedule's merge: [`publish`])
    pub(super) warp0: Reg<Pred>,
    /// token tile `r` for `r` in `1..tok` (`is_rank[r - 1]`)
    is_rank: Vec<Reg<Pred>>,
    map: TensorMapRef,
    /// the input tile's map ([`input_map`]: `x` forward, `gy`
    /// grad-input)
    xmap: TensorMapRef,
    /// `took[buf][g]` (`G` words a buffer): the slot output block `g`
    /// takes in the step staged into buffer `buf` (none: `u32::MAX`),
    /// stored by the elected lane with the step's copies, so that each
    /// warp reads its sub-tiles' with one load each instead of picking
    /// them from the `G` registers (a `selp` chain a sub-tile)
    pub(super) took: Reg<U32>,
    /// the merge's results warp 0 hands the CTA ([`publish`]): the key
    /// `m` of the step staged into buffer `buf` at word `buf`, whether a
    /// window refill is due after it at word `2 + buf`, and (when one is)
    /// the `G` cursors from word 4
    pub(super) next: Reg<U32>,
    g: u32,
}

/// Declare and initialise the barriers and the kernel's first cluster
/// arrive.
pub(super) fn setup(
    b: &mut KernelBuilder,
    gt: &GroupTile,
    tid: Reg<U32>,
    map: TensorMapRef,
    xmap: TensorMapRef,
    lay: Layout,
) -> Mc {
    assert!(gt.g.is_multiple_of(lay.tok));
    assert!(gt.g <= 16 && gt.g.is_multiple_of(4));
    let took = b.shared_array::<U32>("took", 2 * gt.g, 16);
    let took = b.shared_elem(&took, 0u32).reg;
    let next = b.shared_array::<U32>("next", 4 + lay.grps * gt.g, 16);
    let next = b.shared_elem(&next, 0u32).reg;
    let full = cc::declare(b);
    let rank = b.cluster_ctarank();
    let first = b.setp(Cmp::Eq, tid, 0u32);
    let warp0 = b.setp(Cmp::Lt, tid, 32u32);
    let (t, q) = if lay == LINE {
        (rank, rank)
    } else {
        (
            b.and(rank, lay.tok - 1),
            b.shr(rank, lay.tok.trailing_zeros()),
        )
    };
    let is_rank = (1..lay.tok).map(|r| b.setp(Cmp::Eq, t, r)).collect();
    let (vmask, xmask) = if lay == LINE {
        (None, None)
    } else {
        let run = (1u32 << lay.tok) - 1;
        let qt = b.mul_lo(q, lay.tok);
        let vmask = b.shl(run, qt);
        // ranks t, t + tok, …: the CTAs of token tile `t`
        let every = (0..lay.grps).fold(0u32, |m, j| m | (1 << (j * lay.tok)));
        let xmask = b.shl(every, t);
        (Some(vmask), Some((xmask, b.setp(Cmp::Eq, q, 0u32))))
    };
    let fl = cc::init(b, full, first);
    Mc {
        fl,
        lay,
        t,
        q,
        vmask,
        xmask,
        warp0,
        is_rank,
        map,
        xmap,
        took,
        next,
        g: gt.g,
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

/// tf32 grad-input's `B` addresses in a values block at `vs0` (buffer 0,
/// block 0; `ldmatrix` cannot transpose 32-bit elements, so each lane
/// loads its elements with `ld.shared.b32`): for row `rows[i]` (`t`,
/// `t + 4`) and fragment `ni < per`, 16-byte chunk `c0 + 2·ni` through the
/// swizzle, plus the lane's `within` bytes (`4·(g mod 4)`). Rows `kc·8`
/// further on are whole repeats, so they add to these unchanged.
pub(super) fn tf32_b_lanes(
    b: &mut KernelBuilder,
    sh: &Shape,
    vs0: Reg<U32>,
    rows: [Reg<U32>; 2],
    c0: Reg<U32>,
    within: Reg<U32>,
    per: u32,
) -> Vec<Reg<U32>> {
    let s = swizzle(sh.rowb);
    assert!((8 * sh.rowb).is_multiple_of(s.pattern_bytes()));
    let mut out = Vec::new();
    for row in rows {
        for ni in 0..per {
            let c = b.add(c0, 2 * ni);
            let p = b.swizzled_chunk(sptr::<U32>(vs0), s, sh.rowb, row, c).reg;
            out.push(b.add(p, within));
        }
    }
    out
}

/// The lane's `ldmatrix` row address of each MMA chunk `kc` of a token
/// tile a tensor-map copy landed at `xs0` (buffer 0; rows of `B`
/// elements): row `row` (`wt0 + lane % 16`), 16-byte chunk `hi + 2·kc`
/// (`hi` = `lane / 16`), through the swizzle. The buffer offset and the
/// 16 rows of each further fragment are multiples of the swizzle's
/// repeat, so they add to these unchanged.
pub(super) fn a_lanes(
    b: &mut KernelBuilder,
    sh: &Shape,
    xs0: Reg<U32>,
    row: Reg<U32>,
    hi: Reg<U32>,
) -> Vec<Reg<U32>> {
    let s = swizzle(sh.rowb);
    assert!((16 * sh.rowb).is_multiple_of(s.pattern_bytes()));
    assert!(sh.buf().is_multiple_of(s.pattern_bytes()));
    (0..sh.chunks())
        .map(|kc| {
            let c = b.add(hi, 2 * kc);
            b.swizzled_chunk(sptr::<U32>(xs0), s, sh.rowb, row, c).reg
        })
        .collect()
}

/// One lane of warp 0, chosen by `elect.sync` ([`cc::elected`]),
/// announces the step's bytes on buffer `buf`'s barrier and multicasts the
/// taken blocks `g ≡ rank (mod CLUSTER)`, each from the slot it took
/// (none: no copy), into `vbase` (buffer `buf`'s values area).
pub(super) fn issue_values(
    b: &mut KernelBuilder,
    sh: &Shape,
    mc: &Mc,
    taken: &[Reg<U32>],
    vbase: Reg<U32>,
    buf: Reg<U32>,
    x: Option<XCopy>,
) {
    let fb = cc::bar(b, &mc.fl, buf);
    cc::elected(b, mc.warp0, |b| {
        issue_elected(b, sh, mc, taken, vbase, (fb, buf), x)
    });
}

/// A step's input-tile copy by [`Mc::xmap`]: the box of input block `m`
/// at `(m·B, n0)` into the buffer's token tile (buffer 0's at `tile`,
/// aligned to the swizzle's repeat), in this CTA only.
#[derive(Clone, Copy)]
pub(super) struct XCopy {
    pub(super) tile: Reg<U32>,
    pub(super) m: Reg<U32>,
    pub(super) n0: Reg<U32>,
}

/// The elected lane's part of [`issue_values`].
fn issue_elected(
    b: &mut KernelBuilder,
    sh: &Shape,
    mc: &Mc,
    taken: &[Reg<U32>],
    vbase: Reg<U32>,
    (fb, buf): (SharedMbarrier, Reg<U32>),
    x: Option<XCopy>,
) {
    // the input tile's bytes (rows past `N` filled, and counted), then
    // each taken block's
    let mut bytes = b.mov(if x.is_some() { sh.buf() } else { 0 });
    for &s in taken {
        let t = b.setp(Cmp::Ne, s, NONE);
        let more = b.add(bytes, sh.bs * sh.rowb);
        bytes = b.selp(t, more, bytes);
    }
    let _ = b.mbarrier_arrive_expect_tx(fb, bytes);
    // the slots for the warps' sub-tiles (read after the next `bar.sync`)
    let at = b.mad_lo(buf, 4 * mc.g, mc.took);
    for (j, four) in taken.chunks(4).enumerate() {
        let v = [four[0], four[1], four[2], four[3]];
        b.st_shared_v4(sptr::<U32>(at), 4 * j as i32, v);
    }
    if let Some(x) = x {
        let map = mc.xmap;
        let dst = b.mad_lo(buf, sh.buf(), x.tile);
        let col = b.shl(x.m, sh.bs.trailing_zeros());
        let coords = [b.u32_as_s32(col).into(), b.u32_as_s32(x.n0).into()];
        match mc.xmask {
            None => b.cp_async_bulk_tensor(sptr::<U32>(dst), map, &coords, fb),
            // group 0's CTA multicasts the tile to its token tile's CTAs
            Some((mask, lead)) => b.if_(lead, |b| {
                b.cp_async_bulk_tensor_multicast(sptr::<U32>(dst), map, &coords, fb, mask);
            }),
        }
    }
    // block `tok·j + t`
    let tok = mc.lay.tok;
    let own = b.mad_lo(mc.t, sh.vbuf(), vbase);
    for (j, run) in taken.chunks(tok as usize).enumerate() {
        let mut slot = run[0];
        for (r, &is) in mc.is_rank.iter().enumerate() {
            slot = b.selp(is, run[r + 1], slot);
        }
        let go = b.setp(Cmp::Ne, slot, NONE);
        b.if_(go, |b| {
            let row = b.shl(slot, sh.bs.trailing_zeros());
            let row = b.u32_as_s32(row);
            let d = b.add(own, tok * j as u32 * sh.vbuf());
            let coords = [0i32.into(), row.into()];
            match mc.vmask {
                None => {
                    let mask = (1u32 << CLUSTER) - 1;
                    b.cp_async_bulk_tensor_multicast(sptr::<U32>(d), mc.map, &coords, fb, mask);
                }
                Some(mask) => {
                    b.cp_async_bulk_tensor_multicast(sptr::<U32>(d), mc.map, &coords, fb, mask);
                }
            }
        });
    }
}

/// Whether output block `g` of sub-tile `at` (= [`Mc::took`] `+ 4·g`,
/// the warp's, hoisted) takes an entry in the step of buffer `buf`.
pub(super) fn took(b: &mut KernelBuilder, mc: &Mc, at: Reg<U32>, buf: Reg<U32>) -> Reg<Pred> {
    let a = b.mad_lo(buf, 4 * mc.g, at);
    let slot = b.ld_shared(sptr::<U32>(a), 0);
    b.setp(Cmp::Ne, slot, NONE)
}

/// Warp 0, after its merge of the step staged into buffer `buf`: hand the
/// CTA the step's key `m` and (windowed lists, `need`) whether a refill
/// is due, with the cursors when one is. The other warps read them after
/// the step's `bar.sync` ([`fetch`], [`cursors`]); the words of buffer
/// `buf` are written again two steps later, after two more `bar.sync`s.
pub(super) fn publish(
    b: &mut KernelBuilder,
    mc: &Mc,
    buf: Reg<U32>,
    m: Reg<U32>,
    need: Option<&Var<U32>>,
    cursors: &[Var<U32>],
) {
    let at = b.mad_lo(buf, 4u32, mc.next);
    b.st_shared(sptr::<U32>(at), 0, m);
    if let Some(need) = need {
        let n = b.get(need);
        b.st_shared(sptr::<U32>(at), 2, n);
        let due = b.setp(Cmp::Ne, n, 0u32);
        b.if_(due, |b| {
            for (g, c) in cursors.iter().enumerate() {
                let p = b.get(c);
                b.st_shared(sptr::<U32>(mc.next), 4 + g as i32, p);
            }
        });
    }
}

/// Every thread, after the `bar.sync` that follows warp 0's [`publish`]
/// for buffer `buf`: the step's key `m`, and `need` set.
pub(super) fn fetch(
    b: &mut KernelBuilder,
    mc: &Mc,
    buf: Reg<U32>,
    need: Option<&Var<U32>>,
) -> Reg<U32> {
    let at = b.mad_lo(buf, 4u32, mc.next);
    if let Some(need) = need {
        let n = b.ld_shared(sptr::<U32>(at), 2);
        b.set(need, n);
    }
    b.ld_shared(sptr::<U32>(at), 0)
}

/// Every thread, before a window refill: the cursors warp 0 published
/// with the step that made it due.
pub(super) fn cursors(b: &mut KernelBuilder, mc: &Mc, cursors: &[Var<U32>]) {
    for (g, c) in cursors.iter().enumerate() {
        let p = b.ld_shared(sptr::<U32>(mc.next), 4 + g as i32);
        b.set(c, p);
    }
}

/// tf32: every thread, after buffer `buf`'s copies have landed
/// ([`cc::wait_full`]) and before the `bar.sync` that precedes the MMAs,
/// rounds its share of the buffer's token tile and of each taken values
/// block in place (`cvt.rna.tf32.f32`, 16 bytes at a time), so that each
/// element is rounded once a CTA instead of once a fragment load in
/// every warp that reads it (the same bits: the rounding is per
/// element). Blocks no output block took hold stale data and are left
/// alone; the step's `fence.proxy.async` ([`cc::release`]) orders these
/// writes before the buffer's next tensor copies.
pub(super) fn round_in_place(
    b: &mut KernelBuilder,
    sh: &Shape,
    gt: &GroupTile,
    mc: &Mc,
    (xs0, vs0): (Reg<U32>, Reg<U32>),
    tid: Reg<U32>,
    buf: Reg<U32>,
) {
    let threads = super::grouped::THREADS;
    let (xunits, vunits) = (sh.buf() / 16, sh.vbuf() / 16);
    assert!(xunits.is_multiple_of(threads) && vunits.is_multiple_of(threads));
    let t16 = b.shl(tid, 4u32);
    let xa = b.mad_lo(buf, sh.buf(), xs0);
    let xa = b.add(xa, t16);
    for j in 0..xunits / threads {
        round16_in_place(b, xa, (j * threads * 4) as i32);
    }
    let va = b.mad_lo(buf, gt.g * sh.vbuf(), vs0);
    let va = b.add(va, t16);
    let at = b.mad_lo(buf, 4 * mc.g, mc.took);
    for g in 0..gt.g {
        let slot = b.ld_shared(sptr::<U32>(at), g as i32);
        let go = b.setp(Cmp::Ne, slot, NONE);
        b.if_(go, |b| {
            for j in 0..vunits / threads {
                round16_in_place(b, va, ((g * vunits + j * threads) * 4) as i32);
            }
        });
    }
}
