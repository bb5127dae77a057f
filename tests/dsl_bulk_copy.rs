//! Issue 31's groundwork for shared `x` tiles: `mbarrier` and
//! `cp.async.bulk` with `.multicast::cluster` in the DSL, the simulator and
//! the pinned ptxas. A cluster of two CTAs where each CTA multicasts half
//! of a tile into both CTAs' shared memory and both write the whole tile
//! back (bits checked, two tiles in a row: phases of parity 0 and 1); the
//! expect_tx accounting (more bytes expected than copied never completes
//! the phase, fewer completes it before the last copy lands); every
//! finding of the simulator's model (`sim::interp::bulk`): a read before
//! the wait, a phase that can never complete, a misaligned, oversized or
//! out-of-bounds copy, a mask naming a CTA outside the cluster, a copy to
//! a peer that has not initialised its barrier; the gates (sm_90 and PTX
//! 8.0: the DSL refuses sm_80/sm_89, ptxas refuses the module at PTX 7.8);
//! and assembly by ptxas on sm_90, sm_100, sm_120 (and the `a` targets),
//! where multicast is legal (with an advisory to prefer `sm_90a`/`sm_100a`
//! for speed, a warning, not an error).

use ptxsmith::dsl::params::Ptr;
use ptxsmith::dsl::types::U32;
use ptxsmith::dsl::*;
use ptxsmith::exec::LaunchConfig;
use ptxsmith::nvtools::NvTools;
use ptxsmith::sim::{Program, Sim, SimError};
use ptxsmith::{Error, Feature, Sm, kernel_params};

kernel_params! {
    struct TileArgs => TileRegs {
        src: Ptr<U32>,
        out: Ptr<U32>,
    }
}

/// Threads per CTA, words per tile, tiles per cluster (one per phase).
const THREADS: u32 = 64;
const TILE: u32 = 256;
const ITERS: u32 = 2;
/// Bytes of half a tile.
const HALF_BYTES: u32 = TILE * 2;

/// The planted defects.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Flaw {
    None,
    /// The threads read the tile without waiting on the barrier.
    NoWait,
    /// `expect_tx` of twice the tile's bytes: the phase never completes.
    ExpectTooMuch,
    /// `expect_tx` of half the tile's bytes: the phase completes before
    /// the peer's half lands.
    ExpectTooLittle,
    /// The destination one word past the half's start (4-byte aligned).
    MisalignedDst,
    /// The source one word past the half's start.
    MisalignedSrc,
    /// Rank 1's half lands at word 192 of a 256-word tile: past the
    /// CTA's shared memory.
    DstPastShared,
    /// The size (in a register) 24 bytes.
    OddSize,
    /// The multicast mask names rank 2 of a cluster of two.
    MaskPastCluster,
    /// No cluster barrier between the peers' `mbarrier.init` and the
    /// copies: rank 0's copy reaches rank 1 before rank 1 initialised its
    /// barrier.
    NoInitSync,
}

/// Cluster `c` (ranks 0 and 1) moves tiles `c·ITERS + k` of `src`: in
/// iteration `k`, rank `r` multicasts words `128r..128r+128` of the tile
/// to both CTAs (mask `0b11`), both wait on their barrier (phase parity
/// `k`), and each CTA's thread `t` writes words `4t..4t+4` of the tile to
/// `out[(ctaid · ITERS + k) · TILE + 4t..]`.
fn kernel(sm: Sm, flaw: Flaw) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("tile_multicast", sm);
    b.cluster_dims(2, 1, 1);
    let p = b.params::<TileArgs>();
    let tile = b.shared_array::<U32>("tile", TILE, 16);
    let bar = b.shared_mbarrier("bar");
    let t = b.tid_x();
    let rank = b.cluster_ctarank();
    let cid = b.clusterid_x();
    let cta = b.ctaid_x();
    let first = b.setp(Cmp::Eq, t, 0u32);
    b.if_(first, |b| {
        b.mbarrier_init(bar, 1u32);
        b.fence_mbarrier_init();
    });
    if flaw != Flaw::NoInitSync {
        b.cluster_sync();
    }
    for k in 0..ITERS {
        b.if_(first, |b| {
            let expect = match flaw {
                Flaw::ExpectTooMuch => 4 * HALF_BYTES,
                Flaw::ExpectTooLittle => HALF_BYTES,
                _ => 2 * HALF_BYTES,
            };
            let _ = b.mbarrier_arrive_expect_tx(bar, expect);
            // the half: words 128·rank of tile c·ITERS + k
            let half = b.mul_lo(rank, TILE / 2);
            let tile_no = b.mad_lo(cid, ITERS, k);
            let g_word = b.mad_lo(tile_no, TILE, half);
            let g_word = if flaw == Flaw::MisalignedSrc {
                b.add(g_word, 1u32)
            } else {
                g_word
            };
            let g = b.offset(p.src, g_word);
            let s_word = match flaw {
                Flaw::MisalignedDst => b.add(half, 1u32),
                Flaw::DstPastShared => b.mul_lo(rank, 3 * TILE / 4),
                _ => half,
            };
            let s = b.shared_elem(&tile, s_word);
            let mask = if flaw == Flaw::MaskPastCluster {
                0b101u32
            } else {
                0b11
            };
            if flaw == Flaw::OddSize {
                let n = b.mov(24u32);
                b.cp_async_bulk_multicast(s, g, n, bar, mask);
            } else {
                b.cp_async_bulk_multicast(s, g, HALF_BYTES, bar, mask);
            }
        });
        if flaw != Flaw::NoWait {
            b.mbarrier_wait(bar, k & 1);
        }
        let w = b.shl(t, 2u32);
        let s = b.shared_elem(&tile, w);
        let row = b.mad_lo(cta, ITERS, k);
        let o = b.mad_lo(row, TILE, w);
        let g = b.offset(p.out, o);
        for j in 0..4 {
            let v = b.ld_shared(s, j);
            b.st_global(g, j, v);
        }
        // every CTA of the cluster has read the tile before the next
        // copies overwrite it (the peer's multicast writes here too);
        // the async proxy's writes come after this thread's reads
        b.fence_proxy_async_shared();
        b.cluster_sync();
    }
    b.finish()
}

/// `src` words: tile `i`, word `w` → a pattern with every bit position.
fn src(tiles: u32) -> Vec<u32> {
    (0..tiles * TILE)
        .map(|i| i.wrapping_mul(0x9E37_79B9) ^ 0xA5A5_0000)
        .collect()
}

/// The host's `out` for `clusters` clusters.
fn host(src: &[u32], clusters: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for cta in 0..2 * clusters {
        let c = cta / 2;
        for k in 0..ITERS {
            let tile = ((c * ITERS + k) * TILE) as usize;
            out.extend_from_slice(&src[tile..tile + TILE as usize]);
        }
    }
    out
}

fn to_bytes(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Launch `m` over `clusters` clusters of two on a simulated sm_90;
/// `out` back.
fn run(m: &PtxModule, clusters: u32, src: &[u32]) -> Result<Vec<u32>, SimError> {
    let prog = Program::parse(&m.ptx)?;
    let mut sim = Sim::new(Sm::Sm90);
    let s = sim.alloc(src.len() * 4).unwrap();
    sim.write(s, &to_bytes(src)).unwrap();
    let words = (2 * clusters * ITERS * TILE) as usize;
    let d = sim.alloc(words * 4).unwrap();
    sim.write(d, &vec![0; words * 4]).unwrap();
    let mut params = s.to_le_bytes().to_vec();
    params.extend(d.to_le_bytes());
    sim.launch_program_bytes(
        &prog,
        &m.kernel,
        LaunchConfig::linear(2 * clusters, THREADS),
        &params,
    )?;
    let mut raw = vec![0u8; words * 4];
    sim.read(d, &mut raw).unwrap();
    Ok(raw
        .chunks(4)
        .map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]))
        .collect())
}

fn finding(flaw: Flaw) -> SimError {
    let m = kernel(Sm::Sm90, flaw).unwrap();
    match run(&m, 1, &src(ITERS)) {
        Err(e) => e,
        Ok(_) => panic!("{flaw:?}: no finding"),
    }
}

#[test]
fn multicast_halves_make_the_whole_tile_in_both_ctas() {
    let clusters = 2;
    let s = src(clusters * ITERS);
    let m = kernel(Sm::Sm90, Flaw::None).unwrap();
    assert_eq!(run(&m, clusters, &s).unwrap(), host(&s, clusters));
}

#[test]
fn expect_tx_accounting() {
    // twice the bytes: the phase waits for bytes that never come
    match finding(Flaw::ExpectTooMuch) {
        SimError::Deadlock { parked, .. } => {
            assert!(
                parked.contains("an mbarrier phase cannot complete"),
                "{parked}"
            );
            // 2048 expected, 1024 landed
            assert!(parked.contains("tx-count 1024"), "{parked}");
        }
        other => panic!("{other}"),
    }
    // half the bytes: rank 0's own half completes the phase, its threads
    // read the peer's half, which has not been copied yet
    match finding(Flaw::ExpectTooLittle) {
        SimError::UninitializedShared { offset, .. } => {
            assert!(offset >= u64::from(HALF_BYTES), "{offset}")
        }
        other => panic!("{other}"),
    }
}

/// A finding of the kind `kind` tells.
type KindOf = fn(&SimError) -> bool;

#[test]
fn misuses_are_findings() {
    let bulk: KindOf = |e| matches!(e, SimError::BulkCopy { .. });
    let misaligned: KindOf = |e| matches!(e, SimError::Misaligned { size: 16, .. });
    let oob: KindOf = |e| matches!(e, SimError::OutOfBounds { .. });
    // (defect, the finding's kind, what its text names)
    let table: [(Flaw, KindOf, &[&str]); 7] = [
        // a read of the tile before the wait
        (
            Flaw::NoWait,
            bulk,
            &[
                "pending cp.async.bulk will write",
                "ld.shared",
                "cp.async.bulk.shared::cluster.global",
            ],
        ),
        (Flaw::MisalignedDst, misaligned, &[]),
        (Flaw::MisalignedSrc, misaligned, &[]),
        (Flaw::DstPastShared, oob, &["cp.async.bulk"]),
        (Flaw::OddSize, bulk, &["cp.async.bulk of 24 bytes"]),
        (
            Flaw::MaskPastCluster,
            bulk,
            &[
                "mask 0x0005 names rank 2",
                "block (0,0,0)",
                "thread (0,0,0)",
            ],
        ),
        // a copy to a peer before its init is visible
        (
            Flaw::NoInitSync,
            bulk,
            &["of rank 1, which that CTA has not initialised"],
        ),
    ];
    for (flaw, kind, texts) in table {
        let e = finding(flaw);
        assert!(kind(&e), "{flaw:?}: {e}");
        let msg = e.to_string();
        for t in texts {
            assert!(msg.contains(t), "{flaw:?}: {msg}");
        }
    }
}

#[test]
fn gates_and_ptxas() {
    for sm in [Sm::Sm80, Sm::Sm89] {
        // without the cluster shape: only the bulk-copy family
        let mut b = KernelBuilder::new("k", sm);
        let bar = b.shared_mbarrier("bar");
        b.mbarrier_init(bar, 1u32);
        match b.finish() {
            Err(Error::UnsupportedFeature { feature, needs, .. }) => {
                assert_eq!(feature, Feature::BulkCopy);
                assert!(needs.contains("sm_90") && needs.contains("8.0"), "{needs}");
            }
            other => panic!("{sm}: {other:?}"),
        }
        assert!(kernel(sm, Flaw::None).is_err());
    }
    let m = kernel(Sm::Sm90, Flaw::None).unwrap();
    assert!(m.ptx.contains(".version 8.0\n"), "{}", m.ptx);
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    for sm in Sm::ALL
        .into_iter()
        .filter(|s| s.supports(Feature::BulkCopy))
    {
        let m = kernel(sm, Flaw::None).unwrap();
        if let Err(e) = tools.assemble(&m.ptx, sm) {
            panic!("bulk copy on {sm} rejected by ptxas: {e}\n{}", m.ptx);
        }
    }
    // 8.0 is minimal: ptxas refuses expect_tx and cp.async.bulk at 7.8
    let lower = m.ptx.replace(".version 8.0\n", ".version 7.8\n");
    assert!(tools.assemble(&lower, Sm::Sm90).is_err());
}

/// Clusters of two: rank 1's thread 0 arrives (remotely, release at
/// cluster scope) on rank 0's barrier; rank 0's threads wait for the
/// phase, then write `src[0] + t` to `out[t]`. `arrive`: rank 1 arrives at
/// all. (Data handed over through such a phase: `tests/sim_mbarrier_order.rs`.)
fn remote_arrive(sm: Sm, arrive: bool) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("remote_arrive", sm);
    b.cluster_dims(2, 1, 1);
    let p = b.params::<TileArgs>();
    let bar = b.shared_mbarrier("bar");
    let t = b.tid_x();
    let rank = b.cluster_ctarank();
    let first = b.setp(Cmp::Eq, t, 0u32);
    b.mbarrier_init_cluster(first, &[(bar, 1)]);
    let r1 = b.setp(Cmp::Eq, rank, 1u32);
    let producer = b.pand(r1, first);
    if arrive {
        b.if_(producer, |b| {
            let rb = b.mapa_mbarrier(bar, 0u32);
            b.mbarrier_arrive_remote(rb);
        });
    }
    let r0 = b.setp(Cmp::Eq, rank, 0u32);
    b.if_(r0, |b| {
        b.mbarrier_wait(bar, 0u32);
        let x = b.ld_global(p.src, 0);
        let v = b.add(x, t);
        let o = b.offset(p.out, t);
        b.st_global(o, 0, v);
    });
    b.cluster_sync();
    b.finish()
}

fn run_remote(m: &PtxModule) -> Result<Vec<u32>, SimError> {
    let prog = Program::parse(&m.ptx)?;
    let mut sim = Sim::new(Sm::Sm90);
    let s = sim.alloc(4).unwrap();
    sim.write(s, &0xC0FF_EE11u32.to_le_bytes()).unwrap();
    let d = sim.alloc(32 * 4).unwrap();
    sim.write(d, &[0; 128]).unwrap();
    let mut params = s.to_le_bytes().to_vec();
    params.extend(d.to_le_bytes());
    sim.launch_program_bytes(&prog, &m.kernel, LaunchConfig::linear(2, 32), &params)?;
    let mut raw = vec![0u8; 128];
    sim.read(d, &mut raw).unwrap();
    Ok(raw
        .chunks(4)
        .map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]))
        .collect())
}

#[test]
fn a_remote_arrive_completes_the_peers_phase() {
    let m = remote_arrive(Sm::Sm90, true).unwrap();
    assert!(
        m.ptx
            .contains("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r"),
        "{}",
        m.ptx
    );
    let want: Vec<u32> = (0..32).map(|t| 0xC0FF_EE11 + t).collect();
    assert_eq!(run_remote(&m).unwrap(), want);
    // nobody arrives: rank 0's phase can never complete
    let m = remote_arrive(Sm::Sm90, false).unwrap();
    match run_remote(&m) {
        Err(SimError::Deadlock { parked, .. }) => {
            assert!(parked.contains("1 of 1 arrivals pending"), "{parked}")
        }
        other => panic!("{other:?}"),
    }
    if let Some(tools) = NvTools::for_tests() {
        let m = remote_arrive(Sm::Sm90, true).unwrap();
        if let Err(e) = tools.assemble(&m.ptx, Sm::Sm90) {
            panic!("remote arrive rejected by ptxas: {e}\n{}", m.ptx);
        }
    }
}
