//! A kernel's L2 traffic, from the simulator's per-instruction counts.
//!
//! **What is counted**: every global memory access is taken to go to L2:
//! `ld.global` (`.nc` included), `st.global`, `atom`/`red` on global
//! memory, `cp.async` (global → shared) and generic `ld`/`st` (which the
//! kernels use for global memory only), each of its bytes (`size × n` for
//! a vector access, the width of an atomic). The L1 is not modelled: a
//! re-read that the SM's L1 (or the texture path of `ld.global.nc`) would
//! catch counts as L2 traffic, so the figure is an upper bound for kernels
//! that re-read lines within one SM. Shared memory (`ld.shared`,
//! `ldmatrix`, `.shared::cluster`), local, parameter and constant accesses
//! do not reach L2 and are not counted.
//!
//! **Bulk copies**: `cp.async.bulk` (global → shared, issue 31) counts
//! its size once per issuing thread, whatever its address: one copy is one
//! L2 read, and with `.multicast::cluster` that one read is delivered to
//! the shared memory of every CTA in the mask, so a multicast counts its
//! bytes **once**, not once per destination (the L2 saving multicast is
//! for). Only a constant size is known to this static count; a copy whose
//! size is in a register counts 0 bytes. The issuing thread should be
//! chosen by a branch (`if_`), not a guard: a guarded copy's
//! predicated-off issues count too.
//!
//! **Tensor-map copies**: `cp.async.bulk.tensor` counts its box's bytes
//! (`TiledDesc::box_bytes`, out-of-bounds fill included) once per issue,
//! a multicast once, as a bulk copy. The box is in the map, not in the
//! instruction: `launch_bytes` finds the kernel parameter the map
//! operand is the address of (a `mov` of the parameter, `cvta.param`) and
//! decodes the launch's argument for it (the private encoding the
//! simulator reads); a map it cannot resolve counts 0 bytes.
//!
//! **How**: the simulator counts each PTX instruction's issues
//! ([`crate::sim::Sim::last_launch_counts`]); the bytes are each memory
//! instruction's count times its access size. An access whose address
//! differs between the threads of a warp counts its bytes (the kernels'
//! such accesses are coalesced, where bytes and 32-byte sectors agree; a
//! scattered access moving a whole sector for a few bytes is
//! under-counted); one whose address is the same in every thread (no
//! `%tid`-derived register in it, a broadcast) counts one sector a warp.
//! The count includes predicated-off issues (the simulator counts those
//! too): the kernels'
//! guarded global accesses are tails, so the excess is small.

use crate::dsl::params::ArgValue;
use crate::sim::Entry;
use crate::sim::Space;
use crate::sim::ir::{Op, Src};

/// Bytes one issue of `op` moves to or from L2 (0 for an instruction that
/// does not reach it).
pub(crate) fn access_bytes(op: &Op) -> u64 {
    let global = |sp: &Space| matches!(sp, Space::Global | Space::Generic);
    match op {
        Op::Ld { sp, size, n, .. } | Op::St { sp, size, n } if global(sp) => {
            u64::from(*size) * u64::from(*n)
        }
        Op::Atom { sp, w, .. } if global(sp) => u64::from(*w) / 8,
        Op::CpAsync { size } => u64::from(*size),
        Op::CpAsyncBulk { size, .. } => u64::from(*size),
        _ => 0,
    }
}

/// Which register slots of `e` may hold different values in the threads
/// of one warp: those written from `%tid`, `%laneid` or a lane mask, from
/// a shuffle, an atomic's old value, a matrix fragment (`mma`,
/// `ldmatrix`), a load through such an address, or under such a guard, and
/// everything computed from them (a flow-insensitive fixed point;
/// divergent control flow is not followed), except the warp's index
/// `%tid.x >> k` (`k ≥ 5`, [`warp_index`]) and what is computed from it.
fn varying_regs(e: &Entry) -> Vec<bool> {
    use crate::sim::ir::{NO_REG, sreg};
    let mut v = vec![false; e.nregs.max(sreg::COUNT) as usize];
    for r in (sreg::TID_X..sreg::TID_X + 3)
        .chain([sreg::LANEID])
        .chain(sreg::LANEMASK_EQ..=sreg::LANEMASK_GE)
    {
        v[r as usize] = true;
    }
    let is = |v: &[bool], r: u32| r != NO_REG && v.get(r as usize).copied().unwrap_or(false);
    let tid = tid_copies(e);
    loop {
        let mut changed = false;
        for i in &e.insts {
            if warp_index(i, &tid) && !is(&v, i.guard) {
                continue;
            }
            let lane_op = matches!(
                i.op,
                Op::Shfl { .. } | Op::Atom { .. } | Op::Mma { .. } | Op::Ldmatrix { .. }
            );
            let from_varying = lane_op
                || is(&v, i.guard)
                || i.s.iter().any(|s| matches!(s, Src::Reg(r) if is(&v, *r)));
            if !from_varying {
                continue;
            }
            for &d in &i.d {
                if d != NO_REG && (d as usize) < v.len() && !v[d as usize] {
                    v[d as usize] = true;
                    changed = true;
                }
            }
        }
        if !changed {
            return v;
        }
    }
}

/// Which register slots hold `%tid.x` itself: the special register, and
/// registers whose every write is an unguarded `mov` from it.
fn tid_copies(e: &Entry) -> Vec<bool> {
    use crate::sim::ir::{NO_REG, sreg};
    let n = e.nregs.max(sreg::COUNT) as usize;
    let (mut copy, mut written) = (vec![true; n], vec![false; n]);
    for i in &e.insts {
        let is_copy = matches!(i.op, Op::Mov { .. })
            && matches!(i.s[0], Src::Reg(r) if r == sreg::TID_X)
            && i.guard == NO_REG;
        for &d in i.d.iter().filter(|&&d| d != NO_REG && (d as usize) < n) {
            written[d as usize] = true;
            copy[d as usize] &= is_copy;
        }
    }
    for (c, w) in copy.iter_mut().zip(&written) {
        *c &= *w;
    }
    copy[sreg::TID_X as usize] = true;
    copy
}

/// Whether `i` is `shr` of `%tid.x` (or a copy) by 5 or more: the warp's
/// index, the same in every thread of a warp when the CTA's `x` extent is
/// a multiple of 32 (every kernel's that derives a warp index this way;
/// a CTA whose warps straddle `y` rows would make it vary, and its loads
/// would be under-counted).
fn warp_index(i: &crate::sim::ir::Inst, tid: &[bool]) -> bool {
    matches!(i.op, Op::Shr { .. })
        && matches!(i.s[0], Src::Reg(r) if tid.get(r as usize).copied().unwrap_or(false))
        && matches!(i.s[1], Src::Imm(k) if k >= 5)
}

/// The L2 bytes of a launch of `e` whose per-instruction issue counts are
/// `per_pc` (module docs); 0 when `per_pc` does not fit the entry. An
/// access whose address is the same in every thread of a warp (no
/// [`varying_regs`] register in it: a broadcast) moves one 32-byte sector
/// per warp (two for a 64-byte vector), counted as that over 32 per
/// thread.
pub(crate) fn global_bytes(e: &Entry, per_pc: &[u64]) -> u64 {
    if per_pc.len() != e.insts.len() {
        return 0;
    }
    let v = varying_regs(e);
    let (mut lanes, mut warps) = (0u64, 0u64);
    for (i, &c) in e.insts.iter().zip(per_pc) {
        let b = access_bytes(&i.op);
        if b == 0 || c == 0 {
            continue;
        }
        // a bulk copy is one whole read per issue (a multicast's too)
        if matches!(i.op, Op::CpAsyncBulk { .. }) {
            lanes += c * b;
            continue;
        }
        // The global address: `cp.async`'s source, else the first operand.
        let addr = if matches!(i.op, Op::CpAsync { .. }) {
            i.s[1]
        } else {
            i.s[0]
        };
        let uniform = match addr {
            Src::Reg(r) => !v.get(r as usize).copied().unwrap_or(true),
            _ => true,
        };
        if uniform {
            warps += c * b.next_multiple_of(SECTOR);
        } else {
            lanes += c * b;
        }
    }
    lanes + warps / 32
}

/// Bytes of an L2 sector.
const SECTOR: u64 = 32;

/// The L2 bytes of a launch of `e` with arguments `args`: [`global_bytes`]
/// and each tensor-map copy's box bytes per issue (module docs).
pub(crate) fn launch_bytes(e: &Entry, per_pc: &[u64], args: &[ArgValue]) -> u64 {
    global_bytes(e, per_pc) + tensor_copy_bytes(e, per_pc, args)
}

/// The tensor-map copies' bytes: per issue, the box of the map its
/// operand names (0 where it is not resolved).
fn tensor_copy_bytes(e: &Entry, per_pc: &[u64], args: &[ArgValue]) -> u64 {
    if per_pc.len() != e.insts.len() {
        return 0;
    }
    e.insts
        .iter()
        .zip(per_pc)
        .filter(|(i, c)| **c > 0 && matches!(i.op, Op::CpAsyncBulkTensor { .. }))
        .map(|(i, c)| c * map_box_bytes(e, i.s[1], args).unwrap_or(0))
        .sum()
}

/// The box bytes of the tensor map whose generic address register `map`
/// holds: every write of it a `mov` of one parameter's offset or a
/// `cvta.param` of itself, that parameter's argument a map.
fn map_box_bytes(e: &Entry, map: Src, args: &[ArgValue]) -> Option<u64> {
    let Src::Reg(r) = map else {
        return None;
    };
    let mut offset = None;
    for i in e.insts.iter().filter(|i| i.d.contains(&r)) {
        match (&i.op, i.s[0]) {
            (Op::Mov { .. }, Src::Imm(o)) if offset.is_none_or(|x| x == o) => offset = Some(o),
            (
                Op::Cvta {
                    to: false,
                    sp: Space::Param,
                    ..
                },
                Src::Reg(q),
            ) if q == r => {}
            _ => return None,
        }
    }
    let offset = offset?;
    let k = e
        .params
        .iter()
        .position(|p| u64::from(p.offset) == offset)?;
    match args.get(k)? {
        ArgValue::TensorMap(m) => m.decode_private().ok().map(|d| d.box_bytes()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::params::Ptr;
    use crate::dsl::types::{F32, U32};
    use crate::dsl::{AtomOp, KernelBuilder, Rounding};
    use crate::sim::Program;
    use crate::target::Sm;

    crate::kernel_params! { struct OneArgs => OneRegs { p: Ptr<F32>, q: Ptr<U32> } }
    crate::kernel_params! { struct CopyArgs => CopyRegs { src: Ptr<F32>, dst: Ptr<F32> } }
    crate::kernel_params! { struct WarpArgs => WarpRegs { p: Ptr<F32> } }

    /// A kernel's PTX from the DSL, parsed for the simulator.
    fn program(b: KernelBuilder) -> Program {
        Program::parse(&b.finish().unwrap().ptx).unwrap()
    }

    #[test]
    fn counts_global_accesses_only() {
        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let OneRegs { p: g, q: gu } = b.params::<OneArgs>();
        let x = b.ld_global(g, 0);
        let v = b.ld_global_nc_v4(g, 4);
        let s = b.shared_array::<F32>("sm", 16, 16);
        let sp = b.shared_elem(&s, 0u32);
        let y = b.ld_shared(sp, 0);
        b.st_shared(sp, 0, y);
        b.st_global_v2(g, 8, [x, v[0]]);
        b.atom_global(AtomOp::Add, gu, 1u32, None);
        let prog = program(b);
        let e = prog.entry("k").unwrap();
        let sizes: Vec<u64> = e
            .insts
            .iter()
            .map(|i| access_bytes(&i.op))
            .filter(|&n| n > 0)
            .collect();
        // ld.global 4, ld.global.nc.v4 16, st.global.v2 8, atom 4; the
        // parameter and shared accesses move nothing through L2.
        assert_eq!(sizes, [4, 16, 8, 4]);
        // Every address is a parameter's, the same in all threads: one
        // 32-byte sector a warp per access, 32 issues = one warp each.
        let counts = vec![32; e.insts.len()];
        assert_eq!(global_bytes(e, &counts), 4 * 32);
        // Counts that do not fit the entry give nothing.
        assert_eq!(global_bytes(e, &counts[1..]), 0);
    }

    /// `%tid.x >> 5` is the warp's index: an address from it alone is a
    /// broadcast within the warp; `>> 4` is not.
    #[test]
    fn the_warp_index_is_uniform_in_a_warp() {
        let bytes = |k: u32| {
            let mut b = KernelBuilder::new("w", Sm::Sm80);
            let g = b.params::<WarpArgs>().p;
            let tid = b.tid_x();
            let w = b.shr(tid, k);
            let a = b.offset(g, w);
            let x = b.ld_global(a, 0);
            b.st_global(g, 0, x);
            let prog = program(b);
            let e = prog.entry("w").unwrap();
            // 64 issues of each instruction: two warps; the store's
            // address is the parameter's (one sector a warp).
            global_bytes(e, &vec![64; e.insts.len()])
        };
        assert_eq!(bytes(5), 64 + 64);
        assert_eq!(bytes(4), 64 * 4 + 64);
    }

    /// The simulator's own counts of a launch: 32 threads each reading a
    /// float and writing one at `%tid`-derived addresses (256 bytes), and
    /// all reading one float at the same address (a broadcast: one
    /// sector, 32 bytes).
    #[test]
    fn from_a_simulated_launch() {
        use crate::dsl::params::ArgValue;
        use crate::exec::LaunchConfig;
        use crate::sim::Sim;
        let mut b = KernelBuilder::new("copy", Sm::Sm80);
        let CopyRegs { src, dst } = b.params::<CopyArgs>();
        let tid = b.tid_x();
        let a = b.offset(src, tid);
        let x = b.ld_global(a, 0);
        let y = b.ld_global(src, 0);
        let z = b.fadd(Rounding::Rn, x, y);
        let d = b.offset(dst, tid);
        b.st_global(d, 0, z);
        let ptx = b.finish().unwrap().ptx;
        let mut s = Sim::new(Sm::Sm80);
        let a = s.alloc_zeroed(128).unwrap();
        let b = s.alloc_zeroed(128).unwrap();
        let prog = s.program(&ptx).unwrap();
        let cfg = LaunchConfig::linear(1, 32);
        s.launch_program(&prog, "copy", cfg, &[ArgValue::U64(a), ArgValue::U64(b)])
            .unwrap();
        let e = prog.entry("copy").unwrap();
        assert_eq!(global_bytes(e, s.last_launch_counts()), 256 + 32);
    }

    /// A cluster of two where thread 0 of each CTA multicasts 128 bytes
    /// into both CTAs: 2 copies of 128 bytes read from L2 (256 bytes), not
    /// one per destination (512).
    #[test]
    fn a_multicast_bulk_copy_counts_its_bytes_once() {
        use crate::dsl::Cmp;
        use crate::dsl::params::ArgValue;
        use crate::exec::LaunchConfig;
        use crate::sim::Sim;
        let mut b = KernelBuilder::new("mc", Sm::Sm90);
        b.cluster_dims(2, 1, 1);
        let CopyRegs { src, .. } = b.params::<CopyArgs>();
        let tile = b.shared_array::<F32>("tile", 64, 16);
        let bar = b.shared_mbarrier("bar");
        let t = b.tid_x();
        let first = b.setp(Cmp::Eq, t, 0u32);
        b.mbarrier_init_cluster(first, &[(bar, 1)]);
        b.if_(first, |b| {
            let _ = b.mbarrier_arrive_expect_tx(bar, 256u32);
            let r = b.cluster_ctarank();
            let h = b.mul_lo(r, 32u32);
            let g = b.offset(src, h);
            let s = b.shared_elem(&tile, h);
            b.cp_async_bulk_multicast(s, g, 128u32, bar, 3u32);
        });
        b.mbarrier_wait(bar, 0u32);
        b.cluster_sync();
        let ptx = b.finish().unwrap().ptx;
        let mut s = Sim::new(Sm::Sm90);
        let a = s.alloc_zeroed(256).unwrap();
        let prog = s.program(&ptx).unwrap();
        let cfg = LaunchConfig::linear(2, 32);
        s.launch_program(&prog, "mc", cfg, &[ArgValue::U64(a), ArgValue::U64(a)])
            .unwrap();
        let e = prog.entry("mc").unwrap();
        assert_eq!(global_bytes(e, s.last_launch_counts()), 256);
    }

    crate::kernel_params! {
        struct MapArgs => MapRegs { a: crate::dsl::TensorMapParam, b: crate::dsl::TensorMapParam }
    }

    /// One CTA whose elected lane copies a 64-byte box of map `a` (twice)
    /// and a 512-byte box of map `b` (once, rows past the tensor filled):
    /// 2·64 + 512 bytes, found through the maps (none without the
    /// arguments: the instruction holds no size).
    #[test]
    fn a_tensor_copy_counts_its_box_once_per_issue() {
        use crate::dsl::Cmp;
        use crate::exec::LaunchConfig;
        use crate::sim::Sim;
        use crate::tensor_map::{TensorDataType, TensorMap, TiledDesc};
        let mut b = KernelBuilder::new("tc", Sm::Sm90);
        let MapRegs { a, b: bm } = b.params::<MapArgs>();
        let tile = b.shared_array::<U32>("tile", 1024, 128);
        let bar = b.shared_mbarrier("bar");
        let t = b.tid_x();
        let first = b.setp(Cmp::Eq, t, 0u32);
        b.if_(first, |b| {
            b.mbarrier_init(bar, 1u32);
            b.fence_mbarrier_init();
        });
        b.bar_sync();
        b.if_(first, |b| {
            let _ = b.mbarrier_arrive_expect_tx(bar, 640u32);
            let s0 = b.shared_elem(&tile, 0u32);
            let s1 = b.shared_elem(&tile, 128u32);
            let s2 = b.shared_elem(&tile, 256u32);
            b.cp_async_bulk_tensor(s0, a, &[0i32.into(), 0i32.into()], bar);
            b.cp_async_bulk_tensor(s1, a, &[4i32.into(), 0i32.into()], bar);
            b.cp_async_bulk_tensor(s2, bm, &[0i32.into(), 2i32.into()], bar);
        });
        b.mbarrier_wait(bar, 0u32);
        let ptx = b.finish().unwrap().ptx;
        let mut s = Sim::new(Sm::Sm90);
        let g = s.alloc_zeroed(4096).unwrap();
        let prog = s.program(&ptx).unwrap();
        // a: 16 × 4 u32 of a 32 × 8 tensor, box 4 × 4 (64 bytes); b: box
        // 8 × 16 (512 bytes), 8 of its rows past the tensor's 10
        let ma = TiledDesc::new(TensorDataType::U32, g, &[32, 8], &[128], &[4, 4]);
        let mb = TiledDesc::new(TensorDataType::U32, g, &[32, 10], &[128], &[8, 16]);
        let args = [ma, mb].map(|d| ArgValue::TensorMap(TensorMap::encode_private(&d).unwrap()));
        s.launch_program(&prog, "tc", LaunchConfig::linear(1, 32), &args)
            .unwrap();
        let e = prog.entry("tc").unwrap();
        let counts = s.last_launch_counts();
        assert_eq!(global_bytes(e, counts), 0);
        assert_eq!(launch_bytes(e, counts, &args), 2 * 64 + 512);
        assert_eq!(launch_bytes(e, counts, &[]), 0);
    }
}
