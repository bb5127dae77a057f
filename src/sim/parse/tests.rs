//! Parser unit tests: the entry header, declarations and layout, labels,
//! literals and refusals.

use super::lex::{Lit, parse_num};
use super::operands::{Cls, imm_bits};
use super::*;

const SRC: &str = "// header comment
.version 8.1
.target sm_89
.address_size 64
.shared .align 8 .b8 mod_sh[12];
.extern .shared .align 16 .b8 dyn[];
.const .align 4 .u32 tbl[3] = {7, 0x10, -1};

/* a block
   comment */
.visible .entry k(
    .param .u32 n,
    .param .u64 .ptr .global .align 16 p,
    .param .align 8 .b8 blob[12]
)
.maxntid 256, 1, 1
.minnctapersm 2
{
    .reg .pred %p<3>;
    .reg .f32 %f<12>;
    .reg .b32 %x, %y;
    .shared .f32 sh[4];
    .local .align 8 .b8 stack[24];
    .pragma \"nounroll\";
$L0:
    @!%p1 bra $L1;   // forward label
    mov.u32 %x, sh;
    ld.const.u32 %y, [tbl+8];
    ld.param.u32 %x, [blob+4];
$L1:
    ret;
}
";

#[test]
fn entry_signature_reads_the_header_only() {
    // The body calls an `.extern .func`, which the simulator refuses to
    // run: the signature is still read.
    let ptx = concat!(
        ".version 7.0\n.target sm_80\n.address_size 64\n",
        ".extern .func f();\n",
        ".visible .entry a(.param .u32 a_n) { ret; }\n",
        ".visible .entry k(\n  .param .u64 .ptr .global .align 16 k_p,\n",
        "  .param .f32 k_s,\n  .param .align 8 .b8 k_blob[12]\n)\n{ call f; ret; }\n"
    );
    assert!(Program::parse(ptx).is_err());
    let sig = entry_signature(ptx, "k").unwrap();
    let sizes: Vec<(u32, u32)> = sig.iter().map(|p| (p.offset, p.size)).collect();
    assert_eq!(sizes, vec![(0, 8), (8, 4), (16, 12)]);
    assert_eq!(entry_signature(ptx, "a").unwrap().len(), 1);
    let e = entry_signature(ptx, "b").unwrap_err();
    assert!(e.to_string().contains("`.entry b`"), "{e}");
}

#[test]
fn declarations_layout_and_labels() {
    let p = Program::parse(SRC).unwrap();
    assert_eq!(p.target_sm(), 89);
    assert_eq!(p.version(), (8, 1));
    let e = p.entry("k").unwrap();
    assert_eq!(
        e.params,
        vec![
            ParamInfo {
                name: "n".into(),
                offset: 0,
                size: 4
            },
            ParamInfo {
                name: "p".into(),
                offset: 8,
                size: 8
            },
            ParamInfo {
                name: "blob".into(),
                offset: 16,
                size: 12
            },
        ]
    );
    assert_eq!(e.param_bytes, 28);
    // %p0..2, %f0..11, %x, %y after the reserved slots
    assert_eq!(e.nregs, sreg::COUNT + 3 + 12 + 2);
    assert_eq!(e.reg_names[sreg::COUNT as usize], "%p0");
    // module shared (12 bytes) then sh at 12 (f32 alignment), 28 bytes; dynamic at 32
    assert_eq!(e.static_shared, 28);
    assert_eq!(e.dyn_shared_offset(), 32);
    assert_eq!(e.local_bytes, 24);
    assert_eq!(e.maxntid, Some((256, 1, 1)));
    assert_eq!(e.insts.len(), 5);
    assert_eq!(e.insts[0].op, Op::Bra { target: 4 });
    assert!(e.insts[0].guard_neg);
    assert_eq!(e.insts[1].s[0], Src::Imm(12)); // shared-space address of sh
    assert_eq!(e.lines[1], 27);
    assert_eq!(e.texts[1], "mov.u32 %x, sh;");
    assert_eq!(
        &p.consts[..12],
        &[7, 0, 0, 0, 16, 0, 0, 0, 255, 255, 255, 255]
    );
    assert_eq!(e.insts[3].s[0], Src::Imm(16));
    assert_eq!(e.insts[3].off, 4);
    assert_eq!(e.opcodes[e.insts[2].opcode as usize], "ld.const.u32");
}

#[test]
fn literals() {
    assert!(matches!(
        parse_num("0f3F800000"),
        Some(Lit::F32(0x3F80_0000))
    ));
    assert!(matches!(
        parse_num("0d3FF0000000000000"),
        Some(Lit::F64(0x3FF0_0000_0000_0000))
    ));
    assert!(matches!(parse_num("0x10U"), Some(Lit::Int(16))));
    assert!(matches!(parse_num("017"), Some(Lit::Int(15))));
    assert!(matches!(parse_num("42"), Some(Lit::Int(42))));
    assert!(matches!(parse_num("1.5e-3"), Some(Lit::Dec(_))));
    assert!(parse_num("0f3F80").is_none());
    assert_eq!(imm_bits(Lit::Int(1), true, Cls::Int), u64::MAX);
    assert_eq!(
        imm_bits(Lit::Dec(1.5), false, Cls::F32),
        1.5f32.to_bits() as u64
    );
    assert_eq!(
        imm_bits(Lit::F32(0x3F80_0000), false, Cls::F64),
        1f64.to_bits()
    );
}

#[test]
fn refusals_name_the_line() {
    let bad = |body: &str| {
        let src = format!(
            ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{{\n.reg .b32 %r<4>;\n{body}\n}}\n"
        );
        Program::parse(&src).unwrap_err()
    };
    for body in [
        "call.uni foo, (%r1);",
        "add.cc.u32 %r1, %r1, %r2;",
        "mov.u32 %r1, %envreg0;",
        "ld.global.u32 %r1, [%r2+%r3];",
        "sin.approx.f64 %r1, %r1;",
        "bar.arrive 0, 64;",
    ] {
        match bad(body) {
            SimError::Unsupported { line, instr, .. } => {
                assert_eq!(line, 7, "{body}");
                assert_eq!(instr, body);
            }
            e => panic!("{body}: {e}"),
        }
    }
    for body in [
        "add.u32 %r1, %r9;",
        "bra $nowhere;",
        "fma.f32 %r1, %r1, %r1, %r1;",
    ] {
        match bad(body) {
            SimError::Parse { line, .. } => assert_eq!(line, 7, "{body}"),
            e => panic!("{body}: {e}"),
        }
    }
    assert!(matches!(
        Program::parse(".version 7.0\n.target sm_80\n.address_size 32\n"),
        Err(SimError::Unsupported { line: 3, .. })
    ));
    assert!(matches!(
        Program::parse(".version 7.0\n.target sm_80\n.visible .func f() { ret; }\n"),
        Err(SimError::Parse { .. })
    ));
}
