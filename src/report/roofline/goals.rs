//! A problem's goal evaluated on one card.

use super::speed::tensor_flop_per_s;
use super::{Goal, GoalResult, KernelRow, ProblemRow};
use crate::report::hardware::Gpu;
use crate::report::pipes::MmaShape;
use crate::target::Sm;

fn pct(v: f64) -> String {
    format!("{:.0} %", 100.0 * v)
}

pub(super) fn goal(g: &Goal, row: &ProblemRow, gpu: &Gpu) -> GoalResult {
    match g {
        Goal::Share(min) => match row.share(gpu) {
            Some(s) => GoalResult {
                text: format!("≥ {}: {}", pct(*min), pct(s)),
                met: Some(s >= *min),
            },
            None => GoalResult {
                text: format!("≥ {}", pct(*min)),
                met: None,
            },
        },
        Goal::DenseSpeedup { dense_macs, min } => {
            let dense = dense_macs / gpu.fp32_instr_per_s();
            match row.model_s() {
                Some(m) => GoalResult {
                    text: format!(
                        "dense SGEMM {:.0} µs / modeled ≥ {min}×: {:.2}×",
                        dense * 1e6,
                        dense / m
                    ),
                    met: Some(dense / m >= *min),
                },
                None => GoalResult {
                    text: format!("≥ {min}× the dense SGEMM ({:.0} µs)", dense * 1e6),
                    met: None,
                },
            }
        }
        Goal::TensorDenseSpeedup {
            dense_macs,
            shape,
            min,
        } => {
            let dense = 2.0 * dense_macs
                / (tensor_flop_per_s(gpu, *shape) * super::problems::ell_tc::DENSE_TC_EFFICIENCY);
            let what = match shape {
                MmaShape::M16n8k16 => "bf16",
                MmaShape::M16n8k8Tf32 => "TF32",
            };
            match row.model_s() {
                Some(m) => GoalResult {
                    text: format!(
                        "dense {what} (tensor cores, 65 % of peak) {:.0} µs / modeled ≥ {min}×: {:.2}×",
                        dense * 1e6,
                        dense / m
                    ),
                    met: Some(dense / m >= *min),
                },
                None => GoalResult {
                    text: format!("≥ {min}× the dense {what} layer ({:.0} µs)", dense * 1e6),
                    met: None,
                },
            }
        }
        Goal::HmmForward {
            kernel,
            baseline_sm90,
            factor,
            torch_bytes,
        } => {
            let torch = torch_bytes / gpu.bytes_per_s();
            let k = row.kernels.iter().find(|k| &k.kernel == kernel);
            let (Some(sass), Some(t)) =
                (k.and_then(KernelRow::sass), k.and_then(KernelRow::model_s))
            else {
                return GoalResult {
                    text: format!("forward faster than PyTorch ({:.1} ms)", torch * 1e3),
                    met: None,
                };
            };
            let faster = t < torch;
            if gpu.sm == Sm::Sm90 {
                let fewer = baseline_sm90 / sass;
                GoalResult {
                    text: format!(
                        "forward: {fewer:.2}× fewer instructions than before (≥ {factor}×); \
                         {:.1} ms vs PyTorch {:.1} ms",
                        t * 1e3,
                        torch * 1e3
                    ),
                    met: Some(fewer >= *factor && faster),
                }
            } else {
                GoalResult {
                    text: format!(
                        "forward {:.1} ms vs PyTorch {:.1} ms (instruction goal: sm_90 only)",
                        t * 1e3,
                        torch * 1e3
                    ),
                    met: Some(faster),
                }
            }
        }
    }
}
