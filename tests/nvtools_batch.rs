//! `NvTools::disassemble_many` (one raw-mode nvdisasm run per target) gives
//! the functions `NvTools::disassemble` (ELF mode, one run per cubin) gives:
//! the same names in the same order, and per instruction the same address,
//! guard, opcode, operands (a label operand, `` `(.L_x_2) ``, equal to the
//! address it names) and branch target. Checked on every target nvdisasm
//! reads, on kernels chosen for what could go wrong: a subroutine ptxas
//! places after the kernel in the same section (the `div.rn` slow path),
//! the self-branch after `EXIT`, `WARPSYNC` and `BSSY` with code
//! addresses, and a tensor-core kernel. The tuning report and
//! `tests/kernels_ptxas.rs` read SASS through `disassemble_many`.

use ptxsmith::Sm;
use ptxsmith::kernels::all_variants;
use ptxsmith::nvtools::{NvTools, Sass, SassFunction, ToolError, replace_labels};
use rayon::prelude::*;

/// The kernels compared (each ELF-mode run costs nvdisasm's 0.5 s start-up,
/// so a few chosen for what could go wrong): the `div.rn` slow path as a
/// second function of the kernel's section and the self-branch after
/// `EXIT` (every target), `WARPSYNC` and `BSSY` with code addresses (the
/// cluster HMM, from sm_90), tensor cores (from sm_80).
const KERNELS: &[&str] = &[
    "fp8_absmax_finalize_e4m3",
    "hmm_fwdbwd_cluster4_cap1024",
    "block_ell_tc_forward_bf16_b32",
];

fn tools() -> Option<NvTools> {
    NvTools::for_tests()
        .map(|t| t.with_cache(concat!(env!("CARGO_TARGET_TMPDIR"), "/nvtools-cache")))
}

/// `operands` with each label `` `(name) `` replaced by the address `f` (or
/// a function of the listing) gives it, as raw mode prints it.
fn resolve(operands: &str, f: &SassFunction, elf: &Sass) -> String {
    replace_labels(operands, |label| {
        f.labels.get(label).copied().or_else(|| {
            elf.function(label)
                .and_then(|g| g.instructions.first())
                .map(|i| i.address)
        })
    })
}

fn same_functions(kernel: &str, sm: Sm, elf: &Sass, raw: &Sass) -> Result<(), String> {
    let names = |s: &Sass| {
        s.functions
            .iter()
            .map(|f| f.name.clone())
            .collect::<Vec<_>>()
    };
    if names(elf) != names(raw) {
        return Err(format!(
            "{kernel} on {sm}: functions {:?} vs {:?}",
            names(elf),
            names(raw)
        ));
    }
    for (f, g) in elf.functions.iter().zip(&raw.functions) {
        if f.instructions.len() != g.instructions.len() {
            return Err(format!(
                "{kernel} on {sm}, {}: {} instructions vs {}",
                f.name,
                f.instructions.len(),
                g.instructions.len()
            ));
        }
        for (a, b) in f.instructions.iter().zip(&g.instructions) {
            let ops = resolve(&a.operands, f, elf);
            let same = a.address == b.address
                && a.predicate == b.predicate
                && a.opcode == b.opcode
                && ops.split_whitespace().eq(b.operands.split_whitespace())
                && a.target == b.target;
            if !same {
                return Err(format!(
                    "{kernel} on {sm}, {}:\n  ELF {a:?}\n  raw {b:?}",
                    f.name
                ));
            }
        }
        assert!(g.labels.is_empty(), "raw mode has no labels");
    }
    Ok(())
}

/// The modules of [`KERNELS`] on `sm`: how many were compared, and the
/// differences found.
fn compare_on(tools: &NvTools, sm: Sm) -> (usize, Vec<String>) {
    let modules: Vec<_> = all_variants(sm)
        .unwrap()
        .into_iter()
        .filter(|m| KERNELS.contains(&m.kernel.as_str()))
        .collect();
    let asms: Vec<_> = modules
        .iter()
        .map(|m| tools.assemble(&m.ptx, sm).unwrap())
        .collect();
    let raw = tools.disassemble_many(&asms.iter().collect::<Vec<_>>());
    let mut failures = Vec::new();
    for ((m, asm), raw) in modules.iter().zip(&asms).zip(raw) {
        let elf = tools.disassemble(asm).unwrap();
        if let Err(e) = same_functions(&m.kernel, sm, &elf, &raw.unwrap()) {
            failures.push(e);
        }
    }
    (modules.len(), failures)
}

#[test]
fn batched_raw_disassembly_equals_the_elf_listing_on_every_target() {
    let Some(tools) = tools() else { return };
    // One target per job on every core (rayon) (each ELF-mode run is a process).
    let sms: Vec<Sm> = Sm::ALL
        .into_iter()
        .filter(|&sm| NvTools::can_disassemble(sm))
        .collect();
    let results: Vec<(usize, Vec<String>)> =
        (sms.par_iter()).map(|&sm| compare_on(&tools, sm)).collect();
    let checked: usize = results.iter().map(|r| r.0).sum();
    let failures: Vec<String> = results.into_iter().flat_map(|r| r.1).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // 9 targets of the FP8 kernel, 8 of the tensor-core one, 5 of the HMM.
    assert!(checked >= 9 + 8 + 5, "only {checked} modules checked");
}

#[test]
fn what_the_batch_cannot_read_is_an_error_for_that_cubin_alone() {
    let Some(tools) = tools() else { return };
    assert!(tools.disassemble_many(&[]).is_empty());
    let m = all_variants(Sm::Sm80).unwrap().swap_remove(0);
    let good = tools.assemble(&m.ptx, Sm::Sm80).unwrap();
    let mut garbage = good.clone();
    garbage.cubin = b"not an ELF file".to_vec();
    let m70 = all_variants(Sm::Sm70).unwrap().swap_remove(0);
    let old = tools.assemble(&m70.ptx, Sm::Sm70).unwrap();
    let out = tools.disassemble_many(&[&good, &garbage, &old]);
    assert_eq!(out.len(), 3);
    let sass = out[0].as_ref().expect("the good cubin is read");
    assert!(
        sass.function(&m.kernel)
            .is_some_and(|f| !f.instructions.is_empty())
    );
    match &out[1] {
        Err(ToolError::Nvdisasm {
            sm: Sm::Sm80, log, ..
        }) => {
            assert!(log.contains("could not be read"), "{log}")
        }
        other => panic!("garbage cubin: {other:?}"),
    }
    // sm_70: the error `disassemble` gives (nvdisasm 13.5 reads no sm_70).
    assert!(matches!(
        &out[2],
        Err(ToolError::Nvdisasm { sm: Sm::Sm70, .. })
    ));
}
