//! The grouped grad-input kernel's builder (a child of [`super`], whose
//! `kernel` it shares with the forward): the column blocks' lists of the
//! transposed index ([`ColLists`]), and where [`grad_input_cluster`] says
//! 4 the cluster of four CTAs whose values blocks land by tensor-map
//! multicast (module `grouped_mcast`; the blocks' rows `k` are read by
//! `ldmatrix.trans` through the swizzle).

use crate::dsl::types::{MmaInput, Reg, U32};
use crate::dsl::{KernelBuilder, PtxModule};
use crate::error::Result;
use crate::target::Sm;

use super::super::super::host::TcPrecision;
use super::super::{GradInputArgs, GradInputTmaArgs, name};
use super::{ColLists, Io, Lists, builder, kernel, log2, mcast, shape};

/// CTAs of a cluster of the grouped grad-input of `prec` at `B` = `bs` on
/// `sm`: 4 where it multicasts its values blocks by tensor map (bf16/f16
/// `B` 32 and 64, tf32 `B` 32, on sm_90, sm_100, sm_100a, as the forward,
/// [`forward_cluster`](super::forward_cluster); the kernel then takes
/// [`GradInputTmaArgs`], the values as a tensor map of
/// [`forward_values_map`](super::super::forward_values_map): the same
/// map), else 1.
pub fn grad_input_cluster(sm: Sm, prec: TcPrecision, bs: u32) -> u32 {
    if mcast::grad_input_enabled(sm, prec, bs) {
        mcast::CLUSTER
    } else {
        1
    }
}

/// `block_ell_tc_grad_input_{p}_b{B}`, grouped (see the [module
/// docs](super)).
pub(in super::super) fn grad_input<T: MmaInput>(
    sm: Sm,
    prec: TcPrecision,
    bs: u32,
) -> Result<PtxModule> {
    grad_input_built::<T>(sm, prec, bs, mcast::grad_input_enabled(sm, prec, bs))
}

/// [`grad_input`], in clusters when `cluster` (tests build the cluster
/// kernel where it is not enabled: `grouped_mcast::buildable`).
pub(super) fn grad_input_built<T: MmaInput>(
    sm: Sm,
    prec: TcPrecision,
    bs: u32,
    cluster: bool,
) -> Result<PtxModule> {
    let (sh, gt) = shape::<T>(prec, bs, sm, true);
    let cluster = cluster && mcast::buildable(sm, prec, bs);
    let mut b = builder(
        &name("grad_input", prec, bs),
        sm,
        cluster.then_some(mcast::LINE),
    );
    // the cluster kernel takes the values as a tensor map
    macro_rules! io {
        ($p:expr, $values:expr) => {
            Io {
                input: $p.gy.addr(),
                values: $values,
                out: $p.gx.addr(),
                n: $p.n,
                in_width: b.shl($p.r, log2(bs)),
                out_width: b.shl($p.c, log2(bs)),
                blocks: $p.c,
                out_bf16: $p.out_bf16,
            }
        };
    }
    let (io, map, (offsets, slots, k, c)) = if cluster {
        let p = b.params::<GradInputTmaArgs>();
        let io = io!(p, None);
        (
            io,
            Some((p.vmap, p.gymap, mcast::LINE)),
            (p.offsets, p.slots, p.k, p.c),
        )
    } else {
        let p = b.params::<GradInputArgs>();
        let io = io!(p, Some(p.values.addr()));
        (io, None, (p.offsets, p.slots, p.k, p.c))
    };
    let sh = if cluster { sh.for_cluster(prec) } else { sh };
    let g = gt.g;
    // the cluster kernel takes its keys by a multiply (`div_by_k`)
    let mk = move |b: &mut KernelBuilder, _: Reg<U32>, _: Reg<U32>| -> Box<dyn Lists> {
        let rcp = cluster.then(|| b.div(u32::MAX, k));
        Box::new(ColLists {
            offsets,
            slots,
            k,
            c,
            g,
            rcp,
            cache: cluster.then(|| std::cell::RefCell::new(Vec::new())),
        })
    };
    kernel::<T>(b, &sh, &gt, &io, &mk, None, map)
}
