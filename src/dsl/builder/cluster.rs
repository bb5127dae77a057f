//! Thread-block clusters and distributed shared memory (sm_90+,
//! [`Feature::Cluster`]): the kernel's cluster shape
//! (`.reqnctapercluster`), the cluster special registers, `mapa` (a
//! shared address of this CTA → the same variable in another CTA of the
//! cluster), `ld`/`st.shared::cluster`, `barrier.cluster.arrive`/`wait`
//! and `fence.acq_rel.cluster`.
//!
//! Every form is PTX 7.8 on sm_90 (the PTX ISA's pages for
//! `.reqnctapercluster`, the `%cluster_*` registers, `mapa`, the
//! `.shared::cluster` state space, `barrier.cluster` and `fence`'s
//! `.cluster` scope; ptxas 12.9 refuses each below sm_90 with "Feature
//! '…' requires .target sm_90 or higher") except the `.relaxed` arrive,
//! PTX 8.0 ([`Feature::ClusterRelaxed`]). The release arrive and the
//! acquire wait are the ISA's defaults and are printed without a
//! qualifier, so that they need no more than PTX 7.8. Below sm_90 each
//! is [`Error::UnsupportedFeature`](crate::Error::UnsupportedFeature).
//!
//! The launch path: `.reqnctapercluster` compiles the cluster shape in,
//! so a plain `cuLaunchKernel` launches clusters (the grid must be a
//! multiple of it), and `cuLaunchKernelEx`'s cluster attribute, if given,
//! must agree; the simulator and the emulator check both.

use std::marker::PhantomData;

use super::core::KernelBuilder;
use super::memory::SharedPtr;
use crate::dsl::ir::*;
use crate::dsl::types::*;
use crate::target::Feature;

/// A 32-bit `.shared::cluster` address of `E`s: the same variable as a
/// [`SharedPtr`] of this CTA, in the CTA of the cluster named to
/// [`KernelBuilder::mapa`].
#[derive(Debug)]
pub struct ClusterPtr<E> {
    pub(crate) reg: Reg<U32>,
    _e: PhantomData<E>,
}
impl<E> Clone for ClusterPtr<E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for ClusterPtr<E> {}
impl<E> ClusterPtr<E> {
    /// The address register.
    pub fn addr(self) -> Reg<U32> {
        self.reg
    }
}

impl KernelBuilder {
    /// Launch in clusters of `x × y × z` CTAs (`.reqnctapercluster x, y,
    /// z`; sm_90+, PTX 7.8). The grid must be a multiple of it in each
    /// dimension (the driver refuses other launches), and a launch
    /// attribute naming another shape is refused. At most 8 CTAs per
    /// cluster are portable; more need the driver's non-portable opt-in,
    /// which the simulator does not model (it allows up to 16).
    #[track_caller]
    pub fn cluster_dims(&mut self, x: u32, y: u32, z: u32) -> &mut Self {
        self.entry_only("cluster_dims");
        self.require(Feature::Cluster);
        self.cluster_dims = Some((x, y, z));
        self
    }

    /// `%cluster_ctarank`: this CTA's rank in its cluster, `0..%cluster_nctarank`.
    #[track_caller]
    pub fn cluster_ctarank(&mut self) -> Reg<U32> {
        self.special(Special::ClusterCtaRank)
    }

    /// `%cluster_nctarank`: the CTAs of a cluster.
    #[track_caller]
    pub fn cluster_nctarank(&mut self) -> Reg<U32> {
        self.special(Special::ClusterNctaRank)
    }

    /// `%clusterid.x`: the cluster's index in the grid of clusters.
    #[track_caller]
    pub fn clusterid_x(&mut self) -> Reg<U32> {
        self.special(Special::ClusterIdX)
    }

    /// `mov.pred d, %is_explicit_cluster`: whether the launch named a
    /// cluster shape (a kernel shape or a launch attribute) rather than
    /// running each CTA as its own implicit 1×1×1 cluster.
    #[track_caller]
    pub fn is_explicit_cluster(&mut self) -> Reg<Pred> {
        self.def(|d| Op::IsExplicitCluster { d })
    }

    /// `mapa.shared::cluster.u32`: the address of the same shared
    /// variable as `p` in the CTA of rank `rank` of the cluster (which must
    /// be below `%cluster_nctarank`; the simulator reports another rank).
    #[track_caller]
    pub fn mapa<E: Elem>(&mut self, p: SharedPtr<E>, rank: impl Into<Src<U32>>) -> ClusterPtr<E> {
        let rank = rank.into().v;
        let reg = self.def(|d| Op::Mapa {
            d,
            a: p.reg.id(),
            rank,
        });
        ClusterPtr {
            reg,
            _e: PhantomData,
        }
    }

    /// `p + i` elements of a cluster address (within the same CTA's
    /// shared memory).
    #[track_caller]
    pub fn cluster_offset<E: Elem>(
        &mut self,
        p: ClusterPtr<E>,
        i: impl Into<Src<U32>>,
    ) -> ClusterPtr<E> {
        let reg = self.mad_lo(i, E::SCALAR.size(), p.reg);
        ClusterPtr {
            reg,
            _e: PhantomData,
        }
    }

    /// `ld.shared::cluster`: load `p[k]` from the shared memory of the
    /// CTA `p` was mapped to.
    #[track_caller]
    pub fn ld_cluster<E: Elem>(&mut self, p: ClusterPtr<E>, k: i32) -> Reg<E::Reg> {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 1>(Space::SharedCluster, AddrBase::Reg(p.reg.id()), o)[0]
    }

    /// `ld.shared::cluster.v2`: `p[k..k+2]` as one access (4- or 8-byte
    /// elements, aligned to the whole access).
    #[track_caller]
    pub fn ld_cluster_v2<E: Elem>(&mut self, p: ClusterPtr<E>, k: i32) -> [Reg<E::Reg>; 2] {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 2>(Space::SharedCluster, AddrBase::Reg(p.reg.id()), o)
    }

    /// `ld.shared::cluster.v4`: `p[k..k+4]` as one 16-byte access (4-byte
    /// elements).
    #[track_caller]
    pub fn ld_cluster_v4<E: Elem>(&mut self, p: ClusterPtr<E>, k: i32) -> [Reg<E::Reg>; 4] {
        let o = self.elem_offset::<E>(k);
        self.ld_n::<E, 4>(Space::SharedCluster, AddrBase::Reg(p.reg.id()), o)
    }

    /// `st.shared::cluster`: store `v` to `p[k]`.
    #[track_caller]
    pub fn st_cluster<E: Elem>(&mut self, p: ClusterPtr<E>, k: i32, v: impl Into<Src<E::Reg>>) {
        let o = self.elem_offset::<E>(k);
        self.st_n::<E>(
            Space::SharedCluster,
            AddrBase::Reg(p.reg.id()),
            o,
            vec![v.into().v],
        );
    }

    /// `st.shared::cluster.v2`: two values to `p[k..k+2]` as one access.
    #[track_caller]
    pub fn st_cluster_v2<E: Elem>(&mut self, p: ClusterPtr<E>, k: i32, v: [Reg<E::Reg>; 2]) {
        self.st_vec::<E, _>(Space::SharedCluster, p.reg.id(), k, v);
    }

    /// `st.shared::cluster.v4`: four values to `p[k..k+4]` as one 16-byte
    /// access.
    #[track_caller]
    pub fn st_cluster_v4<E: Elem>(&mut self, p: ClusterPtr<E>, k: i32, v: [Reg<E::Reg>; 4]) {
        self.st_vec::<E, _>(Space::SharedCluster, p.reg.id(), k, v);
    }

    /// `barrier.cluster.arrive` (release) or `barrier.cluster.arrive.relaxed`:
    /// the thread arrives at the cluster barrier without waiting. Each
    /// arrive must be followed by a [`cluster_wait`](Self::cluster_wait) of
    /// the same thread before its next arrive.
    #[track_caller]
    pub fn cluster_arrive(&mut self, sem: ClusterArrive) {
        self.push(Op::ClusterArrive(sem));
    }

    /// `barrier.cluster.wait` (acquire): wait until every non-exited thread
    /// of the cluster has arrived; the thread must have arrived first.
    #[track_caller]
    pub fn cluster_wait(&mut self) {
        self.push(Op::ClusterWait);
    }

    /// A full cluster barrier: a release arrive, then the acquire wait
    /// (what CUDA's `cluster.sync()` is).
    #[track_caller]
    pub fn cluster_sync(&mut self) {
        self.cluster_arrive(ClusterArrive::Release);
        self.cluster_wait();
    }

    /// `fence.acq_rel.cluster`: a fence at cluster scope.
    #[track_caller]
    pub fn fence_cluster(&mut self) {
        self.push(Op::FenceCluster);
    }
}

#[cfg(test)]
mod tests {
    use crate::dsl::types::F32;
    use crate::dsl::*;
    use crate::error::Error;
    use crate::target::{Feature, Sm};

    fn ring(sm: Sm) -> crate::error::Result<PtxModule> {
        let mut b = KernelBuilder::new("ring", sm);
        b.cluster_dims(2, 1, 1);
        let buf = b.shared_array::<F32>("buf", 32, 16);
        let rank = b.cluster_ctarank();
        let p = b.shared_elem(&buf, 0u32);
        let q = b.mapa(p, rank);
        b.st_cluster(q, 0, 1.0f32);
        b.cluster_arrive(ClusterArrive::Release);
        b.cluster_wait();
        let _ = b.ld_cluster_v4(q, 4);
        b.fence_cluster();
        b.finish()
    }

    #[test]
    fn cluster_forms_print_at_ptx_7_8() {
        let m = ring(Sm::Sm90).unwrap();
        let t = &m.ptx;
        assert!(t.contains(".version 7.8"), "{t}");
        for s in [
            ".reqnctapercluster 2, 1, 1",
            "mov.u32 %r0, %cluster_ctarank;",
            "mapa.shared::cluster.u32",
            "st.shared::cluster.f32 [",
            "ld.shared::cluster.v4.f32 {",
            "barrier.cluster.arrive;",
            "barrier.cluster.wait;",
            "fence.acq_rel.cluster;",
        ] {
            assert!(t.contains(s), "{s} missing in\n{t}");
        }
    }

    #[test]
    fn relaxed_arrive_raises_the_version_to_8_0() {
        let mut b = KernelBuilder::new("k", Sm::Sm90);
        b.cluster_arrive(ClusterArrive::Relaxed);
        b.cluster_wait();
        let t = b.finish().unwrap().ptx;
        assert!(t.contains(".version 8.0") && t.contains("barrier.cluster.arrive.relaxed;"));
    }

    #[test]
    fn cluster_forms_are_refused_below_sm_90() {
        match ring(Sm::Sm80) {
            Err(Error::UnsupportedFeature { feature, sm, .. }) => {
                assert_eq!((feature, sm), (Feature::Cluster, Sm::Sm80));
            }
            other => panic!("{other:?}"),
        }
        let mut b = KernelBuilder::new("k", Sm::Sm89);
        let _ = b.cluster_ctarank();
        assert!(matches!(
            b.finish(),
            Err(Error::UnsupportedFeature {
                feature: Feature::Cluster,
                ..
            })
        ));
    }
}
