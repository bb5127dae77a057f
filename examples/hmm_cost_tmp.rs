use ptxsmith::Sm;
use ptxsmith::kernels::hmm::{Inputs, Shape, launch, ptx};
use ptxsmith::nvtools::NvTools;
use ptxsmith::runtime::Context;

fn model(batch: usize, t: usize, s: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<u32>) {
    let mut st = 1u32;
    let mut r = move || {
        st = st.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        ((st >> 8) as f32 / (1u32 << 24) as f32 * 0.9 + 0.1).ln()
    };
    (
        (0..s).map(|_| r()).collect(),
        (0..s * s).map(|_| r()).collect(),
        (0..batch * t * s).map(|_| r()).collect(),
        vec![t as u32; batch],
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tools = NvTools::locate().unwrap();
    let sms: Vec<Sm> = if args.iter().any(|a| a == "--all") {
        Sm::ALL.to_vec()
    } else {
        vec![Sm::Sm90]
    };
    for sm in sms {
        for m in ptx::variants(sm).unwrap() {
            let asm = tools.assemble(&m.ptx, sm).unwrap();
            let u = asm.function(&m.kernel).unwrap();
            println!(
                "== {} {sm}: regs {} spill {}+{} local {} smem {}",
                m.kernel,
                u.registers,
                u.spill_stores_bytes,
                u.spill_loads_bytes,
                u.local_bytes,
                u.shared_bytes
            );
            if sm == Sm::Sm70 {
                continue;
            }
            let sass = tools.disassemble(&asm).unwrap();
            let f = sass.function(&m.kernel).unwrap();
            println!("   total {} instrs", f.instructions.len());
            for l in f.innermost_loops() {
                let n = f.in_range(&l).count();
                let ffma = f.in_range(&l).filter(|i| i.is("FFMA")).count();
                let ldg = f.in_range(&l).filter(|i| i.is("LDG")).count();
                let lds = f.in_range(&l).filter(|i| i.is("LDS")).count();
                println!(
                    "   loop {:#x}..={:#x}: {} instrs, {} FFMA, {} LDG, {} LDS",
                    l.start(),
                    l.end(),
                    n,
                    ffma,
                    ldg,
                    lds
                );
            }
            if args.iter().any(|a| a == "--sass")
                && m.kernel.contains(args.last().unwrap().as_str())
            {
                for i in &f.instructions {
                    println!(
                        "    /*{:04x}*/ {} {} {}",
                        i.address,
                        i.predicate.clone().unwrap_or_default(),
                        i.opcode,
                        i.operands
                    );
                }
            }
        }
    }
    if args.iter().any(|a| a == "--sim") {
        per_kernel();
    }
}

fn per_kernel() {
    use ptxsmith::dsl::params::KernelParams;
    use ptxsmith::runtime::LaunchConfig;
    for s in [64usize, 256] {
        let mut res = vec![];
        for t in [4usize, 12] {
            let batch = 1;
            let (pi, a, b, l) = model(batch, t, s);
            let ctx = Context::sim(Sm::Sm90);
            let st = ctx.default_stream();
            let sp = s.div_ceil(16) * 16;
            let (dpi, da, db, dl) = (
                st.upload(&pi).unwrap(),
                st.upload(&a).unwrap(),
                st.upload(&b).unwrap(),
                st.upload(&l).unwrap(),
            );
            let n = batch * t * s;
            let al = |k: usize| ctx.alloc::<f32>(k.max(1)).unwrap();
            let (mut alpha, mut beta, mut ll, mut gamma, mut xi) =
                (al(n), al(n), al(batch), al(n), al(batch * s * s));
            let (mut prep, mut ah, mut at) = (al(ptx::prep_len(sp)), al(sp * sp), al(sp * sp));
            let (mut mb, mut cn, mut dn) = (al(batch * t), al(2 * batch * t), al(2 * batch * t));
            let mut flags = ctx.alloc::<u32>(batch * t).unwrap();
            let (mut bl, mut w, mut rh, mut rl) = (al(n), al(batch * t * sp), al(n), al(n));
            let cnt = |ctx: &Context| ctx.with_sim(|x| x.total_instructions()).unwrap();
            let mut counts = vec![];
            let (t32, s32, sp32) = (t as u32, s as u32, sp as u32);
            macro_rules! a {
                ($x:expr) => {
                    st.arg("x", &$x).unwrap()
                };
            }
            macro_rules! m {
                ($x:expr) => {
                    st.arg_mut("x", &mut $x).unwrap()
                };
            }
            let c0 = cnt(&ctx);
            let pm = ptx::PrepMaxArgs {
                log_a: a!(da),
                prep: m!(prep),
                s: s32,
                sp: sp32,
            };
            st.launch(
                &ptx::generate_prep_max(Sm::Sm90).unwrap(),
                LaunchConfig::linear(((2 * s) / 256 + 1) as u32, 256),
                &pm.args(),
            )
            .unwrap();
            let pe = ptx::PrepExpArgs {
                log_a: a!(da),
                prep: m!(prep),
                a_hat: m!(ah),
                a_til: m!(at),
                s: s32,
                sp: sp32,
            };
            st.launch(
                &ptx::generate_prep_exp(Sm::Sm90).unwrap(),
                LaunchConfig::linear(sp.min(1024) as u32, 256),
                &pe.args(),
            )
            .unwrap();
            st.synchronize().unwrap();
            let c1 = cnt(&ctx);
            counts.push(c1 - c0);
            let cap = ptx::cap_for(s);
            let cfg = LaunchConfig::linear(batch as u32, 256);
            let fa = ptx::ForwardArgs {
                log_pi: a!(dpi),
                log_a: a!(da),
                log_b: a!(db),
                lengths: a!(dl),
                prep: m!(prep),
                a_hat: m!(ah),
                alpha: m!(alpha),
                alpha_lo: m!(gamma),
                mb: m!(mb),
                cnorm: m!(cn),
                ll: m!(ll),
                t: t32,
                s: s32,
                sp: sp32,
            };
            st.launch(
                &ptx::generate_forward(Sm::Sm90, cap).unwrap(),
                cfg,
                &fa.args(),
            )
            .unwrap();
            st.synchronize().unwrap();
            let c2 = cnt(&ctx);
            counts.push(c2 - c1);
            let ba = ptx::BackwardArgs {
                log_a: a!(da),
                log_b: a!(db),
                lengths: a!(dl),
                prep: m!(prep),
                a_til: m!(at),
                mb: m!(mb),
                beta: m!(beta),
                beta_lo: m!(bl),
                dnorm: m!(dn),
                w: m!(w),
                rh: m!(rh),
                rl: m!(rl),
                flags: m!(flags),
                t: t32,
                s: s32,
                sp: sp32,
            };
            st.launch(
                &ptx::generate_backward(Sm::Sm90, cap).unwrap(),
                cfg,
                &ba.args(),
            )
            .unwrap();
            st.synchronize().unwrap();
            let c3 = cnt(&ctx);
            counts.push(c3 - c2);
            let chunks = t.div_ceil(8).clamp(1, 64);
            let pa = ptx::PosteriorArgs {
                lengths: a!(dl),
                alpha: m!(alpha),
                gamma: m!(gamma),
                beta: m!(beta),
                beta_lo: m!(bl),
                cnorm: m!(cn),
                dnorm: m!(dn),
                w: m!(w),
                tasks: (batch * chunks) as u64,
                chunks: chunks as u32,
                t: t32,
                s: s32,
                sp: sp32,
            };
            st.launch(
                &ptx::generate_posteriors(Sm::Sm90).unwrap(),
                LaunchConfig::linear((batch * chunks) as u32, 256),
                &pa.args(),
            )
            .unwrap();
            st.synchronize().unwrap();
            let c4 = cnt(&ctx);
            counts.push(c4 - c3);
            let groups = ((sp / 16) * s.div_ceil(32)).div_ceil(8);
            let xa = ptx::TransitionArgs {
                log_a: a!(da),
                prep: m!(prep),
                a_til: m!(at),
                lengths: a!(dl),
                gamma: m!(gamma),
                w: m!(w),
                rh: m!(rh),
                rl: m!(rl),
                flags: m!(flags),
                xi: m!(xi),
                tasks: (batch * groups) as u64,
                groups: groups as u32,
                t: t32,
                s: s32,
                sp: sp32,
            };
            st.launch(
                &ptx::generate_transitions(Sm::Sm90).unwrap(),
                LaunchConfig::linear((batch * groups) as u32, 256),
                &xa.args(),
            )
            .unwrap();
            st.synchronize().unwrap();
            let c5 = cnt(&ctx);
            counts.push(c5 - c4);
            res.push(counts);
        }
        let names = ["prep", "forward", "backward", "posteriors", "transitions"];
        for k in 0..5 {
            let d = (res[1][k] as f64 - res[0][k] as f64) / 8.0;
            println!(
                "sim per-kernel S={s} {}: T=4 {} T=12 {} per step {:.0} per step/S {:.2} per step/S^2 {:.2}",
                names[k],
                res[0][k],
                res[1][k],
                d,
                d / s as f64,
                d / (s * s) as f64
            );
        }
    }
}
