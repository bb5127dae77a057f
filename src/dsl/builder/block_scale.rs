//! Block-scale conversions (issue #11): FP4 E2M1 pairs, UE8M0 scale pairs
//! and the 8-bit register plumbing they need. The hardware forms exist only
//! on the arch-specific targets `sm_100a` / `sm_120a`
//! ([`Feature::BlockScaleCvt`](crate::Feature::BlockScaleCvt)); elsewhere
//! the builder records a typed `UnsupportedFeature` error and
//! [`finish`](KernelBuilder::finish) returns it before any PTX is printed.
//!
//! Semantics (PTX ISA §9.7.9.21 `cvt`, as recorded in
//! `shared/reference/ptx-semantics.md` §4.2 and
//! `shared/reference/round2/block-scaled-formats.md` §4; forms and targets
//! checked with the pinned ptxas 12.9):
//!
//! * `cvt.rn.satfinite.e2m1x2.f32 d, a, b`: `d` is `.b8` (ptxas refuses a
//!   `.b16`/`.b32` destination: "Arguments mismatch"), `d[7:4] = cvt(a)`,
//!   `d[3:0] = cvt(b)`. Round to nearest even over {0, 0.5, 1, 1.5, 2, 3,
//!   4, 6}; |x| > 6 and ±Inf → ±6; NaN → +6 (`0x7`: `.satfinite` gives
//!   positive MAX_NORM for a format without NaN). `.satfinite` is
//!   mandatory (ptxas: "'.satfinite' modifier required").
//! * `cvt.{rz,rp}.satfinite.ue8m0x2.f32 d, a, b`: `d` is `.b16`,
//!   `d[15:8] = cvt(a)`, `d[7:0] = cvt(b)`; `.rn` is refused ("Illegal
//!   rounding modifier"). See [`crate::sim::fp::ue8m0_satfinite`] for the
//!   per-value rule.
//! * `cvt.rn.f16x2.e2m1x2 d, a` (`a` is `.b8`; ptxas refuses a `.b16`
//!   source) and `cvt.rn.bf16x2.ue8m0x2 d, a` (`a` is `.b16`): exact
//!   decodes, the upper code to the upper half.
//!
//! PTX has no 8-bit `mov`, `selp` or arithmetic, so a [`B8`] register is
//! only produced by [`cvt_to_e2m1x2`](KernelBuilder::cvt_to_e2m1x2) or
//! [`u32_to_b8`](KernelBuilder::u32_to_b8) and consumed by
//! [`pack_4x8`](KernelBuilder::pack_4x8) (ptxas merges four e2m1x2 cvts
//! and the pack into four `F2FP.SATFINITE.E2M1.F32.PACK_AB_MERGE_C`),
//! [`b8_to_u32`](KernelBuilder::b8_to_u32) or
//! [`cvt_from_e2m1x2`](KernelBuilder::cvt_from_e2m1x2).

use super::core::KernelBuilder;
use crate::dsl::ir::{Op, Ue8m0Rounding};
use crate::dsl::types::{B8, B16, B32, F32, Reg, Src, Ty, U32};

impl KernelBuilder {
    /// Hardware FP4 encode of two floats (`sm_100a`/`sm_120a`):
    /// `cvt.rn.satfinite.e2m1x2.f32`. `hi` lands in bits 7:4, `lo` in bits
    /// 3:0, so the packing "element 2i in the low nibble of byte i" is
    /// `cvt_to_e2m1x2(x[2i + 1], x[2i])`. RNE, |x| > 6 and ±Inf saturate to
    /// ±6, NaN becomes +6 (`0x7`).
    #[track_caller]
    pub fn cvt_to_e2m1x2(&mut self, hi: impl Into<Src<F32>>, lo: impl Into<Src<F32>>) -> Reg<B8> {
        let (hi, lo) = (hi.into().v, lo.into().v);
        self.def(|d| Op::CvtToE2m1x2 { d, hi, lo })
    }

    /// Hardware FP4 decode of a code pair to `f16x2` (`sm_100a`/`sm_120a`):
    /// `cvt.rn.f16x2.e2m1x2`; bits 7:4 of `a` become the high half. Exact.
    #[track_caller]
    pub fn cvt_from_e2m1x2(&mut self, a: Reg<B8>) -> Reg<B32> {
        self.def(|d| Op::CvtFromE2m1x2 { d, a: a.id() })
    }

    /// Hardware UE8M0 encode of two floats (`sm_100a`/`sm_120a`):
    /// `cvt.{rz,rp}.satfinite.ue8m0x2.f32`. `hi` lands in bits 15:8. `.rp`
    /// gives the smallest power of two not below |x|, `.rz` the largest not
    /// above; NaN → `0xFF`, above 2^127 (and ±Inf) → `0xFE`, below 2^-127
    /// → `0x00`.
    #[track_caller]
    pub fn cvt_to_ue8m0x2(
        &mut self,
        rnd: Ue8m0Rounding,
        hi: impl Into<Src<F32>>,
        lo: impl Into<Src<F32>>,
    ) -> Reg<B16> {
        let (hi, lo) = (hi.into().v, lo.into().v);
        self.def(|d| Op::CvtToUe8m0x2 { rnd, d, hi, lo })
    }

    /// Hardware UE8M0 decode of two scale bytes to `bf16x2`
    /// (`sm_100a`/`sm_120a`): `cvt.rn.bf16x2.ue8m0x2`; bits 15:8 of `a`
    /// become the high half. Exact (`0x00` → the bf16 subnormal 2^-127).
    #[track_caller]
    pub fn cvt_from_ue8m0x2(&mut self, a: Reg<B16>) -> Reg<B32> {
        self.def(|d| Op::CvtFromUe8m0x2 { d, a: a.id() })
    }

    /// Join four bytes: `mov.b32 d, {b[0], b[1], b[2], b[3]}`, `b[0]` in
    /// bits 7:0 (every target).
    #[track_caller]
    pub fn pack_4x8(&mut self, b: [Reg<B8>; 4]) -> Reg<B32> {
        self.def(|d| Op::Pack4x8 {
            d,
            b: b.map(|r| r.id()),
        })
    }

    /// Zero-extend a byte: `cvt.u32.u8` (every target).
    #[track_caller]
    pub fn b8_to_u32(&mut self, a: Reg<B8>) -> Reg<U32> {
        self.cvt(Ty::U32, Ty::U8, None, a.value())
    }

    /// The low 8 bits of a u32: `cvt.u8.u32` (every target).
    #[track_caller]
    pub fn u32_to_b8(&mut self, a: impl Into<Src<U32>>) -> Reg<B8> {
        self.cvt(Ty::U8, Ty::U32, None, a.into().v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;
    use crate::Feature;
    use crate::dsl::BuildError;
    use crate::target::Sm;

    fn build(sm: Sm) -> crate::Result<crate::dsl::PtxModule> {
        let mut b = KernelBuilder::new("k", sm);
        let x = b.mov(1.5f32);
        let c = b.cvt_to_e2m1x2(x, -0.0f32);
        let _ = b.cvt_from_e2m1x2(c);
        let s = b.cvt_to_ue8m0x2(Ue8m0Rounding::Rp, x, 3.0f32);
        let _ = b.cvt_to_ue8m0x2(Ue8m0Rounding::Rz, x, x);
        let _ = b.cvt_from_ue8m0x2(s);
        let w = b.pack_4x8([c, c, c, c]);
        let _ = w;
        b.finish()
    }

    #[test]
    fn block_scale_forms_print_and_raise_the_version_minimally() {
        let m = build(Sm::Sm100a).unwrap();
        assert_eq!(m.version.to_string(), "8.6");
        for form in [
            "cvt.rn.satfinite.e2m1x2.f32 %c0, %f0, 0f80000000;",
            "cvt.rn.f16x2.e2m1x2 %b0, %c0;",
            "cvt.rp.satfinite.ue8m0x2.f32 %h0, %f0, 0f40400000;",
            "cvt.rz.satfinite.ue8m0x2.f32 %h1, %f0, %f0;",
            "cvt.rn.bf16x2.ue8m0x2 %b1, %h0;",
            "mov.b32 %b2, {%c0, %c0, %c0, %c0};",
            ".reg .b8 %c<1>;",
            ".target sm_100a",
        ] {
            assert!(m.ptx.contains(form), "{form}\n{}", m.ptx);
        }
        assert_eq!(build(Sm::Sm120a).unwrap().version.to_string(), "8.7");
    }

    #[test]
    fn block_scale_forms_are_refused_on_plain_targets() {
        for sm in [Sm::Sm80, Sm::Sm90, Sm::Sm100, Sm::Sm120] {
            match build(sm) {
                Err(Error::UnsupportedFeature {
                    feature,
                    sm: at,
                    needs,
                }) => {
                    assert_eq!((feature, at), (Feature::BlockScaleCvt, sm));
                    assert!(needs.contains("sm_100a") && needs.contains("sm_120a"));
                }
                r => panic!("{sm}: {r:?}"),
            }
        }
    }

    #[test]
    fn eight_bit_registers_have_no_mov_or_selp() {
        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let r = b.u32_to_b8(7u32);
        let _ = b.mov(r);
        let no_b8 = |e: Error, op| matches!(e, Error::Build { error: BuildError::NoB8Form { op: o }, .. } if o == op);
        assert!(no_b8(b.finish().unwrap_err(), "mov"));

        let mut b = KernelBuilder::new("k", Sm::Sm80);
        let r = b.u32_to_b8(7u32);
        let p = b.setp(crate::dsl::Cmp::Eq, 1u32, 1u32);
        let _ = b.selp(p, r, r);
        assert!(no_b8(b.finish().unwrap_err(), "selp"));

        // widening and packing are fine everywhere
        let mut b = KernelBuilder::new("k", Sm::Sm70);
        let r = b.u32_to_b8(0x1FFu32);
        let _ = b.b8_to_u32(r);
        let _ = b.pack_4x8([r, r, r, r]);
        let m = b.finish().unwrap();
        assert!(m.ptx.contains("cvt.u8.u32 %c0, 511;"), "{}", m.ptx);
        assert!(m.ptx.contains("cvt.u32.u8 %r0, %c0;"), "{}", m.ptx);
    }
}
