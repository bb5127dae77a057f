//! Issue 33's proof layers for thread-block clusters (sm_90+): a DSL
//! kernel in clusters of four CTAs exchanging values around a ring
//! through distributed shared memory (`mapa`, `st.shared::cluster`) and
//! reducing across the cluster (`ld.shared::cluster` of every rank),
//! ordered by `barrier.cluster`; ptxas assembles it on every target with
//! clusters and the DSL refuses it below sm_90; the simulator's result is
//! the host's, bit for bit; the launch checks (the grid a multiple of the
//! cluster shape, the attribute against `.reqnctapercluster`); and the
//! findings of planted defects: a missing cluster barrier (a race between
//! CTAs), `mapa` past the cluster, a CTA exiting while a peer reads its
//! shared memory, a second arrive before the wait, a remote read of bytes
//! nobody wrote (while bytes written only by another CTA count as
//! written).

use ptxsmith::dsl::params::Ptr;
use ptxsmith::dsl::types::F32;
use ptxsmith::dsl::*;
use ptxsmith::exec::LaunchConfig;
use ptxsmith::nvtools::NvTools;
use ptxsmith::sim::{AccessKind, Program, Sim, SimError};
use ptxsmith::{Error, Feature, Sm, kernel_params};

kernel_params! {
    struct RingArgs => RingRegs {
        src: Ptr<F32>,
        dst: Ptr<F32>,
    }
}

/// Threads per CTA and CTAs per cluster.
const THREADS: u32 = 32;
const CLUSTER: u32 = 4;

/// The planted defects.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Flaw {
    None,
    /// No cluster barrier between the remote stores and the owners' reads.
    NoExchangeBarrier,
    /// `mapa` to rank `%cluster_nctarank`.
    RankPastCluster,
    /// No cluster barrier before exit: a CTA exits while the others may
    /// still read its `buf`.
    NoFinalBarrier,
    /// A second arrive before the first barrier's wait.
    DoubleArrive,
}

/// Thread `t` of CTA `c` (rank `r`): `x = src[32c + t]` into `buf[t]`;
/// after a cluster barrier it stores `x` into `recv[t]` of rank `r + 1`
/// (mod the cluster), and after another reads its own `recv[t]` (from
/// rank `r − 1`) into `dst[32c + t]`; then it sums `buf[t]` of ranks 0,
/// 1, 2, 3 in that order (`add.rn`) into `dst[32·nblocks + 32c + t]`, and
/// passes a last cluster barrier before it exits.
fn ring(sm: Sm, shape: Option<(u32, u32, u32)>, flaw: Flaw) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("ring", sm);
    if let Some((x, y, z)) = shape {
        b.cluster_dims(x, y, z);
    }
    let p = b.params::<RingArgs>();
    let buf = b.shared_array::<F32>("buf", THREADS, 16);
    let recv = b.shared_array::<F32>("recv", THREADS, 16);
    let t = b.tid_x();
    let g = b.global_id_x();
    let src = b.offset(p.src, g);
    let x = b.ld_global(src, 0);
    let sb = b.shared_elem(&buf, t);
    b.st_shared(sb, 0, x);
    let sr = b.shared_elem(&recv, t);
    b.st_shared(sr, 0, 0.0f32);
    if flaw == Flaw::DoubleArrive {
        b.cluster_arrive(ClusterArrive::Release);
        b.cluster_arrive(ClusterArrive::Release);
        b.cluster_wait();
    } else {
        b.cluster_sync();
    }
    let rank = b.cluster_ctarank();
    let n = b.cluster_nctarank();
    let next = b.add(rank, 1u32);
    let next = b.rem(next, n);
    let to = if flaw == Flaw::RankPastCluster {
        n
    } else {
        next
    };
    let q = b.mapa(sr, to);
    b.st_cluster(q, 0, x);
    if flaw != Flaw::NoExchangeBarrier {
        b.cluster_sync();
    }
    let y = b.ld_shared(sr, 0);
    let dst = b.offset(p.dst, g);
    b.st_global(dst, 0, y);
    let q0 = b.mapa(sb, 0u32);
    let mut acc = b.ld_cluster(q0, 0);
    for r in 1..CLUSTER {
        let q = b.mapa(sb, r);
        let v = b.ld_cluster(q, 0);
        acc = b.fadd(Rounding::Rn, acc, v);
    }
    let nb = b.nctaid_x();
    let total = b.mul_lo(nb, THREADS);
    let i = b.add(total, g);
    let d2 = b.offset(p.dst, i);
    b.st_global(d2, 0, acc);
    if flaw != Flaw::NoFinalBarrier {
        b.cluster_sync();
    }
    b.finish()
}

/// The host's `dst` for `src` over `blocks` CTAs in clusters of four.
fn host(src: &[f32], blocks: u32) -> Vec<f32> {
    let n = (blocks * THREADS) as usize;
    let mut out = vec![0f32; 2 * n];
    for c in 0..blocks {
        let (r, base) = (c % CLUSTER, c - c % CLUSTER);
        for t in 0..THREADS {
            let g = (c * THREADS + t) as usize;
            let from = base + (r + CLUSTER - 1) % CLUSTER;
            out[g] = src[(from * THREADS + t) as usize];
            let s = |k: u32| src[((base + k) * THREADS + t) as usize];
            out[n + g] = ((s(0) + s(1)) + s(2)) + s(3);
        }
    }
    out
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect()
}

/// Run `m` over `blocks` CTAs on a simulated sm_90 (in clusters of
/// `attr` if given); `dst` back.
fn run(
    m: &PtxModule,
    blocks: u32,
    attr: Option<(u32, u32, u32)>,
    src: &[f32],
) -> Result<Vec<f32>, SimError> {
    let prog = Program::parse(&m.ptx)?;
    let mut sim = Sim::new(Sm::Sm90);
    let s = sim.alloc(src.len() * 4).unwrap();
    sim.write(s, &bytes(src)).unwrap();
    let words = 2 * (blocks * THREADS) as usize;
    let d = sim.alloc(words * 4).unwrap();
    sim.write(d, &vec![0; words * 4]).unwrap();
    let mut params = s.to_le_bytes().to_vec();
    params.extend(d.to_le_bytes());
    let cfg = LaunchConfig::linear(blocks, THREADS);
    match attr {
        Some(c) => sim.launch_program_bytes_clustered(&prog, &m.kernel, cfg, c, &params)?,
        None => sim.launch_program_bytes(&prog, &m.kernel, cfg, &params)?,
    };
    let mut raw = vec![0u8; words * 4];
    sim.read(d, &mut raw).unwrap();
    Ok(raw
        .chunks(4)
        .map(|x| f32::from_bits(u32::from_le_bytes([x[0], x[1], x[2], x[3]])))
        .collect())
}

fn src(blocks: u32) -> Vec<f32> {
    (0..blocks * THREADS)
        .map(|i| f32::from_bits(0x3F80_0000 ^ (i.wrapping_mul(0x9E37_79B9) >> 9)))
        .collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn ring_and_reduction_equal_the_host_bit_for_bit() {
    let blocks = 8;
    let s = src(blocks);
    let want = bits(&host(&s, blocks));
    // the shape compiled in, launched plainly or with the same attribute
    let m = ring(Sm::Sm90, Some((4, 1, 1)), Flaw::None).unwrap();
    assert_eq!(bits(&run(&m, blocks, None, &s).unwrap()), want);
    assert_eq!(bits(&run(&m, blocks, Some((4, 1, 1)), &s).unwrap()), want);
    // no shape in the kernel: the launch attribute gives it
    let m = ring(Sm::Sm90, None, Flaw::None).unwrap();
    assert_eq!(bits(&run(&m, blocks, Some((4, 1, 1)), &s).unwrap()), want);
}

#[test]
fn launch_shapes_are_checked() {
    let s = src(8);
    let m = ring(Sm::Sm90, Some((4, 1, 1)), Flaw::None).unwrap();
    match run(&m, 6, None, &src(6)) {
        Err(SimError::InvalidLaunch(msg)) => {
            assert!(msg.contains("not a multiple of the cluster shape"), "{msg}")
        }
        other => panic!("{other:?}"),
    }
    match run(&m, 8, Some((2, 1, 1)), &s) {
        Err(SimError::InvalidLaunch(msg)) => {
            assert!(msg.contains("differs from .reqnctapercluster"), "{msg}")
        }
        other => panic!("{other:?}"),
    }
    match run(&m, 8, Some((32, 1, 1)), &s) {
        Err(SimError::InvalidLaunch(_)) => {}
        other => panic!("{other:?}"),
    }
    // without a shape the CTAs are clusters of one: rank 1 does not exist
    let m = ring(Sm::Sm90, None, Flaw::None).unwrap();
    match run(&m, 8, None, &s) {
        Err(SimError::ClusterRank {
            rank: 1, size: 1, ..
        }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_missing_cluster_barrier_is_a_race_between_ctas() {
    let m = ring(Sm::Sm90, Some((4, 1, 1)), Flaw::NoExchangeBarrier).unwrap();
    match run(&m, 4, None, &src(4)) {
        Err(
            e @ SimError::ClusterRace {
                this: AccessKind::Read,
                other: AccessKind::Write,
                ..
            },
        ) => {
            let SimError::ClusterRace {
                site,
                other_site,
                owner_ctaid,
                rank,
                ..
            } = &e
            else {
                unreachable!()
            };
            // the owner's read of its `recv`, racing with the store of the
            // previous rank
            assert_eq!((owner_ctaid.0, *rank), (site.ctaid.0, site.ctaid.0));
            assert_eq!(other_site.ctaid.0, site.ctaid.0 - 1);
            assert!(site.instr.starts_with("ld.shared.f32"), "{e}");
            assert!(
                other_site.instr.starts_with("st.shared::cluster.f32"),
                "{e}"
            );
            assert_eq!(site.tid, other_site.tid);
            let msg = e.to_string();
            assert!(msg.contains("distributed shared-memory race"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn mapa_past_the_cluster_is_a_finding() {
    let m = ring(Sm::Sm90, Some((4, 1, 1)), Flaw::RankPastCluster).unwrap();
    match run(&m, 4, None, &src(4)) {
        Err(SimError::ClusterRank {
            site,
            rank: 4,
            size: 4,
        }) => assert!(site.instr.starts_with("mapa.shared::cluster.u32")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_cta_exiting_while_a_peer_reads_its_shared_memory_is_a_finding() {
    let m = ring(Sm::Sm90, Some((4, 1, 1)), Flaw::NoFinalBarrier).unwrap();
    match run(&m, 4, None, &src(4)) {
        Err(e @ SimError::ClusterExit { .. }) => {
            let SimError::ClusterExit {
                site,
                this,
                exited_ctaid,
            } = &e
            else {
                unreachable!()
            };
            assert_eq!(*this, AccessKind::Read);
            assert_ne!(exited_ctaid, &site.ctaid);
            assert!(site.instr.starts_with("ld.shared::cluster.f32"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_second_arrive_before_the_wait_is_a_finding() {
    let m = ring(Sm::Sm90, Some((4, 1, 1)), Flaw::DoubleArrive).unwrap();
    match run(&m, 4, None, &src(4)) {
        Err(SimError::ClusterBarrier { site, message }) => {
            assert!(
                site.instr.starts_with("barrier.cluster.arrive"),
                "{message}"
            );
            assert!(
                message.contains("second barrier.cluster.arrive"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_kernel_assembles_from_sm_90_and_is_refused_below() {
    for sm in [Sm::Sm80, Sm::Sm89] {
        match ring(sm, Some((4, 1, 1)), Flaw::None) {
            Err(Error::UnsupportedFeature {
                feature, sm: at, ..
            }) => {
                assert_eq!((feature, at), (Feature::Cluster, sm));
            }
            other => panic!("{sm}: {other:?}"),
        }
    }
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    let mut n = 0;
    for sm in Sm::ALL.into_iter().filter(|s| s.supports(Feature::Cluster)) {
        let m = ring(sm, Some((4, 1, 1)), Flaw::None).unwrap();
        if let Err(e) = tools.assemble(&m.ptx, sm) {
            panic!("ring on {sm} rejected by ptxas: {e}\n{}", m.ptx);
        }
        n += 1;
    }
    assert!(n >= 3, "sm_90, sm_100 and sm_120 at least");
    // 7.8 is minimal on sm_90
    let m = ring(Sm::Sm90, Some((4, 1, 1)), Flaw::None).unwrap();
    assert!(m.ptx.contains(".version 7.8\n"));
    let lower = m.ptx.replace(".version 7.8\n", ".version 7.7\n");
    assert!(tools.assemble(&lower, Sm::Sm90).is_err());
}

/// Clusters of two: thread `t` stores `t` into `x[t]` of the other rank
/// (only remotely), and after a cluster barrier reads its own `x[t]`
/// (written by the other CTA: initialised) into `dst`; if `unwritten`, it
/// also reads the other rank's `y[t]`, which nobody wrote.
fn swap(unwritten: bool) -> PtxModule {
    let mut b = KernelBuilder::new("swap", Sm::Sm90);
    b.cluster_dims(2, 1, 1);
    let p = b.params::<RingArgs>();
    let x = b.shared_array::<F32>("x", THREADS, 16);
    let y = b.shared_array::<F32>("y", THREADS, 16);
    let t = b.tid_x();
    let g = b.global_id_x();
    let rank = b.cluster_ctarank();
    let other = b.xor(rank, 1u32);
    let px = b.shared_elem(&x, t);
    let qx = b.mapa(px, other);
    let v = b.u32_to_f32(Rounding::Rn, t);
    b.st_cluster(qx, 0, v);
    b.cluster_sync();
    let mine = b.ld_shared(px, 0);
    let d = b.offset(p.dst, g);
    b.st_global(d, 0, mine);
    if unwritten {
        let py = b.shared_elem(&y, t);
        let qy = b.mapa(py, other);
        let w = b.ld_cluster(qy, 0);
        b.st_global(d, 0, w);
    }
    b.cluster_sync();
    b.finish().unwrap()
}

#[test]
fn remote_writes_initialise_and_remote_reads_of_unwritten_bytes_are_findings() {
    let s = src(2);
    let got = run(&swap(false), 2, None, &s).unwrap();
    let want: Vec<u32> = (0..2 * THREADS)
        .map(|i| (i % THREADS) as f32)
        .map(f32::to_bits)
        .collect();
    assert_eq!(bits(&got[..2 * THREADS as usize]), want);
    match run(&swap(true), 2, None, &s) {
        Err(SimError::UninitializedShared { site, size: 4, .. }) => {
            assert!(site.instr.starts_with("ld.shared::cluster.f32"), "{site}");
        }
        other => panic!("{other:?}"),
    }
}
