//! Clustered launches (sm_90): the cluster shape of a launch (the launch
//! attribute, the entry's `.reqnctapercluster`, `.explicitcluster`,
//! `.maxclusterrank`, the grid a multiple of it) and the grid of clusters,
//! run one cluster after another on live memory (the CTAs of a cluster
//! together, `interp::cluster`), each cluster's global accesses checked
//! against the earlier clusters' as they happen.

use super::checks::global::Scratch;
use super::error::SimError;
use super::global_mem::GlobalMem;
use super::grid::{GridTotals, name_other_block};
use super::interp::cluster::MAX_CLUSTER;
use super::interp::{Base, Exec, GlobalView, Kernel, Stop};
use super::ir::*;
use crate::exec::LaunchConfig;
use crate::target::Sm;

/// Whether entry `e` uses a cluster feature (`mapa`, `barrier.cluster`,
/// `.shared::cluster`, a cluster special register, an `mbarrier` or a
/// bulk copy: the simulator runs those on the cluster schedule, whose
/// parking of `mbarrier.try_wait` lets the other CTAs go on): it then runs as
/// clusters of one CTA when the launch names no cluster shape (the GPU's
/// implicit 1×1×1 clusters).
fn uses_cluster(e: &Entry) -> bool {
    let sregs = sreg::CLUSTER_CTARANK..=sreg::IS_EXPLICIT_CLUSTER;
    e.insts.iter().any(|i| {
        matches!(
            i.op,
            Op::Mapa
                | Op::ClusterArrive { .. }
                | Op::ClusterWait
                | Op::MbarInit
                | Op::MbarArrive { .. }
                | Op::MbarTryWait
                | Op::CpAsyncBulk { .. }
                | Op::CpAsyncBulkTensor { .. }
                | Op::Ld {
                    sp: Space::SharedCluster,
                    ..
                }
                | Op::St {
                    sp: Space::SharedCluster,
                    ..
                }
        ) || i
            .s
            .iter()
            .any(|s| matches!(s, Src::Reg(r) if sregs.contains(r)))
    })
}

/// A launch's cluster shape and whether the launch named it.
pub(crate) type Shape = ((u32, u32, u32), bool);

/// The cluster shape a launch of `e` with `cfg` and launch attribute
/// `attr` runs with on `sm`, and whether it is explicit; `None` for a
/// launch without clusters.
pub(crate) fn shape(
    e: &Entry,
    cfg: &LaunchConfig,
    attr: Option<(u32, u32, u32)>,
    sm: Sm,
) -> Result<Option<Shape>, SimError> {
    let bad = |m: String| Err(SimError::InvalidLaunch(m));
    let name = &e.name;
    let dims = match (attr, e.reqnctapercluster) {
        (Some(a), Some(q)) if a != q => {
            return bad(format!(
                "cluster shape {a:?} differs from .reqnctapercluster {q:?} of `{name}`"
            ));
        }
        (Some(a), _) => Some(a),
        (None, q) => q,
    };
    let Some(d) = dims else {
        if e.explicitcluster {
            return bad(format!(
                "`{name}` is .explicitcluster: launch it with a cluster shape"
            ));
        }
        return Ok(uses_cluster(e).then_some(((1, 1, 1), false)));
    };
    if sm.info().cc.0 < 9 {
        return bad(format!(
            "thread-block clusters need sm_90 or later; the device is {sm}"
        ));
    }
    let size = d.0 as u64 * d.1 as u64 * d.2 as u64;
    if size == 0 || size > MAX_CLUSTER as u64 {
        return bad(format!(
            "cluster shape {d:?}: {size} CTAs (1 to {MAX_CLUSTER} supported)"
        ));
    }
    if let Some(m) = e.maxclusterrank
        && size > m as u64
    {
        return bad(format!(
            "cluster shape {d:?} has {size} CTAs, above .maxclusterrank {m} of `{name}`"
        ));
    }
    let g = cfg.grid;
    if !g.0.is_multiple_of(d.0) || !g.1.is_multiple_of(d.1) || !g.2.is_multiple_of(d.2) {
        return bad(format!(
            "grid {g:?} is not a multiple of the cluster shape {d:?}"
        ));
    }
    // an entry that cannot observe its cluster runs as any launch (its
    // CTAs in parallel)
    if !uses_cluster(e) {
        return Ok(None);
    }
    Ok(Some((d, true)))
}

/// Run the launch `k` (with `k.cluster` set) cluster by cluster.
pub(crate) fn run(
    mem: &mut GlobalMem,
    k: &Kernel,
    scratch: &mut Scratch,
) -> Result<GridTotals, SimError> {
    let (dims, explicit) = k.cluster.expect("a clustered launch");
    scratch.prepare(1);
    let r = run_live(mem, k, dims, explicit, scratch);
    scratch.settle(1);
    r
}

fn run_live(
    mem: &mut GlobalMem,
    k: &Kernel,
    (dx, dy, dz): (u32, u32, u32),
    explicit: bool,
    scratch: &mut Scratch,
) -> Result<GridTotals, SimError> {
    let (gx, gy, gz) = k.cfg.grid;
    let ninst = k.code.insts.len();
    let watch = k.checks.then(|| std::mem::take(&mut scratch.launch));
    let view = GlobalView::new(Base::Live(mem), ninst, watch, k.checks);
    let mut ex = Exec::new(k, view, None);
    ex.cluster_prepare((dx, dy, dz), explicit);
    let mut recs = scratch.pool.pop().unwrap_or_default();
    let mut order: Vec<(u32, u32, u32)> = Vec::new();
    let (mut p, mut clock_reads, mut heaviest) = (0u64, 0u64, 0u64);
    let mut heaviest_warp: super::grid::WarpAt = (0, 0, 0);
    let mut critical_path: super::grid::WarpAt = (0, 0, 0);
    let mut printf = Vec::new();
    let mut outcome = Ok(());
    let size = (dx * dy * dz) as usize;
    let (mut ctaids, mut lins) = (Vec::with_capacity(size), Vec::with_capacity(size));
    'clusters: for cz in 0..gz / dz {
        for cy in 0..gy / dy {
            for cx in 0..gx / dx {
                ctaids.clear();
                lins.clear();
                for z in 0..dz {
                    for y in 0..dy {
                        for x in 0..dx {
                            let c = (cx * dx + x, cy * dy + y, cz * dz + z);
                            ctaids.push(c);
                            lins.push(
                                c.0 as u64 + gx as u64 * (c.1 as u64 + gy as u64 * c.2 as u64),
                            );
                        }
                    }
                }
                let (issued, stop) = ex.run_cluster(&ctaids, &lins, k.limit.saturating_sub(p));
                let finding = matches!(stop, Some(Stop::Finding(_)));
                ex.cluster_collect(
                    &mut recs,
                    &mut scratch.done,
                    &mut order,
                    &mut printf,
                    !finding,
                );
                if let Some(Stop::Finding(mut e)) = stop {
                    // the earliest CTA of the earlier clusters (`order`, in the
                    // order of `done`) whose access it conflicts with
                    name_other_block(&mut e, &scratch.done, |j| order[j]);
                    outcome = Err(e);
                    break 'clusters;
                }
                p += issued;
                // the cluster's CTAs run one code: its mean stands for each
                heaviest = heaviest.max(issued.div_ceil(size as u64));
                // its warps, by CTA
                heaviest_warp = super::grid::heavier(heaviest_warp, ex.cluster_heaviest_warp());
                critical_path = super::grid::heavier(critical_path, ex.cluster_critical_path());
                clock_reads += ex.clock;
            }
        }
    }
    scratch.pool.push(recs);
    if let Some(w) = ex.g.watch.take() {
        scratch.launch = w;
    }
    // Same-value write-write conflicts of the clusters' CTAs (warnings).
    let same = ex.take_same_writes();
    outcome.map(|()| GridTotals {
        counts: k
            .code
            .leader_of
            .iter()
            .map(|&l| ex.counts[l as usize])
            .collect(),
        barriers: ex.barriers,
        heaviest,
        heaviest_warp,
        critical_path,
        clock_reads,
        lockstep: 0,
        printf,
        same,
    })
}
