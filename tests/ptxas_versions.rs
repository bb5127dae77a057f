//! What the pinned ptxas 12.9.86 accepts as `.version` per target, measured
//! and checked against ptxsmith's table (`Sm::min_ptx`, `Feature::min_ptx`).
//! For each target the table value must assemble and the ISA version just
//! below it must be rejected. The results are recorded in the docs of
//! `src/nvtools.rs`.

use ptxsmith::nvtools::{NvTools, ToolError};
use ptxsmith::{Feature, PtxVersion, Sm};

/// Every PTX ISA version, in order.
const ISA: &[(u8, u8)] = &[
    (5, 0),
    (6, 0),
    (6, 1),
    (6, 2),
    (6, 3),
    (6, 4),
    (6, 5),
    (7, 0),
    (7, 1),
    (7, 2),
    (7, 3),
    (7, 4),
    (7, 5),
    (7, 6),
    (7, 7),
    (7, 8),
    (8, 0),
    (8, 1),
    (8, 2),
    (8, 3),
    (8, 4),
    (8, 5),
    (8, 6),
    (8, 7),
    (8, 8),
];

/// The measured lowest `.version` ptxas 12.9.86 accepts for each target.
const MEASURED: &[(Sm, (u8, u8))] = &[
    (Sm::Sm70, (6, 0)),
    (Sm::Sm75, (6, 3)),
    (Sm::Sm80, (7, 0)),
    (Sm::Sm86, (7, 1)),
    (Sm::Sm89, (7, 8)),
    (Sm::Sm90, (7, 8)),
    (Sm::Sm100, (8, 6)),
    (Sm::Sm100a, (8, 6)),
    (Sm::Sm120, (8, 7)),
    (Sm::Sm120a, (8, 7)),
];

fn below(v: PtxVersion) -> PtxVersion {
    let i = ISA
        .iter()
        .position(|&(a, b)| PtxVersion::new(a, b) == v)
        .unwrap_or_else(|| panic!("{v} is not a PTX ISA version"));
    assert!(i > 0, "no ISA version below {v}");
    PtxVersion::new(ISA[i - 1].0, ISA[i - 1].1)
}

fn trivial(v: PtxVersion, sm: Sm) -> String {
    format!(
        ".version {v}\n.target {sm}\n.address_size 64\n\n\
         .visible .entry trivial()\n{{\n    ret;\n}}\n"
    )
}

fn fp8(v: PtxVersion, sm: Sm) -> String {
    format!(
        ".version {v}\n.target {sm}\n.address_size 64\n\n\
         .visible .entry fp8(.param .u64 p)\n{{\n\
         \x20   .reg .f32 %f<3>;\n    .reg .b16 %h<2>;\n    .reg .b64 %rd<2>;\n\
         \x20   ld.param.u64 %rd1, [p];\n\
         \x20   ld.global.f32 %f1, [%rd1];\n\
         \x20   ld.global.f32 %f2, [%rd1+4];\n\
         \x20   cvt.rn.satfinite.e4m3x2.f32 %h1, %f1, %f2;\n\
         \x20   st.global.b16 [%rd1], %h1;\n\
         \x20   ret;\n}}\n"
    )
}

fn rejection(t: &NvTools, ptx: &str, sm: Sm) -> String {
    match t.assemble(ptx, sm) {
        Ok(asm) => panic!("ptxas accepted for {sm}:\n{ptx}\n{}", asm.log),
        Err(ToolError::Ptxas { log, .. }) => log,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn table_matches_sm_min_ptx() {
    for &(sm, (a, b)) in MEASURED {
        assert_eq!(sm.min_ptx(), PtxVersion::new(a, b), "{sm}");
    }
    assert_eq!(MEASURED.len(), Sm::ALL.len());
}

#[test]
fn lowest_version_per_target() {
    let Some(t) = NvTools::for_tests() else {
        return;
    };
    for sm in Sm::ALL {
        let v = sm.min_ptx();
        let asm = t
            .assemble(&trivial(v, sm), sm)
            .unwrap_or_else(|e| panic!("{sm} at .version {v}: {e}"));
        // sm_70 and sm_75 included: ptxas 12.9 gives no deprecation warning.
        assert!(asm.warnings.is_empty(), "{sm}: {:?}", asm.warnings);
        let lower = below(v);
        let log = rejection(&t, &trivial(lower, sm), sm);
        assert!(
            log.contains(&format!(
                "PTX .version {lower} does not support .target {sm}"
            )),
            "{sm} at {lower}: {log}"
        );
    }
}

#[test]
fn highest_accepted_version_is_8_8() {
    let Some(t) = NvTools::for_tests() else {
        return;
    };
    let sm = Sm::Sm80;
    t.assemble(&trivial(PtxVersion::new(8, 8), sm), sm).unwrap();
    let log = rejection(&t, &trivial(PtxVersion::new(8, 9), sm), sm);
    assert!(log.contains("current version is '8.8'"), "{log}");
}

#[test]
fn fp8_cvt_lowest_version() {
    let Some(t) = NvTools::for_tests() else {
        return;
    };
    // sm_89 needs 8.1; between 7.8 and 8.0 ptxas asks (wrongly) for sm_90.
    let sm = Sm::Sm89;
    let v = Feature::Fp8Cvt.min_ptx(sm);
    assert_eq!(v, PtxVersion::new(8, 1));
    t.assemble(&fp8(v, sm), sm).unwrap();
    let log = rejection(&t, &fp8(below(v), sm), sm);
    assert!(log.contains("requires .target sm_90 or higher"), "{log}");

    // sm_90 accepts it from its own minimum, 7.8.
    let sm = Sm::Sm90;
    let v = Feature::Fp8Cvt.min_ptx(sm).max(sm.min_ptx());
    assert_eq!(v, PtxVersion::new(7, 8));
    t.assemble(&fp8(v, sm), sm).unwrap();
    let log = rejection(&t, &fp8(below(v), sm), sm);
    assert!(
        log.contains("requires PTX ISA .version 7.8 or later"),
        "{log}"
    );

    // Newer targets: their own minimum suffices.
    for sm in [Sm::Sm100, Sm::Sm120] {
        let v = Feature::Fp8Cvt.min_ptx(sm).max(sm.min_ptx());
        assert_eq!(v, sm.min_ptx());
        t.assemble(&fp8(v, sm), sm).unwrap();
    }
    // And targets without the feature reject it at any version.
    for sm in [Sm::Sm80, Sm::Sm86] {
        rejection(&t, &fp8(PtxVersion::new(8, 8), sm), sm);
    }
}

/// A module converting two floats with `cvt` form `form` (destination
/// register `%d`), for raw target names (the family targets are not `Sm`s).
fn block_scale(v: &str, target: &str, form: &str, dst: &str) -> String {
    format!(
        ".version {v}\n.target {target}\n.address_size 64\n\n\
         .visible .entry bs(.param .u64 p)\n{{\n\
         \x20   .reg .f32 %f<3>;\n    .reg {dst} %d;\n    .reg .b64 %rd<2>;\n\
         \x20   ld.param.u64 %rd1, [p];\n\
         \x20   ld.global.f32 %f1, [%rd1];\n\
         \x20   ld.global.f32 %f2, [%rd1+4];\n\
         \x20   {form} %d, %f1, %f2;\n\
         \x20   st.global{dst} [%rd1], %d;\n\
         \x20   ret;\n}}\n"
    )
}

#[test]
fn block_scale_cvt_targets_and_versions() {
    let Some(t) = NvTools::for_tests() else {
        return;
    };
    let forms = [
        ("cvt.rn.satfinite.e2m1x2.f32", ".b8"),
        ("cvt.rp.satfinite.ue8m0x2.f32", ".b16"),
        ("cvt.rz.satfinite.ue8m0x2.f32", ".b16"),
    ];
    for (form, dst) in forms {
        // the `a` targets: from their own minimum; the cvt needs 8.6
        for sm in [Sm::Sm100a, Sm::Sm120a] {
            let v = Feature::BlockScaleCvt.min_ptx(sm).max(sm.min_ptx());
            assert_eq!(v, sm.min_ptx());
            let ptx = block_scale(&v.to_string(), sm.name(), form, dst);
            t.assemble(&ptx, sm)
                .unwrap_or_else(|e| panic!("{form} on {sm}: {e}"));
        }
        // plain targets and sm_90 refuse it at any version
        for sm in [Sm::Sm90, Sm::Sm100, Sm::Sm120] {
            let log = rejection(&t, &block_scale("8.8", sm.name(), form, dst), sm);
            assert!(
                log.contains("not supported on .target"),
                "{form} {sm}: {log}"
            );
        }
        // the family targets (not offered, see src/target.rs) take it at 8.8
        // and not at 8.7; ptxas checks the instructions against the
        // module's `.target` (`-arch` of the family's base SM selects the
        // SASS)
        for (fam, sm) in [("sm_100f", Sm::Sm100), ("sm_120f", Sm::Sm120)] {
            let asm = t.assemble(&block_scale("8.8", fam, form, dst), sm);
            assert!(asm.is_ok(), "{form} {fam}: {asm:?}");
            let log = rejection(&t, &block_scale("8.7", fam, form, dst), sm);
            assert!(
                log.contains(&format!("PTX .version 8.7 does not support .target {fam}")),
                "{log}"
            );
        }
    }
    // the destination register types are fixed: .b8 for e2m1x2, .b16 for
    // ue8m0x2 ("Arguments mismatch" otherwise)
    let sm = Sm::Sm100a;
    for (form, dst) in [
        ("cvt.rn.satfinite.e2m1x2.f32", ".b16"),
        ("cvt.rn.satfinite.e2m1x2.f32", ".b32"),
        ("cvt.rp.satfinite.ue8m0x2.f32", ".b32"),
    ] {
        let log = rejection(&t, &block_scale("8.6", sm.name(), form, dst), sm);
        assert!(log.contains("Arguments mismatch"), "{form} {dst}: {log}");
    }
    // .rn is not a ue8m0 rounding; .satfinite is mandatory for e2m1x2
    let log = rejection(
        &t,
        &block_scale("8.6", "sm_100a", "cvt.rn.satfinite.ue8m0x2.f32", ".b16"),
        sm,
    );
    assert!(log.contains("Illegal rounding modifier"), "{log}");
    let log = rejection(
        &t,
        &block_scale("8.6", "sm_100a", "cvt.rn.e2m1x2.f32", ".b8"),
        sm,
    );
    assert!(log.contains("'.satfinite' modifier required"), "{log}");
}
