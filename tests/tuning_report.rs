//! The committed tuning report (`docs/tuning.md` with its roofline
//! section, `docs/tuning.svg`, `docs/roofline.{svg,tsv}`) is what the code
//! generates, every kernel × target it covers has no spills and fits at
//! least one CTA per SM, the math routines' cost covers every target, and
//! the roofline model covers every problem on
//! every card. Regenerate with `cargo run --release --example
//! tuning_report`.

use std::path::Path;

use ptxsmith::nvtools::NvTools;
use ptxsmith::report;
use ptxsmith::target::Sm;

#[test]
fn committed_report_matches_the_code_and_no_kernel_spills() {
    // The two binaries assemble the same modules: the second reuses the
    // first one's runs (`NvTools::with_cache`).
    let Some(tools) = NvTools::for_tests()
        .map(|t| t.with_cache(concat!(env!("CARGO_TARGET_TMPDIR"), "/nvtools-cache")))
    else {
        return;
    };
    let r = report::generate(&tools).unwrap();
    // Every variant on every target, each with its occupancy and limiter.
    for sm in Sm::ALL {
        let n = r.rows.iter().filter(|row| row.sm == sm).count();
        assert_eq!(n, report::variants(sm).unwrap().len(), "{sm}");
    }
    for row in &r.rows {
        assert_eq!(row.spill_bytes, 0, "{} on {} spills", row.label(), row.sm);
        assert_eq!(
            row.local_bytes,
            0,
            "{} on {} uses local memory",
            row.label(),
            row.sm
        );
        assert!(
            row.occupancy.ctas_per_sm >= 1,
            "{} on {} does not fit an SM: {:?}",
            row.label(),
            row.sm,
            row.occupancy
        );
        if row.sm != Sm::Sm70 && !row.kernel.starts_with("fp8_absmax_finalize") {
            assert!(
                row.hot.is_some(),
                "{} on {}: no hot loop found",
                row.label(),
                row.sm
            );
        }
    }
    // The math routines' cost: every target, figures wherever nvdisasm
    // reads the cubin.
    assert_eq!(
        r.math.iter().map(|c| c.sm).collect::<Vec<_>>(),
        Sm::ALL.to_vec()
    );
    for c in &r.math {
        assert_eq!(
            c.per_call.is_some(),
            ptxsmith::nvtools::NvTools::can_disassemble(c.sm),
            "{}",
            c.sm
        );
    }
    // The roofline model: every problem on every card, with figures
    // wherever there is SASS.
    let problems = report::roofline::problems::all().len();
    assert_eq!(r.roofline.gpus.len(), report::hardware::GPUS.len());
    for g in &r.roofline.gpus {
        assert_eq!(g.problems.len(), problems, "{}", g.gpu.name);
        for (p, spec) in g.problems.iter().zip(report::roofline::problems::all()) {
            // Problems whose kernels do not exist on the card (tensor
            // cores below sm_80) have an empty row.
            let runs = spec.runs_on(g.gpu.sm);
            assert_eq!(!p.kernels.is_empty(), runs, "{}: {}", g.gpu.name, p.problem);
            assert_eq!(
                p.model_s().is_some(),
                runs && g.gpu.sm != Sm::Sm70,
                "{}: {}",
                g.gpu.name,
                p.problem
            );
            for k in &p.kernels {
                assert!(k.ptx > 0.0 && k.bytes >= 0.0, "{}: {}", p.problem, k.kernel);
            }
        }
    }
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let md = std::fs::read_to_string(docs.join("tuning.md")).unwrap_or_default();
    let svg = std::fs::read_to_string(docs.join("tuning.svg")).unwrap_or_default();
    let roof_svg = std::fs::read_to_string(docs.join("roofline.svg")).unwrap_or_default();
    let roof_tsv = std::fs::read_to_string(docs.join("roofline.tsv")).unwrap_or_default();
    let fix = "regenerate with `cargo run --release --example tuning_report` and commit docs/tuning.{md,svg} and docs/roofline.{svg,tsv}";
    if md != r.markdown() {
        let first = md
            .lines()
            .zip(r.markdown().lines())
            .position(|(a, b)| a != b)
            .map_or("length".to_string(), |i| format!("line {}", i + 1));
        panic!("docs/tuning.md drifted from the code (first difference: {first}); {fix}");
    }
    assert!(
        svg == r.svg(),
        "docs/tuning.svg drifted from the code; {fix}"
    );
    assert!(
        roof_svg == r.roofline_svg(),
        "docs/roofline.svg drifted from the code; {fix}"
    );
    assert!(
        roof_tsv == r.roofline_tsv(),
        "docs/roofline.tsv drifted from the code; {fix}"
    );
}
