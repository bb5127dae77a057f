//! Every kernel variant × every supported SM, assembled by the pinned
//! ptxas: accepted, resource report read (no spills, no local memory, shared
//! memory within the static limit), and — where nvdisasm can read the
//! target — no FFMA in the SASS of kernels whose PTX has no `fma`
//! (separate rounding is promised everywhere else). IEEE-exact
//! `div.rn`/`rcp.rn`/`sqrt.rn` are exempt: ptxas expands them into a
//! correctly rounded sequence that uses FFMA internally (the FP8 absmax
//! finalize kernel computes `448 / amax` with `div.rn.f32`). Each module's
//! `.version` is also shown to be minimal: ptxas rejects the next lower one.

use ptxsmith::Sm;
use ptxsmith::kernels::all_variants;
use ptxsmith::nvtools::NvTools;
use ptxsmith::target::STATIC_SMEM_LIMIT;

#[test]
fn every_variant_assembles_without_spills_and_without_ffma() {
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    let mut checked = 0;
    for sm in Sm::ALL {
        for m in all_variants(sm).unwrap() {
            let asm = tools
                .assemble(&m.ptx, sm)
                .unwrap_or_else(|e| panic!("{} on {sm}: ptxas rejected it: {e}", m.kernel));
            let usage = asm
                .entry()
                .unwrap_or_else(|| panic!("{}: no entry in the ptxas report", m.kernel));
            assert_eq!(usage.name, m.kernel);
            assert!(!usage.spills(), "{} on {sm} spills: {usage:?}", m.kernel);
            assert_eq!(
                usage.local_bytes, 0,
                "{} on {sm} uses local memory",
                m.kernel
            );
            assert!(usage.registers > 0 && usage.registers <= 255, "{usage:?}");
            assert!(usage.shared_bytes <= STATIC_SMEM_LIMIT, "{usage:?}");
            let uses_fma = m.ptx.lines().any(|l| {
                let t = l.trim_start();
                t.starts_with("fma.")
                    || l.contains(" fma.")
                    || ["div.rn.", "rcp.rn.", "sqrt.rn."]
                        .iter()
                        .any(|op| t.starts_with(op))
            });
            if NvTools::can_disassemble(sm) && !uses_fma {
                let sass = tools.disassemble(&asm).unwrap();
                assert_eq!(
                    sass.count("FFMA"),
                    0,
                    "{} on {sm}: FFMA in SASS of a separate-rounding kernel",
                    m.kernel
                );
                assert!(
                    sass.count("FMUL") + sass.count("FADD") > 0 || !m.ptx.contains("mul.rn.f32")
                );
            }
            // The `.version` is minimal: one ISA step lower is rejected.
            let v = m.version;
            let lower = if v.minor > 0 {
                format!("{}.{}", v.major, v.minor - 1)
            } else {
                format!("{}.9", v.major - 1)
            };
            let text = m.ptx.replacen(
                &format!(".version {v}\n"),
                &format!(".version {lower}\n"),
                1,
            );
            assert_ne!(text, m.ptx);
            assert!(
                tools.assemble(&text, sm).is_err(),
                "{} on {sm}: ptxas accepts .version {lower}",
                m.kernel
            );
            checked += 1;
        }
    }
    assert!(checked >= Sm::ALL.len());
}
