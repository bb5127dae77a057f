//! The cluster barrier orders a CTA's own shared-memory accesses in the
//! simulator's race check, as `bar.sync` does, and only when it does on
//! the GPU (PTX ISA "barrier.cluster": a release arrive, an acquire
//! wait): a phase whose every thread arrived with release and touched no
//! shared memory between its arrive and the phase's completion starts a
//! new barrier epoch of the CTA (`sim::interp::cluster`, *Order within a
//! CTA*). The kernel writes shared memory, passes a cluster barrier, reads
//! another warp's words and a word every thread read before (so the
//! write after the second barrier meets a byte with several readers,
//! which only the epoch orders), with planted defects around the barrier:
//! a `.relaxed` arrive, an access inside the arrive–wait window (in shared
//! and in global memory), a writer that exited before the barrier, no
//! barrier.

use ptxsmith::dsl::params::Ptr;
use ptxsmith::dsl::types::{Reg, U32};
use ptxsmith::dsl::*;
use ptxsmith::exec::LaunchConfig;
use ptxsmith::sim::{AccessKind, Program, Sim, SimError};
use ptxsmith::{Sm, kernel_params};

kernel_params! {
    struct OrderArgs => OrderRegs {
        dst: Ptr<U32>,
        scratch: Ptr<U32>,
    }
}

/// Threads per CTA (two warps) and CTAs per cluster.
const THREADS: u32 = 64;
const CLUSTER: u32 = 2;

/// What stands between the first writes and the reads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Between {
    /// `barrier.cluster.arrive` (release) and `barrier.cluster.wait`.
    ClusterSync,
    /// `barrier.cluster.arrive.relaxed` and the wait: no release.
    Relaxed,
    /// The arrive, a store to `late[t]`, the wait: the store is not
    /// ordered before the other threads' reads after their waits.
    WindowStore,
    /// Thread 63 exits after its first stores, the others pass the
    /// barrier: an exit releases nothing.
    ExitedWriter,
    /// The arrive, a store to `scratch[g]` in global memory, the wait;
    /// after it each thread reads the other warp's word: a race between
    /// the CTA's warps (the cluster barrier orders no global access in
    /// the simulator's check, which watches the window in shared memory
    /// only).
    WindowGlobalStore,
    /// No barrier at all.
    Nothing,
}

fn barrier(
    b: &mut KernelBuilder,
    between: Between,
    late: SharedPtr<U32>,
    scratch: GlobalPtr<U32>,
    t: Reg<U32>,
) {
    match between {
        Between::ClusterSync | Between::ExitedWriter => b.cluster_sync(),
        Between::Relaxed => {
            b.cluster_arrive(ClusterArrive::Relaxed);
            b.cluster_wait();
        }
        Between::WindowStore => {
            b.cluster_arrive(ClusterArrive::Release);
            let v = b.add(t, 1000u32);
            b.st_shared(late, 0, v);
            b.cluster_wait();
        }
        Between::WindowGlobalStore => {
            b.cluster_arrive(ClusterArrive::Release);
            let g = b.global_id_x();
            let q = b.offset(scratch, g);
            b.st_global(q, 0, t);
            b.cluster_wait();
        }
        Between::Nothing => {}
    }
}

/// Thread `t`: `buf[t] = t`, `late[t] = t + 100`; the barrier (`between`);
/// `s = buf[0] + buf[o] + late[o]` with `o = (t + 32) mod 64`; a cluster
/// barrier; thread 0 stores `buf[0] = 7` (over the bytes every thread
/// read); `dst[g] = s`.
fn kernel(between: Between) -> PtxModule {
    let mut b = KernelBuilder::new("cluster_order", Sm::Sm90);
    b.cluster_dims(CLUSTER, 1, 1);
    let p = b.params::<OrderArgs>();
    let buf = b.shared_array::<U32>("buf", THREADS, 16);
    let late = b.shared_array::<U32>("late", THREADS, 16);
    let t = b.tid_x();
    let g = b.global_id_x();
    let sb = b.shared_elem(&buf, t);
    b.st_shared(sb, 0, t);
    let sl = b.shared_elem(&late, t);
    let l = b.add(t, 100u32);
    b.st_shared(sl, 0, l);
    if between == Between::ExitedWriter {
        let last = b.setp(Cmp::Eq, t, THREADS - 1);
        b.if_(last, |b| b.ret());
    }
    barrier(&mut b, between, sl, p.scratch, t);
    let o = b.add(t, 32u32);
    let o = b.rem(o, THREADS);
    let first = b.ld_shared_at(&buf, 0);
    let so = b.shared_elem(&buf, o);
    let x = b.ld_shared(so, 0);
    let slo = b.shared_elem(&late, o);
    let y = b.ld_shared(slo, 0);
    let s = b.add(first, x);
    let mut s = b.add(s, y);
    if between == Between::WindowGlobalStore {
        let base = b.sub(g, t);
        let go = b.add(base, o);
        let q = b.offset(p.scratch, go);
        let z = b.ld_global(q, 0);
        s = b.add(s, z);
    }
    b.cluster_sync();
    let zero = b.setp(Cmp::Eq, t, 0u32);
    b.if_(zero, |b| b.st_shared_at(&buf, 0, 7u32));
    let d = b.offset(p.dst, g);
    b.st_global(d, 0, s);
    b.finish().expect("the order kernel builds")
}

/// The simulator's `dst` for two clusters, or its finding.
fn run(m: &PtxModule) -> Result<Vec<u32>, SimError> {
    let prog = Program::parse(&m.ptx)?;
    let mut sim = Sim::new(Sm::Sm90);
    let blocks = 2 * CLUSTER;
    let words = (blocks * THREADS) as usize;
    let d = sim.alloc(words * 4).unwrap();
    sim.write(d, &vec![0; words * 4]).unwrap();
    let s = sim.alloc(words * 4).unwrap();
    sim.write(s, &vec![0; words * 4]).unwrap();
    let mut params = d.to_le_bytes().to_vec();
    params.extend(s.to_le_bytes());
    let cfg = LaunchConfig::linear(blocks, THREADS);
    sim.launch_program_bytes(&prog, &m.kernel, cfg, &params)?;
    let mut raw = vec![0u8; words * 4];
    sim.read(d, &mut raw).unwrap();
    Ok(raw
        .chunks(4)
        .map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]))
        .collect())
}

/// The shared-memory race `r` is a read after the barrier of a word
/// another thread wrote before it (or in its window).
fn is_read_after_write(r: &Result<Vec<u32>, SimError>) -> bool {
    matches!(
        r,
        Err(SimError::SharedRace {
            this: AccessKind::Read,
            other: AccessKind::Write,
            ..
        })
    )
}

#[test]
fn the_cluster_barrier_orders_a_ctas_own_shared_accesses() {
    let got = run(&kernel(Between::ClusterSync)).unwrap_or_else(|e| panic!("{e}"));
    let want: Vec<u32> = (0..2 * CLUSTER * THREADS)
        .map(|g| {
            let t = g % THREADS;
            let o = (t + 32) % THREADS;
            o + (o + 100)
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn a_relaxed_arrive_does_not_order_them() {
    let r = run(&kernel(Between::Relaxed));
    assert!(is_read_after_write(&r), "{r:?}");
}

#[test]
fn an_access_between_arrive_and_completion_is_not_ordered() {
    let r = run(&kernel(Between::WindowStore));
    match &r {
        Err(SimError::SharedRace {
            site, other_site, ..
        }) => {
            assert!(site.instr.starts_with("ld.shared.u32"), "{site:?}");
            if let Some(o) = other_site {
                assert!(o.instr.starts_with("st.shared.u32"), "{o:?}");
            }
        }
        other => panic!("{other:?}"),
    }
    assert!(is_read_after_write(&r), "{r:?}");
}

#[test]
fn a_writer_that_exited_before_the_barrier_is_not_ordered() {
    let r = run(&kernel(Between::ExitedWriter));
    assert!(is_read_after_write(&r), "{r:?}");
}

#[test]
fn without_a_barrier_the_reads_are_findings() {
    // (warp 0 runs ahead: its read of warp 1's word finds it unwritten)
    let r = run(&kernel(Between::Nothing));
    assert!(
        is_read_after_write(&r) || matches!(r, Err(SimError::UninitializedShared { .. })),
        "{r:?}"
    );
}

#[test]
fn a_global_store_between_arrive_and_completion_is_not_ordered() {
    let r = run(&kernel(Between::WindowGlobalStore));
    match &r {
        Err(SimError::WarpGlobalRace { site, .. }) => {
            assert!(site.instr.starts_with("ld.global.u32"), "{site:?}")
        }
        other => panic!("{other:?}"),
    }
}
