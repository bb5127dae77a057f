//! Shared-memory barriers (`mbarrier`) with transaction counts and bulk
//! copies from global memory into the shared memory of one or several
//! CTAs of a cluster (issue 31: one L2 read of an `x` tile delivered to
//! every CTA of a cluster; sm_90, PTX 8.0, [`Feature::BulkCopy`]).
//!
//! Semantics (PTX ISA 8.x, "Parallel Synchronization and Communication
//! Instructions: mbarrier" — "Contents of the mbarrier object", "Phase
//! completion of the mbarrier object", "expect-tx operation",
//! "complete-tx operation", "mbarrier.test_wait/mbarrier.try_wait" — and
//! "Data Movement and Conversion Instructions: cp.async.bulk"):
//!
//! * An mbarrier is an opaque `.b64` in shared memory
//!   ([`SharedMbarrier`]) with a phase, a pending arrival count (reset to
//!   the expected count given to `mbarrier.init` at each phase) and a
//!   tx-count. The current phase completes when the pending arrivals
//!   reach zero *and* the tx-count is zero; the next phase starts.
//! * `mbarrier.arrive.expect_tx` adds the byte count to the tx-count
//!   (expect-tx), then arrives; `cp.async.bulk ... mbarrier::complete_tx::bytes`
//!   subtracts the bytes it wrote from the tx-count of the barrier when
//!   they have landed (complete-tx).
//! * `mbarrier.try_wait.parity` is true once the phase of the given
//!   parity (the current phase's or the one before) has completed;
//!   [`KernelBuilder::mbarrier_wait`] loops on it.
//! * `cp.async.bulk.shared::cluster.global` copies `size` bytes (a
//!   multiple of 16, both addresses 16-byte aligned); with
//!   `.multicast::cluster` the bytes land at the same shared offset of
//!   every CTA named by the 16-bit `ctaMask` and complete-tx on the
//!   barrier at the same offset in each. ptxas 12.9 accepts multicast on
//!   sm_90, sm_100 and sm_120 with an advisory ("should be used on
//!   .target 'sm_90a/sm_100a/...'"): legal, slower on some parts.
//! * `fence.mbarrier_init.release.cluster` makes the initialisation
//!   visible to the other CTAs of the cluster (needed before a peer's
//!   multicast completes tx on this CTA's barrier, with a cluster barrier
//!   after it); `fence.proxy.async.shared::cta` orders this thread's
//!   generic-proxy shared accesses with later async-proxy ones (a bulk
//!   copy into bytes the thread just read or wrote).
//!
//! The simulator (`sim::interp::bulk`) models all of it and reports the
//! misuses (a read of a copy's destination before the wait, a phase that
//! can never complete, misaligned or out-of-bounds copies, a mask naming a
//! CTA outside the cluster).

use super::core::KernelBuilder;
use super::error::BuildError;
use super::memory::{GlobalPtr, SharedPtr};
use crate::dsl::ir::*;
use crate::dsl::types::*;

/// The largest arrival count and tx-count of an mbarrier (2²⁰ − 1).
const MBAR_MAX: i128 = (1 << 20) - 1;

/// A `.b64` mbarrier object in shared memory (its 32-bit `.shared::cta`
/// address), made by [`KernelBuilder::shared_mbarrier`].
#[derive(Debug, Clone, Copy)]
pub struct SharedMbarrier {
    pub(crate) reg: Reg<U32>,
}

impl SharedMbarrier {
    /// The address register.
    pub fn addr(self) -> Reg<U32> {
        self.reg
    }
}

/// An mbarrier of another CTA of the cluster (its 32-bit
/// `.shared::cluster` address), made by [`KernelBuilder::mapa_mbarrier`].
#[derive(Debug, Clone, Copy)]
pub struct ClusterMbarrier {
    pub(crate) reg: Reg<U32>,
}

impl KernelBuilder {
    /// Declare a shared `.b64` mbarrier named `name` (8-byte aligned) and
    /// take its address. Initialise it with
    /// [`mbarrier_init`](Self::mbarrier_init) before any other use.
    #[track_caller]
    pub fn shared_mbarrier(&mut self, name: &str) -> SharedMbarrier {
        let a = self.shared_array::<U64>(name, 1, 8);
        let p = self.shared_elem(&a, 0u32);
        SharedMbarrier { reg: p.reg }
    }

    /// `mbarrier.init.shared::cta.b64 [bar], count`: phase 0, `count`
    /// expected arrivals (1 to 2²⁰ − 1; a constant outside is
    /// [`BuildError::MbarrierCount`]), tx-count 0. One thread initialises;
    /// the others may use the barrier after a `bar.sync` (and the other
    /// CTAs of a cluster after [`fence_mbarrier_init`](Self::fence_mbarrier_init)
    /// and a cluster barrier).
    #[track_caller]
    pub fn mbarrier_init(&mut self, bar: SharedMbarrier, count: impl Into<Src<U32>>) {
        let count = count.into();
        self.mbar_range("arrival count", count.as_int());
        self.push(Op::MbarInit {
            bar: bar.reg.id(),
            count: count.v,
        });
    }

    /// `mbarrier.arrive.shared::cta.b64 state, [bar]`: one arrival
    /// (release at CTA scope); returns the opaque state.
    #[track_caller]
    pub fn mbarrier_arrive(&mut self, bar: SharedMbarrier) -> Reg<U64> {
        self.def(|state| Op::MbarArrive {
            state,
            bar: bar.reg.id(),
            tx: None,
        })
    }

    /// `mbarrier.arrive.expect_tx.shared::cta.b64 state, [bar], tx`: raise
    /// the tx-count by `tx` bytes (those the bulk copies completing on this
    /// barrier will write; at most 2²⁰ − 1), then arrive. Returns the
    /// opaque state.
    #[track_caller]
    pub fn mbarrier_arrive_expect_tx(
        &mut self,
        bar: SharedMbarrier,
        tx: impl Into<Src<U32>>,
    ) -> Reg<U64> {
        let tx = tx.into();
        self.mbar_range("expect_tx byte count", tx.as_int());
        self.def(|state| Op::MbarArrive {
            state,
            bar: bar.reg.id(),
            tx: Some(tx.v),
        })
    }

    /// The same barrier as `bar` in the CTA of rank `rank` of the cluster
    /// (`mapa.shared::cluster.u32`; the rank must be below
    /// `%cluster_nctarank`).
    #[track_caller]
    pub fn mapa_mbarrier(
        &mut self,
        bar: SharedMbarrier,
        rank: impl Into<Src<U32>>,
    ) -> ClusterMbarrier {
        let p = super::memory::SharedPtr::<U64>::from_reg(bar.reg);
        ClusterMbarrier {
            reg: self.mapa(p, rank).addr(),
        }
    }

    /// `mbarrier.arrive.release.cluster.shared::cluster.b64 _, [bar]`: one
    /// arrival on a barrier of another CTA of the cluster (release at
    /// cluster scope: this thread's earlier accesses are visible to the
    /// threads whose wait sees the phase complete), e.g. "this CTA has
    /// read the buffer the peer multicasts into".
    #[track_caller]
    pub fn mbarrier_arrive_remote(&mut self, bar: ClusterMbarrier) {
        self.push(Op::MbarArriveRemote { bar: bar.reg.id() });
    }

    /// `mbarrier.try_wait.parity.shared::cta.b64 p, [bar], parity`: whether
    /// the phase of parity `parity & 1` has completed (it waits a
    /// system-dependent time before answering false).
    #[track_caller]
    pub fn mbarrier_try_wait_parity(
        &mut self,
        bar: SharedMbarrier,
        parity: impl Into<Src<U32>>,
    ) -> Reg<Pred> {
        let parity = parity.into().v;
        self.def(|p| Op::MbarTryWait {
            p,
            bar: bar.reg.id(),
            parity,
        })
    }

    /// Wait until the phase of parity `parity` of `bar` has completed: a
    /// loop on [`mbarrier_try_wait_parity`](Self::mbarrier_try_wait_parity).
    /// After it, the bytes of the bulk copies that completed on that phase
    /// may be read by this thread.
    #[track_caller]
    pub fn mbarrier_wait(&mut self, bar: SharedMbarrier, parity: impl Into<Src<U32>>) {
        let parity = parity.into();
        let again = self.label();
        self.place(again);
        let done = self.mbarrier_try_wait_parity(bar, parity);
        self.bra_if(done, true, again);
    }

    /// `fence.mbarrier_init.release.cluster`: make this thread's
    /// `mbarrier.init`s visible to the cluster (before a cluster barrier
    /// after which peers' multicast copies complete on them).
    #[track_caller]
    pub fn fence_mbarrier_init(&mut self) {
        self.push(Op::FenceMbarInit);
    }

    /// The prologue of a cluster's mbarriers: the threads where `leader`
    /// holds (one per CTA, typically `%tid.x == 0`) initialise each
    /// `(bar, count)` of `bars` ([`mbarrier_init`](Self::mbarrier_init))
    /// and [`fence_mbarrier_init`](Self::fence_mbarrier_init); then every
    /// thread passes a [`cluster_sync`](Self::cluster_sync). After it any
    /// thread of the cluster may arrive on the barriers, wait on its own
    /// CTA's, and copy into them.
    #[track_caller]
    pub fn mbarrier_init_cluster(&mut self, leader: Reg<Pred>, bars: &[(SharedMbarrier, u32)]) {
        self.if_(leader, |b| {
            for &(bar, count) in bars {
                b.mbarrier_init(bar, count);
            }
            b.fence_mbarrier_init();
        });
        self.cluster_sync();
    }

    /// `fence.proxy.async.shared::cta`: order this thread's earlier
    /// generic shared accesses before later async-proxy ones (a bulk copy
    /// reusing a buffer the CTA read).
    #[track_caller]
    pub fn fence_proxy_async_shared(&mut self) {
        self.push(Op::FenceProxyAsync);
    }

    /// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes
    /// [dst], [src], bytes, [bar]`: copy `bytes` (a non-zero multiple of
    /// 16; a constant that is not is [`BuildError::BulkCopySize`]) from
    /// global to this CTA's shared memory, both addresses 16-byte aligned;
    /// complete-tx of `bytes` on `bar` when they have landed.
    ///
    /// One thread initialises the barrier, announces the bytes and
    /// issues the copy; every thread waits for phase 0, then reads the
    /// tile (here on the simulator, as an implicit cluster of one CTA):
    ///
    /// ```
    /// use ptxsmith::dsl::params::Ptr;
    /// use ptxsmith::dsl::types::U32;
    /// use ptxsmith::dsl::*;
    /// use ptxsmith::exec::LaunchConfig;
    /// use ptxsmith::sim::{Program, Sim};
    /// use ptxsmith::{Sm, kernel_params};
    ///
    /// kernel_params! { struct Args => Regs { src: Ptr<U32>, dst: Ptr<U32> } }
    /// let mut b = KernelBuilder::new("copy_tile", Sm::Sm90);
    /// let Regs { src, dst } = b.params::<Args>();
    /// let tile = b.shared_array::<U32>("tile", 64, 16);
    /// let bar = b.shared_mbarrier("bar");
    /// let t = b.tid_x();
    /// let first = b.setp(Cmp::Eq, t, 0u32);
    /// b.if_(first, |b| b.mbarrier_init(bar, 1u32));
    /// b.bar_sync();
    /// b.if_(first, |b| {
    ///     let _ = b.mbarrier_arrive_expect_tx(bar, 256u32);
    ///     let s = b.shared_elem(&tile, 0u32);
    ///     b.cp_async_bulk(s, src, 256u32, bar);
    /// });
    /// b.mbarrier_wait(bar, 0u32);
    /// let v = b.shared_elem(&tile, t);
    /// let v = b.ld_shared(v, 0);
    /// let o = b.offset(dst, t);
    /// b.st_global(o, 0, v);
    /// let m = b.finish()?;
    ///
    /// let mut sim = Sim::new(Sm::Sm90);
    /// let words: Vec<u8> = (0..64u32).flat_map(|i| (i * 3).to_le_bytes()).collect();
    /// let (s, d) = (sim.alloc(256)?, sim.alloc(256)?);
    /// sim.write(s, &words)?;
    /// let mut params = s.to_le_bytes().to_vec();
    /// params.extend(d.to_le_bytes());
    /// let prog = Program::parse(&m.ptx)?;
    /// sim.launch_program_bytes(&prog, "copy_tile", LaunchConfig::linear(1, 64), &params)?;
    /// let mut out = vec![0u8; 256];
    /// sim.read(d, &mut out)?;
    /// assert_eq!(out, words);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn cp_async_bulk<E>(
        &mut self,
        dst: SharedPtr<E>,
        src: GlobalPtr<E>,
        bytes: impl Into<Src<U32>>,
        bar: SharedMbarrier,
    ) {
        self.bulk(dst, src, bytes.into(), bar, None);
    }

    /// [`cp_async_bulk`](Self::cp_async_bulk) with `.multicast::cluster`:
    /// the bytes land at `dst`'s offset in the shared memory of every CTA
    /// of the cluster whose rank has its bit set in `mask` (16 bits; a
    /// constant naming none or a bit past 15 is [`BuildError::ClusterMask`])
    /// and complete tx on the barrier at `bar`'s offset in each. One L2
    /// read serves them all (the simulator's traffic counts the bytes
    /// once).
    #[track_caller]
    pub fn cp_async_bulk_multicast<E>(
        &mut self,
        dst: SharedPtr<E>,
        src: GlobalPtr<E>,
        bytes: impl Into<Src<U32>>,
        bar: SharedMbarrier,
        mask: impl Into<Src<U32>>,
    ) {
        let m = self.cluster_mask_operand(mask.into());
        self.bulk(dst, src, bytes.into(), bar, Some(m));
    }

    /// A multicast's `ctaMask` operand: a constant checked against the 16
    /// CTAs a cluster may hold (`BuildError::ClusterMask` otherwise), or
    /// the low half of a register (the operand is 16 bits wide). Shared
    /// by the bulk and the tensor-map copies.
    pub(super) fn cluster_mask_operand(&mut self, mask: Src<U32>) -> Value {
        match mask.as_int() {
            Some(k) => {
                if !(1..=0xFFFF).contains(&k) {
                    self.fail(BuildError::ClusterMask {
                        mask: u64::try_from(k).unwrap_or(u64::MAX),
                    });
                }
                mask.v
            }
            None => {
                let Value::Reg(r) = mask.v else {
                    unreachable!("a non-constant operand is a register")
                };
                let w = self.u32_as_b32(Reg::<U32>::new(r.idx, r.owner));
                let (lo, _) = self.unpack_2x16(w);
                Value::Reg(lo.id())
            }
        }
    }

    #[track_caller]
    fn bulk<E>(
        &mut self,
        dst: SharedPtr<E>,
        src: GlobalPtr<E>,
        bytes: Src<U32>,
        bar: SharedMbarrier,
        mask: Option<Value>,
    ) {
        if let Some(n) = bytes.as_int()
            && (n <= 0 || n % 16 != 0)
        {
            self.fail(BuildError::BulkCopySize {
                bytes: u64::try_from(n).unwrap_or(0),
            });
        }
        self.push(Op::CpAsyncBulk {
            dst: dst.reg.id(),
            src: src.reg.id(),
            size: bytes.v,
            bar: bar.reg.id(),
            mask,
        });
    }

    #[track_caller]
    fn mbar_range(&mut self, what: &'static str, v: Option<i128>) {
        if let Some(k) = v
            && !(1..=MBAR_MAX).contains(&k)
        {
            self.fail(BuildError::MbarrierCount {
                what,
                value: u64::try_from(k).unwrap_or(u64::MAX),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::dsl::types::U32;
    use crate::dsl::*;
    use crate::{Error, Feature, Sm};

    fn kernel(sm: Sm, size: u32, mask: u32) -> crate::Result<PtxModule> {
        let mut b = KernelBuilder::new("k", sm);
        let g = b.load_param_ptr::<U32>("src");
        let s = b.shared_array::<U32>("buf", 64, 16);
        let bar = b.shared_mbarrier("bar");
        let p = b.shared_elem(&s, 0u32);
        b.mbarrier_init(bar, 1u32);
        b.fence_mbarrier_init();
        b.fence_proxy_async_shared();
        let _ = b.mbarrier_arrive_expect_tx(bar, 256u32);
        b.cp_async_bulk(p, g, size, bar);
        b.cp_async_bulk_multicast(p, g, size, bar, mask);
        let r = b.cluster_ctarank();
        b.cp_async_bulk_multicast(p, g, 16u32, bar, r);
        let _ = b.mbarrier_arrive(bar);
        b.mbarrier_wait(bar, 0u32);
        b.finish()
    }

    #[test]
    fn prints_the_forms_at_ptx_8_0() {
        let t = kernel(Sm::Sm90, 128, 3).unwrap().ptx;
        assert!(t.contains(".version 8.0\n"), "{t}");
        for s in [
            "mbarrier.init.shared::cta.b64 [%r",
            "], 1;",
            "fence.mbarrier_init.release.cluster;",
            "fence.proxy.async.shared::cta;",
            "mbarrier.arrive.expect_tx.shared::cta.b64 %rd",
            "], 256;",
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r",
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r",
            "], 128, [%r",
            "], 3;",
            "mov.b32 {%h",
            "mbarrier.arrive.shared::cta.b64 %rd",
            "mbarrier.try_wait.parity.shared::cta.b64 %p",
            "@!%p",
        ] {
            assert!(t.contains(s), "{s} missing in\n{t}");
        }
    }

    #[test]
    fn refused_below_sm_90_and_bad_constants() {
        for sm in [Sm::Sm80, Sm::Sm89] {
            match kernel(sm, 128, 3) {
                Err(Error::UnsupportedFeature { feature, .. }) => {
                    assert!(matches!(feature, Feature::BulkCopy | Feature::Cluster));
                }
                other => panic!("{sm}: {other:?}"),
            }
        }
        let build = |e: crate::Result<PtxModule>| match e {
            Err(Error::Build { error, .. }) => error,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            build(kernel(Sm::Sm90, 24, 3)),
            BuildError::BulkCopySize { bytes: 24 }
        );
        assert_eq!(
            build(kernel(Sm::Sm90, 0, 3)),
            BuildError::BulkCopySize { bytes: 0 }
        );
        assert_eq!(
            build(kernel(Sm::Sm90, 32, 0x1_0000)),
            BuildError::ClusterMask { mask: 0x1_0000 }
        );
        assert_eq!(
            build(kernel(Sm::Sm90, 32, 0)),
            BuildError::ClusterMask { mask: 0 }
        );
        let mut b = KernelBuilder::new("k", Sm::Sm90);
        let bar = b.shared_mbarrier("bar");
        b.mbarrier_init(bar, 0u32);
        assert!(matches!(
            build(b.finish()),
            BuildError::MbarrierCount { value: 0, .. }
        ));
    }
}
