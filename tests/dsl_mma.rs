//! Issue 31: the packed half/tf32 conversions and `mma.sync` in the DSL:
//! the printed text, the feature gate below sm_80 (a typed error), the
//! minimal `.version`, assembly by the pinned ptxas on every target from
//! sm_80, and `HMMA` in the SASS.

use ptxsmith::dsl::params::Ptr;
use ptxsmith::dsl::types::{Bf16x2, F16x2, F32, MmaInput, Tf32, U32};
use ptxsmith::dsl::*;
use ptxsmith::nvtools::NvTools;
use ptxsmith::{Error, Feature, Sm, kernel_params};

kernel_params! {
    struct MmaArgs => MmaRegs {
        a: Ptr<U32>,
        b: Ptr<U32>,
        c: Ptr<F32>,
        d: Ptr<F32>,
    }
}

/// One `mma.sync` of operand type `T` on fragments loaded per lane.
fn mma_kernel<T: MmaInput>(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("mma_one", sm);
    let p = b.params::<MmaArgs>();
    let lane = b.tid_x();
    let l4 = b.shl(lane, 2u32);
    let l2 = b.shl(lane, 1u32);
    let ap = b.offset(p.a, l4);
    let bp = b.offset(p.b, l2);
    let cp = b.offset(p.c, l4);
    let dp = b.offset(p.d, l4);
    let a = FragA {
        regs: [0, 1, 2, 3].map(|i| {
            let w = b.ld_global(ap, i);
            b.u32_as_packed::<T>(w)
        }),
    };
    let bf = FragB {
        regs: [0, 1].map(|i| {
            let w = b.ld_global(bp, i);
            b.u32_as_packed::<T>(w)
        }),
    };
    let c = FragC {
        regs: [0, 1, 2, 3].map(|i| b.ld_global(cp, i)),
    };
    let d = b.mma_sync(a, bf, c);
    for (i, r) in d.regs.into_iter().enumerate() {
        b.st_global(dp, i as i32, r);
    }
    b.finish()
}

/// The conversions, to and from f32.
fn cvt_kernel(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("cvt_half", sm);
    let p = b.params::<MmaArgs>();
    let lane = b.tid_x();
    let cp = b.offset(p.c, lane);
    let ap = b.offset(p.a, lane);
    let x = b.ld_global(cp, 0);
    let y = b.ld_global(cp, 1);
    let h = b.cvt_to_f16x2(x, y);
    let (lo, hi) = b.f16x2_to_f32x2(h);
    b.st_global(cp, 2, lo);
    b.st_global(cp, 3, hi);
    let bf = b.cvt_to_bf16x2(x, y);
    let (lo, hi) = b.bf16x2_to_f32x2(bf);
    b.st_global(cp, 4, lo);
    b.st_global(cp, 5, hi);
    let t = b.cvt_to_tf32(x);
    let tf = b.tf32_to_f32(t);
    b.st_global(cp, 6, tf);
    for w in [b.packed_bits(h), b.packed_bits(bf), b.packed_bits(t)] {
        b.st_global(ap, 0, w);
    }
    b.finish()
}

type Gen = fn(Sm) -> ptxsmith::Result<PtxModule>;

const FORMS: [(&str, Gen, Feature, &str); 4] = [
    (
        "bf16",
        mma_kernel::<Bf16x2>,
        Feature::MmaSync,
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f4, %f5, %f6, %f7}, \
         {%b0, %b1, %b2, %b3}, {%b4, %b5}, {%f0, %f1, %f2, %f3};",
    ),
    (
        "f16",
        mma_kernel::<F16x2>,
        Feature::MmaSync,
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f4, %f5, %f6, %f7}, \
         {%b0, %b1, %b2, %b3}, {%b4, %b5}, {%f0, %f1, %f2, %f3};",
    ),
    (
        "tf32",
        mma_kernel::<Tf32>,
        Feature::MmaSync,
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f4, %f5, %f6, %f7}, \
         {%b0, %b1, %b2, %b3}, {%b4, %b5}, {%f0, %f1, %f2, %f3};",
    ),
    (
        "cvt",
        cvt_kernel,
        Feature::F16x2Cvt,
        "cvt.rna.tf32.f32 %b2, %f0;",
    ),
];

#[test]
fn printed_text_and_minimal_version_from_sm_80() {
    for (name, generate, _, text) in FORMS {
        for sm in Sm::ALL.into_iter().filter(|s| s.supports(Feature::MmaSync)) {
            let m = generate(sm).unwrap_or_else(|e| panic!("{name} on {sm}: {e}"));
            assert!(m.ptx.contains(text), "{name} on {sm}: {text}\n{}", m.ptx);
            // PTX 7.0 is the features' own minimum: the module's version is
            // the target's (7.0 on sm_80, 7.1 on sm_86, …)
            let want = sm.min_ptx().max(ptxsmith::PtxVersion::new(7, 0));
            assert_eq!(m.version, want, "{name} on {sm}");
        }
    }
    let m = cvt_kernel(Sm::Sm80).unwrap();
    for s in [
        "cvt.rn.f16x2.f32 %b0, %f0, %f1;",
        "mov.b32 {%h0, %h1}, %b0;",
        "cvt.f32.f16 %f2, %h0;",
        "cvt.rn.bf16x2.f32 %b1, %f0, %f1;",
        "shl.b32 %r",
        "and.b32 %r",
    ] {
        assert!(m.ptx.contains(s), "{s}\n{}", m.ptx);
    }
}

#[test]
fn refused_on_sm_70_and_sm_75_with_the_named_feature() {
    for (name, generate, feature, _) in FORMS {
        for sm in [Sm::Sm70, Sm::Sm75] {
            match generate(sm) {
                Err(Error::UnsupportedFeature {
                    feature: f,
                    sm: at,
                    needs,
                }) => {
                    assert_eq!((f, at), (feature, sm), "{name}");
                    assert!(needs.contains("sm_80") && needs.contains("7.0"), "{needs}");
                }
                other => panic!("{name} on {sm}: {other:?}"),
            }
        }
    }
}

#[test]
fn assembled_by_ptxas_on_every_target_from_sm_80() {
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    for (name, generate, _, _) in FORMS {
        for sm in Sm::ALL.into_iter().filter(|s| s.supports(Feature::MmaSync)) {
            let m = generate(sm).unwrap();
            if let Err(e) = tools.assemble(&m.ptx, sm) {
                panic!("{name} on {sm} rejected by ptxas: {e}\n{}", m.ptx);
            }
        }
    }
    // sm_80's 7.0 is minimal: ptxas refuses `.version 6.5` for sm_80
    let m = mma_kernel::<Bf16x2>(Sm::Sm80).unwrap();
    let lower = m.ptx.replace(".version 7.0\n", ".version 6.5\n");
    assert!(tools.assemble(&lower, Sm::Sm80).is_err());
}

#[test]
fn sass_has_hmma() {
    let Some(tools) = NvTools::for_tests() else {
        return;
    };
    for sm in [Sm::Sm80, Sm::Sm90] {
        if !NvTools::can_disassemble(sm) {
            continue;
        }
        for (name, generate, _, _) in &FORMS[..3] {
            let m = generate(sm).unwrap();
            let sass = tools
                .disassemble(&tools.assemble(&m.ptx, sm).unwrap())
                .unwrap();
            let f = sass.function(&m.kernel).unwrap();
            let n = f.count("HMMA");
            assert!(
                n >= 1,
                "{name} on {sm}: no HMMA in {:?}",
                f.opcode_histogram()
            );
            println!("{name} on {sm}: {n} HMMA");
        }
    }
}

/// Dynamic shared memory: `.extern .shared .align 16 .b8 dyn[];` at module
/// scope, sized at launch; each thread writes its id and reads its
/// neighbour's after the barrier. Every target assembles it, and the
/// simulator runs it with the launch's dynamic size (and refuses an access
/// past it).
fn dyn_smem_kernel(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("dyn_smem", sm);
    let p = b.params::<MmaArgs>();
    let tid = b.tid_x();
    let n = b.ntid_x();
    let dynamic = b.dynamic_shared::<U32>("dyn", 16);
    assert!(dynamic.is_dynamic() && !dynamic.is_empty());
    let mine = b.shared_elem(&dynamic, tid);
    b.st_shared(mine, 0, tid);
    b.bar_sync();
    let next = b.add(tid, 1u32);
    let next = b.rem(next, n);
    let theirs = b.shared_elem(&dynamic, next);
    let v = b.ld_shared(theirs, 0);
    let out = b.offset(p.a, tid);
    b.st_global(out, 0, v);
    b.finish()
}

#[test]
fn dynamic_shared_memory() {
    use ptxsmith::exec::LaunchConfig;
    use ptxsmith::sim::{Program, Sim};
    let m = dyn_smem_kernel(Sm::Sm70).unwrap();
    assert!(
        m.ptx.contains("\n.extern .shared .align 16 .b8 dyn[];\n"),
        "{}",
        m.ptx
    );
    assert!(m.ptx.contains("mov.u32 %r"), "{}", m.ptx);
    if let Some(tools) = NvTools::for_tests() {
        for sm in Sm::ALL {
            let m = dyn_smem_kernel(sm).unwrap();
            tools
                .assemble(&m.ptx, sm)
                .unwrap_or_else(|e| panic!("{sm}: {e}\n{}", m.ptx));
        }
    }
    let prog = Program::parse(&m.ptx).unwrap();
    let run = |bytes: u32| {
        let mut sim = Sim::new(Sm::Sm80);
        let out = sim.alloc(64 * 4).unwrap();
        let cfg = LaunchConfig {
            dynamic_smem_bytes: bytes,
            ..LaunchConfig::linear(1, 64)
        };
        let args = [0u64; 4].map(|_| ArgValue::Ptr(out));
        sim.launch_program(&prog, "dyn_smem", cfg, &args)?;
        let mut raw = vec![0u8; 256];
        sim.read(out, &mut raw).unwrap();
        Ok::<_, ptxsmith::sim::SimError>(
            raw.chunks(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect::<Vec<u32>>(),
        )
    };
    let got = run(256).unwrap();
    assert_eq!(got, (0..64).map(|i| (i + 1) % 64).collect::<Vec<u32>>());
    // too small a dynamic size: the simulator refuses the access past it
    assert!(run(128).is_err());
}
