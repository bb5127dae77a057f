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

/// The forward pass takes a row's entries by (input block, slot): for the
/// rows the topology tools build (blocks ascending) that is slot order, so
/// those topologies keep their bits; a row's distinct blocks may sit in
/// any slots (the same products, the same order).
#[test]
fn forward_order_is_by_input_block_then_slot() {
    use crate::kernels::block_ell::from_dense;
    let (r, c, b) = (3, 4, 16);
    let mask = [
        true, false, true, true, false, false, false, false, true, true, true, true,
    ];
    let dense: Vec<f32> = (0..r * b * c * b).map(|i| (i % 7) as f32).collect();
    let ell = from_dense(r, c, b, &dense, &mask).unwrap();
    let k = ell.dims.k();
    for row in 0..r {
        let slots: Vec<usize> = row_order(&ell.col, row, k).iter().map(|e| e.1).collect();
        let filled: Vec<usize> = (row * k..(row + 1) * k)
            .filter(|&s| ell.col[s] >= 0)
            .collect();
        assert_eq!(slots, filled, "row {row}");
    }
    // unsorted, with an empty slot
    assert_eq!(row_order(&[3, -1, 0, 1], 0, 4), [(0, 2), (1, 3), (3, 0)]);
    // a permuted row gives the same bits (values permuted with it)
    let dims = Dims::new(1, 3, 3, b).unwrap();
    let mut g = 1u32;
    let mut next = || {
        g = g.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let e = (g >> 27) as i32 - 16;
        f32::from_bits(g >> 9 | 0x3F80_0000) * 2f32.powi(e) - 1.0
    };
    let v: Vec<f32> = (0..dims.values_len()).map(|_| next()).collect();
    let x: Vec<f32> = (0..2 * dims.in_features()).map(|_| next()).collect();
    let (v, x) = (to_bf16(&v), to_bf16(&x));
    let bb = b * b;
    let perm = [2usize, 0, 1];
    let pcol: Vec<i32> = perm.iter().map(|&s| [0, 1, 2][s]).collect();
    let pv: Vec<u16> = perm
        .iter()
        .flat_map(|&s| v[s * bb..(s + 1) * bb].to_vec())
        .collect();
    for sm in [Sm::Sm80, Sm::Sm90] {
        let p = TcPrecision::Bf16;
        let a = forward(sm, p, &dims, 2, &x, &v, &[0, 1, 2], None).unwrap();
        let z = forward(sm, p, &dims, 2, &x, &pv, &pcol, None).unwrap();
        let bits = |y: &[f32]| y.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a), bits(&z), "{sm}");
    }
}
