//! The simulator runs the CTAs of a launch on a thread pool: results,
//! memory, reports and findings must not depend on the thread count.
//!
//! * every library kernel family on the simulator, at shapes of its own
//!   tests, on 1, 2 and 7 threads, each block's threads in lockstep and
//!   one after another: output bits, per-opcode totals and instruction
//!   counts equal;
//! * hand-written multi-CTA kernels: the whole `LaunchReport` equal;
//! * two CTAs writing one word, and a CTA reading what an earlier one
//!   wrote, are `GlobalRace` findings naming the same access and blocks on
//!   every thread count, with the same memory afterwards;
//! * which finding is reported: the lowest block's;
//! * a global atomic counter shared by every CTA gives the same counts and
//!   the same returned values;
//! * the instruction budget ends a spinning CTA at the same site;
//! * launches on one simulator (which keeps the global shadows' memory
//!   between launches) give what fresh simulators give;
//! * simulators on several host threads at once, which share the worker
//!   pool (and its threads' lingering between launches), give what one
//!   simulator alone gives.

use std::collections::BTreeMap;

use ptxsmith::Sm;
use ptxsmith::dsl::params::ArgValue;
use ptxsmith::kernels::{block_ell, block_scaled, dot, fp8, hmm, logcumsumexp, score, viterbi};
use ptxsmith::runtime::exec::LaunchConfig;
use ptxsmith::runtime::{AsDevice, Context, Stream};
use ptxsmith::sim::{AccessKind, LaunchReport, Program, Sim, SimError, SimOptions};

mod common;
use common::{Rng, bits};

/// How a simulator runs a launch: worker threads, and the lockstep
/// schedule on or off ([`SimOptions::lockstep`]; off, every block runs its
/// threads one after another, the order whose results lockstep must give).
#[derive(Debug, Clone, Copy)]
struct Cfg(usize, bool);

impl std::fmt::Display for Cfg {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let how = if self.1 { "lockstep" } else { "thread order" };
        write!(f, "{} ({how})", self.0)
    }
}

/// The first is the reference: one worker, thread order.
const THREADS: [Cfg; 5] = [
    Cfg(1, false),
    Cfg(1, true),
    Cfg(2, true),
    Cfg(7, false),
    Cfg(7, true),
];

/// A simulator context whose launches run as `cfg` says.
fn sim_ctx(sm: Sm, cfg: Cfg) -> Context {
    let ctx = Context::sim(sm);
    ctx.with_sim(|s| {
        s.set_options(SimOptions {
            threads: cfg.0,
            lockstep: cfg.1,
            ..s.options()
        })
    })
    .unwrap();
    ctx
}

fn sim(cfg: Cfg) -> Sim {
    let mut s = Sim::new(Sm::Sm80);
    s.set_options(SimOptions {
        threads: cfg.0,
        lockstep: cfg.1,
        ..Default::default()
    });
    s
}

/// What a family's runs leave: output bits, and the simulator's
/// per-opcode totals and instruction count.
#[derive(Debug, PartialEq)]
struct Outcome {
    bits: Vec<u32>,
    opcodes: BTreeMap<String, u64>,
    instructions: u64,
}

/// Run `f` on a fresh context with `threads` workers.
fn outcome(sm: Sm, threads: Cfg, f: impl FnOnce(&Stream) -> Vec<u32>) -> Outcome {
    let ctx = sim_ctx(sm, threads);
    let bits = f(&ctx.default_stream());
    let (opcodes, instructions) = ctx
        .with_sim(|s| (s.opcode_totals().clone(), s.total_instructions()))
        .unwrap();
    Outcome {
        bits,
        opcodes,
        instructions,
    }
}

fn u8s(v: &[u8]) -> Vec<u32> {
    v.iter().map(|&b| b as u32).collect()
}

/// Log-probability-like values in (−8, 0].
fn logp(rng: &mut Rng, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| -((rng.next() >> 40) as f32 / (1u64 << 24) as f32) * 8.0)
        .collect()
}

/// Ragged sequence lengths as the HMM/Viterbi tests use them.
fn lengths(batch: usize, t: usize) -> Vec<u32> {
    (0..batch)
        .map(|i| match i % 4 {
            0 => t as u32,
            1 => (t / 2) as u32,
            2 => t.min(1) as u32,
            _ => (t as u32).saturating_sub(1),
        })
        .collect()
}

/// Every family, at shapes of its own tests.
fn families(threads: Cfg) -> Vec<(&'static str, Outcome)> {
    let mut out = Vec::new();
    out.push((
        "dot",
        outcome(Sm::Sm80, threads, |st| {
            let mut rng = Rng(1);
            let (rows, n) = (37, 301);
            let x = rng.values(rows * n);
            let y = rng.values(n);
            bits(&dot::dot_rows_on(st, dot::Shape { rows, n }, &x, &y).unwrap())
        }),
    ));
    for (sm, codec) in [
        (Sm::Sm80, fp8::ptx::Codec::Software),
        (Sm::Sm89, fp8::ptx::Codec::Hardware),
    ] {
        out.push((
            "fp8",
            outcome(sm, threads, |st| {
                let mut rng = Rng(2);
                let xs: Vec<f32> = rng.values(5003).iter().map(|v| v * 50.0).collect();
                let mut b = Vec::new();
                for f in [fp8::Format::E4M3, fp8::Format::E5M2] {
                    let tr = fp8::launch::absmax_on(st, f, &xs).unwrap();
                    let enc = fp8::Encoding { format: f, codec };
                    b.extend(bits(&tr.partials));
                    b.extend(bits(&tr.stats));
                    let q = fp8::launch::quantize_on(st, enc, &xs).unwrap();
                    b.extend(u8s(&q.codes));
                    b.extend(bits(&[q.scale, q.scale_inv, q.amax]));
                    let d = fp8::launch::dequantize_on(st, enc, q.scale_inv, &q.codes);
                    b.extend(bits(&d.unwrap()));
                }
                b
            }),
        ));
    }
    out.push((
        "score",
        outcome(Sm::Sm80, threads, |st| {
            let mut rng = Rng(3);
            let (rows, k, p, s) = (19, 133, 24, 4);
            let x = rng.values(rows * p);
            let d = rng.values(k * p);
            let shape = score::ScoreShape { rows, k, p };
            let mut b = bits(&score::launch::score_block_on(st, shape, None, &x, &d).unwrap());
            let route = score::Route { shape, s };
            let top = score::launch::route_top_s_on(st, route, None, &x, &d).unwrap();
            b.extend(&top.atoms);
            b.extend(bits(&top.scores));
            b
        }),
    ));
    out.push((
        "viterbi",
        outcome(Sm::Sm80, threads, |st| {
            let mut rng = Rng(4);
            let (batch, t, s) = (7, 13, 6);
            let (pi, a, b) = (
                logp(&mut rng, s),
                logp(&mut rng, s * s),
                logp(&mut rng, batch * t * s),
            );
            let shape = viterbi::Shape { batch, t, s };
            let v = viterbi::viterbi_on(st, shape, &lengths(batch, t), &pi, &a, &b);
            let v = v.unwrap();
            let mut out = v.paths.clone();
            out.extend(bits(&v.scores));
            out
        }),
    ));
    out.push((
        "hmm",
        outcome(Sm::Sm80, threads, |st| {
            let mut rng = Rng(5);
            let (batch, t, s) = (5, 11, 4);
            let (pi, a, b) = (
                logp(&mut rng, s),
                logp(&mut rng, s * s),
                logp(&mut rng, batch * t * s),
            );
            let lens = lengths(batch, t);
            let inp = hmm::Inputs {
                log_pi: &pi,
                log_a: &a,
                log_b: &b,
                lengths: &lens,
            };
            let shape = hmm::Shape::new(batch, t, s).unwrap();
            let p = hmm::forward_backward_on(st, shape, &inp).unwrap();
            let mut out = bits(&p.log_alpha);
            out.extend(bits(&p.log_beta));
            out.extend(bits(&p.log_likelihood));
            out.extend(bits(&p.gamma));
            out.extend(bits(&p.xi));
            out
        }),
    ));
    out.push((
        "logcumsumexp",
        outcome(Sm::Sm80, threads, |st| {
            let mut rng = Rng(6);
            let (rows, t) = (5, 777);
            let x = rng.values(rows * t);
            let g = rng.values(rows * t);
            let shape = logcumsumexp::Shape::new(rows, t).unwrap();
            let y = logcumsumexp::forward_on(st, shape, &x).unwrap();
            let gx = logcumsumexp::backward_on(st, shape, &x, &g).unwrap();
            let mut out = bits(&y);
            out.extend(bits(&gx));
            out
        }),
    ));
    out.push((
        "block_ell",
        outcome(Sm::Sm80, threads, |st| block_ell_run(st, (5, 6, 3, 16, 9))),
    ));
    for (sm, codec) in [
        (Sm::Sm80, block_scaled::ptx::Codec::Software),
        (Sm::Sm100a, block_scaled::ptx::Codec::Hardware),
    ] {
        out.push((
            "block_scaled",
            outcome(sm, threads, |st| block_scaled_run(st, codec)),
        ));
    }
    out
}

/// The four block-ELL kernels on a layer of `r × c` blocks of `b × b`, `k`
/// slots per row (one empty row), batch `n`.
fn block_ell_run(st: &Stream, (r, c, k, b, n): (usize, usize, usize, usize, usize)) -> Vec<u32> {
    let mut rng = Rng(7);
    let dims = block_ell::Dims::new(r, c, k, b).unwrap();
    let mut col = vec![-1i32; r * k];
    for row in 1..r {
        for s in 0..k.min(c) {
            col[row * k + s] = ((row + 2 * s) % c) as i32;
        }
    }
    let values = rng.values(dims.values_len());
    let x = rng.values(n * c * b);
    let gy = rng.values(n * r * b);
    let bias = rng.values(dims.out_features());
    let topo = block_ell::DeviceTopology::upload(st, &dims, &col).unwrap();
    let ctx = st.context();
    let (dx, dgy, dv, db) = (
        st.upload(&x).unwrap(),
        st.upload(&gy).unwrap(),
        st.upload(&values).unwrap(),
        st.upload(&bias).unwrap(),
    );
    let mut y = ctx.alloc::<f32>(n * dims.out_features()).unwrap();
    let bias = Some(&db as &dyn AsDevice<f32>);
    block_ell::forward_dev(st, &topo, n, &dx, &dv, bias, &mut y).unwrap();
    let mut gx = ctx.alloc::<f32>(n * dims.in_features()).unwrap();
    block_ell::grad_input_dev(st, &topo, n, &dgy, &dv, &mut gx).unwrap();
    let mut gv = ctx.alloc::<f32>(dims.values_len()).unwrap();
    block_ell::grad_values_dev(st, &topo, n, &dx, &dgy, &mut gv).unwrap();
    let mut gb = ctx.alloc::<f32>(dims.out_features()).unwrap();
    block_ell::grad_bias_dev(st, &dims, n, &dgy, &mut gb).unwrap();
    let mut out = Vec::new();
    for v in [&y, &gx, &gv, &gb] {
        out.extend(bits(&st.to_vec(v).unwrap()));
    }
    out
}

/// Quantize and dequantize every block-scaled format (ragged K).
fn block_scaled_run(st: &Stream, codec: block_scaled::ptx::Codec) -> Vec<u32> {
    use block_scaled::{Format, Recipe, ScaleLayout, ScaleMode, Shape};
    let mut rng = Rng(8);
    let mut out = Vec::new();
    for (f, mode) in [
        (Format::Mxfp8E4m3, ScaleMode::RCeil),
        (Format::Mxfp8E5m2, ScaleMode::Floor),
        (Format::Mxfp4, ScaleMode::RCeil),
        (Format::Nvfp4, ScaleMode::Nvfp4),
    ] {
        let r = Recipe::new(f, mode).unwrap();
        let shape = Shape::new(2, 5, 71, f).unwrap();
        let xs: Vec<f32> = rng.values(2 * 5 * 71).iter().map(|v| v * 30.0).collect();
        for layout in [ScaleLayout::RowMajor, ScaleLayout::Blocked128x4] {
            let q = block_scaled::Quantization {
                shape,
                recipe: r,
                layout,
            };
            let q = block_scaled::launch::quantize_on(st, q, codec, &xs).unwrap();
            out.extend(u8s(&q.codes));
            out.extend(u8s(&q.scales));
            if let Some(g) = q.global {
                out.extend(bits(&[g.amax, g.encode, g.decode]));
            }
            out.extend(bits(
                &block_scaled::launch::dequantize_on(st, codec, &q).unwrap(),
            ));
        }
    }
    out
}

#[test]
fn every_kernel_family_is_identical_on_1_2_and_7_threads() {
    let one = families(THREADS[0]);
    assert!(
        one.iter()
            .all(|(_, o)| o.instructions > 0 && !o.bits.is_empty())
    );
    for t in &THREADS[1..] {
        let other = families(*t);
        for ((name, a), (_, b)) in one.iter().zip(&other) {
            assert_eq!(a, b, "{name}: 1 thread vs {t}");
        }
    }
}

/// `launch` of `entry` in `ptx` on a fresh simulator with `threads`
/// workers and buffers `bufs` (initial contents): the report or finding,
/// and every buffer afterwards.
fn launch(
    ptx: &str,
    entry: &str,
    cfg: LaunchConfig,
    threads: Cfg,
    bufs: &[Vec<u8>],
    scalars: &[ArgValue],
) -> (Result<LaunchReport, SimError>, Vec<Vec<u8>>) {
    let prog = Program::parse(ptx).unwrap();
    let mut s = sim(threads);
    let mut args = Vec::new();
    let mut ptrs = Vec::new();
    for b in bufs {
        let p = s.alloc(b.len()).unwrap();
        s.write(p, b).unwrap();
        ptrs.push(p);
        args.push(ArgValue::Ptr(p));
    }
    args.extend_from_slice(scalars);
    let r = s.launch_program(&prog, entry, cfg, &args);
    let mem = ptrs
        .iter()
        .zip(bufs)
        .map(|(&p, b)| {
            let mut v = vec![0u8; b.len()];
            s.read(p, &mut v).unwrap();
            v
        })
        .collect();
    (r, mem)
}

/// The same launch on 1, 2 and 7 threads gives the same result and memory;
/// returns it.
fn same_everywhere(
    ptx: &str,
    entry: &str,
    cfg: LaunchConfig,
    bufs: &[Vec<u8>],
    scalars: &[ArgValue],
) -> (Result<LaunchReport, SimError>, Vec<Vec<u8>>) {
    let first = launch(ptx, entry, cfg, THREADS[0], bufs, scalars);
    for &t in &THREADS[1..] {
        assert_eq!(
            launch(ptx, entry, cfg, t, bufs, scalars),
            first,
            "{entry}: 1 thread vs {t}"
        );
    }
    first
}

fn words(n: usize, f: impl Fn(usize) -> u32) -> Vec<u8> {
    (0..n).flat_map(|i| f(i).to_le_bytes()).collect()
}

#[test]
fn hand_written_kernels_report_the_same_on_every_thread_count() {
    let n = 5000u32;
    let x: Vec<u8> = (0..n)
        .flat_map(|i| (i as f32 * 0.25).to_le_bytes())
        .collect();
    let (r, mem) = same_everywhere(
        include_str!("ptx/saxpy.ptx"),
        "saxpy",
        LaunchConfig::linear(n.div_ceil(128), 128),
        &[x.clone(), x.clone()],
        &[ArgValue::F32(1.5), ArgValue::U32(n)],
    );
    let r = r.unwrap();
    assert_eq!(r.blocks, 40);
    assert_eq!(r.per_opcode["fma.rn.f32"], n as u64);
    assert_ne!(mem[1], x);
    let (r, mem) = same_everywhere(
        include_str!("ptx/reduce.ptx"),
        "block_sum",
        LaunchConfig::linear(9, 128),
        &[words(9 * 128, |i| i as u32 * 7), vec![0; 4 * 9]],
        &[],
    );
    assert_eq!(r.unwrap().barriers, 9 * 8);
    let sums: Vec<u32> = (0..9u32)
        .map(|b| (0..128).map(|i| (b * 128 + i) * 7).sum())
        .collect();
    assert_eq!(mem[1], words(9, |b| sums[b]));
}

/// Each CTA's first thread writes `ctaid.x` to `out[0]`.
const SAME_WORD: &str = "
.version 7.0
.target sm_80
.address_size 64
.visible .entry same_word(.param .u64 out)
{
.reg .b32 %r<4>;
.reg .b64 %rd<2>;
.reg .pred %p<2>;
ld.param.u64 %rd0, [out];
mov.u32 %r0, %tid.x;
setp.ne.u32 %p0, %r0, 0;
@%p0 bra $END;
mov.u32 %r1, %ctaid.x;
st.global.u32 [%rd0], %r1;
$END:
ret;
}
";

#[test]
fn two_ctas_writing_one_word_is_a_global_race_on_every_thread_count() {
    let (r, mem) = same_everywhere(
        SAME_WORD,
        "same_word",
        LaunchConfig::linear(6, 64),
        &[words(1, |_| 77)],
        &[],
    );
    match r.unwrap_err() {
        SimError::GlobalRace {
            site,
            this,
            other,
            other_ctaid,
            other_site,
            ..
        } => {
            assert_eq!(site.ctaid, (1, 0, 0));
            assert_eq!(site.tid, (0, 0, 0));
            assert!(site.instr.starts_with("st.global.u32"), "{}", site.instr);
            assert_eq!(
                (this, other, other_ctaid),
                (AccessKind::Write, AccessKind::Write, (0, 0, 0))
            );
            // the earlier block's access: the same store in block 0
            let o = other_site.expect("the earlier access is named");
            assert_eq!((o.ctaid, o.tid, o.line), ((0, 0, 0), (0, 0, 0), site.line));
        }
        e => panic!("expected a global race, got {e}"),
    }
    // block 0's write landed; block 1 stopped at its conflicting store
    assert_eq!(mem[0], words(1, |_| 0));
}

/// CTA 0 writes `out[0] = 1`; CTA k > 0 reads `out[k-1]` and writes
/// `out[k] = out[k-1] + 1`: a chain that assumes the blocks run in order.
const CHAIN: &str = "
.version 7.0
.target sm_80
.address_size 64
.visible .entry chain(.param .u64 out)
{
.reg .b32 %r<6>;
.reg .b64 %rd<4>;
.reg .pred %p<2>;
ld.param.u64 %rd0, [out];
mov.u32 %r0, %tid.x;
setp.ne.u32 %p0, %r0, 0;
@%p0 bra $END;
mov.u32 %r1, %ctaid.x;
mul.wide.u32 %rd1, %r1, 4;
add.s64 %rd2, %rd0, %rd1;
mov.u32 %r2, 1;
setp.eq.u32 %p1, %r1, 0;
@%p1 bra $STORE;
ld.global.u32 %r3, [%rd2+-4];
add.u32 %r2, %r3, 1;
$STORE:
st.global.u32 [%rd2], %r2;
$END:
ret;
}
";

#[test]
fn reading_what_an_earlier_cta_wrote_is_a_global_race() {
    let (r, mem) = same_everywhere(
        CHAIN,
        "chain",
        LaunchConfig::linear(5, 32),
        &[words(5, |_| 0)],
        &[],
    );
    match r.unwrap_err() {
        SimError::GlobalRace {
            site,
            addr,
            this,
            other,
            other_ctaid,
            other_site,
        } => {
            assert_eq!((site.ctaid, site.tid), ((1, 0, 0), (0, 0, 0)));
            assert!(site.instr.starts_with("ld.global.u32"), "{}", site.instr);
            assert_eq!(addr % 4096, 0, "out[0] is the allocation's first word");
            assert_eq!(
                (this, other, other_ctaid),
                (AccessKind::Read, AccessKind::Write, (0, 0, 0))
            );
            // block 0's store of out[0], the kernel's `st.global`
            let o = other_site.expect("the earlier access is named");
            assert_eq!((o.ctaid, o.tid), ((0, 0, 0), (0, 0, 0)));
            assert!(o.instr.starts_with("st.global.u32"), "{o}");
            assert_eq!(o.line, site.line + 3);
        }
        e => panic!("expected a global race, got {e}"),
    }
    assert_eq!(mem[0], words(5, |i| (i == 0) as u32));
    // without checks the blocks do not see each other's writes within a
    // launch: every block reads the launch's starting memory
    let prog = Program::parse(CHAIN).unwrap();
    for t in THREADS {
        let mut s = sim(t);
        s.set_checks(false);
        let p = s.alloc_zeroed(20).unwrap();
        s.launch_program(
            &prog,
            "chain",
            LaunchConfig::linear(5, 32),
            &[ArgValue::Ptr(p)],
        )
        .unwrap();
        let mut v = vec![0u8; 20];
        s.read(p, &mut v).unwrap();
        assert_eq!(v, words(5, |_| 1), "{t} threads");
    }
}

/// Blocks `oob` store out of bounds; blocks `racers` write `out[0]`.
fn findings_kernel() -> &'static str {
    "
.version 7.0
.target sm_80
.address_size 64
.visible .entry findings(.param .u64 out, .param .u32 oob, .param .u32 racer_a, .param .u32 racer_b)
{
.reg .b32 %r<8>;
.reg .b64 %rd<4>;
.reg .pred %p<4>;
ld.param.u64 %rd0, [out];
ld.param.u32 %r4, [oob];
ld.param.u32 %r5, [racer_a];
ld.param.u32 %r6, [racer_b];
mov.u32 %r0, %tid.x;
mov.u32 %r1, %ctaid.x;
setp.ne.u32 %p0, %r0, 3;
@%p0 bra $END;
setp.ne.u32 %p1, %r1, %r4;
@%p1 bra $RACE;
st.global.u32 [%rd0+4096], %r1;
$RACE:
setp.eq.u32 %p2, %r1, %r5;
setp.eq.or.u32 %p2, %r1, %r6, %p2;
@!%p2 bra $END;
st.global.u32 [%rd0], %r1;
$END:
ret;
}
"
}

#[test]
fn the_lowest_block_with_a_finding_is_reported() {
    let cfg = LaunchConfig::linear(12, 64);
    let buf = [words(4, |_| 0)];
    // a race between blocks 2 and 5 and an out-of-bounds store in block 3:
    // block 3's finding comes first in block order
    let args = [ArgValue::U32(3), ArgValue::U32(2), ArgValue::U32(5)];
    let (r, _) = same_everywhere(findings_kernel(), "findings", cfg, &buf, &args);
    match r.unwrap_err() {
        SimError::OutOfBounds { site, .. } => {
            assert_eq!((site.ctaid, site.tid), ((3, 0, 0), (3, 0, 0)))
        }
        e => panic!("expected the out-of-bounds store of block 3, got {e}"),
    }
    // the out-of-bounds store in block 9: the race (reported at block 5)
    let args = [ArgValue::U32(9), ArgValue::U32(2), ArgValue::U32(5)];
    let (r, mem) = same_everywhere(findings_kernel(), "findings", cfg, &buf, &args);
    match r.unwrap_err() {
        SimError::GlobalRace {
            site, other_ctaid, ..
        } => {
            assert_eq!((site.ctaid, site.tid), ((5, 0, 0), (3, 0, 0)));
            assert_eq!(other_ctaid, (2, 0, 0));
        }
        e => panic!("expected the race of block 5, got {e}"),
    }
    assert_eq!(mem[0], words(4, |i| if i == 0 { 2 } else { 0 }));
}

/// Every thread takes a ticket from a global counter and stores it at its
/// global index.
const TICKETS: &str = "
.version 7.0
.target sm_80
.address_size 64
.visible .entry tickets(.param .u64 counter, .param .u64 out)
{
.reg .b32 %r<6>;
.reg .b64 %rd<6>;
ld.param.u64 %rd0, [counter];
ld.param.u64 %rd1, [out];
mov.u32 %r0, %tid.x;
mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %ntid.x;
mad.lo.u32 %r3, %r1, %r2, %r0;
atom.global.add.u32 %r4, [%rd0], 1;
mul.wide.u32 %rd2, %r3, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r4;
ret;
}
";

#[test]
fn a_global_atomic_counter_gives_the_same_tickets_on_every_thread_count() {
    let (blocks, threads) = (7u32, 96u32);
    let total = (blocks * threads) as usize;
    let (r, mem) = same_everywhere(
        TICKETS,
        "tickets",
        LaunchConfig::linear(blocks, threads),
        &[words(1, |_| 1000), vec![0; 4 * total]],
        &[],
    );
    let r = r.unwrap();
    assert_eq!(r.per_base["atom"], total as u64);
    assert_eq!(mem[0], words(1, |_| 1000 + total as u32));
    // one ticket each, handed out in block order, then thread order
    assert_eq!(mem[1], words(total, |i| 1000 + i as u32));
}

/// Blocks 2 and 4 spin forever; the others exit at once.
const SPIN: &str = "
.version 7.0
.target sm_80
.address_size 64
.visible .entry spin()
{
.reg .b32 %r<2>;
.reg .pred %p<2>;
mov.u32 %r0, %ctaid.x;
setp.eq.u32 %p0, %r0, 2;
setp.eq.or.u32 %p0, %r0, 4, %p0;
@!%p0 bra $DONE;
$SPIN:
bra $SPIN;
$DONE:
ret;
}
";

#[test]
fn the_budget_stops_the_first_spinning_block_at_the_same_instruction() {
    let prog = Program::parse(SPIN).unwrap();
    let mut first = None;
    for t in THREADS {
        let mut s = sim(t);
        s.set_options(SimOptions {
            max_instructions: Some(3_000_000),
            ..s.options()
        });
        let e = s
            .launch_program(&prog, "spin", LaunchConfig::linear(6, 32), &[])
            .unwrap_err();
        match &e {
            SimError::InstructionLimit { site, limit } => {
                assert_eq!(*limit, 3_000_000);
                assert_eq!(site.ctaid, (2, 0, 0));
                assert!(site.instr.starts_with("bra"), "{}", site.instr);
            }
            e => panic!("expected the budget finding, got {e}"),
        }
        match &first {
            None => first = Some(e),
            Some(f) => assert_eq!(f, &e, "1 thread vs {t}"),
        }
    }
}

#[test]
fn the_thread_count_comes_from_the_options_or_the_environment() {
    let o = SimOptions::default();
    assert_eq!(o.threads, 0);
    assert_eq!(
        SimOptions { threads: 3, ..o }.resolved_threads().unwrap(),
        3
    );
    // the variable is read at launch: not set in this test process by
    // default, so every core
    if std::env::var(ptxsmith::sim::THREADS_ENV).is_err() {
        assert!(o.resolved_threads().unwrap() >= 1);
    }
}

/// One simulator keeps the global-memory shadows' memory between
/// launches: a run of launches of different sizes, with findings and with
/// checks on and off, each twice on the same buffers, on one simulator
/// gives each launch the report, finding and memory a fresh simulator
/// gives it, on every thread count.
#[test]
fn launches_on_one_simulator_match_fresh_simulators() {
    let n = 5000u32;
    let x: Vec<u8> = (0..n)
        .flat_map(|i| (i as f32 * 0.5).to_le_bytes())
        .collect();
    type Case = (
        &'static str,
        &'static str,
        LaunchConfig,
        Vec<Vec<u8>>,
        Vec<ArgValue>,
        bool,
    );
    let cases: Vec<Case> = vec![
        (
            include_str!("ptx/saxpy.ptx"),
            "saxpy",
            LaunchConfig::linear(n.div_ceil(128), 128),
            vec![x.clone(), x.clone()],
            vec![ArgValue::F32(1.5), ArgValue::U32(n)],
            true,
        ),
        (
            SAME_WORD,
            "same_word",
            LaunchConfig::linear(6, 64),
            vec![words(1, |_| 7)],
            vec![],
            true,
        ),
        (
            CHAIN,
            "chain",
            LaunchConfig::linear(5, 32),
            vec![words(5, |_| 0)],
            vec![],
            true,
        ),
        (
            CHAIN,
            "chain",
            LaunchConfig::linear(5, 32),
            vec![words(5, |_| 0)],
            vec![],
            false,
        ),
        (
            include_str!("ptx/reduce.ptx"),
            "block_sum",
            LaunchConfig::linear(9, 128),
            vec![words(9 * 128, |i| i as u32 * 3), vec![0; 4 * 9]],
            vec![],
            true,
        ),
        (
            include_str!("ptx/saxpy.ptx"),
            "saxpy",
            LaunchConfig::linear(3, 128),
            vec![x[..4 * 300].to_vec(), x[..4 * 300].to_vec()],
            vec![ArgValue::F32(-2.0), ArgValue::U32(300)],
            true,
        ),
    ];
    let run = |s: &mut Sim, (ptx, entry, cfg, bufs, scalars, checks): &Case| {
        s.set_checks(*checks);
        let prog = Program::parse(ptx).unwrap();
        let mut args = Vec::new();
        let mut ptrs = Vec::new();
        for b in bufs {
            let p = s.alloc(b.len()).unwrap();
            s.write(p, b).unwrap();
            ptrs.push(p);
            args.push(ArgValue::Ptr(p));
        }
        args.extend_from_slice(scalars);
        // twice on the same buffers: the second launch must not see the
        // first's accesses
        let r: Vec<_> = (0..2)
            .map(|_| {
                let mut r = s.launch_program(&prog, entry, *cfg, &args);
                // addresses differ between simulators: a race's, relative
                // to the first buffer
                if let Err(SimError::GlobalRace { addr, .. }) = &mut r {
                    *addr -= ptrs[0];
                }
                r
            })
            .collect();
        let mem: Vec<Vec<u8>> = ptrs
            .iter()
            .zip(bufs)
            .map(|(&p, b)| {
                let mut v = vec![0u8; b.len()];
                s.read(p, &mut v).unwrap();
                v
            })
            .collect();
        (r, mem)
    };
    let fresh: Vec<_> = cases.iter().map(|c| run(&mut sim(THREADS[0]), c)).collect();
    assert!(fresh[1].0[0].is_err() && fresh[2].0[1].is_err());
    assert!(fresh[0].0.iter().chain(&fresh[5].0).all(|r| r.is_ok()));
    for t in THREADS {
        let mut s = sim(t);
        for _ in 0..2 {
            for (c, want) in cases.iter().zip(&fresh) {
                let (r, mem) = run(&mut s, c);
                assert_eq!(r, want.0, "{} on {t} threads", c.1);
                assert_eq!(mem, want.1, "{} on {t} threads", c.1);
            }
        }
    }
}

#[test]
fn simulators_on_several_host_threads_share_the_pool_and_agree() {
    let n = 3000u32;
    let x: Vec<u8> = (0..n)
        .flat_map(|i| (i as f32 * 0.75).to_le_bytes())
        .collect();
    let saxpy = |cfg| {
        launch(
            include_str!("ptx/saxpy.ptx"),
            "saxpy",
            LaunchConfig::linear(n.div_ceil(128), 128),
            cfg,
            &[x.clone(), x.clone()],
            &[ArgValue::F32(-0.5), ArgValue::U32(n)],
        )
    };
    let sums = |cfg| {
        launch(
            include_str!("ptx/reduce.ptx"),
            "block_sum",
            LaunchConfig::linear(6, 128),
            cfg,
            &[words(6 * 128, |i| i as u32 * 3), vec![0; 4 * 6]],
            &[],
        )
    };
    let want = (saxpy(THREADS[0]), sums(THREADS[0]));
    assert!(want.0.0.is_ok() && want.1.0.is_ok());
    // four host threads, each launching back to back on 2 and 3 workers:
    // their jobs meet in the shared pools
    std::thread::scope(|s| {
        let runs: Vec<_> = (0..4)
            .map(|h| {
                s.spawn(move || {
                    (0..12)
                        .map(|i| {
                            let cfg = Cfg(2 + (h + i) % 2, true);
                            (saxpy(cfg), sums(cfg), cfg)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for r in runs {
            for (a, b, cfg) in r.join().unwrap() {
                assert_eq!(a, want.0, "saxpy on {cfg} workers");
                assert_eq!(b, want.1, "block_sum on {cfg} workers");
            }
        }
    });
}
