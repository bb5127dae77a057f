//! Each sanitizer check fires with its own error kind; warp collectives and
//! launch validation.

use ptxsmith::Sm;
use ptxsmith::dsl::params::ArgValue;
use ptxsmith::runtime::exec::LaunchConfig;
use ptxsmith::sim::{AccessKind, Program, Sim, SimError, SimOptions};

const HEAD: &str = ".version 7.0\n.target sm_80\n.address_size 64\n";

/// A kernel `k(.param .u64 out)` with the given declarations and body.
fn kernel(decls: &str, body: &str) -> String {
    format!(
        "{HEAD}.visible .entry k(.param .u64 out)\n{{\n.reg .b64 %rd<8>;\n.reg .b32 %r<16>;\n.reg .pred %p<4>;\n{decls}\n\
         ld.param.u64 %rd0, [out];\nmov.u32 %r0, %tid.x;\nmul.wide.u32 %rd1, %r0, 4;\nadd.s64 %rd1, %rd0, %rd1;\n{body}\nret;\n}}\n"
    )
}

fn launch(ptx: &str, threads: u32, out_words: usize) -> Result<Vec<u32>, SimError> {
    let prog = Program::parse(ptx)?;
    let mut sim = Sim::new(Sm::Sm80);
    let out = sim.alloc_zeroed(out_words * 4).unwrap();
    sim.launch_program(
        &prog,
        "k",
        LaunchConfig::linear(1, threads),
        &[ArgValue::Ptr(out)],
    )?;
    let mut o = vec![0u8; out_words * 4];
    sim.read(out, &mut o).unwrap();
    Ok(o.chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

#[test]
fn out_of_bounds_global_write() {
    let ptx = include_str!("ptx/saxpy.ptx");
    let prog = Program::parse(ptx).unwrap();
    let mut sim = Sim::new(Sm::Sm80);
    let x = sim.alloc_zeroed(64 * 4).unwrap();
    let y = sim.alloc_zeroed(60 * 4).unwrap(); // 4 elements short
    let e = sim
        .launch_program(
            &prog,
            "saxpy",
            LaunchConfig::linear(1, 64),
            &[
                ArgValue::Ptr(x),
                ArgValue::Ptr(y),
                ArgValue::F32(1.0),
                ArgValue::U32(64),
            ],
        )
        .unwrap_err();
    match e {
        SimError::OutOfBounds {
            site,
            space,
            addr,
            size,
        } => {
            assert_eq!(space.to_string(), "global");
            assert_eq!(size, 4);
            assert_eq!(addr, y + 60 * 4);
            assert_eq!(site.tid, (60, 0, 0));
            assert_eq!(site.ctaid, (0, 0, 0));
            assert_eq!(site.kernel, "saxpy");
            assert!(site.instr.contains("ld.global.f32"), "{}", site.instr); // y[i] is read first
        }
        e => panic!("{e}"),
    }
}

#[test]
fn out_of_bounds_global_store() {
    // 64 threads store one word each into a 32-word buffer
    let ptx = kernel("", "st.global.u32 [%rd1], %r0;");
    match launch(&ptx, 64, 32).unwrap_err() {
        SimError::OutOfBounds {
            site, space, size, ..
        } => {
            assert_eq!(space.to_string(), "global");
            assert_eq!(size, 4);
            assert_eq!(site.tid, (32, 0, 0));
            assert_eq!(site.line, 14);
            assert!(site.instr.starts_with("st.global.u32"));
        }
        e => panic!("{e}"),
    }
}

#[test]
fn out_of_bounds_shared_read() {
    let ptx = kernel(
        ".shared .align 4 .b32 s[64];",
        "st.shared.u32 [s], %r0;\nld.shared.u32 %r1, [s+256];\nst.global.u32 [%rd1], %r1;",
    );
    match launch(&ptx, 1, 1).unwrap_err() {
        SimError::OutOfBounds {
            site,
            space,
            addr,
            size,
        } => {
            assert_eq!(space.to_string(), "shared");
            assert_eq!((addr, size), (256, 4));
            assert_eq!(site.line, 15);
        }
        e => panic!("{e}"),
    }
}

#[test]
fn misaligned_access() {
    let ptx = kernel("", "st.global.u32 [%rd0+2], %r0;");
    assert!(matches!(
        launch(&ptx, 1, 2).unwrap_err(),
        SimError::Misaligned { size: 4, .. }
    ));
    let ptx = kernel(
        ".shared .align 16 .b8 s[64];",
        "mov.u32 %r1, 0;\nst.shared.v2.u32 [s+4], {%r1, %r1};",
    );
    assert!(matches!(
        launch(&ptx, 1, 1).unwrap_err(),
        SimError::Misaligned { size: 8, .. }
    ));
}

#[test]
fn shared_race_without_barrier() {
    // thread 0 writes s[0]; thread 1 reads it with no bar.sync in between
    let body =
        "setp.eq.u32 %p1, %r0, 0;\n@%p1 st.shared.u32 [s], %r0;\n@!%p1 ld.shared.u32 %r1, [s];";
    let ptx = kernel(".shared .align 4 .b32 s[4];", body);
    match launch(&ptx, 2, 2).unwrap_err() {
        SimError::SharedRace {
            site,
            offset,
            other_tid,
            this,
            other,
            other_site,
        } => {
            assert_eq!(offset, 0);
            assert_eq!(site.tid, (1, 0, 0));
            assert_eq!(other_tid, (0, 0, 0));
            assert_eq!((this, other), (AccessKind::Read, AccessKind::Write));
            // the earlier access: thread 0's store, the line before
            let other_site = other_site.expect("the earlier access is named");
            assert_eq!(other_site.tid, (0, 0, 0));
            assert_eq!(other_site.line + 1, site.line);
            assert!(
                other_site.instr.contains("st.shared.u32 [s]"),
                "{other_site}"
            );
        }
        e => panic!("{e}"),
    }
    // with a barrier in between it is fine
    let body = "setp.eq.u32 %p1, %r0, 0;\n@%p1 st.shared.u32 [s], %r0;\nbar.sync 0;\nld.shared.u32 %r1, [s];\nst.global.u32 [%rd1], %r1;";
    let ptx = kernel(".shared .align 4 .b32 s[4];", body);
    assert_eq!(launch(&ptx, 2, 2).unwrap(), vec![0, 0]);
    // two writers of the same byte
    let ptx = kernel(".shared .align 4 .b32 s[4];", "st.shared.u32 [s], %r0;");
    assert!(matches!(
        launch(&ptx, 2, 2).unwrap_err(),
        SimError::SharedRace { .. }
    ));
    // atomics do not race with each other
    let body = "mov.u32 %r2, 0;\nsetp.eq.u32 %p1, %r0, 0;\n@%p1 st.shared.u32 [s], %r2;\nbar.sync 0;\natom.shared.add.u32 %r1, [s], 1;\nbar.sync 0;\nld.shared.u32 %r1, [s];\nst.global.u32 [%rd1], %r1;";
    let ptx = kernel(".shared .align 4 .b32 s[4];", body);
    assert_eq!(launch(&ptx, 64, 64).unwrap(), vec![64; 64]);
    // warp-synchronous exchange through shared memory with bar.warp.sync
    let body = "mov.u32 %r3, s;\nshl.b32 %r4, %r0, 2;\nadd.u32 %r4, %r3, %r4;\nst.shared.u32 [%r4], %r0;\nbar.warp.sync 0xffffffff;\n\
                xor.b32 %r5, %r0, 1;\nshl.b32 %r5, %r5, 2;\nadd.u32 %r5, %r3, %r5;\nld.shared.u32 %r6, [%r5];\nst.global.u32 [%rd1], %r6;";
    let ptx = kernel(".shared .align 4 .b32 s[32];", body);
    let v = launch(&ptx, 32, 32).unwrap();
    assert_eq!(v, (0..32u32).map(|i| i ^ 1).collect::<Vec<_>>());
}

#[test]
fn barrier_in_divergent_branch() {
    let body = "setp.lt.u32 %p1, %r0, 16;\n@!%p1 bra $L_skip;\nbar.sync 0;\n$L_skip:\nst.global.u32 [%rd1], %r0;";
    let ptx = kernel("", body);
    match launch(&ptx, 64, 64).unwrap_err() {
        SimError::BarrierDivergence {
            kernel,
            ctaid,
            message,
        } => {
            assert_eq!(kernel, "k");
            assert_eq!(ctaid, (0, 0, 0));
            assert!(message.contains("exited"), "{message}");
            assert!(message.contains("line 16"), "{message}");
        }
        e => panic!("{e}"),
    }
    // two different bar instructions
    let body = "setp.lt.u32 %p1, %r0, 16;\n@%p1 bra $L_a;\nbar.sync 0;\nbra.uni $L_b;\n$L_a:\nbar.sync 0;\n$L_b:\nst.global.u32 [%rd1], %r0;";
    let ptx = kernel("", body);
    assert!(matches!(
        launch(&ptx, 64, 64).unwrap_err(),
        SimError::BarrierDivergence { .. }
    ));
}

/// `barrier.sync` without `.aligned`: warps may meet at different
/// instructions (the first warp publishes a value behind its own barrier,
/// the second waits at another), and the barrier orders the store before
/// every later read; an aligned `bar.sync` on one side, or a thread that
/// exits, is still divergence.
#[test]
fn unaligned_barrier_at_different_instructions() {
    let split = |first: &str, second: &str| {
        format!(
            "setp.lt.u32 %p1, %r0, 32;\n@!%p1 bra $L_b;\nmov.u32 %r2, 7;\nst.shared.u32 [s], %r2;\n{first}\nbra.uni $L_j;\n\
             $L_b:\n{second}\n$L_j:\nld.shared.u32 %r1, [s];\nst.global.u32 [%rd1], %r1;"
        )
    };
    let ptx = kernel(
        ".shared .align 4 .b32 s[1];",
        &split("barrier.sync 0;", "barrier.sync 0;"),
    );
    assert_eq!(launch(&ptx, 64, 64).unwrap(), vec![7; 64]);
    for (first, second) in [
        ("barrier.sync 0;", "bar.sync 0;"),
        ("barrier.sync.aligned 0;", "barrier.sync 0;"),
    ] {
        let ptx = kernel(".shared .align 4 .b32 s[1];", &split(first, second));
        assert!(
            matches!(
                launch(&ptx, 64, 64).unwrap_err(),
                SimError::BarrierDivergence { .. }
            ),
            "{first} / {second}"
        );
    }
    // the second warp exits instead of arriving
    let ptx = kernel(
        ".shared .align 4 .b32 s[1];",
        &split("barrier.sync 0;", "ret;"),
    );
    assert!(matches!(
        launch(&ptx, 64, 64).unwrap_err(),
        SimError::BarrierDivergence { .. }
    ));
}

#[test]
fn uninitialized_shared_read() {
    let ptx = kernel(
        ".shared .align 4 .b32 s[8];",
        "st.shared.u32 [s], %r0;\nbar.sync 0;\nld.shared.u32 %r1, [s+4];",
    );
    match launch(&ptx, 1, 1).unwrap_err() {
        SimError::UninitializedShared { offset, size, site } => {
            assert_eq!((offset, size), (4, 4));
            assert_eq!(site.line, 16);
        }
        e => panic!("{e}"),
    }
}

#[test]
fn uninitialized_global_read() {
    let prog = Program::parse(include_str!("ptx/saxpy.ptx")).unwrap();
    let mut sim = Sim::new(Sm::Sm80);
    let x = sim.alloc(64 * 4).unwrap();
    let y = sim.alloc(64 * 4).unwrap();
    sim.write(x, &[0u8; 256]).unwrap();
    sim.write(y, &[0u8; 128]).unwrap(); // only the first 32 elements
    let args = [
        ArgValue::Ptr(x),
        ArgValue::Ptr(y),
        ArgValue::F32(1.0),
        ArgValue::U32(64),
    ];
    match sim
        .launch_program(&prog, "saxpy", LaunchConfig::linear(1, 64), &args)
        .unwrap_err()
    {
        SimError::UninitializedGlobal { site, addr, size } => {
            assert_eq!((addr, size), (y + 128, 4));
            assert_eq!(site.tid, (32, 0, 0));
        }
        e => panic!("{e}"),
    }
    // a kernel's own stores initialise memory: the first launch wrote y[0..32] only
    // through the host, so a second launch over 32 elements is fine
    let args = [
        ArgValue::Ptr(x),
        ArgValue::Ptr(y),
        ArgValue::F32(1.0),
        ArgValue::U32(32),
    ];
    sim.launch_program(&prog, "saxpy", LaunchConfig::linear(1, 64), &args)
        .unwrap();
}

#[test]
fn uninitialized_register_read() {
    let ptx = kernel("", "add.u32 %r2, %r0, %r9;");
    match launch(&ptx, 1, 1).unwrap_err() {
        SimError::UninitializedRegister { reg, .. } => assert_eq!(reg, "%r9"),
        e => panic!("{e}"),
    }
}

#[test]
fn checks_can_be_turned_off() {
    let ptx = kernel(
        ".shared .align 4 .b32 s[4];",
        "ld.shared.u32 %r1, [s];\nadd.u32 %r2, %r1, %r9;\nst.global.u32 [%rd1], %r2;",
    );
    let prog = Program::parse(&ptx).unwrap();
    let mut sim = Sim::new(Sm::Sm80);
    sim.set_checks(false);
    let out = sim.alloc(4).unwrap();
    sim.launch_program(
        &prog,
        "k",
        LaunchConfig::linear(1, 1),
        &[ArgValue::Ptr(out)],
    )
    .unwrap();
}

#[test]
fn unsupported_ptx_names_the_line() {
    let ptx = kernel("", "tex.1d.v4.f32.s32 {%r1, %r2, %r3, %r4}, [t, {%r0}];");
    match Program::parse(&ptx) {
        Err(SimError::Unsupported { line, instr, .. }) => {
            assert_eq!(line, 14);
            assert!(instr.starts_with("tex.1d"));
        }
        r => panic!("{r:?}"),
    }
    let ptx = kernel("", "rcp.approx.ftz.f64 %rd1, %rd1;");
    assert!(matches!(
        Program::parse(&ptx),
        Err(SimError::Unsupported { line: 14, .. })
    ));
    let ptx = kernel("", "add.u32 %r1, %r1, %nope;");
    assert!(matches!(
        Program::parse(&ptx),
        Err(SimError::Unsupported { line: 14, .. }) | Err(SimError::Parse { line: 14, .. })
    ));
    let ptx = kernel("", "ld.global.u32 %r1, [%rd0+%rd1];");
    assert!(matches!(
        Program::parse(&ptx),
        Err(SimError::Unsupported { line: 14, .. })
    ));
    let ptx = kernel("", "add.u32 %r1, %r1 %r2;");
    assert!(matches!(
        Program::parse(&ptx),
        Err(SimError::Parse { line: 14, .. })
    ));
}

#[test]
fn shfl_modes_with_clamp_and_segments() {
    // every lane holds lane*100; out[2*lane] = d, out[2*lane+1] = p
    let run = |mode: &str, b: u32, c: u32| {
        let body = format!(
            "mul.lo.u32 %r1, %r0, 100;\nshfl.sync.{mode}.b32 %r2|%p1, %r1, {b}, {c}, 0xffffffff;\nselp.u32 %r3, 1, 0, %p1;\n\
             mul.wide.u32 %rd2, %r0, 8;\nadd.s64 %rd2, %rd0, %rd2;\nst.global.v2.u32 [%rd2], {{%r2, %r3}};"
        );
        let v = launch(&kernel("", &body), 32, 64).unwrap();
        (0..32)
            .map(|l| (v[2 * l], v[2 * l + 1] != 0))
            .collect::<Vec<_>>()
    };
    let up = run("up", 1, 0);
    assert_eq!(up[0], (0, false));
    for (l, v) in up.iter().enumerate().skip(1) {
        assert_eq!(*v, ((l as u32 - 1) * 100, true));
    }
    let down = run("down", 1, 0x1f);
    assert_eq!(down[31], (3100, false));
    assert_eq!(down[5], (600, true));
    let bfly = run("bfly", 3, 0x1f);
    for l in 0..32u32 {
        assert_eq!(bfly[l as usize], ((l ^ 3) * 100, true));
    }
    let idx = run("idx", 5, 0x1f);
    assert!(idx.iter().all(|&x| x == (500, true)));
    // b wraps at 32: idx 37 == idx 5
    assert_eq!(run("idx", 37, 0x1f), idx);
    // width-8 segments: c = ((32-8)<<8) | clamp
    let seg_down = run("down", 2, (24 << 8) | 0x1f);
    for l in 0..32u32 {
        let ok = l % 8 + 2 < 8;
        assert_eq!(
            seg_down[l as usize],
            (if ok { (l + 2) * 100 } else { l * 100 }, ok),
            "lane {l}"
        );
    }
    let seg_up = run("up", 3, 24 << 8);
    for l in 0..32u32 {
        let ok = l % 8 >= 3;
        assert_eq!(
            seg_up[l as usize],
            (if ok { (l - 3) * 100 } else { l * 100 }, ok),
            "lane {l}"
        );
    }
    let seg_idx = run("idx", 3, (24 << 8) | 0x1f);
    for l in 0..32u32 {
        assert_eq!(seg_idx[l as usize], ((l / 8 * 8 + 3) * 100, true));
    }
    let seg_bfly = run("bfly", 4, (24 << 8) | 0x1f);
    for l in 0..32u32 {
        assert_eq!(seg_bfly[l as usize], ((l ^ 4) * 100, true));
    }
    // clamp below 31 on down: lanes may not read above the clamp
    let clamp = run("down", 4, 15);
    for l in 0..32u32 {
        let ok = l + 4 <= 15;
        assert_eq!(
            clamp[l as usize],
            (if ok { (l + 4) * 100 } else { l * 100 }, ok),
            "lane {l}"
        );
    }
}

#[test]
fn vote_ballot_redux() {
    let body = "and.b32 %r1, %r0, 1;\nsetp.eq.u32 %p1, %r1, 1;\n\
        vote.sync.ballot.b32 %r2, %p1, 0xffffffff;\n\
        vote.sync.any.pred %p2, %p1, 0xffffffff;\nvote.sync.all.pred %p3, %p1, 0xffffffff;\n\
        selp.u32 %r3, 2, 0, %p2;\nselp.u32 %r4, 4, 0, %p3;\nor.b32 %r3, %r3, %r4;\n\
        vote.sync.uni.pred %p3, !%p1, 0xffffffff;\nselp.u32 %r4, 8, 0, %p3;\nor.b32 %r3, %r3, %r4;\n\
        redux.sync.add.u32 %r5, %r0, 0xffffffff;\nredux.sync.max.s32 %r6, %r0, 0xffffffff;\nredux.sync.xor.b32 %r7, %r0, 0xffffffff;\n\
        mul.wide.u32 %rd2, %r0, 16;\nadd.s64 %rd2, %rd0, %rd2;\nst.global.v4.u32 [%rd2], {%r2, %r3, %r5, %r7};";
    let v = launch(&kernel("", body), 32, 128).unwrap();
    for l in 0..32 {
        assert_eq!(v[4 * l], 0xAAAA_AAAA);
        assert_eq!(v[4 * l + 1], 2);
        assert_eq!(v[4 * l + 2], 496);
        assert_eq!(v[4 * l + 3], 0);
    }
    // partial block: 20 threads, full mask — non-existent lanes are ignored
    let v = launch(&kernel("", body), 20, 80).unwrap();
    assert_eq!(v[0], 0xAAAAA & 0xFFFFF);
    assert_eq!(v[2], (0..20).sum::<u32>());
}

#[test]
fn warp_collective_divergence() {
    // half the warp skips the shfl
    let body = "setp.lt.u32 %p1, %r0, 16;\n@%p1 bra $L_x;\nshfl.sync.idx.b32 %r1, %r0, 0, 0x1f, 0xffffffff;\n$L_x:\nst.global.u32 [%rd1], %r0;";
    assert!(matches!(
        launch(&kernel("", body), 32, 32).unwrap_err(),
        SimError::WarpDivergence { .. }
    ));
    // the same with a mask covering only the participating lanes is fine
    let body = "setp.lt.u32 %p1, %r0, 16;\n@%p1 bra $L_x;\nshfl.sync.idx.b32 %r1, %r0, 16, 0x1f, 0xffff0000;\nst.global.u32 [%rd1], %r1;\n$L_x:\nret;";
    let v = launch(&kernel("", body), 32, 32).unwrap();
    assert_eq!(v[20], 16);
    // divergent bra.uni
    let body = "setp.lt.u32 %p1, %r0, 3;\n@%p1 bra.uni $L_x;\n$L_x:\nst.global.u32 [%rd1], %r0;";
    assert!(matches!(
        launch(&kernel("", body), 32, 32).unwrap_err(),
        SimError::WarpDivergence { .. }
    ));
}

#[test]
fn launch_validation() {
    let prog = Program::parse(include_str!("ptx/saxpy.ptx")).unwrap();
    let mut sim = Sim::new(Sm::Sm80);
    let args = [
        ArgValue::Ptr(0),
        ArgValue::Ptr(0),
        ArgValue::F32(1.0),
        ArgValue::U32(0),
    ];
    let bad = |sim: &mut Sim, cfg| {
        matches!(
            sim.launch_program(&prog, "saxpy", cfg, &args),
            Err(SimError::InvalidLaunch(_))
        )
    };
    assert!(bad(&mut sim, LaunchConfig::linear(1, 2048)));
    assert!(bad(&mut sim, LaunchConfig::linear(0, 32)));
    assert!(bad(
        &mut sim,
        LaunchConfig {
            grid: (1, 1, 1),
            block: (32, 32, 2),
            dynamic_smem_bytes: 0
        }
    ));
    assert!(matches!(
        sim.launch_program(&prog, "nope", LaunchConfig::linear(1, 1), &args),
        Err(SimError::InvalidLaunch(_))
    ));
    assert!(matches!(
        sim.launch_program(&prog, "saxpy", LaunchConfig::linear(1, 1), &args[..3]),
        Err(SimError::InvalidLaunch(_))
    ));
    // .reqntid must match exactly
    let ptx = format!("{HEAD}.visible .entry k() .reqntid 64 {{\nret;\n}}\n");
    let p = Program::parse(&ptx).unwrap();
    assert!(matches!(
        sim.launch_program(&p, "k", LaunchConfig::linear(1, 32), &[]),
        Err(SimError::InvalidLaunch(_))
    ));
    sim.launch_program(&p, "k", LaunchConfig::linear(1, 64), &[])
        .unwrap();
    // .maxntid bounds the product
    let ptx = format!("{HEAD}.visible .entry k() .maxntid 16, 2, 1 {{\nret;\n}}\n");
    let p = Program::parse(&ptx).unwrap();
    assert!(matches!(
        sim.launch_program(&p, "k", LaunchConfig::linear(1, 64), &[]),
        Err(SimError::InvalidLaunch(_))
    ));
    sim.launch_program(
        &p,
        "k",
        LaunchConfig {
            grid: (1, 1, 1),
            block: (8, 4, 1),
            dynamic_smem_bytes: 0,
        },
        &[],
    )
    .unwrap();
}

#[test]
fn dynamic_shared_and_special_registers() {
    let ptx = format!(
        "{HEAD}.extern .shared .align 16 .b8 dyn[];\n.extern .shared .align 4 .b32 dyn_alias[];\n.visible .entry k(.param .u64 out)\n{{\n.reg .b64 %rd<8>;\n.reg .b32 %r<16>;\n\
         .shared .align 4 .b8 st[20];\nld.param.u64 %rd0, [out];\nmov.u32 %r0, %tid.x;\nmov.u32 %r1, %tid.y;\nmov.u32 %r2, %ntid.x;\nmad.lo.u32 %r3, %r1, %r2, %r0;\n\
         mov.u32 %r4, dyn_alias;\nmov.u32 %r5, %dynamic_smem_size;\nmov.u32 %r6, %laneid;\nmov.u32 %r7, %warpid;\nmov.u32 %r8, %lanemask_lt;\nmov.u32 %r9, %ctaid.y;\n\
         mov.u32 %r10, %nctaid.y;\nmul.wide.u32 %rd1, %r3, 32;\nmul.wide.u32 %rd2, %r9, 1024;\nadd.s64 %rd1, %rd1, %rd2;\nadd.s64 %rd1, %rd0, %rd1;\n\
         st.global.v4.u32 [%rd1], {{%r3, %r4, %r5, %r6}};\nst.global.v4.u32 [%rd1+16], {{%r7, %r8, %r9, %r10}};\n\
         shl.b32 %r11, %r3, 2;\nadd.u32 %r11, %r4, %r11;\nst.shared.u32 [%r11], %r3;\nret;\n}}\n"
    );
    let prog = Program::parse(&ptx).unwrap();
    let mut sim = Sim::new(Sm::Sm80);
    let out = sim.alloc(2 * 1024).unwrap();
    let cfg = LaunchConfig {
        grid: (1, 2, 1),
        block: (16, 2, 1),
        dynamic_smem_bytes: 128,
    };
    sim.launch_program(&prog, "k", cfg, &[ArgValue::Ptr(out)])
        .unwrap();
    let mut o = vec![0u8; 2048];
    sim.read(out, &mut o).unwrap();
    let w: Vec<u32> = o
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    for b in 0..2usize {
        for t in 0..32usize {
            let r = &w[b * 256 + t * 8..b * 256 + t * 8 + 8];
            assert_eq!(r[0], t as u32);
            assert_eq!(r[1], 32); // dynamic shared after 20 static bytes, aligned to 16
            assert_eq!(r[2], 128);
            assert_eq!(r[3], t as u32 % 32);
            assert_eq!(r[4], t as u32 / 32);
            assert_eq!(r[5], (1u32 << (t % 32)) - 1);
            assert_eq!(r[6], b as u32);
            assert_eq!(r[7], 2);
        }
    }
    // dynamic shared is bounds-checked against the launch's size
    let cfg = LaunchConfig {
        grid: (1, 1, 1),
        block: (16, 2, 1),
        dynamic_smem_bytes: 64,
    };
    assert!(matches!(
        sim.launch_program(&prog, "k", cfg, &[ArgValue::Ptr(out)]),
        Err(SimError::OutOfBounds { .. })
    ));
}

#[test]
fn deterministic_atomics_and_deadlock() {
    let body = "cvt.rn.f32.u32 %f1, %r0;\nmul.rn.f32 %f1, %f1, 0f3DCCCCCD;\natom.global.add.f32 %f2, [%rd0], %f1;";
    let ptx = kernel(".reg .f32 %f<4>;", body);
    let a = launch(&ptx, 256, 1).unwrap();
    let b = launch(&ptx, 256, 1).unwrap();
    assert_eq!(a, b);
    // counted barrier that never fills
    let body = "setp.lt.u32 %p1, %r0, 32;\n@%p1 bar.sync 1, 96;";
    assert!(matches!(
        launch(&kernel("", body), 128, 1).unwrap_err(),
        SimError::Deadlock { .. }
    ));
}

#[test]
fn warp_broadcast_through_shared_with_warp_sync() {
    // loop: lane 0 writes s[0]; bar.warp.sync; every lane reads s[0]; bar.warp.sync
    let body = "mov.u32 %r5, 0;\nmov.u32 %r6, 0;\nsetp.eq.u32 %p1, %r0, 0;\n$L_top:\n@%p1 st.shared.u32 [s], %r5;\n\
                bar.warp.sync 0xffffffff;\nld.shared.u32 %r7, [s];\nadd.u32 %r6, %r6, %r7;\nbar.warp.sync 0xffffffff;\n\
                add.u32 %r5, %r5, 1;\nsetp.lt.u32 %p2, %r5, 4;\n@%p2 bra $L_top;\nst.global.u32 [%rd1], %r6;";
    let ptx = kernel(".shared .align 4 .b32 s[1];", body);
    assert_eq!(launch(&ptx, 32, 32).unwrap(), vec![6; 32]);
    // lane 31 writes right after every lane read it, with no warp sync between
    let body = "setp.eq.u32 %p1, %r0, 31;\n@%p1 st.shared.u32 [s], %r0;\nbar.warp.sync 0xffffffff;\n\
                ld.shared.u32 %r7, [s];\n@%p1 st.shared.u32 [s], %r0;\nst.global.u32 [%rd1], %r7;";
    match launch(&kernel(".shared .align 4 .b32 s[1];", body), 32, 32).unwrap_err() {
        SimError::SharedRace {
            other,
            other_tid,
            this,
            site,
            ..
        } => {
            assert_eq!((this, other), (AccessKind::Write, AccessKind::Read));
            assert_eq!(site.tid, (31, 0, 0));
            assert_eq!(other_tid, (u32::MAX, u32::MAX, u32::MAX)); // several readers
        }
        e => panic!("{e}"),
    }
    // with a bar.warp.sync before the write it is fine
    let body = body.replacen(
        "ld.shared.u32 %r7, [s];\n",
        "ld.shared.u32 %r7, [s];\nbar.warp.sync 0xffffffff;\n",
        1,
    );
    assert_eq!(
        launch(&kernel(".shared .align 4 .b32 s[1];", &body), 32, 32).unwrap(),
        vec![31; 32]
    );
    // across warps the warp sync does not order anything
    let body = "setp.eq.u32 %p1, %r0, 0;\n@%p1 st.shared.u32 [s], %r0;\nbar.sync 0;\nld.shared.u32 %r7, [s];\nbar.warp.sync 0xffffffff;\n@%p1 st.shared.u32 [s], %r0;";
    assert!(matches!(
        launch(&kernel(".shared .align 4 .b32 s[1];", body), 64, 64).unwrap_err(),
        SimError::SharedRace { .. }
    ));
}

#[test]
fn approximate_instructions_are_opt_in() {
    let body = ".reg .f32 %f<4>;\nmov.f32 %f1, 0f3F800000;\nex2.approx.ftz.f32 %f2, %f1;\nmov.f32 %f3, 0f00000000;\n\
                lg2.approx.f32 %f3, %f3;\ndiv.full.f32 %f1, %f1, %f2;\nmov.b32 %r1, %f2;\nmov.b32 %r2, %f3;\nmov.b32 %r3, %f1;\n\
                st.global.v2.u32 [%rd0], {%r1, %r2};\nst.global.u32 [%rd0+8], %r3;";
    let ptx = kernel("", body);
    // refused by default, naming the first approximate instruction
    match launch(&ptx, 1, 4).unwrap_err() {
        SimError::Unsupported { line, instr, .. } => {
            assert_eq!(line, 16);
            assert!(instr.starts_with("ex2.approx"));
        }
        e => panic!("{e}"),
    }
    let prog = Program::parse(&ptx).unwrap();
    let mut sim = Sim::new(Sm::Sm80);
    sim.set_options(SimOptions {
        approx: true,
        ..Default::default()
    });
    let out = sim.alloc(16).unwrap();
    let rep = sim
        .launch_program(
            &prog,
            "k",
            LaunchConfig::linear(1, 1),
            &[ArgValue::Ptr(out)],
        )
        .unwrap();
    assert_eq!(rep.approximate, 3);
    let mut o = [0u8; 12];
    sim.read(out, &mut o).unwrap();
    let w: Vec<u32> = o
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(w, vec![0x4000_0000, 0xFF80_0000, 0x3F00_0000]); // 2, -inf, 0.5
}
