//! Host model of [`super`]: the readable loop is the spec.

/// `out[r] = Σ_c x[r·n + c] · y[c]`, separate rounding, ascending `c`.
/// Lengths are validated by the caller ([`super::dot_rows`] and the other
/// entry points check them against a [`super::Shape`]).
pub fn dot_rows(x: &[f32], y: &[f32], rows: usize, n: usize) -> Vec<f32> {
    (0..rows)
        .map(|r| {
            let mut acc = 0.0f32;
            for c in 0..n {
                acc += x[r * n + c] * y[c];
            }
            acc
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separate_rounding_differs_from_fma_where_it_should() {
        // 1 + 2^-23 squared = 1 + 2^-22 + 2^-46: the product rounds to
        // 1 + 2^-22, so adding −(1 + 2^-22) gives exactly 0, while a fused
        // multiply-add keeps the 2^-46 term.
        let a = 1.0f32 + f32::EPSILON;
        let x = [a, 1.0];
        let y = [a, -(1.0 + 2.0 * f32::EPSILON)];
        let out = dot_rows(&x, &y, 1, 2);
        assert_eq!(out[0].to_bits(), 0.0f32.to_bits());
        let fused = a.mul_add(a, -(1.0 + 2.0 * f32::EPSILON));
        assert_eq!(fused, 2f32.powi(-46));
    }

    #[test]
    fn empty_rows_sum_to_positive_zero() {
        assert_eq!(
            dot_rows(&[], &[], 3, 0)
                .iter()
                .map(|v| v.to_bits())
                .collect::<Vec<_>>(),
            vec![0; 3]
        );
    }
}
