use super::*;
use crate::kernels::block_ell;
use crate::tensor_core::params;

/// The padding claim of the contract, checked on the model itself: a
/// `+0 × +0` pair in a block with other products changes nothing, but a
/// block of only zero pairs turns a `−0.0` accumulator into `+0.0` — so
/// the host model must feed the padded pairs, not skip them.
#[test]
fn zero_pairs_and_negative_zero() {
    for sm in [Sm::Sm80, Sm::Sm89, Sm::Sm90, Sm::Sm100] {
        for prec in TcPrecision::ALL {
            let fma = params(sm, prec.format()).unwrap();
            let one = match prec {
                TcPrecision::Bf16 => 0x3F80,
                TcPrecision::F16 => 0x3C00,
                TcPrecision::Tf32 => 1.5f32.to_bits(),
            };
            let q = prec.chunk();
            for acc in [0.0f32, -0.0, 1e-30, -3.25, f32::from_bits(1)] {
                let mut with = vec![(one, one); 3];
                with.resize(q, (0, 0));
                let without = vec![(one, one); 3];
                assert_eq!(
                    fma.dot(acc, with).to_bits(),
                    fma.dot(acc, without).to_bits(),
                    "{sm} {prec} {acc}"
                );
            }
            let zeros = vec![(0u32, 0u32); q];
            assert_eq!(fma.dot(-0.0, zeros).to_bits(), 0, "{sm} {prec}");
            assert_eq!(fma.dot(-0.0, std::iter::empty()).to_bits(), 0x8000_0000);
        }
    }
}

/// On small integers every product and sum is exact, so the tensor-core
/// model equals the FP32 path's `fma.rn` chain.
#[test]
fn exact_inputs_agree_with_the_fp32_path() {
    let dims = Dims::new(2, 2, 2, 16).unwrap();
    let col = [1, -1, 0, 1];
    let n = 5;
    let small = |e: usize| ((e * 7 + 3) % 9) as f32 - 4.0;
    let x: Vec<f32> = (0..n * dims.in_features()).map(small).collect();
    let v: Vec<f32> = (0..dims.values_len()).map(|e| small(e + 1)).collect();
    let gy: Vec<f32> = (0..n * dims.out_features()).map(|e| small(e + 2)).collect();
    let bias = vec![0.5f32; dims.out_features()];
    let fy = block_ell::host::forward(&dims, n, &x, &v, &col, Some(&bias)).unwrap();
    let fgx = block_ell::host::grad_input(&dims, n, &gy, &v, &col).unwrap();
    let fgv = block_ell::host::grad_values(&dims, n, &x, &gy, &col).unwrap();
    for sm in [Sm::Sm80, Sm::Sm90] {
        let (xb, vb, gyb) = (to_bf16(&x), to_bf16(&v), to_bf16(&gy));
        let p = TcPrecision::Bf16;
        assert_eq!(
            forward(sm, p, &dims, n, &xb, &vb, &col, Some(&bias)).unwrap(),
            fy
        );
        assert_eq!(grad_input(sm, p, &dims, n, &gyb, &vb, &col).unwrap(), fgx);
        assert_eq!(grad_values(sm, p, &dims, n, &xb, &gyb, &col).unwrap(), fgv);
        let p = TcPrecision::Tf32;
        assert_eq!(
            forward(sm, p, &dims, n, &x, &v, &col, Some(&bias)).unwrap(),
            fy
        );
        assert_eq!(grad_values(sm, p, &dims, n, &x, &gy, &col).unwrap(), fgv);
    }
}

#[test]
fn requests_are_checked() {
    let d16 = Dims::new(1, 1, 1, 16).unwrap();
    assert!(request::<u16>(Sm::Sm80, TcPrecision::F16, &d16).is_ok());
    assert!(request::<f32>(Sm::Sm80, TcPrecision::F16, &d16).is_err());
    assert!(request::<u16>(Sm::Sm80, TcPrecision::Tf32, &d16).is_err());
    let e = request::<u16>(Sm::Sm75, TcPrecision::Bf16, &d16).unwrap_err();
    assert!(matches!(
        e,
        Error::UnsupportedFeature {
            feature: Feature::MmaSync,
            sm: Sm::Sm75,
            ..
        }
    ));
    let d8 = Dims::new(1, 1, 1, 8).unwrap();
    assert!(request::<u16>(Sm::Sm90, TcPrecision::Bf16, &d8).is_err());
    // lengths
    let e = forward::<u16>(
        Sm::Sm80,
        TcPrecision::Bf16,
        &d16,
        2,
        &[0; 16],
        &[0; 256],
        &[0],
        None,
    )
    .unwrap_err();
    assert!(e.to_string().contains("x has 16 elements"), "{e}");
}
