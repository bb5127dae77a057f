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
use ptxsmith::dsl::PtxModule;
use ptxsmith::kernels::all_variants;
use ptxsmith::nvtools::{Assembly, NvTools, Sass};
use ptxsmith::target::STATIC_SMEM_LIMIT;
use rayon::prelude::*;

/// One variant's ptxas checks (its report and its `.version`); `Err` names
/// the kernel, the target and what failed. `Ok` holds the assembly when its
/// SASS is to be checked too (see [`check_sass`]).
fn check_variant(tools: &NvTools, sm: Sm, m: &PtxModule) -> Result<Option<Assembly>, String> {
    let asm = tools
        .assemble(&m.ptx, sm)
        .map_err(|e| format!("{} on {sm}: ptxas rejected it: {e}", m.kernel))?;
    let usage = asm
        .entry()
        .ok_or_else(|| format!("{}: no entry in the ptxas report", m.kernel))?;
    let fail = |what: String| Err(format!("{} on {sm}: {what}", m.kernel));
    if usage.name != m.kernel {
        return fail(format!("the report names {}", usage.name));
    }
    if usage.spills() {
        return fail(format!("spills: {usage:?}"));
    }
    if usage.local_bytes != 0 {
        return fail(format!("uses local memory: {usage:?}"));
    }
    if !(usage.registers > 0 && usage.registers <= 255) || usage.shared_bytes > STATIC_SMEM_LIMIT {
        return fail(format!("resources out of range: {usage:?}"));
    }
    let uses_fma = m.ptx.lines().any(|l| {
        let t = l.trim_start();
        t.starts_with("fma.")
            || l.contains(" fma.")
            || ["div.rn.", "rcp.rn.", "sqrt.rn."]
                .iter()
                .any(|op| t.starts_with(op))
    });
    let sass_check = NvTools::can_disassemble(sm) && !uses_fma;
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
    if text == m.ptx {
        return fail(format!("no `.version {v}` line"));
    }
    if tools.assemble(&text, sm).is_ok() {
        return fail(format!("ptxas accepts .version {lower}"));
    }
    Ok(sass_check.then_some(asm))
}

/// No FFMA in the SASS of a separate-rounding kernel, and its `mul.rn`
/// became FMUL or FADD.
fn check_sass(m: &PtxModule, sass: &Sass) -> Result<(), String> {
    let fail = |what: &str| Err(format!("{} on {}: {what}", m.kernel, sass.sm));
    if sass.count("FFMA") != 0 {
        return fail("FFMA in SASS of a separate-rounding kernel");
    }
    if sass.count("FMUL") + sass.count("FADD") == 0 && m.ptx.contains("mul.rn.f32") {
        return fail("mul.rn.f32 in the PTX but no FMUL/FADD in the SASS");
    }
    Ok(())
}

#[test]
fn every_variant_assembles_without_spills_and_without_ffma() {
    // The two binaries assemble the same modules: the second reuses the
    // first one's runs (`NvTools::with_cache`).
    let Some(tools) = NvTools::for_tests()
        .map(|t| t.with_cache(concat!(env!("CARGO_TARGET_TMPDIR"), "/nvtools-cache")))
    else {
        return;
    };
    let work: Vec<(Sm, PtxModule)> = Sm::ALL
        .iter()
        .flat_map(|&sm| all_variants(sm).unwrap().into_iter().map(move |m| (sm, m)))
        .collect();
    assert!(work.len() >= Sm::ALL.len());
    // ptxas and nvdisasm are separate processes: run them on every core.
    let checked: Vec<Result<Option<Assembly>, String>> = (work.par_iter())
        .map(|(sm, m)| check_variant(&tools, *sm, m))
        .collect();
    let mut failures = Vec::new();
    let (mut index, mut asms) = (Vec::new(), Vec::new());
    for (i, c) in checked.into_iter().enumerate() {
        match c {
            Ok(Some(asm)) => {
                index.push(i);
                asms.push(asm);
            }
            Ok(None) => {}
            Err(e) => failures.push(e),
        }
    }
    // One nvdisasm run per target (`NvTools::disassemble_many`).
    let listings = tools.disassemble_many(&asms.iter().collect::<Vec<_>>());
    for (i, sass) in index.into_iter().zip(listings) {
        let (sm, m) = &work[i];
        match sass {
            Ok(sass) => failures.extend(check_sass(m, &sass).err()),
            Err(e) => failures.push(format!("{} on {sm}: nvdisasm failed: {e}", m.kernel)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} variants failed:\n{}",
        failures.len(),
        work.len(),
        failures.join("\n")
    );
}
