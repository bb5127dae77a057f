//! Parser tests for `ptxsmith::nvtools` on real output captured from the
//! pinned ptxas 12.9.86 and nvdisasm 13.5.37 (see tests/fixtures/nvtools).
//! These need no tools.

use ptxsmith::Sm;
use ptxsmith::nvtools::{Sass, parse_resource_report, ptx_target_of, ptx_version_of};

fn fixture(name: &str) -> String {
    let p = format!(
        "{}/tests/fixtures/nvtools/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[test]
fn loop_sm80_listing() {
    let sass = Sass::parse(Sm::Sm80, &fixture("loop_sm80.sass"));
    let names: Vec<&str> = sass.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["fma_k", "axpy_loop"]);

    let fma = sass.function("fma_k").unwrap();
    assert_eq!(fma.count("FFMA"), 1);
    assert_eq!(fma.count("BAR"), 1);
    assert_eq!(fma.count("BAR.SYNC.DEFER_BLOCKING"), 1);
    assert!(
        fma.loops().is_empty(),
        "the trailing self-branch is no loop"
    );
    let first = &fma.instructions[0];
    assert_eq!((first.address, first.opcode.as_str()), (0, "MOV"));
    assert_eq!(first.operands, "R1, c[0x0][0x28]");

    let f = sass.function("axpy_loop").unwrap();
    assert_eq!(f.labels.get(".L_x_2"), Some(&0x120));
    assert_eq!(
        f.labels.get(".L_x_7"),
        Some(&0x380),
        "end label after the NOPs"
    );
    assert_eq!(sass.loops("axpy_loop"), vec![0x120..=0x1c0]);
    let hot = f.largest_loop().unwrap();
    let n = f.in_range(&hot).count();
    assert_eq!(n, 11);
    // 4 x (FMUL, FADD) + IADD3 + ISETP + BRA
    assert!((f.share(&hot, &["FMUL", "FADD"]) - 8.0 / 11.0).abs() < 1e-12);
    assert_eq!(f.share(&hot, &["FFMA"]), 0.0);
    let br = f.in_range(&hot).last().unwrap();
    assert_eq!(br.predicate.as_deref(), Some("!P1"));
    assert_eq!((br.base(), br.target), ("BRA", Some(0x120)));
    // the forward branch @P1 BRA .L_x_1 resolves too
    let fwd = f.instructions.iter().find(|i| i.address == 0xe0).unwrap();
    assert_eq!(
        (fwd.predicate.as_deref(), fwd.target),
        (Some("P1"), Some(0x1d0))
    );

    let h = sass.opcode_histogram();
    assert_eq!(h["FMUL"], 4 + 1 + 2 + 1);
    assert_eq!(h["FFMA"], 1);
    assert_eq!(h["HFMA2"], 2, "keyed by base opcode (HFMA2.MMA)");
    assert_eq!(sass.count("FADD"), sass.count("FMUL"));
}

#[test]
fn loop_sm90_listing() {
    let sass = Sass::parse(Sm::Sm90, &fixture("loop_sm90.sass"));
    let f = sass.function("axpy_loop").unwrap();
    assert_eq!(f.loops(), vec![0x110..=0x1b0]);
    let hot = f.largest_loop().unwrap();
    assert!((f.share(&hot, &["FMUL", "FADD"]) - 8.0 / 11.0).abs() < 1e-12);
    let fma = sass.function("fma_k").unwrap();
    assert_eq!(fma.count("FFMA"), 1);
    assert_eq!(fma.count("LDG"), 2);
    let ldg = fma.instructions.iter().find(|i| i.base() == "LDG").unwrap();
    assert_eq!(ldg.opcode, "LDG.E");
    assert_eq!(ldg.operands, "R0, desc[UR6][R2.64]");
}

#[test]
fn nested_loops() {
    let sass = Sass::parse(Sm::Sm90, &fixture("nest_sm90.sass"));
    let f = sass.function("nest").unwrap();
    assert_eq!(f.loops(), vec![0x40..=0x240, 0x120..=0x180]);
    assert_eq!(f.innermost_loops(), vec![0x120..=0x180]);
    assert_eq!(f.largest_loop(), Some(0x40..=0x240));
    let inner = &f.innermost_loops()[0];
    assert!((f.share(inner, &["FFMA"]) - 4.0 / 7.0).abs() < 1e-12);
    assert_eq!(f.count("IMAD.MOV.U32"), 3);
    assert_eq!(f.count("IMAD"), 5);
}

#[test]
fn called_function_is_its_own_function() {
    let sass = Sass::parse(Sm::Sm80, &fixture("call_sm80.sass"));
    let names: Vec<&str> = sass.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["caller", "$caller$helper"]);
    let helper = sass.function("$caller$helper").unwrap();
    assert_eq!(helper.instructions[0].address, 0x230);
    assert_eq!(helper.count("FADD"), 1);
    assert_eq!(helper.count("STL") + helper.count("LDL"), 2);
    assert_eq!(sass.function("caller").unwrap().count("CALL"), 1);
    assert!(sass.loops("caller").is_empty());
    assert!(sass.loops("$caller$helper").is_empty());
}

#[test]
fn ptxas_reports() {
    let (m, f) = parse_resource_report(&fixture("loop_sm80.ptxas.log"));
    assert_eq!(m.global_bytes, 0);
    assert_eq!(f.len(), 2);
    let k = &f[0];
    assert_eq!((k.name.as_str(), k.is_entry), ("fma_k", true));
    assert_eq!(
        (k.registers, k.barriers, k.shared_bytes, k.constant_bytes),
        (10, 1, 256, 360)
    );
    assert_eq!(f[1].cmem, vec![(0, 364)]);

    let (_, f) = parse_resource_report(&fixture("loop_sm90.ptxas.log"));
    assert_eq!((f[1].name.as_str(), f[1].registers), ("axpy_loop", 12));
    assert!(f[1].cmem.is_empty(), "sm_90 reports no cmem[0]");

    let (m, f) = parse_resource_report(&fixture("local_sm80.ptxas.log"));
    assert_eq!(
        (m.global_bytes, m.cmem.clone()),
        (64, vec![(3, 32), (4, 8)])
    );
    assert_eq!((f[0].stack_frame_bytes, f[0].local_bytes), (128, 128));
    assert!(!f[0].spills());

    let (_, f) = parse_resource_report(&fixture("spill_sm80.ptxas.log"));
    let s = &f[0];
    assert_eq!(s.registers, 32);
    assert_eq!((s.spill_stores_bytes, s.spill_loads_bytes), (568, 712));
    assert_eq!(s.stack_frame_bytes, 560);
    assert!(s.spills());
    assert!(s.other.is_empty(), "{:?}", s.other);
}

#[test]
fn ptx_header_readers() {
    let ptx = fixture("loop.ptx");
    assert_eq!(ptx_version_of(&ptx), Some((7, 0)));
    assert_eq!(ptx_target_of(&ptx).as_deref(), Some("sm_80"));
    let ptx = "// generated\n  .version 8.1 // fp8\n.target sm_89, debug\n";
    assert_eq!(ptx_version_of(ptx), Some((8, 1)));
    assert_eq!(ptx_target_of(ptx).as_deref(), Some("sm_89"));
    assert_eq!(ptx_version_of("// .version 7.0\n"), None);
    assert_eq!(ptx_target_of(".targets sm_80\n"), None);
}
