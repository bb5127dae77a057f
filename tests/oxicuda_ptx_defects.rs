//! The known defects of the `oxicuda-ptx` dependency, pinned by tests so
//! that ptxsmith's workarounds stay justified (and so we notice when
//! upstream fixes them). ptxsmith's DSL does not route kernel code through
//! these builders; it prints its own PTX (see docs/design.md).

use oxicuda_ptx::arch::SmVersion;
use oxicuda_ptx::builder::KernelBuilder as OxKernel;
use oxicuda_ptx::ir::PtxType;
use ptxsmith::Sm;
use ptxsmith::dsl::{Fp8Format, KernelBuilder, Rounding};
use ptxsmith::nvtools::NvTools;

fn ox_kernel(sm: SmVersion, body: fn(&mut oxicuda_ptx::builder::BodyBuilder<'_>)) -> String {
    OxKernel::new("k")
        .target(sm)
        .param("x", PtxType::U64)
        .body(body)
        .build()
        .unwrap()
}

#[test]
fn oxicuda_add_f32_has_no_rounding_modifier_so_ptxas_may_fuse_it() {
    let ptx = ox_kernel(SmVersion::Sm80, |b| {
        let a = b.load_param_f32("x");
        let _ = b.add_f32(a.clone(), a);
    });
    assert!(ptx.contains("add.f32"), "{ptx}");
    assert!(!ptx.contains("add.rn.f32"));
    // ptxsmith: float adds exist only with an explicit rounding.
    let mut k = KernelBuilder::new("k", Sm::Sm80);
    let a = k.mov(1.0f32);
    let _ = k.fadd(Rounding::Rn, a, a);
    assert!(k.finish().unwrap().ptx.contains("add.rn.f32"));
}

#[test]
fn oxicuda_sm100_version_is_below_what_ptxas_accepts() {
    assert_eq!(SmVersion::Sm100.ptx_version(), "8.5");
    assert_eq!(Sm::Sm100.min_ptx().to_string(), "8.6");
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    let ours = KernelBuilder::new("k", Sm::Sm100).finish().unwrap().ptx;
    assert!(tools.assemble(&ours, Sm::Sm100).is_ok());
    let theirs = ours.replace(".version 8.6", ".version 8.5");
    assert!(
        tools.assemble(&theirs, Sm::Sm100).is_err(),
        "ptxas accepted .version 8.5 for sm_100"
    );
}

#[test]
fn oxicuda_e4m3_cvt_is_rejected_by_ptxas_and_ours_is_accepted() {
    let ptx = ox_kernel(SmVersion::Sm90, |b| {
        let a = b.load_param_f32("x");
        let _ = b.cvt_f32_to_e4m3(a);
    });
    assert!(ptx.contains("cvt.rn.e4m3.f32"), "{ptx}");
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    assert!(
        tools.assemble(&ptx, Sm::Sm90).is_err(),
        "ptxas accepted {ptx}"
    );
    let mut k = KernelBuilder::new("k", Sm::Sm90);
    let a = k.mov(1.0f32);
    let _ = k.cvt_to_fp8x2(Fp8Format::E4M3, a, a);
    let ours = k.finish().unwrap().ptx;
    assert!(ours.contains("cvt.rn.satfinite.e4m3x2.f32"));
    tools.assemble(&ours, Sm::Sm90).unwrap();
}
