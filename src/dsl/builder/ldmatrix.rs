//! `ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16` (issue 31;
//! sm_75, PTX 6.5): a warp loads one, two or four 8×8 matrices of 16-bit
//! elements from shared memory straight into the per-thread fragment
//! layout of `mma.sync` (PTX ISA 8.x §9.7.14.5.15 "ldmatrix"; the fragment
//! tables of `m16n8k16` in §9.7.14.5.8).
//!
//! # Who supplies which address
//!
//! Each of the `N` matrices has 8 rows of 16 bytes (8 × `.b16`); lane
//! `8·i + r` supplies the address of row `r` of matrix `i` (lanes 0–7 for
//! `.x1`, 0–15 for `.x2`, all 32 for `.x4`; the other lanes' addresses
//! are ignored). Each row address must be 16-byte aligned.
//!
//! # What each lane receives
//!
//! Destination register `i` of lane `l` holds two elements of matrix `i`:
//! without `.trans`, row `l / 4`, columns `2·(l % 4)` (low half) and
//! `2·(l % 4) + 1` (high half); with `.trans`, the same with rows and
//! columns exchanged (column `l / 4`, rows `2·(l % 4)` and `+ 1`).
//!
//! # Fragments of `mma.sync` `m16n8k16`
//!
//! * [`KernelBuilder::ldmatrix_a`] (`.x4`): with a row-major 16×16 `A`
//!   tile, lane `l` supplies the row `l % 16`, column `8·(l / 16)`: matrix
//!   0 is `A[0..8, 0..8]` (register `a0,a1`), 1 is `A[8..16, 0..8]`
//!   (`a2,a3`), 2 is `A[0..8, 8..16]` (`a4,a5`), 3 is `A[8..16, 8..16]`
//!   (`a6,a7`): exactly the `A` fragment of §9.7.14.5.8.
//! * [`KernelBuilder::ldmatrix_b`] (`.x2`): lanes 0–15 supply rows. For a
//!   row-major (`k`-major) 16×8 `B` tile use `.trans`, lane `l` supplying
//!   row `k = l` (matrix 0 is `B[0..8, ·]`, matrix 1 `B[8..16, ·]`). For a
//!   `B` stored transposed (`n` rows of 16 contiguous `k`, i.e. the
//!   column-major `B` the instruction's `.col` names), no `.trans`, lane
//!   `l` supplying row `n = l % 8`, column `k = 8·(l / 8)`.

use super::core::KernelBuilder;
use super::memory::SharedPtr;
use super::mma::{FragA, FragB};
use crate::dsl::ir::*;
use crate::dsl::types::*;

/// The packed 16-bit operand types [`KernelBuilder::ldmatrix_a`] and
/// [`KernelBuilder::ldmatrix_b`] load: [`F16x2`] and [`Bf16x2`] (a tf32
/// fragment is not a `.b16` matrix).
pub trait LdmatrixInput: MmaInput {}
impl LdmatrixInput for F16x2 {}
impl LdmatrixInput for Bf16x2 {}

impl KernelBuilder {
    /// `ldmatrix.sync.aligned.m8n8.xN{.trans}.shared.b16` with `N` (1, 2
    /// or 4) destination registers, from this lane's row address `p`
    /// (see the module docs for which lanes' addresses count and what each
    /// lane receives). Warp-collective: all 32 lanes, converged.
    #[track_caller]
    fn ldmatrix_n<T: Packed32, E, const N: usize>(
        &mut self,
        p: SharedPtr<E>,
        trans: bool,
    ) -> [Reg<T>; N] {
        let d: [Reg<T>; N] = std::array::from_fn(|_| self.reg::<T>());
        self.push(Op::Ldmatrix {
            trans,
            d: d.iter().map(|r| r.id()).collect(),
            addr: Addr {
                base: AddrBase::Reg(p.reg.id()),
                offset: 0,
            },
        });
        d
    }

    /// `ldmatrix.sync.aligned.m8n8.x1{.trans}.shared.b16` (sm_75, PTX
    /// 6.5): one 8×8 matrix, rows addressed by lanes 0–7.
    #[track_caller]
    pub fn ldmatrix_x1<T: Packed32, E>(&mut self, p: SharedPtr<E>, trans: bool) -> Reg<T> {
        let [d] = self.ldmatrix_n::<T, E, 1>(p, trans);
        d
    }

    /// `ldmatrix.sync.aligned.m8n8.x2{.trans}.shared.b16` (sm_75, PTX
    /// 6.5): two 8×8 matrices, rows addressed by lanes 0–15.
    #[track_caller]
    pub fn ldmatrix_x2<T: Packed32, E>(&mut self, p: SharedPtr<E>, trans: bool) -> [Reg<T>; 2] {
        self.ldmatrix_n::<T, E, 2>(p, trans)
    }

    /// `ldmatrix.sync.aligned.m8n8.x4{.trans}.shared.b16` (sm_75, PTX
    /// 6.5): four 8×8 matrices, rows addressed by lanes 0–31.
    #[track_caller]
    pub fn ldmatrix_x4<T: Packed32, E>(&mut self, p: SharedPtr<E>, trans: bool) -> [Reg<T>; 4] {
        self.ldmatrix_n::<T, E, 4>(p, trans)
    }

    /// The `A` fragment of `mma.sync` `m16n8k16` from a row-major 16×16
    /// tile in shared memory (`ldmatrix … .x4`, no `.trans`): `p` is this
    /// lane's row address, `&A[l % 16][8·(l / 16)]` for lane `l`.
    #[track_caller]
    pub fn ldmatrix_a<T: LdmatrixInput, E>(&mut self, p: SharedPtr<E>) -> FragA<T> {
        FragA {
            regs: self.ldmatrix_x4::<T, E>(p, false),
        }
    }

    /// The `B` fragment of `mma.sync` `m16n8k16` (`ldmatrix … .x2`):
    /// `trans` for a row-major 16×8 `B` (`p` = `&B[l % 16][0]` for lane
    /// `l`), no `trans` for `B` stored transposed, 8 rows of 16 `k` (`p` =
    /// `&Bᵀ[l % 8][8·((l / 8) % 2)]`).
    #[track_caller]
    pub fn ldmatrix_b<T: LdmatrixInput, E>(&mut self, p: SharedPtr<E>, trans: bool) -> FragB<T> {
        FragB {
            regs: self.ldmatrix_x2::<T, E>(p, trans),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, Feature, Sm};

    fn kernel(sm: Sm) -> crate::Result<crate::dsl::PtxModule> {
        let mut b = KernelBuilder::new("k", sm);
        let s = b.shared_array::<U32>("tile", 256, 16);
        let lane = b.tid_x();
        let p = b.shared_elem(&s, lane);
        let _ = b.ldmatrix_x1::<B32, _>(p, false);
        let _ = b.ldmatrix_x2::<B32, _>(p, true);
        let a = b.ldmatrix_a::<Bf16x2, _>(p);
        let bb = b.ldmatrix_b::<Bf16x2, _>(p, true);
        let c = b.frag_c_zero();
        if sm.supports(Feature::MmaSync) {
            let _ = b.mma_sync(a, bb, c);
        }
        b.finish()
    }

    #[test]
    fn prints_the_forms_at_ptx_6_5() {
        let m = kernel(Sm::Sm75).unwrap();
        assert!(m.ptx.contains(".version 6.5\n"), "{}", m.ptx);
        for s in [
            "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%b0}, [%r",
            "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%b1, %b2}, [%r",
            "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%b3, %b4, %b5, %b6}, [%r",
            "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%b7, %b8}, [%r",
        ] {
            assert!(m.ptx.contains(s), "{s} missing in\n{}", m.ptx);
        }
        let m = kernel(Sm::Sm80).unwrap();
        assert!(m.ptx.contains(".version 7.0\n"), "{}", m.ptx);
    }

    #[test]
    fn refused_below_sm_75() {
        match kernel(Sm::Sm70) {
            Err(Error::UnsupportedFeature { feature, sm, .. }) => {
                assert_eq!((feature, sm), (Feature::Ldmatrix, Sm::Sm70));
            }
            other => panic!("{other:?}"),
        }
    }
}
