//! Properties of the PTX text of every kernel variant on every SM, checked
//! without any tool: the header, a minimal `.version`, explicit rounding on
//! every float operation, no `.approx`, exact float literals.

use ptxsmith::Sm;
use ptxsmith::kernels::all_variants;
use ptxsmith::target::{Feature, PtxVersion};

/// The version a module needs, derived from its text independently of the
/// builder's bookkeeping: the target's minimum, raised by the instruction
/// families present.
fn required_version(sm: Sm, ptx: &str) -> PtxVersion {
    let mut v = sm.min_ptx();
    let uses = |needle: &str| {
        ptx.lines()
            .any(|l| !l.trim_start().starts_with("//") && l.contains(needle))
    };
    if uses("e4m3x2") || uses("e5m2x2") {
        v = v.max(Feature::Fp8Cvt.min_ptx(sm));
    }
    // Hopper bulk copies and the transaction-count mbarrier forms they
    // complete on: PTX 8.0 (the block-ELL forward's cluster multicast).
    if uses("cp.async.bulk") || uses(".expect_tx") {
        v = v.max(Feature::BulkCopy.min_ptx(sm));
    }
    if uses("redux.sync") || uses(".NaN.") {
        v = v.max(PtxVersion::new(7, 0));
    }
    if uses("shfl.sync") || uses("vote.sync") {
        v = v.max(PtxVersion::new(6, 0));
    }
    v
}

fn instructions(ptx: &str) -> impl Iterator<Item = &str> {
    ptx.lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("//") && !l.starts_with('.') && !l.ends_with(':')
        })
        .map(|l| {
            if l.starts_with('@') {
                l.split_once(' ').map_or(l, |(_, rest)| rest)
            } else {
                l
            }
        })
}

#[test]
fn every_variant_has_a_minimal_version_and_the_right_header() {
    for sm in Sm::ALL {
        for m in all_variants(sm).unwrap() {
            let want = required_version(sm, &m.ptx);
            assert_eq!(m.version, want, "{} on {sm}", m.kernel);
            let header: Vec<&str> = m
                .ptx
                .lines()
                .filter(|l| !l.starts_with("//"))
                .take(3)
                .collect();
            assert_eq!(
                header,
                [
                    format!(".version {want}"),
                    format!(".target {sm}"),
                    ".address_size 64".into()
                ]
            );
            assert_eq!(m.ptx.matches(".entry").count(), 1);
            assert!(m.ptx.contains(&format!(".entry {}(", m.kernel)));
        }
    }
}

#[test]
fn float_arithmetic_always_carries_a_rounding_modifier() {
    for sm in Sm::ALL {
        for m in all_variants(sm).unwrap() {
            assert!(!m.ptx.contains(".approx"), "{}: .approx", m.kernel);
            assert!(!m.ptx.contains(".full"), "{}: div.full", m.kernel);
            for ins in instructions(&m.ptx) {
                let op = ins.split_whitespace().next().unwrap();
                let parts: Vec<&str> = op.split('.').collect();
                let is_float = parts.iter().any(|p| *p == "f32" || *p == "f64");
                if is_float
                    && matches!(
                        parts[0],
                        "add" | "sub" | "mul" | "fma" | "div" | "sqrt" | "rcp" | "mad"
                    )
                {
                    assert!(
                        parts
                            .iter()
                            .any(|p| matches!(*p, "rn" | "rz" | "rm" | "rp")),
                        "{} on {sm}: `{ins}` has no rounding modifier",
                        m.kernel
                    );
                }
                // Float literals must be exact hex (decimal ones are f64 and converted).
                for tok in ins.split([' ', ',', ';', '[', ']', '{', '}']) {
                    assert!(
                        !(tok.contains('.')
                            && tok.chars().next().is_some_and(|c| c.is_ascii_digit())),
                        "{}: decimal float literal `{tok}` in `{ins}`",
                        m.kernel
                    );
                }
            }
        }
    }
}

#[test]
fn variants_are_deterministic() {
    for sm in Sm::ALL {
        assert_eq!(all_variants(sm).unwrap(), all_variants(sm).unwrap());
    }
}
