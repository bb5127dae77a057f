//! A problem's goal evaluated on one card.

use super::speed::tensor_flop_per_s;
use super::{Goal, GoalResult, ProblemRow};
use crate::report::hardware::Gpu;
use crate::report::pipes::MmaShape;

fn pct(v: f64) -> String {
    format!("{:.0} %", 100.0 * v)
}

pub(super) fn goal(g: &Goal, row: &ProblemRow, gpu: &Gpu) -> GoalResult {
    match g {
        Goal::Share(min) => match row.share(gpu) {
            Some(s) => GoalResult {
                text: format!("≥ {}: {}", pct(*min), pct(s)),
                // Up to rounding: a problem of several memory-bound
                // kernels at the stream roof sums their times and can
                // land an ulp under the goal (0.8999999999999999).
                met: Some(s >= *min - 1e-9),
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
        Goal::TimeOn { card, max_s } => {
            let t = row.model_s();
            let at = t.map_or(String::new(), |t| format!(": {:.2} ms", t * 1e3));
            GoalResult {
                text: format!("≤ {:.2} ms on the {card}{at}", max_s * 1e3),
                met: (gpu.name == *card).then_some(t.is_some_and(|t| t <= *max_s)),
            }
        }
    }
}
