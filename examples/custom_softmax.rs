//! A row softmax written only with ptxsmith's public items — the kernel
//! builder, `kernel_params!`, the building blocks of
//! `ptxsmith::dsl::blocks`, `Var` and the exact `exp` of
//! `ptxsmith::dsl::math` — with a host model that mirrors its documented
//! order, checked bit for bit on the simulator for every SM, then inspected
//! with the pinned ptxas/nvdisasm (registers, spills, FFMA count) when they
//! are installed. The guide (`docs/writing-kernels.md`) walks through it.
//!
//! ```text
//! cargo run --release --example custom_softmax
//! ```
//!
//! `cargo test --examples` runs the same check as a test. Exits non-zero
//! on a mismatch.
//!
//! # The kernel's order (the contract the host model mirrors)
//!
//! One block of [`BLOCK`] threads per row of `n` floats; thread `t` visits
//! the row's elements `t, t + BLOCK, t + 2·BLOCK, …` in that order.
//! 1. `m_t = max.f32` over its elements, starting from the canonical NaN
//!    (which `max.f32` ignores); `m = block_reduce_all(Max)` of the `m_t`.
//! 2. `s_t = Σ exp(x − m)` left to right over its elements (`sub.rn`, the
//!    exact `exp`, `add.rn`), starting from `−0.0`; `s =
//!    block_reduce_all(Sum)` of the `s_t` (the blocks' butterfly tree).
//! 3. `y = exp(x − m) / s` (`div.rn`).

use std::process::ExitCode;

use ptxsmith::dsl::blocks::{self, ReduceOp, host};
use ptxsmith::dsl::math as dm;
use ptxsmith::dsl::params::{KernelParams, Ptr};
use ptxsmith::dsl::types::{F32, U32};
use ptxsmith::dsl::{KernelBuilder, PtxModule, Rounding::Rn};
use ptxsmith::nvtools::NvTools;
use ptxsmith::runtime::{Context, LaunchConfig};
use ptxsmith::{Sm, kernel_params, math};

kernel_params! {
    /// `y[r·n + i] = softmax(x[r·n ..][..n])[i]` for each row `r`.
    pub struct SoftmaxArgs => SoftmaxRegs {
        x: Ptr<F32>,
        y: Ptr<F32>,
        n: U32,
    }
}

/// Threads per block (4 warps; the blocks need a multiple of 32).
const BLOCK: u32 = 128;

/// The softmax kernel for `sm`: one block per row.
fn softmax_kernel(sm: Sm) -> ptxsmith::Result<PtxModule> {
    let mut b = KernelBuilder::new("row_softmax", sm);
    b.reqntid(BLOCK, 1, 1);
    let p = b.params::<SoftmaxArgs>();
    // one slot per warp for each reduction (two arrays: the second
    // reduction does not wait for every thread to have read the first)
    let red_max = b.shared_array::<F32>("red_max", BLOCK / 32, 4);
    let red_sum = b.shared_array::<F32>("red_sum", BLOCK / 32, 4);
    let row = b.ctaid_x();
    let start = b.mul_lo(row, p.n);
    let x = b.offset(p.x, start);
    let y = b.offset(p.y, start);
    let tid = b.tid_x();

    // 1. the row's maximum
    let m_t = b.var(blocks::identity::<F32>(ReduceOp::Max));
    b.for_range(tid, p.n, BLOCK, |b, i| {
        let xp = b.offset(x, i);
        let v = b.ld_global(xp, 0);
        let cur = b.get(&m_t);
        let next = b.fmax(cur, v);
        b.set(&m_t, next);
    });
    let m_t = b.get(&m_t);
    let m = blocks::block_reduce_all(&mut b, ReduceOp::Max, m_t, &red_max);

    // 2. the sum of exp(x − m)
    let s_t = b.var(-0.0f32);
    b.for_range(tid, p.n, BLOCK, |b, i| {
        let xp = b.offset(x, i);
        let v = b.ld_global(xp, 0);
        let d = b.fsub(Rn, v, m);
        let e = dm::exp(b, d);
        let cur = b.get(&s_t);
        let next = b.fadd(Rn, cur, e);
        b.set(&s_t, next);
    });
    let s_t = b.get(&s_t);
    let s = blocks::block_reduce_all(&mut b, ReduceOp::Sum, s_t, &red_sum);

    // 3. normalise
    b.for_range(tid, p.n, BLOCK, |b, i| {
        let xp = b.offset(x, i);
        let v = b.ld_global(xp, 0);
        let d = b.fsub(Rn, v, m);
        let e = dm::exp(b, d);
        let q = b.fdiv(Rn, e, s);
        let yp = b.offset(y, i);
        b.st_global(yp, 0, q);
    });
    b.finish()
}

/// `sub.rn` / `div.rn` on the host: IEEE, a NaN result canonical.
fn canon(v: f32) -> f32 {
    if v.is_nan() { host::CANONICAL_NAN } else { v }
}

/// The host model: the kernel's order, step for step.
fn softmax_host(x: &[f32], n: usize) -> Vec<f32> {
    let threads = BLOCK as usize;
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks(n) {
        let mut m_t = vec![host::CANONICAL_NAN; threads];
        let mut s_t = vec![-0.0f32; threads];
        for (i, &v) in row.iter().enumerate() {
            m_t[i % threads] = host::minmax_f32(true, m_t[i % threads], v);
        }
        let m = host::block_reduce(ReduceOp::Max, &m_t, host::CANONICAL_NAN);
        let e = |v: f32| math::exp_f32(canon(v - m));
        for (i, &v) in row.iter().enumerate() {
            s_t[i % threads] = host::add_f32(s_t[i % threads], e(v));
        }
        let s = host::block_sum_f32(&s_t);
        out.extend(row.iter().map(|&v| canon(e(v) / s)));
    }
    out
}

/// Rows of `n` floats: random logits, a row with ±inf, NaN and signed
/// zeros, a row of equal values.
fn inputs(rows: usize, n: usize) -> Vec<f32> {
    let mut state = 0x5eed_u64;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let mut x: Vec<f32> = (0..rows * n).map(|_| 40.0 * next() - 20.0).collect();
    let special = [f32::INFINITY, -0.0, 0.0, f32::NEG_INFINITY, f32::NAN, 1e-40];
    if rows >= 3 {
        for (k, v) in x[n..2 * n].iter_mut().enumerate() {
            if k % 7 == 0 {
                *v = special[(k / 7) % special.len()];
            }
        }
        x[2 * n..3 * n].fill(3.25);
    }
    x
}

/// Run on the simulator for `sm` and compare with the host model; the
/// first mismatch, if any.
fn check(sm: Sm, x: &[f32], n: usize, want: &[f32]) -> ptxsmith::Result<Option<String>> {
    let module = softmax_kernel(sm)?;
    let ctx = Context::sim(sm);
    let st = ctx.default_stream();
    let xb = st.upload(x)?;
    let mut yb = ctx.alloc::<f32>(x.len())?;
    let args = SoftmaxArgs {
        x: st.arg("x", &xb)?,
        y: st.arg_mut("y", &mut yb)?,
        n: n as u32,
    };
    let rows = (x.len() / n) as u32;
    st.launch(&module, LaunchConfig::linear(rows, BLOCK), &args.args())?;
    let got = st.to_vec(&yb)?;
    Ok(got
        .iter()
        .zip(want)
        .position(|(g, w)| g.to_bits() != w.to_bits())
        .map(|i| {
            format!(
                "{sm}: y[{i}] = {:e} ({:#010x}), host model {:e} ({:#010x}) (x = {:e})",
                got[i],
                got[i].to_bits(),
                want[i],
                want[i].to_bits(),
                x[i]
            )
        }))
}

/// Every SM on the simulator, then the pinned tools; `Err` on a mismatch.
fn run() -> Result<(), String> {
    let (rows, n) = (4, 300);
    let x = inputs(rows, n);
    let want = softmax_host(&x, n);
    for sm in Sm::ALL {
        match check(sm, &x, n, &want).map_err(|e| format!("{sm}: {e}"))? {
            Some(mismatch) => return Err(mismatch),
            None => println!("{sm}: {rows} rows of {n} bit-identical to the host model"),
        }
    }
    // inspection with the pinned ptxas / nvdisasm
    let Some(tools) = NvTools::locate() else {
        println!(
            "SKIP inspection: pinned NVIDIA tools not found (scripts/install-nvidia-tools.sh)"
        );
        return Ok(());
    };
    for sm in Sm::ALL {
        let module = softmax_kernel(sm).map_err(|e| e.to_string())?;
        let asm = tools
            .assemble(&module.ptx, sm)
            .map_err(|e| format!("{sm}: ptxas: {e}"))?;
        let usage = asm
            .entry()
            .ok_or(format!("{sm}: no entry in the ptxas report"))?;
        // the pinned nvdisasm reads every target but sm_70
        let ffma = if NvTools::can_disassemble(sm) {
            let sass = tools
                .disassemble(&asm)
                .map_err(|e| format!("{sm}: nvdisasm: {e}"))?;
            let count = sass.function(&module.kernel).map_or(0, |f| {
                f.instructions
                    .iter()
                    .filter(|i| i.opcode.starts_with("FFMA"))
                    .count()
            });
            format!("{count} FFMA (from div.rn and exp)")
        } else {
            "SASS not inspected (nvdisasm 13.5 refuses sm_70)".to_string()
        };
        println!(
            "{sm}: {} registers, spills {} B stored / {} B loaded, {ffma}",
            usage.registers, usage.spill_stores_bytes, usage.spill_loads_bytes
        );
        if usage.spill_stores_bytes != 0 || usage.spill_loads_bytes != 0 {
            return Err(format!("{sm}: the softmax kernel spills"));
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("MISMATCH: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn softmax_matches_its_host_model_on_every_sm() {
        super::run().unwrap();
    }

    /// The check can fail: a host model summing in another order (left to
    /// right over the whole row) disagrees with the kernel somewhere.
    #[test]
    fn a_wrong_order_is_caught() {
        use super::*;
        let n = 300;
        let x = inputs(1, n);
        let m = x
            .iter()
            .fold(host::CANONICAL_NAN, |a, &v| host::minmax_f32(true, a, v));
        let s = x.iter().fold(-0.0f32, |a, &v| a + math::exp_f32(v - m));
        let wrong: Vec<f32> = x.iter().map(|&v| math::exp_f32(v - m) / s).collect();
        assert!(check(Sm::Sm80, &x, n, &wrong).unwrap().is_some());
    }
}
