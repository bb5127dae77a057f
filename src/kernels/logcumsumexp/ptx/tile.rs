//! The building blocks of [`super`]'s tile kernels: the per-thread
//! registers, the work items, the tile copies between global and shared
//! memory (16-byte or single-word, with padding past `T`), and the tile
//! tree of the contract (Kogge–Stone with `shfl.sync`, the warp chain on
//! thread 0, the exclusive values and the carry combine) for values of one
//! or two registers.

use super::super::host::{KS_STEPS, NSEG, SEG, TILE, WARPS};
use super::{SPLIT, THREADS, VEC};
use crate::dsl::types::{F32, Pred, Reg, U32, U64};
use crate::dsl::{Cmp, GlobalPtr, KernelBuilder, Rounding, SharedArray, SharedPtr, ShflMode};
use crate::target::Sm;

pub(super) const RN: Rounding = Rounding::Rn;
pub(super) const FULL: u32 = 0xffff_ffff;
/// Words per segment in shared memory (32 elements and 4 words of pad).
pub(super) const STRIDE: u32 = SEG as u32 + 4;
/// Words of a staged tile.
pub(super) const BUF: u32 = NSEG as u32 * STRIDE;
/// 16-byte groups per segment.
pub(super) const GROUPS: u32 = SEG as u32 / 4;
/// Warps per tile.
pub(super) const W: u32 = WARPS as u32;

/// A value of the trees: one register (forward log-sums) or two (pairs,
/// affine maps).
pub(super) type Val<const N: usize> = [Reg<F32>; N];
/// `op(b, earlier, later)`.
pub(super) type Op<'a, const N: usize> = &'a dyn Fn(&mut KernelBuilder, Val<N>, Val<N>) -> Val<N>;

/// The per-thread registers of a tile kernel.
#[derive(Clone, Copy)]
pub(super) struct Cta {
    pub(super) tid: Reg<U32>,
    pub(super) lane: Reg<U32>,
    pub(super) warp: Reg<U32>,
    pub(super) t0: Reg<Pred>,
    pub(super) vec: Reg<Pred>,
}

pub(super) fn cta(b: &mut KernelBuilder, flags: Reg<U32>) -> Cta {
    let tid = b.tid_x();
    let lane = b.and(tid, 31u32);
    let warp = b.shr(tid, 5u32);
    let t0 = b.setp(Cmp::Eq, tid, 0u32);
    let v = b.and(flags, VEC);
    let vec = b.setp(Cmp::Ne, v, 0u32);
    Cta {
        tid,
        lane,
        warp,
        t0,
        vec,
    }
}

pub(super) fn tile_builder(name: &str, sm: Sm) -> KernelBuilder {
    let mut b = KernelBuilder::new(name, sm);
    b.maxntid(THREADS, 1, 1);
    b
}

/// One work item of a tile kernel: the row, the first tile and the end of
/// the tile range.
pub(super) struct Item {
    pub(super) row: Reg<U32>,
    pub(super) first: Reg<U32>,
    pub(super) end: Reg<U32>,
}

/// Work item `item`: with `SPLIT`, tile `off + item mod per_row` of row
/// `item / per_row` (`per_row` tiles a row); else every tile of row
/// `item`.
pub(super) fn item_of(
    b: &mut KernelBuilder,
    item: Reg<U32>,
    flags: Reg<U32>,
    ntiles: Reg<U32>,
    per_row: Reg<U32>,
    off: u32,
) -> Item {
    let s = b.and(flags, SPLIT);
    let split = b.setp(Cmp::Ne, s, 0u32);
    let q = b.div(item, per_row);
    let r = b.rem(item, per_row);
    let r = b.add(r, off);
    let r1 = b.add(r, 1u32);
    let row = b.selp(split, q, item);
    let first = b.selp(split, r, 0u32);
    let end = b.selp(split, r1, ntiles);
    Item { row, first, end }
}

/// 16-byte loads (or stores) per thread and loop trip of the vector tile
/// copy: 4 in the forward kernels, 2 in the backward ones (two arrays
/// staged back to back; 4 cost them 117 registers on sm_90, 2 cost 93,
/// 80 with `lcse_bwd`'s six CTAs an SM);
/// 8 single words on the scalar path.
pub(super) const FWD_BATCH: u32 = 4;
pub(super) const BWD_BATCH: u32 = 2;
pub(super) const SCALAR_BATCH: u32 = 8;

/// The addresses of a tile copy: the thread's first global element and
/// shared word, for the vector path (`vec`) or the scalar one. The vector
/// path moves groups `q = tid + 128j` (elements `4q..4q+4`, at word
/// `36·(q >> 3) + 4·(q & 7)`, i.e. `576j` past that of `q = tid`); the
/// scalar path elements `e = tid + 128j` (at word `e + 4·(e >> 5)`, i.e.
/// `144j` past that of `e = tid`).
pub(super) fn copy_addrs(
    b: &mut KernelBuilder,
    c: Cta,
    vec: bool,
    mem: GlobalPtr<F32>,
    buf: &SharedArray<F32>,
    base: Reg<U64>,
    start: Reg<U32>,
) -> (Reg<U32>, GlobalPtr<F32>, SharedPtr<F32>) {
    let (e0, s0) = if vec {
        let e0 = b.shl(c.tid, 2u32);
        let hi = b.shr(c.tid, 3u32);
        let lo = b.and(c.tid, 7u32);
        let s0 = b.mul_lo(hi, STRIDE);
        let l4 = b.shl(lo, 2u32);
        (e0, b.add(s0, l4))
    } else {
        let hi = b.shl(c.warp, 2u32);
        (c.tid, b.add(c.tid, hi))
    };
    let pos0 = b.add(start, e0);
    let w0 = b.u32_to_u64(pos0);
    let g0 = b.add(base, w0);
    let gp = b.offset64(mem, g0);
    let sp = b.shared_elem(buf, s0);
    (pos0, gp, sp)
}

/// The per-trip steps of a tile copy: (elements, shared words, trips,
/// batch) for the vector or scalar path.
pub(super) fn copy_steps(vec: bool, vec_batch: u32) -> (u32, u32, u32, u32) {
    if vec {
        (
            4 * THREADS,
            THREADS / 8 * STRIDE,
            TILE as u32 / 4 / THREADS / vec_batch,
            vec_batch,
        )
    } else {
        (
            THREADS,
            THREADS / 32 * STRIDE,
            TILE as u32 / THREADS / SCALAR_BATCH,
            SCALAR_BATCH,
        )
    }
}

/// Stage tile `start..start+TILE` of the row at element `base` of `src`
/// into `buf` (padding `pad` past `t`). With `unrolled`, a full tile on
/// the vector path is copied straight, unguarded.
#[allow(clippy::too_many_arguments)]
pub(super) fn stage(
    b: &mut KernelBuilder,
    c: Cta,
    src: GlobalPtr<F32>,
    buf: &SharedArray<F32>,
    base: Reg<U64>,
    start: Reg<U32>,
    t: Reg<U32>,
    pad: f32,
    vec_batch: u32,
    unrolled: bool,
) {
    let path = |b: &mut KernelBuilder, vec: bool| {
        let (pos0, gp, sp) = copy_addrs(b, c, vec, src, buf, base, start);
        let (de, ds, trips, batch) = copy_steps(vec, vec_batch);
        b.for_range(0u32, trips, 1u32, |b, _| {
            let mut vals = Vec::new();
            for j in 0..batch {
                let pos = b.add(pos0, de * j);
                let inb = b.setp(Cmp::Lt, pos, t);
                let n = if vec { 4 } else { 1 };
                let v: Vec<Reg<F32>> = (0..n).map(|_| b.mov(pad)).collect();
                b.guarded(inb, |b| {
                    let o = (de * j) as i32;
                    let l: Vec<Reg<F32>> = if vec {
                        b.ld_global_v4(gp, o).to_vec()
                    } else {
                        vec![b.ld_global(gp, o)]
                    };
                    for (d, s) in v.iter().zip(l) {
                        b.assign(*d, s);
                    }
                });
                vals.push(v);
            }
            for (j, v) in vals.into_iter().enumerate() {
                let o = (ds * j as u32) as i32;
                if vec {
                    b.st_shared_v4(sp, o, [v[0], v[1], v[2], v[3]]);
                } else {
                    b.st_shared(sp, o, v[0]);
                }
            }
            b.advance(gp, (de * batch) as i32);
            let np = b.add(pos0, de * batch);
            b.assign(pos0, np);
            let ns = b.add(sp.reg, 4 * ds * batch);
            b.assign(sp.reg, ns);
        });
    };
    // A full tile on the vector path: every load in bounds, so no test, no
    // padding, no loop (the same words land in `buf`).
    let full_path = |b: &mut KernelBuilder| {
        let (_, gp, sp) = copy_addrs(b, c, true, src, buf, base, start);
        let (de, ds, trips, batch) = copy_steps(true, vec_batch);
        for trip in 0..trips {
            let js: Vec<u32> = (0..batch).map(|j| trip * batch + j).collect();
            let vals: Vec<[Reg<F32>; 4]> = js
                .iter()
                .map(|&j| b.ld_global_v4(gp, (de * j) as i32))
                .collect();
            for (&j, v) in js.iter().zip(vals) {
                b.st_shared_v4(sp, (ds * j) as i32, v);
            }
        }
    };
    by_path(b, c, (start, t), unrolled, path, full_path);
}

/// A copy's paths ([`stage`], [`store`]): `path(vec)` by `c.vec`, except
/// that with `unrolled` a full tile on the vector path takes `full`.
fn by_path(
    b: &mut KernelBuilder,
    c: Cta,
    (start, t): (Reg<U32>, Reg<U32>),
    unrolled: bool,
    path: impl Fn(&mut KernelBuilder, bool),
    full: impl FnOnce(&mut KernelBuilder),
) {
    if !unrolled {
        b.if_else(c.vec, |b| path(b, true), |b| path(b, false));
        return;
    }
    let whole = full_tile(b, start, t);
    b.if_else(
        c.vec,
        |b| b.if_else(whole, full, |b| path(b, true)),
        |b| path(b, false),
    );
}

/// Whether the tile at `start` lies wholly before `t` (no padding; CTA
/// uniform). `T < 2³¹`, so `start + TILE` does not wrap.
fn full_tile(b: &mut KernelBuilder, start: Reg<U32>, t: Reg<U32>) -> Reg<Pred> {
    let end = b.add(start, TILE as u32);
    b.setp(Cmp::Le, end, t)
}

/// Store the tile in `buf` to `dst` (elements before `t` only;
/// `unrolled` as in [`stage`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn store(
    b: &mut KernelBuilder,
    c: Cta,
    dst: GlobalPtr<F32>,
    buf: &SharedArray<F32>,
    base: Reg<U64>,
    start: Reg<U32>,
    t: Reg<U32>,
    vec_batch: u32,
    unrolled: bool,
) {
    let path = |b: &mut KernelBuilder, vec: bool| {
        let (pos0, gp, sp) = copy_addrs(b, c, vec, dst, buf, base, start);
        let (de, ds, trips, batch) = copy_steps(vec, vec_batch);
        b.for_range(0u32, trips, 1u32, |b, _| {
            for j in 0..batch {
                let pos = b.add(pos0, de * j);
                let inb = b.setp(Cmp::Lt, pos, t);
                let (o, os) = ((de * j) as i32, (ds * j) as i32);
                if vec {
                    let v = b.ld_shared_v4(sp, os);
                    b.guarded(inb, |b| b.st_global_v4(gp, o, v));
                } else {
                    let v = b.ld_shared(sp, os);
                    b.guarded(inb, |b| b.st_global(gp, o, v));
                }
            }
            b.advance(gp, (de * batch) as i32);
            let np = b.add(pos0, de * batch);
            b.assign(pos0, np);
            let ns = b.add(sp.reg, 4 * ds * batch);
            b.assign(sp.reg, ns);
        });
    };
    // A full tile on the vector path: no test, no loop.
    let full_path = |b: &mut KernelBuilder| {
        let (_, gp, sp) = copy_addrs(b, c, true, dst, buf, base, start);
        let (de, ds, trips, batch) = copy_steps(true, vec_batch);
        for j in 0..trips * batch {
            let v = b.ld_shared_v4(sp, (ds * j) as i32);
            b.st_global_v4(gp, (de * j) as i32, v);
        }
    };
    by_path(b, c, (start, t), unrolled, path, full_path);
}

/// The first word of thread `tid`'s segment in `buf`.
pub(super) fn segment(b: &mut KernelBuilder, c: Cta, buf: &SharedArray<F32>) -> SharedPtr<F32> {
    let s = b.mul_lo(c.tid, STRIDE);
    b.shared_elem(buf, s)
}

pub(super) fn sel<const N: usize>(
    b: &mut KernelBuilder,
    p: Reg<Pred>,
    x: Val<N>,
    y: Val<N>,
) -> Val<N> {
    let mut out = x;
    for i in 0..N {
        out[i] = b.selp(p, x[i], y[i]);
    }
    out
}

pub(super) fn shfl<const N: usize>(b: &mut KernelBuilder, v: Val<N>, rev: bool, d: u32) -> Val<N> {
    let mut out = v;
    for i in 0..N {
        out[i] = if rev {
            b.shfl(ShflMode::Down, v[i], d, 0x1f, FULL)
        } else {
            b.shfl(ShflMode::Up, v[i], d, 0, FULL)
        };
    }
    out
}

/// The Kogge–Stone level of the tile tree (in the reverse order when
/// `rev`: lane `ℓ + d` is the earlier one).
pub(super) fn kogge_stone<const N: usize>(
    b: &mut KernelBuilder,
    c: Cta,
    v: Val<N>,
    rev: bool,
    op: Op<'_, N>,
) -> Val<N> {
    kogge_stone_steps(b, c, v, rev, op, &KS_STEPS)
}

/// [`kogge_stone`]'s steps `steps` only.
pub(super) fn kogge_stone_steps<const N: usize>(
    b: &mut KernelBuilder,
    c: Cta,
    v: Val<N>,
    rev: bool,
    op: Op<'_, N>,
    steps: &[usize],
) -> Val<N> {
    let mut v = v;
    for &d in steps {
        let d = d as u32;
        let o = shfl(b, v, rev, d);
        let nv = op(b, o, v);
        let ok = if rev {
            b.setp(Cmp::Lt, c.lane, 32 - d)
        } else {
            b.setp(Cmp::Ge, c.lane, d)
        };
        v = sel(b, ok, nv, v);
    }
    v
}

pub(super) fn ld_val<const N: usize>(
    b: &mut KernelBuilder,
    a: &SharedArray<F32>,
    k: u32,
) -> Val<N> {
    let v: Vec<Reg<F32>> = (0..N as u32)
        .map(|i| b.ld_shared_at(a, k * N as u32 + i))
        .collect();
    std::array::from_fn(|i| v[i])
}

pub(super) fn st_val<const N: usize>(
    b: &mut KernelBuilder,
    a: &SharedArray<F32>,
    k: u32,
    v: Val<N>,
) {
    for (i, r) in v.iter().enumerate() {
        b.st_shared_at(a, k * N as u32 + i as u32, *r);
    }
}

/// `a[k·N..k·N+N]` for a register index `k`.
pub(super) fn ld_val_at<const N: usize>(
    b: &mut KernelBuilder,
    a: &SharedArray<F32>,
    k: Reg<U32>,
) -> Val<N> {
    let i = b.mul_lo(k, N as u32);
    let p = b.shared_elem(a, i);
    let v: Vec<Reg<F32>> = (0..N as i32).map(|j| b.ld_shared(p, j)).collect();
    std::array::from_fn(|i| v[i])
}

/// Global `p[k·N..k·N+N]`.
pub(super) fn ld_val_global<const N: usize>(
    b: &mut KernelBuilder,
    p: GlobalPtr<F32>,
    k: Reg<U32>,
) -> Val<N> {
    let i = b.mul_lo(k, N as u32);
    let q = b.offset(p, i);
    let v: Vec<Reg<F32>> = (0..N as i32).map(|j| b.ld_global(q, j)).collect();
    std::array::from_fn(|i| v[i])
}

pub(super) fn st_val_global<const N: usize>(
    b: &mut KernelBuilder,
    p: GlobalPtr<F32>,
    k: Reg<U32>,
    v: Val<N>,
) {
    let i = b.mul_lo(k, N as u32);
    let q = b.offset(p, i);
    for (j, r) in v.iter().enumerate() {
        b.st_global(q, j as i32, *r);
    }
}

pub(super) fn assign<const N: usize>(b: &mut KernelBuilder, d: Val<N>, v: Val<N>) {
    for (d, v) in d.iter().zip(v) {
        b.assign(*d, v);
    }
}

pub(super) fn mov<const N: usize>(b: &mut KernelBuilder, v: Val<N>) -> Val<N> {
    let r: Vec<Reg<F32>> = v.iter().map(|r| b.mov(*r)).collect();
    std::array::from_fn(|i| r[i])
}

/// Step 2 of the tile tree, first half: lane 31 (lane 0 when `rev`) of
/// every warp stores its inclusive value, then thread 0 runs the warp chain
/// (into `qs` when given: the exclusive value of warp `w` at `qs[w]`, every
/// slot defined) and calls `after` with the tile total.
#[allow(clippy::too_many_arguments)]
pub(super) fn warp_chain<const N: usize>(
    b: &mut KernelBuilder,
    c: Cta,
    inc: Val<N>,
    rev: bool,
    wt: &SharedArray<F32>,
    qs: Option<&SharedArray<F32>>,
    op: Op<'_, N>,
    after: impl FnOnce(&mut KernelBuilder, Val<N>),
) {
    let edge = b.setp(Cmp::Eq, c.lane, if rev { 0u32 } else { 31 });
    b.if_(edge, |b| {
        let i = b.mul_lo(c.warp, N as u32);
        let p = b.shared_elem(wt, i);
        for (j, r) in inc.iter().enumerate() {
            b.st_shared(p, j as i32, *r);
        }
    });
    b.bar_sync();
    b.if_(c.t0, |b| {
        let total = if rev {
            // Warps from the last: qs[w] = W_{W−1} ⊗ … ⊗ W_{w+1} (in
            // the reverse order's sense), qs[W−1] unused.
            let mut q = ld_val::<N>(b, wt, W - 1);
            if let Some(qs) = qs {
                st_val(b, qs, W - 1, q);
                st_val(b, qs, W - 2, q);
            }
            for w in (0..W - 1).rev() {
                let ww = ld_val::<N>(b, wt, w);
                q = op(b, q, ww);
                if let (Some(qs), true) = (qs, w >= 1) {
                    st_val(b, qs, w - 1, q);
                }
            }
            q
        } else {
            // qs[w] = W_0 ⊗ … ⊗ W_{w−1}, qs[0] unused.
            let mut q = ld_val::<N>(b, wt, 0);
            if let Some(qs) = qs {
                st_val(b, qs, 0, q);
                st_val(b, qs, 1, q);
            }
            for w in 1..W {
                let ww = ld_val::<N>(b, wt, w);
                q = op(b, q, ww);
                if let Some(qs) = qs {
                    st_val(b, qs, w + 1, q);
                }
            }
            q
        };
        after(b, total);
    });
}

/// Step 3 of the tile tree: each segment's exclusive value (garbage for
/// the segment without one: `σ = 0`, or `σ = NSEG − 1` when `rev`).
pub(super) fn exclusive<const N: usize>(
    b: &mut KernelBuilder,
    c: Cta,
    inc: Val<N>,
    rev: bool,
    qs: &SharedArray<F32>,
    op: Op<'_, N>,
) -> Val<N> {
    b.bar_sync();
    let x = shfl(b, inc, rev, 1);
    let qw = ld_val_at::<N>(b, qs, c.warp);
    let (edge_lane, edge_warp) = if rev { (31u32, W - 1) } else { (0, 0) };
    // The edge warp has no warp prefix: skip the combine (warp-uniform).
    let e = mov(b, x);
    let inner = b.setp(Cmp::Ne, c.warp, edge_warp);
    b.if_(inner, |b| {
        let qx = op(b, qw, x);
        assign(b, e, qx);
    });
    let l = b.setp(Cmp::Eq, c.lane, edge_lane);
    sel(b, l, qw, e)
}

/// `K = C ⊗ E`, `C` when `E` is none (thread 0), `E` when there is no
/// carry (`!has`, CTA-uniform: the combine is skipped).
pub(super) fn with_carry<const N: usize>(
    b: &mut KernelBuilder,
    c: Cta,
    carry: Val<N>,
    e: Val<N>,
    has: Reg<Pred>,
    op: Op<'_, N>,
) -> Val<N> {
    let k = mov(b, e);
    b.if_(has, |b| {
        let kc = op(b, carry, e);
        let k1 = sel(b, c.t0, carry, kc);
        assign(b, k, k1);
    });
    k
}
