//! The grouped forward and grad-input kernels (issue 31, the L2 step):
//! one CTA computes a tile of [`GroupTile::tokens`] rows of `N` × the
//! `G·B` output features of [`GroupTile::g`] consecutive output blocks
//! (block rows `r0 .. r0+G` forward, column blocks `c0 .. c0+G`
//! grad-input), staging each input block's tile **once** for all `G`
//! output blocks.
//!
//! # Schedule
//! Each of the `G` output blocks has a list of entries sorted ascending by
//! (input block, slot):
//! * **forward**: row `r`'s slots, ranked in shared memory (each thread
//!   ranks entries `(g, k)` against the row's other slots: key `col[r,k]`
//!   as `u32`, so empty slots, `−1`, sort last and are never taken; ties
//!   by slot), a **window** of `w = min(K, W)` keys and global slot
//!   indices a list ([`window`]: `W` is what the opt-in shared memory
//!   leaves beside the staging). The first window of every list is ranked
//!   at the start of the CTA tile (`K ≤ W`: the whole row, as before the
//!   windows); when a list's head reaches its window's end with entries
//!   left, the CTA ranks that row again and keeps the next `w` ranks (a
//!   CTA-uniform branch after the step's heads are read, between two
//!   `bar.sync`). So no row length is refused, and a row of `K ≤ W` slots
//!   costs what it did;
//! * **grad-input**: column block `c`'s entries of the transposed index,
//!   which are ascending by slot `s = r·K + k`, i.e. by (row block, slot),
//!   read from global memory.
//!
//! A step takes the smallest head key `m` over the `G` lists; every list
//! whose head has key `m` takes that entry (one per output block), the
//! others wait. So each output block sees its entries in its list's order
//! (the contract's), and a duplicate of a block in one row takes a second
//! step on the same input block. Per step the CTA stages the input tile of
//! block `m` (`tokens × B`, `x[n][m·B..]` or `gy[n][m·B..]`) and the values
//! block of each taking entry, `cp.async.cg`, double buffered (the next
//! step's copies are issued before the current step's MMAs, one commit
//! group a step).
//!
//! # Warps
//! [`THREADS`] threads, 8 warps: `warps_tok` along the tokens, the others
//! along the `G·B` features, so a warp tile is `wm × wn`; a warp's
//! features cover whole output blocks (`wn ≥ B`, one sub-tile a block) or
//! part of one (`wn < B`). A warp runs the MMAs of a sub-tile only when its
//! output block takes an entry this step (a warp-uniform branch).
//!
//! # MMA orientation
//! The MMA's `M` is the tokens and its `N` the output features: `A` = the
//! input tile (row-major: `ldmatrix.x4`), `B[k][f]` = `values[s, f, k]`
//! forward (rows of `k`: `ldmatrix.x4` without `.trans`) or `values[s, k,
//! f]` grad-input (`ldmatrix.x4.trans` for bf16/f16). tf32 operands are
//! loaded as raw f32 bits and converted per fragment with
//! `cvt.rna.tf32.f32`; `ldmatrix` cannot transpose 32-bit elements, so
//! tf32 grad-input loads its `B` fragments with `ld.shared.b32` (lane
//! `(g, t)`: `B[t][g]` and `B[t+4][g]` of each 8 × 8 fragment). The
//! products of the block FMA are exact and the pairs keep their `k`
//! order, so which operand is `A` changes no bit. Every staged row is
//! padded by 16 bytes (the 8 row addresses of an `ldmatrix` phase fall
//! in distinct bank groups; the cluster kernel's tensor copies land
//! unpadded and swizzled instead, which does the same); rows `n ≥ N` are
//! copied with `src_size` 0 (zero-filled; by the map's fill in the
//! cluster kernel) and never stored.
//!
//! Shared memory is dynamic (`extern .shared`): two input tiles, two sets
//! of `G` values blocks, and (forward) the `G·w` schedule; its size is
//! [`smem_bytes`].
//!
//! # Clusters (bf16/f16 `B` 32 and 64, tf32 `B` 32; sm_90, sm_100, sm_100a)
//! There the forward and grad-input run in clusters of four CTAs
//! ([`forward_cluster`], [`grad_input_cluster`]; the grad-input builder
//! is in `grouped_gi.rs`): all take the same group and four adjacent
//! token tiles, so their schedules are the same (grad-input's lists are
//! read from the same index entries by all), and the values blocks of a
//! step are read from L2 once a cluster:
//! per step one lane of warp 0 (`elect.sync`) of each CTA issues one
//! tensor-map copy a taken block
//! `g ≡ rank (mod 4)` (a map over the values array, a kernel parameter)
//! multicast into all four CTAs' shared memory, where the block lands
//! unpadded and swizzled (its rows are read through the swizzle),
//! completing on a per-buffer mbarrier; a split cluster barrier keeps a
//! buffer until every peer has read it (module `grouped_mcast`). In the
//! forward the same lane copies its CTA's input tile of the step by one
//! tensor-map copy (no multicast; a second map, over `x`: box `B ×
//! tokens` at `(m·B, n0)`, rows `n ≥ N` zero-filled by the copy), which
//! lands unpadded and swizzled too, on the same mbarrier: no `cp.async`
//! is left in the step, and the `A` fragments' rows are read through the
//! swizzle (`mcast::a_lanes`, one address a chunk, hoisted out of the
//! loops). Grad-input's `gy` tile lands the same way (a map over `gy`,
//! `[N, R·B]`); it reads its blocks' rows `k` by `ldmatrix.trans`
//! through the swizzle and takes its keys `s / K` by a multiply
//! (`grouped_sched::div_by_k`), keeping each list's head in registers
//! until the list takes it. As every copy of a step is the elected
//! lane's, **warp 0 alone** runs the merge (the other warps ran the same
//! `G`-way merge for nothing: about a quarter of the `B` 32 step's
//! issue): it publishes the step's key (and a due window refill, with
//! the cursors) in static shared memory, which the other warps read
//! after the step's `bar.sync` (`mcast::publish`, `mcast::fetch`,
//! `mcast::cursors`); the warps' MMAs read their slots from `took`.
//! The bf16/f16 forward at `B` 32 and 64 runs in clusters of **eight**
//! instead (`mcast::GRID`, issue 31 at 25 %): 2 adjacent token tiles × 4
//! consecutive groups. A values block is multicast to the 2 CTAs of its
//! group, each step's input tile by group 0's CTA to the 4 CTAs of its
//! token tile, so `x` is read from L2 once per four groups (not once per
//! group) and the values once per two token tiles; as the four groups
//! must stage the same input block at each step, every CTA walks the
//! union schedule of the cluster's `4·G` rows, merged one list a lane of
//! warp 0 (module `grouped_union`), and a CTA whose group takes nothing
//! at a step skips its MMAs but joins its copies' barrier and the
//! cluster barriers.
//! tf32 (`B` 32: G 8, rows of 128 bytes) lands its f32 tiles unrounded by
//! maps of f32 elements and rounds each landed tile once a CTA in shared
//! memory by `cvt.rna` (`mcast::round_in_place`, after the buffer's
//! wait, before the step's `bar.sync`); its fragments then load without
//! a conversion (its transposed grad-input `B` fragments by
//! `ld.shared.b32` at lane addresses through the swizzle,
//! `mcast::tf32_b_lanes`): the rounding is per element, so the bits are
//! those of the kernel without a cluster.

use crate::dsl::types::{F32, MmaInput, Pred, Reg, U32, U64};
use crate::dsl::{Cmp, FragC, GlobalPtr, KernelBuilder, PtxModule, TensorMapRef};
use crate::error::Result;
use crate::target::Sm;
use crate::tensor_core::InputFormat;
use std::rc::Rc;

use super::super::host::TcPrecision;
use super::cluster_copy as cc;
use super::common::{gptr, log2, sptr};
use super::grouped_mcast::{self as mcast, Mc};
use super::grouped_sched::{ColLists, Lists, RowLists, advance};
use super::shape::Shape;
use super::{ForwardArgs, ForwardTmaArgs, name};

#[path = "grouped_epilogue.rs"]
mod epilogue;
use epilogue::epilogue;
#[path = "grouped_compute.rs"]
mod compute;
use compute::{ALane, BLane, Sub, compute};
#[path = "grouped_union.rs"]
mod union;
use union::Union;
#[path = "grouped_stage.rs"]
mod stage;
use stage::{VCopy, vcopies};

/// Threads per CTA of the grouped kernels (8 warps).
pub const THREADS: u32 = 256;
const WARPS: u32 = THREADS / 32;
/// No entry (a slot index no topology reaches: `R·K·B·B ≤ u32::MAX`).
pub(super) const NONE: u32 = u32::MAX;

/// The CTA tile of a grouped kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupTile {
    /// Output blocks per CTA (`G`).
    pub g: u32,
    /// Rows of `N` per CTA tile.
    pub tokens: u32,
    /// Warps along the tokens (the others split the `G·B` features).
    pub warps_tok: u32,
}

/// Whether `sm` lets a block opt in to at least 160 KiB of shared memory
/// (sm_80, sm_90, sm_100): the larger tiles.
fn big(sm: Sm) -> bool {
    sm.info().max_smem_per_block_optin >= 160 * 1024
}

/// The tile of the grouped kernels of precision `prec` at block size `bs`
/// on `sm` (the shared memory a block may opt in to picks between two
/// sizes for some): `G·B` = 256 features × 128 tokens where it fits (128
/// f32 accumulators a thread).
pub fn group_tile(prec: TcPrecision, bs: u32, sm: Sm) -> GroupTile {
    let t = |g, tokens, warps_tok| GroupTile {
        g,
        tokens,
        warps_tok,
    };
    match (prec, bs, big(sm)) {
        (TcPrecision::Tf32, 16, _) => t(16, 128, 2),
        (TcPrecision::Tf32, 32, true) => t(8, 128, 2),
        (TcPrecision::Tf32, 32, false) => t(4, 128, 2),
        (TcPrecision::Tf32, _, true) => t(2, 64, 2),
        (TcPrecision::Tf32, _, false) => t(1, 64, 2),
        (_, 16, _) => t(16, 128, 2),
        (_, 32, _) => t(8, 128, 2),
        (_, _, true) => t(4, 128, 2),
        (_, _, false) => t(4, 64, 1),
    }
}

/// The shape of a grouped kernel.
fn shape<T: MmaInput>(prec: TcPrecision, bs: u32, sm: Sm, trans: bool) -> (Shape, GroupTile) {
    let t = group_tile(prec, bs, sm);
    let warp = (t.tokens / t.warps_tok, t.g * bs / (WARPS / t.warps_tok));
    (Shape::new::<T>(prec, bs, 16, t.tokens, warp, trans), t)
}

/// Bytes of a grouped kernel's staging: two input tiles and two sets of
/// `G` values blocks. In clusters (`tma`) the values blocks and the input
/// tiles land unpadded by tensor map, from the swizzle's repeat on.
fn stage_bytes(prec: TcPrecision, bs: u32, sm: Sm, tma: bool) -> u64 {
    let e = if prec == TcPrecision::Tf32 { 4 } else { 2 };
    let pitch = u64::from(bs * e + 16);
    let t = group_tile(prec, bs, sm);
    if tma {
        let row = u64::from(bs * e);
        let vblock = u64::from(bs * bs * e);
        return mcast::align_slack(bs * e)
            + 2 * u64::from(t.tokens) * row
            + 2 * u64::from(t.g) * vblock;
    }
    2 * u64::from(t.tokens) * pitch + 2 * u64::from(t.g * bs) * pitch
}

/// The forward pass's schedule window `W` on `sm`: the ranked entries
/// (a `u32` key and a `u32` slot each) a list keeps in shared memory, as
/// many as the shared memory a block may opt in to leaves beside the
/// staging. A row of `K ≤ W` slots is ranked whole at the start of a CTA
/// tile; a longer one a window at a time.
pub fn window(prec: TcPrecision, bs: u32, sm: Sm) -> u32 {
    // the multicast forward's mbarriers are static shared memory
    let on = mcast::enabled(sm, prec, bs);
    let g = group_tile(prec, bs, sm).g;
    let lay = mcast::forward_layout(prec, bs);
    let fixed = stage_bytes(prec, bs, sm, on) + if on { mcast::static_bytes(lay, g) } else { 0 };
    let free = u64::from(sm.info().max_smem_per_block_optin) - fixed;
    (free / (8 * u64::from(forward_lists(sm, prec, bs)))) as u32
}

/// The forward's lists a CTA keeps: `G`, or in a GRID cluster the
/// cluster's `grps·G` rows (`grouped_union`).
fn forward_lists(sm: Sm, prec: TcPrecision, bs: u32) -> u32 {
    let g = group_tile(prec, bs, sm).g;
    match mcast::enabled(sm, prec, bs) {
        true => mcast::forward_layout(prec, bs).grps * g,
        false => g,
    }
}

/// Bytes of dynamic shared memory of a grouped kernel: the staging, and
/// for the forward pass (`k` slots a row, window `w`) the schedule
/// (`G·min(K, w)` keys and slots).
fn smem_bytes_in(prec: TcPrecision, bs: u32, sm: Sm, forward_kw: Option<(u32, u32)>) -> u64 {
    let g = u64::from(forward_lists(sm, prec, bs));
    let sched = forward_kw.map_or(0, |(k, w)| 8 * g * u64::from(k.min(w)));
    let tma = match forward_kw {
        Some(_) => mcast::enabled(sm, prec, bs),
        None => mcast::grad_input_enabled(sm, prec, bs),
    };
    stage_bytes(prec, bs, sm, tma) + sched
}

/// Bytes of dynamic shared memory of a grouped kernel: the staging, and
/// for the forward pass (`k` slots a row) the schedule (`G·min(K, W)`
/// keys and slots, [`window`]); never more than `sm` lets a block opt in
/// to.
pub fn smem_bytes(prec: TcPrecision, bs: u32, sm: Sm, forward_k: Option<u32>) -> u64 {
    smem_bytes_in(prec, bs, sm, forward_k.map(|k| (k, window(prec, bs, sm))))
}

/// CTAs of a cluster of the grouped forward of `prec` at `B` = `bs` on
/// `sm`: where it multicasts its values blocks by tensor map, 8 at
/// bf16/f16 `B` 32 and 64 (2 adjacent token tiles × 4 consecutive groups,
/// `x` multicast too, the union schedule: `grouped_union`) and 4 at tf32
/// `B` 32 (adjacent token tiles of one group), on sm_90, sm_100, sm_100a;
/// the kernel then takes [`ForwardTmaArgs`], the
/// values as a tensor map of
/// [`forward_values_map`](super::forward_values_map)), else 1. At `B` 16
/// the cluster kernel exists and is tested, but no roofline problem
/// measures it, so it is not used (`grouped_mcast::enabled`).
pub fn forward_cluster(sm: Sm, prec: TcPrecision, bs: u32) -> u32 {
    if mcast::enabled(sm, prec, bs) {
        mcast::forward_layout(prec, bs).ctas()
    } else {
        1
    }
}

/// The forward's cluster as (token tiles, groups) of `G` output blocks:
/// `(tok, grps)` where [`forward_cluster`] > 1 (its product), else `(1,
/// 1)`.
pub fn forward_cluster_shape(sm: Sm, prec: TcPrecision, bs: u32) -> (u32, u32) {
    if mcast::enabled(sm, prec, bs) {
        let lay = mcast::forward_layout(prec, bs);
        (lay.tok, lay.grps)
    } else {
        (1, 1)
    }
}

/// The kernel's operands.
struct Io {
    input: Reg<U64>,
    /// none in the cluster kernel (its values come by the tensor map)
    values: Option<Reg<U64>>,
    out: Reg<U64>,
    n: Reg<U32>,
    in_width: Reg<U32>,
    out_width: Reg<U32>,
    /// output blocks (`R` forward, `C` grad-input)
    blocks: Reg<U32>,
    out_bf16: Reg<U32>,
}

/// `slots[g]` for a runtime `g` (a `selp` chain).
pub(super) fn pick(b: &mut KernelBuilder, slots: &[Reg<U32>], g: Reg<U32>) -> Reg<U32> {
    let mut s = slots[0];
    for (i, &v) in slots.iter().enumerate().skip(1) {
        let is = b.setp(Cmp::Eq, g, i as u32);
        s = b.selp(is, v, s);
    }
    s
}

/// Per-thread constants of the staging.
struct Stage {
    /// input tile: per copy, the source row's address (plus the thread's
    /// chunk) and its `src_size` (16, or 0 past `N`)
    src: Vec<Reg<U64>>,
    size: Vec<Reg<U32>>,
    /// the thread's first input-tile destination (buffer 0); where the
    /// tile comes by tensor map (`mc.xmap`), the tile's start
    xdst: Reg<U32>,
    /// where the tile comes by tensor map: its first row `n0`
    n0: Reg<U32>,
    /// the values area (buffer 0, block 0), and the thread's copies
    vs0: Reg<U32>,
    vcopies: Vec<VCopy>,
    /// the multicast staging (a cluster; `vcopies` is then empty)
    mc: Option<Rc<Mc>>,
}

/// Issue the copies of a step (input block `m`, the taken slots) into
/// buffer `buf`.
#[allow(clippy::too_many_arguments)]
fn issue(
    b: &mut KernelBuilder,
    sh: &Shape,
    gt: &GroupTile,
    io: &Io,
    st: &Stage,
    m: Reg<U32>,
    taken: &[Reg<U32>],
    buf: Reg<U32>,
) {
    if !x_by_map(st) {
        issue_x(b, sh, st, m, buf);
    }
    issue_values(b, sh, gt, io, st, m, taken, buf);
}

/// Whether the input tile lands by a tensor-map copy ([`mcast::XCopy`]).
fn x_by_map(st: &Stage) -> bool {
    st.mc.is_some()
}

/// The input tile's copies of a step (input block `m`) into buffer `buf`.
fn issue_x(b: &mut KernelBuilder, sh: &Shape, st: &Stage, m: Reg<U32>, buf: Reg<U32>) {
    let cb = b.mul_wide_u32(m, sh.rowb);
    let xoff = b.mul_lo(buf, sh.buf());
    let xd = b.add(st.xdst, xoff);
    let rstep = THREADS / sh.cpr;
    for (j, (&src, &size)) in st.src.iter().zip(&st.size).enumerate() {
        let s = b.add(src, cb);
        let d = b.add(xd, j as u32 * rstep * sh.xpitch);
        b.cp_async_cg(sptr::<U32>(d), gptr(s), Some(size.into()));
    }
}

/// The values blocks' copies of a step (the taken slots) into buffer
/// `buf`: the thread's `cp.async` units, or (a cluster) the elected
/// lane's multicast copies, and there the input tile of block `m` too
/// where it comes by tensor map.
#[allow(clippy::too_many_arguments)]
fn issue_values(
    b: &mut KernelBuilder,
    sh: &Shape,
    gt: &GroupTile,
    io: &Io,
    st: &Stage,
    m: Reg<U32>,
    taken: &[Reg<U32>],
    buf: Reg<U32>,
) {
    // the values blocks: the thread's copies, each from the slot its
    // block took (none: no copy)
    let voff = b.mul_lo(buf, gt.g * sh.vbuf());
    let vbase = b.add(st.vs0, voff);
    if let Some(mc) = &st.mc {
        let x = x_by_map(st).then_some(mcast::XCopy {
            tile: st.xdst,
            m,
            n0: st.n0,
        });
        mcast::issue_values(b, sh, mc, taken, vbase, buf, x);
        return;
    }
    let Some(values) = io.values else {
        unreachable!("only the cluster kernel has no values pointer")
    };
    for vc in st.vcopies.iter() {
        let cands: Vec<Reg<U32>> = vc.cands.clone().map(|i| taken[i]).collect();
        let slot = match vc.gi {
            Some(gi) => pick(b, &cands, gi),
            None => cands[0],
        };
        let go = b.setp(Cmp::Ne, slot, NONE);
        b.if_(go, |b| {
            let vb = b.mul_wide_u32(slot, sh.bs * sh.rowb);
            let vb = b.add(vb, values);
            let s = b.add(vb, vc.w16);
            let d = b.add(vbase, vc.doff);
            b.cp_async_cg(sptr::<U32>(d), gptr(s), None);
        });
    }
}

/// Builds a CTA's [`Lists`] from the schedule's shared address and the
/// thread index.
type MakeLists = dyn Fn(&mut KernelBuilder, Reg<U32>, Reg<U32>) -> Box<dyn Lists>;

/// The pass-specific epilogue input: the bias of the forward pass.
struct Bias {
    ptr: GlobalPtr<F32>,
    on: Reg<U32>,
}

#[allow(clippy::too_many_lines)]
fn kernel<T: MmaInput>(
    mut b: KernelBuilder,
    sh: &Shape,
    gt: &GroupTile,
    io: &Io,
    mk_lists: &MakeLists,
    bias: Option<&Bias>,
    map: Option<(TensorMapRef, TensorMapRef, mcast::Layout)>,
) -> Result<PtxModule> {
    let cluster = map.is_some();
    // the input tile by tensor map (the cluster kernels)
    let xmap = map.map(|(_, x, _)| x);
    let smem = b.dynamic_shared::<U32>("smem", 16);
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let w = b.shr(tid, 5u32);
    let wtok = b.rem(w, gt.warps_tok);
    let wfeat = b.div(w, gt.warps_tok);
    let wt0 = b.mul_lo(wtok, sh.wm);
    let wf0 = b.mul_lo(wfeat, sh.wn);
    let g = b.shr(lane, 2u32);
    let t = b.and(lane, 3u32);
    let l16 = b.and(lane, 15u32);
    let l8 = b.and(lane, 7u32);
    let hi16 = b.shr(lane, 4u32);
    let mid = b.shr(lane, 3u32);
    let mid = b.and(mid, 1u32);
    let xs0 = b.shared_elem(&smem, 0u32).reg;
    // a token tile a tensor copy lands is aligned to the swizzle's
    // repeat, and so are the values blocks after both buffers
    let xs0 = if xmap.is_some() {
        mcast::values_base(&mut b, sh, xs0)
    } else {
        xs0
    };
    let vs0 = b.add(xs0, 2 * sh.buf());
    let sched = b.add(vs0, 2 * gt.g * sh.vbuf());
    // A: row wt0 + lane % 16, 16-byte unit lane / 16
    let arow = b.add(wt0, l16);
    let a_lane = if xmap.is_some() {
        ALane::Swizzled(mcast::a_lanes(&mut b, sh, xs0, arow, hi16))
    } else {
        let a_lane = b.mad_lo(arow, sh.xpitch, xs0);
        ALane::Padded(b.mad_lo(hi16, 16u32, a_lane))
    };
    // the warp's sub-tiles: whole blocks (wn ≥ B) or part of one
    let fo = if sh.wn >= sh.bs {
        b.mov(0u32)
    } else {
        b.and(wf0, sh.bs - 1)
    };
    let b_lane = if sh.trans && sh.fmt == InputFormat::Tf32 && cluster {
        // rows k = t and t + 4, feature fo + 8·ni + g (4-byte elements)
        // through the swizzle: one address a (row, fragment)
        let per = sh.bs.min(sh.wn) / 8;
        let g4 = b.and(g, 3u32);
        let g4 = b.shl(g4, 2u32);
        let c0 = b.shr(fo, 2u32);
        let gc = b.shr(g, 2u32);
        let c0 = b.add(c0, gc);
        let rows = [t, b.add(t, 4u32)];
        BLane::Swizzled(mcast::tf32_b_lanes(&mut b, sh, vs0, rows, c0, g4, per))
    } else if sh.trans && sh.fmt == InputFormat::Tf32 {
        // row k = t, feature fo + g (4-byte elements)
        let p = b.mad_lo(t, sh.pitch, vs0);
        let f = b.add(fo, g);
        BLane::Padded(b.mad_lo(f, 4u32, p))
    } else if sh.trans {
        let k = b.mad_lo(mid, 8u32, l8);
        if cluster {
            // row k, chunk `hi16 + fo/8` (+ 2 a fragment pair)
            let fc = b.shr(fo, 3u32);
            let c0 = b.add(hi16, fc);
            let n = sh.bs.min(sh.wn) / 16;
            BLane::Swizzled(mcast::lanes(&mut b, sh, vs0, k, c0, n))
        } else {
            let p = b.mad_lo(k, sh.pitch, vs0);
            let f = b.mad_lo(hi16, 8u32, fo);
            BLane::Padded(b.mad_lo(f, sh.e, p))
        }
    } else {
        let f = b.mad_lo(hi16, 8u32, l8);
        let f = b.add(f, fo);
        if cluster {
            BLane::Swizzled(mcast::b_lanes(&mut b, sh, vs0, f, mid))
        } else {
            let p = b.mad_lo(f, sh.pitch, vs0);
            BLane::Padded(b.mad_lo(mid, 16u32, p))
        }
    };
    let g0 = b.shr(wf0, log2(sh.bs));
    let per = (sh.bs.min(sh.wn) / 8) as usize;
    let subs: Vec<Sub> = (0..(sh.wn / sh.bs).max(1))
        .map(|h| Sub {
            g: b.add(g0, h),
            nts: h as usize * per..(h as usize + 1) * per,
        })
        .collect();
    // staging: the thread's chunk of a row and first row
    let ch = b.and(tid, sh.cpr - 1);
    let row0 = b.shr(tid, log2(sh.cpr));
    let xdst = if xmap.is_some() {
        xs0
    } else {
        let xdst = b.mad_lo(row0, sh.xpitch, xs0);
        b.mad_lo(ch, 16u32, xdst)
    };
    let ch16 = b.shl(ch, 4u32);
    let ch16 = b.u32_to_u64(ch16);
    let last = b.sub(io.n, 1u32);
    let copies = sh.tokens * sh.cpr / THREADS;
    let rstep = THREADS / sh.cpr;
    let ntiles = b.add(io.n, sh.tokens - 1);
    let ntiles = b.shr(ntiles, log2(sh.tokens));
    let groups = b.add(io.blocks, gt.g - 1);
    let groups = b.div(groups, gt.g);
    let total = b.mul_lo(ntiles, groups);
    let lists = mk_lists(&mut b, sched, tid);
    let mc = map.map(|(m, x, lay)| Rc::new(mcast::setup(&mut b, gt, tid, m, x, lay)));
    // a GRID cluster walks the union of its groups' lists, one a lane of
    // warp 0
    let union = match &mc {
        Some(mc) if mc.lay != mcast::LINE => {
            let rows = lists.as_rows().expect("the forward's row lists");
            Some(Union::new(&mut b, rows, gt.g, lane))
        }
        _ => None,
    };
    // (a cluster) every copy by warp 0's elected lane: warp 0 alone
    // merges
    let solo = mc.as_deref();
    // the warp's sub-tiles' words of `took` (a cluster)
    let took: Option<Vec<Reg<U32>>> = mc
        .as_ref()
        .map(|mc| subs.iter().map(|s| b.mad_lo(s.g, 4u32, mc.took)).collect());
    let vcopies = if cluster {
        Vec::new()
    } else {
        vcopies(&mut b, sh, gt, tid)
    };
    // a cluster takes token tiles tok·p … tok·p + tok − 1 (runs `p`) of
    // groups grps·u … grps·u + grps − 1 (units `u`)
    let lay = mc.as_ref().map(|mc| mc.lay);
    let units = match lay {
        Some(lay) if lay.grps > 1 => {
            let u = b.add(groups, lay.grps - 1);
            b.shr(u, log2(lay.grps))
        }
        _ => groups,
    };
    let (first, step, total) = match lay {
        None => (b.ctaid_x(), b.nctaid_x(), total),
        Some(lay) => {
            let lc = log2(lay.ctas());
            let cid = b.ctaid_x();
            let cid = b.shr(cid, lc);
            let ncl = b.nctaid_x();
            let ncl = b.shr(ncl, lc);
            let runs = b.add(ntiles, lay.tok - 1);
            let runs = b.shr(runs, log2(lay.tok));
            (cid, ncl, b.mul_lo(runs, units))
        }
    };
    b.for_range(first, total, step, |b, tile| {
        let grp = b.rem(tile, units);
        let ti = b.div(tile, units);
        let ti = match &mc {
            None => ti,
            Some(mc) => b.mad_lo(ti, mc.lay.tok, mc.t),
        };
        // (GRID) the cluster's first row block, and the CTA's group
        let oc = match (&mc, &union) {
            (Some(mc), Some(_)) => Some(b.mul_lo(grp, gt.g * mc.lay.grps)),
            _ => None,
        };
        let grp = match (&mc, &union) {
            (Some(mc), Some(_)) => b.mad_lo(grp, mc.lay.grps, mc.q),
            _ => grp,
        };
        let o0 = b.mul_lo(grp, gt.g);
        let n0 = b.shl(ti, log2(sh.tokens));
        let mut src = Vec::new();
        let mut size = Vec::new();
        // (none where the tile comes by tensor map)
        for j in 0..if xmap.is_some() { 0 } else { copies } {
            let r = b.add(n0, row0);
            let r = b.add(r, j * rstep);
            let inside = b.setp(Cmp::Lt, r, io.n);
            size.push(b.selp(inside, 16u32, 0u32));
            let rc = b.min(r, last);
            let el = b.mul_wide_u32(rc, io.in_width);
            let by = b.shl(el, log2(sh.e));
            let by = b.add(by, ch16);
            src.push(b.add(by, io.input));
        }
        let st = Stage {
            src,
            size,
            xdst,
            n0,
            vs0,
            vcopies: vcopies.clone(),
            mc: mc.clone(),
        };
        let acc: Vec<Vec<FragC>> = (0..sh.mt)
            .map(|_| (0..sh.nt).map(|_| b.frag_c_zero()).collect())
            .collect();
        let heads = match (&union, oc) {
            (Some(u), Some(oc)) => Some(u.prepare(b, oc)),
            _ => None,
        };
        let ctx = match heads {
            Some(_) => Vec::new(),
            None => lists.prepare(b, o0),
        };
        let cursors: Vec<_> = (0..if heads.is_some() { 0 } else { gt.g })
            .map(|g| match lists.start(&ctx, g) {
                Some(p0) => b.var::<U32>(p0),
                None => b.var::<U32>(0u32),
            })
            .collect();
        // windowed lists: 1 while a refill is due (made by the first
        // merge)
        let need = std::cell::OnceCell::new();
        // a step's merge into buffer `nbuf`: where warp 0's elected lane
        // issues every copy (`solo`), warp 0 alone, which publishes its
        // key (and refill) to the CTA
        let merge = |b: &mut KernelBuilder, nbuf: Option<Reg<U32>>| {
            let mut out = None;
            let mut run = |b: &mut KernelBuilder| {
                if let (Some(u), Some(h), Some(mc)) = (&union, &heads, solo) {
                    let need = lists
                        .windowed()
                        .then(|| need.get_or_init(|| b.var::<U32>(0u32)));
                    let (m, taken) = u.advance(b, h, mc.q, need);
                    if let Some(nbuf) = nbuf {
                        u.publish(b, mc, nbuf, m, need, h);
                    }
                    out = Some((m, taken));
                    return;
                }
                let (m, taken) = advance(b, &*lists, &ctx, &cursors);
                if lists.windowed() {
                    let need = need.get_or_init(|| b.var::<U32>(0u32));
                    lists.pending(b, &ctx, &cursors, need);
                }
                if let (Some(mc), Some(nbuf)) = (solo, nbuf) {
                    mcast::publish(b, mc, nbuf, m, need.get(), &cursors);
                }
                out = Some((m, taken));
            };
            match solo {
                Some(mc) => b.if_(mc.warp0, run),
                None => run(b),
            }
            out.expect("the merge ran")
        };
        // prologue: the first step into buffer 0
        let zero = solo.map(|_| b.mov(0u32));
        let (m, taken) = merge(b, zero);
        let need = need.get();
        // (solo: set once warp 0 has published it)
        let cur_m = match solo {
            Some(_) => b.var::<U32>(NONE),
            None => b.var::<U32>(m),
        };
        // (a cluster reads them from `took`)
        let cur: Vec<_> = match &took {
            None => taken.iter().map(|&s| b.var::<U32>(s)).collect(),
            Some(_) => Vec::new(),
        };
        if mc.is_some() {
            // the peer has read both buffers (the previous tile)
            b.cluster_wait();
        }
        let first = |b: &mut KernelBuilder| {
            let any = b.setp(Cmp::Ne, m, NONE);
            b.if_(any, |b| {
                let zero = zero.unwrap_or_else(|| b.mov(0u32));
                issue(b, sh, gt, io, &st, m, &taken, zero);
            });
        };
        match solo {
            Some(mc) => b.if_(mc.warp0, first),
            None => first(b),
        }
        if mc.is_some() {
            b.cluster_arrive(crate::dsl::ClusterArrive::Release);
        }
        if let (Some(mc), Some(zero)) = (solo, zero) {
            // every thread learns the first key
            b.bar_sync();
            let m = mcast::fetch(b, mc, zero, need);
            b.set(&cur_m, m);
        }
        if xmap.is_none() {
            b.cp_async_commit_group();
        }
        let buf = b.var::<U32>(0u32);
        let running = |b: &mut KernelBuilder| {
            let m = b.get(&cur_m);
            b.setp(Cmp::Ne, m, NONE)
        };
        // one step: the next step's heads and copies, then this step's
        // MMAs
        let step = |b: &mut KernelBuilder| {
            let cb = b.get(&buf);
            let nbuf = b.xor(cb, 1u32);
            let (nm, ntaken) = merge(b, Some(nbuf));
            let next = |b: &mut KernelBuilder| {
                let more = b.setp(Cmp::Ne, nm, NONE);
                b.if_(more, |b| issue(b, sh, gt, io, &st, nm, &ntaken, nbuf));
            };
            match &mc {
                None => next(b),
                Some(mc) => {
                    // the input tile and the values by the elected lane
                    // once the peer has read buffer `nbuf` (the previous
                    // step)
                    b.cluster_wait();
                    b.if_(mc.warp0, next);
                }
            }
            // (no `cp.async` where every copy is a tensor copy)
            if xmap.is_none() {
                b.cp_async_commit_group();
                b.cp_async_wait_group(1);
            }
            // tf32 in a cluster: the landed tiles of buffer `cb` rounded
            // once in shared memory before the barrier
            if let (Some(mc), true) = (&mc, sh.rounded) {
                cc::wait_full(b, &mc.fl, cb);
                mcast::round_in_place(b, sh, gt, mc, (xs0, vs0), tid, cb);
            }
            b.bar_sync();
            // (every thread learns the next key)
            let nm = match solo {
                Some(mc) => mcast::fetch(b, mc, nbuf, need),
                None => nm,
            };
            if let (Some(mc), false) = (&mc, sh.rounded) {
                cc::wait_full(b, &mc.fl, cb);
            }
            let live: Vec<Reg<Pred>> = match (&mc, &took) {
                (Some(mc), Some(at)) => at.iter().map(|&a| mcast::took(b, mc, a, cb)).collect(),
                _ => {
                    let slots: Vec<Reg<U32>> = cur.iter().map(|v| b.get(v)).collect();
                    subs.iter()
                        .map(|s| {
                            let slot = pick(b, &slots, s.g);
                            b.setp(Cmp::Ne, slot, NONE)
                        })
                        .collect()
                }
            };
            compute::<T>(b, sh, gt, &a_lane, &b_lane, &subs, &live, &acc, cb);
            if mc.is_some() {
                cc::release(b);
            }
            b.bar_sync();
            b.set(&buf, nbuf);
            b.set(&cur_m, nm);
            for (v, s) in cur.iter().zip(&ntaken) {
                b.set(v, *s);
            }
        };
        match &need {
            None => b.while_(running, step),
            // the steps run in an inner loop that leaves when a refill is
            // due (so it holds no loop: the ranking is outside it)
            Some(need) => b.while_(running, |b| {
                b.while_(
                    |b| {
                        let on = running(b);
                        let n = b.get(need);
                        let calm = b.setp(Cmp::Eq, n, 0u32);
                        b.pand(on, calm)
                    },
                    step,
                );
                let n = b.get(need);
                let due = b.setp(Cmp::Ne, n, 0u32);
                b.if_(due, |b| {
                    if let (Some(u), Some(h), Some(mc), Some(oc)) = (&union, &heads, solo, oc) {
                        u.refill(b, mc, oc, h);
                    } else {
                        if let Some(mc) = solo {
                            mcast::cursors(b, mc, &cursors);
                        }
                        lists.refill(b, &ctx, o0, &cursors);
                    }
                    b.set(need, 0u32);
                });
            }),
        }
        epilogue(b, sh, gt, io, bias, &acc, (n0, o0), (wt0, wf0), (g, t));
    });
    if let Some(mc) = &mc {
        // no CTA exits while its peer may still be at a cluster barrier
        b.cluster_wait();
        cc::slow_path(&mut b, &mc.fl);
    }
    b.finish()
}

fn builder(name: &str, sm: Sm, cluster: Option<mcast::Layout>) -> KernelBuilder {
    let mut b = KernelBuilder::new(name, sm);
    // one CTA an SM is the design (the tiles' shared memory): ptxas may
    // then give a thread every register it needs (no spills)
    b.maxntid(THREADS, 1, 1).min_ctas_per_sm(1);
    if let Some(lay) = cluster {
        b.cluster_dims(lay.ctas(), 1, 1);
    }
    b
}

/// `block_ell_tc_forward_{p}_b{B}`, grouped (see the [module docs](self)),
/// with the schedule window [`window`].
pub(super) fn forward<T: MmaInput>(sm: Sm, prec: TcPrecision, bs: u32) -> Result<PtxModule> {
    forward_windowed::<T>(sm, prec, bs, window(prec, bs, sm))
}

/// [`forward`] with a schedule window of `wmax` entries (tests force
/// small windows with it).
fn forward_windowed<T: MmaInput>(
    sm: Sm,
    prec: TcPrecision,
    bs: u32,
    wmax: u32,
) -> Result<PtxModule> {
    forward_built::<T>(sm, prec, bs, wmax, mcast::enabled(sm, prec, bs))
}

/// [`forward_windowed`], in clusters when `cluster` (tests build the
/// cluster kernel where it is not enabled: [`mcast::buildable`]).
fn forward_built<T: MmaInput>(
    sm: Sm,
    prec: TcPrecision,
    bs: u32,
    wmax: u32,
    cluster: bool,
) -> Result<PtxModule> {
    let (sh, gt) = shape::<T>(prec, bs, sm, false);
    let cluster = cluster && mcast::buildable(sm, prec, bs);
    let lay = mcast::forward_layout(prec, bs);
    let mut b = builder(&name("forward", prec, bs), sm, cluster.then_some(lay));
    // the cluster kernel takes the values as a tensor map
    macro_rules! io {
        ($p:expr, $values:expr) => {
            Io {
                input: $p.x.addr(),
                values: $values,
                out: $p.y.addr(),
                n: $p.n,
                in_width: b.shl($p.c, log2(bs)),
                out_width: b.shl($p.r, log2(bs)),
                blocks: $p.r,
                out_bf16: $p.out_bf16,
            }
        };
    }
    let (io, map, (col, k, bias, has_bias)) = if cluster {
        let p = b.params::<ForwardTmaArgs>();
        let io = io!(p, None);
        (
            io,
            Some((p.vmap, p.xmap, lay)),
            (p.col, p.k, p.bias, p.has_bias),
        )
    } else {
        let p = b.params::<ForwardArgs>();
        let io = io!(p, Some(p.values.addr()));
        (io, None, (p.col, p.k, p.bias, p.has_bias))
    };
    let sh = if cluster { sh.for_cluster(prec) } else { sh };
    // (a GRID cluster ranks the cluster's `grps·G` rows)
    let g = if cluster { lay.grps * gt.g } else { gt.g };
    let r = io.blocks;
    let mk = move |b: &mut KernelBuilder, sched: Reg<U32>, tid: Reg<U32>| -> Box<dyn Lists> {
        let w = b.min(k, wmax);
        let windowed = b.setp(Cmp::Gt, k, wmax);
        let gw = b.mul_lo(w, g);
        let slots = b.mad_lo(gw, 4u32, sched);
        Box::new(RowLists {
            col,
            k,
            r,
            g,
            keys: sched,
            slots,
            tid,
            w,
            last: b.sub(k, 1u32),
            windowed,
        })
    };
    let bias = Bias {
        ptr: bias,
        on: has_bias,
    };
    kernel::<T>(b, &sh, &gt, &io, &mk, Some(&bias), map)
}

#[path = "grouped_gi.rs"]
mod gi;
pub(super) use gi::grad_input;
pub use gi::grad_input_cluster;

#[cfg(test)]
#[path = "grouped_tests.rs"]
mod tests;
