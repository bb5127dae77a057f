//! The roofline section of `docs/tuning.md`.

use std::fmt::Write as _;

use super::problems::{self, Roof};
use super::{GpuRows, KernelRow, ProblemRow, Roofline};
use crate::report::hardware::Gpu;
use crate::report::pipes::MmaShape;

fn mb(bytes: f64) -> String {
    format!("{:.1}", bytes / 1e6)
}

fn giga(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2} G", v / 1e9)
    } else {
        format!("{:.1} M", v / 1e6)
    }
}

fn us(s: Option<f64>) -> String {
    s.map_or("–".into(), |s| {
        if s >= 1e-2 {
            format!("{:.2} ms", s * 1e3)
        } else {
            format!("{:.1} µs", s * 1e6)
        }
    })
}

fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{:.0} %", 100.0 * v))
}

fn roof_name(r: Roof) -> &'static str {
    match r {
        Roof::Memory => "memory",
        Roof::Fp32 => "FP32",
        Roof::Tensor(MmaShape::M16n8k16) => "tensor bf16/f16",
        Roof::Tensor(MmaShape::M16n8k8Tf32) => "tensor tf32",
    }
}

/// A kernel row's share of its roof: its own bytes, or its FP32
/// instructions, at the roof over its modeled time; on the tensor roof,
/// the problem's useful FLOP when the problem has that one kernel (else
/// none).
pub(super) fn kernel_share(k: &KernelRow, p: &ProblemRow, gpu: &Gpu) -> Option<f64> {
    let at_roof = match p.roof {
        Roof::Memory => k.bytes / gpu.bytes_per_s(),
        Roof::Fp32 => k.fp32 / gpu.fp32_instr_per_s(),
        Roof::Tensor(_) if p.kernels.len() == 1 => p.roof_s(gpu),
        Roof::Tensor(_) => return None,
    };
    k.model_s().map(|m| at_roof / m)
}

fn kernel_line(s: &mut String, k: &KernelRow, p: &ProblemRow, gpu: &Gpu) {
    let ratio = k.ratio.map_or("no SASS".to_string(), |r| {
        let u = if r.unroll > 1 {
            format!(" (loop ×{})", r.unroll)
        } else {
            String::new()
        };
        let how = if r.weighted {
            " (weighted)"
        } else if r.hot {
            ""
        } else {
            " (whole)"
        };
        format!("{:.2}{how}{u}", r.ratio)
    });
    let _ = writeln!(
        s,
        "| | `{}` | {} × {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | |",
        k.kernel,
        k.launches,
        k.ctas,
        mb(k.bytes),
        mb(k.l2_bytes),
        giga(k.ptx),
        ratio,
        k.sass().map_or("–".into(), giga),
        k.occupancy
            .map_or("–".into(), |o| format!("{:.0} %", 100.0 * o.fraction())),
        us(Some(k.mem_s)),
        us(Some(k.l2_s)),
        us(k.issue_s),
        us(k.latency_s),
        us(k.model_s()),
        k.bound().unwrap_or_else(|| "–".into()),
        pct(kernel_share(k, p, gpu)),
    );
}

fn gpu_section(s: &mut String, g: &GpuRows) {
    let gpu = &g.gpu;
    let _ = writeln!(
        s,
        "\n### {} ({}): {} SMs × {} FP32 lanes at {:.0} MHz, {:.0} GB/s, L2 {:.0} MB at {:.1} TB/s\n",
        gpu.name,
        gpu.sm,
        gpu.sms,
        gpu.fp32_lanes_per_sm,
        gpu.boost_mhz,
        gpu.mem_gbps,
        gpu.l2_mb,
        gpu.l2_bytes_per_s() / 1e12
    );
    let _ = writeln!(
        s,
        "Issue {:.1} T lane-instructions/s; FP32 peak {:.1} T instructions/s (= separate-rounding TFLOP/s; the FMA peak is {:.1} TFLOP/s).{}\n",
        gpu.issue_per_s() / 1e12,
        gpu.fp32_instr_per_s() / 1e12,
        gpu.fma_tflops(),
        if gpu.sm == crate::target::Sm::Sm70 {
            " No SASS on sm_70 (nvdisasm 13.5 reads no sm_70 cubin): bytes and memory time only."
        } else {
            ""
        }
    );
    let _ = writeln!(
        s,
        "| problem | kernel | launches × CTAs | MB | L2 MB | PTX instr | SASS/PTX | SASS instr | occupancy | memory | L2 | issue | latency | modeled | bound | share of roof | goal |"
    );
    let _ = writeln!(
        s,
        "|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"
    );
    for p in &g.problems {
        let goal = p.goal.as_ref().map_or(String::new(), |r| {
            let mark = match r.met {
                Some(true) => "**met**: ",
                Some(false) => "**not met**: ",
                None => "",
            };
            format!("{mark}{}", r.text)
        });
        let sass: Option<f64> = p.kernels.iter().map(KernelRow::sass).sum();
        let ptx: f64 = p.kernels.iter().map(|k| k.ptx).sum();
        let mem: f64 = p.kernels.iter().map(|k| k.mem_s).sum();
        let l2: f64 = p.kernels.iter().map(|k| k.l2_s).sum();
        let l2_bytes: f64 = p.kernels.iter().map(|k| k.l2_bytes).sum();
        let issue: Option<f64> = p.kernels.iter().map(|k| k.issue_s).sum();
        let _ = writeln!(
            s,
            "| **{}: {}** | all ({} roof) | {} | {} | {} | {} | | {} | | {} | {} | {} | | {} | | **{}** | {} |",
            p.family,
            p.problem,
            roof_name(p.roof),
            p.kernels.iter().map(|k| k.launches).sum::<usize>(),
            mb(p.bytes()),
            mb(l2_bytes),
            giga(ptx),
            sass.map_or("–".into(), giga),
            us(Some(mem)),
            us(Some(l2)),
            us(issue),
            us(p.model_s()),
            pct(p.share(gpu)),
            goal
        );
        for k in &p.kernels {
            kernel_line(s, k, p, gpu);
        }
    }
}

pub(super) fn markdown(r: &Roofline) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n## Roofline model\n\nEvery kernel family at a named problem size (the benches' sizes) on every card of `src/report/hardware.rs` (published figures, sources in its doc comments). Definitions: `src/report/roofline.rs`; problems, their byte counts and extrapolation: `src/report/roofline/problems.rs`. Picture: [roofline.svg](roofline.svg).\n\n\
         * **PTX instr**: the simulator's dynamic PTX count (thread-instructions) on scaled-down shapes of the same problem, extrapolated to the full size; **SASS/PTX**: SASS instructions per PTX instruction, each innermost loop's ratio and the rest of the function's weighted by their dynamic PTX counts (`weighted`; `loop ×u`: ptxas unrolled the hot loop `u` times), else the hot loop's (no mark) or the function's (`whole`); **SASS instr** = PTX × ratio, the lane-instructions the model issues.\n\
         * **occupancy**: resident warps per SM over the SM's maximum, from the kernel's registers, shared memory and CTA size (`src/occupancy.rs`).\n\
         * **memory** = bytes / (0.90 × bandwidth: what a streaming copy reaches, `src/report/roofline/speed.rs`); **L2 MB**: the kernel's global loads and stores as the simulator counts them (every access taken to reach L2, hits and misses; the L1 not modelled; `src/report/roofline/l2.rs`), extrapolated like the instructions; **L2** = L2 bytes / (0.70 × the card's L2 bandwidth, an estimate); **issue**: the SASS lane-instructions split over the pipes by the hot loop's mix (FP32, IMAD, ALU, MUFU/conversions, FP64, load/store/shuffle, uniform, control), the most loaded SM taking the maximum over the dispatch floor (128 a clock) and each pipe at its rate (`src/report/pipes.rs`: FP32 64/128, ALU and IMAD 64, MUFU 16, LSU 32 on sm_90), and never below the PTX's own FP32 count at the FP32 rate nor its warp-level MMA count at the tensor pipe's `HMMA` rate; the most loaded SM's work is the greedy bound max(ceil(CTAs / SMs) mean CTAs, the heaviest CTA), the heaviest CTA's count from the simulator, extrapolated like the instructions (`src/report/roofline/speed.rs`: CTAs of unequal work, e.g. the joint HMM launch's forward and backward halves); **latency** (kernels whose threads run one dependent chain): warp-instructions per SM × the mix's dependent-issue latency / the warps the SM holds, or the heaviest CTA's warp-instructions × that latency / its own warps where longer; **modeled** = max(memory, L2, issue, latency); **bound**: the term that sets it (`memory`, `L2`, `latency`, or the issue limit: `dispatch`, a pipe, `fp32+imad`). No launch overhead, barrier waits or L1 effects.\n\
         * **share of roof**: on the problem's line, its essential bytes (memory roof) or useful FP32 instructions (FP32 roof: 2 per separately rounded multiply-add, 1 per fused multiply-add) or useful FLOP on the tensor roof (2 per multiply-add of the filled blocks, at the card's dense tensor-core rate for the MMA shape: `HMMA` per SM per clock from the published dense peaks, `src/report/pipes.rs`, at the boost clock) at the roof over the modeled time; on a kernel's line, the same for that kernel's own bytes or FP32 instructions. The issue's goals are stated for H100 SXM; they are evaluated on every card.\n"
    );
    let _ = writeln!(s, "What the byte counts assume, per problem:\n");
    for p in problems::all() {
        let _ = writeln!(s, "* {}: {}: {}.", p.family, p.name, p.note);
    }
    for g in &r.gpus {
        gpu_section(&mut s, g);
    }
    s
}
