//! Integration tests of `ptxsmith::nvtools` against the real pinned tools.
//! Each test returns early (printing `SKIP: ...`) when the tools are not
//! installed, and fails when `PTXSMITH_REQUIRE_NVIDIA_TOOLS=1`.

use ptxsmith::Sm;
use ptxsmith::nvtools::{NVDISASM_PINNED, NvTools, PTXAS_PINNED, Severity, ToolError};

fn fixture(name: &str) -> String {
    let p = format!(
        "{}/tests/fixtures/nvtools/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// `ptx` with its header rewritten for `sm` at the target's lowest ISA.
fn retarget(ptx: &str, sm: Sm) -> String {
    ptx.lines()
        .map(|l| {
            if l.starts_with(".version") {
                format!(".version {}", sm.min_ptx())
            } else if l.starts_with(".target") {
                format!(".target {}", sm.name())
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn pinned_versions() {
    let Some(t) = NvTools::for_tests() else {
        return;
    };
    let (p, d) = t.versions().unwrap();
    assert_eq!(p, PTXAS_PINNED, "{}", t.ptxas.display());
    assert_eq!(d, NVDISASM_PINNED, "{}", t.nvdisasm.display());
}

#[test]
fn mul_add_loop_becomes_fmul_fadd() {
    let Some(t) = NvTools::for_tests() else {
        return;
    };
    for sm in [Sm::Sm80, Sm::Sm90] {
        let asm = t.assemble(&retarget(&fixture("loop.ptx"), sm), sm).unwrap();
        assert!(asm.cubin.starts_with(b"\x7fELF"));
        assert!(asm.warnings.is_empty(), "{}", asm.log);
        let k = asm.function("axpy_loop").unwrap();
        assert!(k.is_entry && k.registers > 0 && !k.spills(), "{k:?}");
        assert_eq!(k.target.as_deref(), Some(sm.name()));
        let f = asm.function("fma_k").unwrap();
        assert_eq!((f.shared_bytes, f.barriers), (256, 1));

        let sass = t.disassemble(&asm).unwrap();
        let f = sass.function("axpy_loop").unwrap();
        let hot = f.largest_loop().expect("a loop");
        // rn-rounded mul and add must not be contracted into FFMA
        assert_eq!(f.count("FFMA"), 0, "{sm}");
        let share = f.share(&hot, &["FMUL", "FADD"]);
        assert!(share > 0.6, "{sm}: FMUL+FADD share {share}\n{}", sass.text);
        assert_eq!(sass.function("fma_k").unwrap().count("FFMA"), 1, "{sm}");
    }
}

#[test]
fn nested_loops_on_every_disassemblable_target() {
    let Some(t) = NvTools::for_tests() else {
        return;
    };
    for sm in Sm::ALL {
        let asm = t.assemble(&retarget(&fixture("nest.ptx"), sm), sm).unwrap();
        if !NvTools::can_disassemble(sm) {
            let e = t.disassemble(&asm).unwrap_err();
            assert!(matches!(e, ToolError::Nvdisasm { .. }), "{e}");
            assert!(e.to_string().contains("SM70"), "{e}");
            continue;
        }
        let sass = t.disassemble(&asm).unwrap();
        let f = sass.function("nest").unwrap();
        let inner = f.innermost_loops();
        assert_eq!(inner.len(), 1, "{sm}: {:?}\n{}", f.loops(), sass.text);
        let outer = f.largest_loop().unwrap();
        assert!(outer.start() < inner[0].start() && inner[0].end() < outer.end());
        assert!(f.share(&inner[0], &["FFMA"]) > 0.5, "{sm}\n{}", sass.text);
    }
}

#[test]
fn spills_are_reported() {
    let Some(t) = NvTools::for_tests() else {
        return;
    };
    let n = 64;
    let mut s = String::from(".version 7.0\n.target sm_80\n.address_size 64\n");
    s += ".visible .entry spill(.param .u64 p_x)\n.maxnreg 32\n{\n";
    s += &format!(" .reg .f32 %f<{}>;\n .reg .b64 %rd<3>;\n", n + 2);
    s += " ld.param.u64 %rd1, [p_x];\n cvta.to.global.u64 %rd2, %rd1;\n";
    for i in 0..n {
        s += &format!(" ld.volatile.global.f32 %f{i}, [%rd2+{}];\n", 4 * i);
    }
    s += &format!(" mov.f32 %f{n}, 0f00000000;\n");
    for i in 0..n {
        s += &format!(" fma.rn.f32 %f{n}, %f{i}, %f{}, %f{n};\n", n - 1 - i);
    }
    for i in 0..n {
        s += &format!(" mul.rn.f32 %f{i}, %f{i}, %f{n};\n");
    }
    for i in 0..n {
        s += &format!(" st.volatile.global.f32 [%rd2+{}], %f{i};\n", 4 * i);
    }
    s += " ret;\n}\n";
    let asm = t.assemble(&s, Sm::Sm80).unwrap();
    let k = asm.entry().unwrap();
    assert!(k.spills(), "{}", asm.log);
    assert!(k.registers <= 32);
    assert!(k.stack_frame_bytes > 0 && k.local_bytes > 0);
    assert!(
        asm.warnings.iter().any(|w| w.contains("spilled")),
        "{:?}",
        asm.warnings
    );
}

#[test]
fn errors_carry_line_numbers() {
    let Some(t) = NvTools::for_tests() else {
        return;
    };
    let bad = ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry bad()\n{\n\
               .reg .b32 %r<2>;\n    add.rn.s32 %r1, %r1, 1;\n    ret;\n}\n";
    let e = t.assemble(bad, Sm::Sm80).unwrap_err();
    let ToolError::Ptxas {
        sm,
        diagnostics,
        excerpt,
        ..
    } = &e
    else {
        panic!("{e}")
    };
    assert_eq!(*sm, Sm::Sm80);
    let d = &diagnostics[0];
    assert_eq!((d.severity, d.line), (Severity::Error, Some(7)));
    assert!(d.message.contains("rounding modifier"), "{}", d.message);
    assert_eq!(excerpt[0].0, 7);
    let msg = e.to_string();
    assert!(msg.contains("kernel.ptx, line 7"), "{msg}");
    assert!(msg.contains("add.rn.s32 %r1, %r1, 1;"), "{msg}");
}

#[test]
fn locate_honours_the_env_folder() {
    let Some(t) = NvTools::for_tests() else {
        return;
    };
    // The installed folder found by locate() also works through in_dir().
    let root = t.ptxas.ancestors().nth(4).unwrap().to_path_buf();
    assert_eq!(NvTools::in_dir(&root), Some(t.clone()));
    assert_eq!(NvTools::in_dir(&root.join("nonexistent")), None);
}
