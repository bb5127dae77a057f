//! Every DSL instruction form, assembled by the pinned ptxas on the lowest
//! SM that has it (and on every later one); below that SM the builder
//! refuses with a typed error instead of printing invalid PTX.

use ptxsmith::dsl::params::Ptr;
use ptxsmith::dsl::types::{B16, F32, Reg, S32, U8, U16, U32, U64};
use ptxsmith::dsl::*;
use ptxsmith::nvtools::NvTools;
use ptxsmith::{Error, Feature, Sm, kernel_params};

kernel_params! {
    struct FormArgs => FormRegs {
        f: Ptr<F32>,
        u: Ptr<U32>,
        b: Ptr<U8>,
        h: Ptr<U16>,
        w: Ptr<U64>,
        s: Ptr<S32>,
        n: U32,
        scale: F32,
    }
}

/// Instructions every target has.
fn base_forms(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("forms_base", sm);
    b.maxntid(64, 1, 1);
    let p = b.params::<FormArgs>();
    let tid = b.tid_x();
    let lane = b.special(Special::LaneId);
    let fp = b.offset(p.f, tid);
    let x = b.ld_global(fp, 0);
    let y = b.ld_global_nc(fp, 1);
    let v4 = b.ld_global_nc_v4(p.f, 4);
    for r in [Rounding::Rn, Rounding::Rz, Rounding::Rm, Rounding::Rp] {
        let s = b.fadd(r, x, y);
        let d = b.fsub(r, s, p.scale);
        let m = b.fmul(r, d, v4[0]);
        let q = b.fdiv(r, m, v4[1]);
        let f = b.ffma(r, q, x, 1.5f32);
        let sq = b.fsqrt(r, f);
        let rc = b.frcp(r, sq);
        b.st_global(fp, 2, rc);
    }
    let mn = b.fmin(x, y);
    let mx = b.fmax(mn, v4[2]);
    let ab = b.fabs(mx);
    let ng = b.fneg(ab);
    for c in [
        Cmp::Eq,
        Cmp::Ne,
        Cmp::Lt,
        Cmp::Le,
        Cmp::Gt,
        Cmp::Ge,
        Cmp::Equ,
        Cmp::Neu,
        Cmp::Ltu,
        Cmp::Leu,
        Cmp::Gtu,
        Cmp::Geu,
        Cmp::Num,
        Cmp::Nan,
    ] {
        let pr = b.setp(c, ng, x);
        let sel = b.selp(pr, ng, y);
        b.st_global(fp, 3, sel);
    }
    // integers
    let up = b.offset(p.u, tid);
    let a = b.ld_global(up, 0);
    let c = b.add(a, 7u32);
    let d = b.sub(c, lane);
    let e = b.mul_lo(d, a);
    let f = b.mul_hi(e, 3u32);
    let g = b.div(f, p.n);
    let h = b.rem(g, 13u32);
    let i = b.min(h, a);
    let j = b.max(i, 2u32);
    let k = b.and(j, 0xffu32);
    let l = b.or(k, a);
    let m = b.xor(l, 5u32);
    let n = b.shl(m, 3u32);
    let o = b.shr(n, lane);
    let q = b.not(o);
    let r = b.clz(q);
    let s = b.popc(r);
    let t = b.brev(s);
    let u = b.mad_lo(t, 3u32, a);
    let v = b.bfe(u, 4u32, 8u32);
    let w = b.bfi(v, a, 8u32, 4u32);
    let x2 = b.prmt(w, a, 0x3210u32);
    for cmp in [Cmp::Eq, Cmp::Ne, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge] {
        let pr = b.setp(cmp, x2, a);
        let sel = b.selp(pr, x2, 1u32);
        b.st_global(up, 1, sel);
    }
    let si = b.u32_as_s32(x2);
    let sj = b.shr(si, 31u32);
    let sk = b.min(sj, -3i32);
    let pl = b.setp(Cmp::Lt, sk, 0i32);
    let pg = b.setp(Cmp::Gt, sk, -9i32);
    let pa = b.pand(pl, pg);
    let po = b.por(pa, pl);
    let pn = b.pnot(po);
    let sp = b.offset(p.s, tid);
    b.guarded(pn, |b| b.st_global(sp, 0, sk));
    let wide = b.mul_wide_u32(a, x2);
    let wide2 = b.mad_wide_u32(a, 3u32, wide);
    let _ = b.s32_to_s64(sk);
    let back = b.u64_to_u32(wide2);
    let _ = b.offset64(p.w, wide2);
    b.st_global(p.w, 0, wide2);
    let old = b.atom_global(AtomOp::Add, p.u, back, None);
    let _ = b.atom_global(AtomOp::Max, p.u, old, None);
    let _ = b.atom_global(AtomOp::Cas, p.u, old, Some(back.into()));
    // conversions
    let cf = b.u32_to_f32(Rounding::Rn, a);
    let cs = b.s32_to_f32(Rounding::Rz, sk);
    let ci = b.f32_to_s32(IntRounding::Rzi, cf);
    let cu = b.f32_to_u32(IntRounding::Rni, cs);
    let cr = b.f32_round(IntRounding::Rmi, cf);
    let cd = b.f32_to_f64(cr);
    let cn = b.f64_to_f32(Rounding::Rn, cd);
    let bits = b.f32_bits(cn);
    let fb = b.f32_from_bits(bits);
    let h16 = b.u32_to_b16(cu);
    let hw = b.b16_to_u32(h16);
    let hf = b.f16_to_f32(h16);
    let pk = b.pack_2x16(h16, h16);
    let (lo, hi): (Reg<B16>, Reg<B16>) = b.unpack_2x16(pk);
    let _ = (lo, hi);
    let pku = b.b32_as_u32(pk);
    let s2u = b.s32_as_u32(ci);
    b.st_global(fp, 5, fb);
    b.st_global(fp, 6, hf);
    b.st_global(up, 2, hw);
    b.st_global(up, 3, pku);
    b.st_global(up, 4, s2u);
    // narrow memory
    let bp = b.offset(p.b, tid);
    let byte = b.ld_global(bp, 0);
    b.st_global(bp, 1, byte);
    let hp = b.offset(p.h, tid);
    let half = b.ld_global(hp, 0);
    b.st_global(hp, 1, half);
    // a byte buffer read and written four bytes at a time
    let words = p.b.cast::<U32>();
    let four = b.ld_global(words, 0);
    b.st_global(words, 1, four);
    // shared memory
    let sh = b.shared_array::<F32>("tile", 256, 16);
    let su = b.shared_array::<U32>("cnt", 4, 4);
    let sp0 = b.shared_elem(&sh, tid);
    b.st_shared(sp0, 0, x);
    b.bar_sync();
    let sv4 = b.ld_shared_v4(sp0, 0);
    let sv2 = b.ld_shared_v2(sp0, 4);
    let s1 = b.ld_shared(sp0, 1);
    b.st_shared_v4(sp0, 8, sv4);
    let c0 = b.ld_shared_at(&sh, 3);
    b.st_shared_at(&sh, 4, c0);
    let sp1 = b.shared_offset(sp0, 2u32);
    b.st_shared(sp1, 0, sv2[1]);
    b.st_shared(sp1, 1, s1);
    let cp = b.shared_elem(&su, 0u32);
    b.st_shared(cp, 0, 0u32);
    b.bar_sync();
    let _ = b.atom_shared(AtomOp::Add, cp, 1u32, None);
    b.st_global_v4(p.f, 8, sv4);
    // control flow
    let flag = b.setp(Cmp::Lt, tid, p.n);
    b.if_else(
        flag,
        |b| b.st_global(fp, 7, 1.0f32),
        |b| b.st_global(fp, 7, 2.0f32),
    );
    let acc = b.mov(0u32);
    b.for_range(0u32, p.n, 2u32, |b, i| {
        let t = b.add(acc, i);
        b.assign(acc, t);
    });
    b.while_(
        |b| b.setp(Cmp::Gt, acc, 100u32),
        |b| {
            let t = b.shr(acc, 1u32);
            b.assign(acc, t);
        },
    );
    b.if_(flag, |b| b.st_global(up, 5, acc));
    b.comment("end of forms");
    b.finish()
}

fn warp_forms(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("forms_warp", sm);
    let p = b.params::<FormArgs>();
    let tid = b.tid_x();
    let fp = b.offset(p.f, tid);
    let x = b.ld_global(fp, 0);
    let mut v = x;
    for (mode, c) in [
        (ShflMode::Up, 0),
        (ShflMode::Down, 0x1f),
        (ShflMode::Bfly, 0x1f),
        (ShflMode::Idx, 0x1f),
    ] {
        v = b.shfl(mode, v, 1u32, c, 0xffff_ffff);
    }
    b.bar_warp_sync(0xffff_ffff);
    let pr = b.setp(Cmp::Gt, v, 0.0f32);
    let ballot = b.vote_ballot(pr, 0xffff_ffff);
    let all = b.vote(true, pr, 0xffff_ffff);
    let any = b.vote(false, all, 0xffff_ffff);
    let s = b.selp(any, ballot, 0u32);
    let up = b.offset(p.u, tid);
    b.st_global(up, 0, s);
    b.finish()
}

fn redux_forms(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("forms_redux", sm);
    let p = b.params::<FormArgs>();
    let tid = b.tid_x();
    let mut v = tid;
    for op in [
        ReduxOp::Add,
        ReduxOp::Min,
        ReduxOp::Max,
        ReduxOp::And,
        ReduxOp::Or,
        ReduxOp::Xor,
    ] {
        v = b.redux(op, v, 0xffff_ffff);
    }
    let sv = b.u32_as_s32(v);
    let sm2 = b.redux(ReduxOp::Min, sv, 0xffff_ffff);
    let fp = b.offset(p.f, tid);
    let x = b.ld_global(fp, 0);
    let m = b.fmax_nan(x, p.scale);
    b.st_global(fp, 0, m);
    let sp = b.offset(p.s, tid);
    b.st_global(sp, 0, sm2);
    b.finish()
}

fn fp8_forms(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("forms_fp8", sm);
    let p = b.params::<FormArgs>();
    let tid = b.tid_x();
    let fp = b.offset(p.f, tid);
    let x = b.ld_global(fp, 0);
    let y = b.ld_global(fp, 1);
    let up = b.offset(p.u, tid);
    for fmt in [Fp8Format::E4M3, Fp8Format::E5M2] {
        let pair = b.cvt_to_fp8x2(fmt, x, y);
        let h2 = b.cvt_from_fp8x2(fmt, pair);
        let (lo, hi) = b.unpack_2x16(h2);
        let fl = b.f16_to_f32(lo);
        let fh = b.f16_to_f32(hi);
        b.st_global(fp, 2, fl);
        b.st_global(fp, 3, fh);
        let w = b.b16_to_u32(pair);
        b.st_global(up, 0, w);
    }
    b.finish()
}

/// The block-scale conversions (`sm_100a`/`sm_120a` only) and the 8-bit
/// register plumbing around them.
fn block_scale_forms(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("forms_block_scale", sm);
    let p = b.params::<FormArgs>();
    let tid = b.tid_x();
    let fp = b.offset(p.f, tid);
    let x = b.ld_global(fp, 0);
    let y = b.ld_global(fp, 1);
    let c0 = b.cvt_to_e2m1x2(x, y);
    let c1 = b.cvt_to_e2m1x2(y, -0.0f32);
    let bp = b.offset(p.b, tid);
    let byte = b.ld_global(bp, 0);
    let c2 = b.u32_to_b8(byte);
    let word = b.pack_4x8([c0, c1, c2, c0]);
    let up = b.offset(p.u, tid);
    let wu = b.b32_as_u32(word);
    b.st_global(up, 0, wu);
    let wide = b.b8_to_u32(c1);
    b.st_global(bp, 1, wide);
    let h2 = b.cvt_from_e2m1x2(c2);
    let hu = b.b32_as_u32(h2);
    b.st_global(up, 1, hu);
    let hp = b.offset(p.h, tid);
    for rnd in [Ue8m0Rounding::Rp, Ue8m0Rounding::Rz] {
        let s = b.cvt_to_ue8m0x2(rnd, x, y);
        let su = b.b16_to_u32(s);
        b.st_global(hp, 0, su);
        let bf = b.cvt_from_ue8m0x2(s);
        let bu = b.b32_as_u32(bf);
        b.st_global(up, 2, bu);
    }
    b.finish()
}

type Gen = fn(Sm) -> ptxsmith::Result<PtxModule>;

const FAMILIES: [(&str, Gen, Option<Feature>); 5] = [
    ("base", base_forms, None),
    ("warp", warp_forms, Some(Feature::WarpSync)),
    ("redux+minmax.NaN", redux_forms, Some(Feature::Redux)),
    ("fp8", fp8_forms, Some(Feature::Fp8Cvt)),
    (
        "block-scale",
        block_scale_forms,
        Some(Feature::BlockScaleCvt),
    ),
];

#[test]
fn forms_are_refused_below_their_sm_with_a_named_error() {
    for (name, generate, feature) in FAMILIES {
        for sm in Sm::ALL {
            match (generate(sm), feature) {
                (Ok(m), f) => {
                    assert!(f.is_none_or(|f| sm.supports(f)), "{name} built on {sm}");
                    let want = f.map_or(sm.min_ptx(), |f| f.min_ptx(sm).max(sm.min_ptx()));
                    assert_eq!(m.version, want, "{name} on {sm}");
                    assert!(m.ptx.contains(&format!(".version {want}\n")));
                }
                (
                    Err(Error::UnsupportedFeature {
                        feature: got,
                        sm: at,
                        ..
                    }),
                    Some(f),
                ) => {
                    assert!(!sm.supports(f), "{name} refused on {sm}");
                    assert_eq!(at, sm);
                    assert!(!sm.supports(got));
                }
                (Err(e), _) => panic!("{name} on {sm}: unexpected {e}"),
            }
        }
    }
}

#[test]
fn every_form_assembles_on_its_lowest_sm_and_later() {
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    for (name, generate, _) in FAMILIES {
        for sm in Sm::ALL {
            let Ok(m) = generate(sm) else { continue };
            if let Err(e) = tools.assemble(&m.ptx, sm) {
                panic!("{name} on {sm} rejected by ptxas: {e}\n{}", m.ptx);
            }
        }
    }
}

#[test]
fn fp8_module_version_is_the_lowest_ptxas_accepts() {
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    for sm in [Sm::Sm89, Sm::Sm90] {
        let m = fp8_forms(sm).unwrap();
        tools.assemble(&m.ptx, sm).unwrap();
        // One minor version lower must be rejected: the version is minimal.
        let v = m.version;
        let lower = format!(".version {}.{}\n", v.major, v.minor - 1);
        let text = m.ptx.replace(&format!(".version {v}\n"), &lower);
        assert!(tools.assemble(&text, sm).is_err(), "{sm} accepted {lower}");
    }
}

#[test]
fn block_scale_module_version_is_the_lowest_ptxas_accepts() {
    // 8.6 on sm_100a and 8.7 on sm_120a (the target's own minimum; the
    // cvt forms need 8.6); one minor version lower is rejected.
    for (sm, v) in [(Sm::Sm100a, "8.6"), (Sm::Sm120a, "8.7")] {
        let m = block_scale_forms(sm).unwrap();
        assert_eq!(m.version.to_string(), v);
        assert!(m.ptx.contains("cvt.rn.satfinite.e2m1x2.f32"));
        assert!(m.ptx.contains("cvt.rp.satfinite.ue8m0x2.f32"));
        assert!(m.ptx.contains("cvt.rz.satfinite.ue8m0x2.f32"));
        let Some(tools) = NvTools::for_tests() else {
            continue;
        };
        tools.assemble(&m.ptx, sm).unwrap();
        let lower = format!(".version {}.{}\n", m.version.major, m.version.minor - 1);
        let text = m.ptx.replace(&format!(".version {v}\n"), &lower);
        assert!(tools.assemble(&text, sm).is_err(), "{sm} accepted {lower}");
    }
}
