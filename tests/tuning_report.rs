//! The committed tuning report (`docs/tuning.md`, `docs/tuning.svg`) is
//! what the code generates, and every kernel × target it covers has no
//! spills and fits at least one CTA per SM. Regenerate with
//! `cargo run --release --example tuning_report`.

use std::path::Path;

use ptxsmith::nvtools::NvTools;
use ptxsmith::report;
use ptxsmith::target::Sm;

#[test]
fn committed_report_matches_the_code_and_no_kernel_spills() {
    let Some(tools) = NvTools::for_tests() else {
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
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let md = std::fs::read_to_string(docs.join("tuning.md")).unwrap_or_default();
    let svg = std::fs::read_to_string(docs.join("tuning.svg")).unwrap_or_default();
    let fix = "regenerate with `cargo run --release --example tuning_report` and commit docs/tuning.{md,svg}";
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
}
