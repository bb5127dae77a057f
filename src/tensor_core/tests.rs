//! Unit tests: the SM table and a few blocks worked by hand. The model
//! against an independent exact reference, the recorded GPU outputs and the
//! conversions are tested in `tests/tensor_core_*.rs`.

use super::*;

const ONE_BF16: u32 = 0x3F80;
const ONE_F16: u32 = 0x3C00;

#[test]
fn sm_table() {
    assert_eq!(params(Sm::Sm70, InputFormat::F16), None);
    assert_eq!(params(Sm::Sm75, InputFormat::Bf16), None);
    for (sm, model) in [
        (Sm::Sm80, PublishedModel::A100),
        (Sm::Sm86, PublishedModel::A100),
        (Sm::Sm89, PublishedModel::Ada),
        (Sm::Sm90, PublishedModel::H100),
        (Sm::Sm100, PublishedModel::B200),
        (Sm::Sm100a, PublishedModel::B200),
        (Sm::Sm120, PublishedModel::B200),
        (Sm::Sm120a, PublishedModel::B200),
    ] {
        assert_eq!(published_model(sm), Some(model), "{sm}");
    }
    let w = |sm, f| params(sm, f).map(|p| (p.width, p.extra_align_bits, p.min_align_exp));
    assert_eq!(w(Sm::Sm80, InputFormat::Bf16), Some((8, 1, -132)));
    assert_eq!(w(Sm::Sm80, InputFormat::Tf32), Some((4, 1, -132)));
    assert_eq!(w(Sm::Sm89, InputFormat::F16), Some((8, 1, -132)));
    assert_eq!(w(Sm::Sm89, InputFormat::Tf32), Some((4, 1, -132)));
    assert_eq!(w(Sm::Sm90, InputFormat::F16), Some((16, 2, -133)));
    assert_eq!(w(Sm::Sm90, InputFormat::Tf32), Some((8, 2, -133)));
    assert_eq!(w(Sm::Sm100, InputFormat::Bf16), Some((16, 2, -133)));
    assert_eq!(w(Sm::Sm100a, InputFormat::Tf32), Some((8, 2, -133)));
    for sm in Sm::ALL {
        if let Some(p) = params(sm, InputFormat::F16) {
            assert_eq!(p.rounding, FinalRounding::TowardZero, "{sm}");
        }
    }
}

#[test]
fn small_sums_are_exact() {
    let p = params(Sm::Sm90, InputFormat::Bf16).unwrap();
    // 1 + 1·1 + 1·1 = 3
    let d = p.dot(1.0, [(ONE_BF16, ONE_BF16), (ONE_BF16, ONE_BF16)]);
    assert_eq!(d, 3.0);
    let p = params(Sm::Sm80, InputFormat::F16).unwrap();
    // 20 products of 1 over three blocks of 8, 8, 4
    let d = p.dot(0.5, std::iter::repeat_n((ONE_F16, ONE_F16), 20));
    assert_eq!(d, 20.5);
    // no products: c itself, signed zeros included
    assert_eq!(p.dot(-0.0, []).to_bits(), 0x8000_0000);
    assert_eq!(p.dot(1.25, []), 1.25);
}

#[test]
fn truncation_not_rounding() {
    // c = 1 and the product 1.5·2^-24: on H100 (neab 2) the aligned product
    // is 3·2^-25, i.e. 3/4 of c's ulp (2^-23); the sum 1 + 3·2^-25 is cut to
    // 1 (RZ) where RNE (the B200 "RN" variant) gives 1 + 2^-23.
    let p = params(Sm::Sm90, InputFormat::Bf16).unwrap();
    // a = 1.5·2^-12 (bf16 0x39C0), b = 2^-12 (0x3980)
    let d = p.dot(1.0, [(0x39C0, 0x3980)]);
    assert_eq!(d, 1.0);
    let rn = BlockFma::published(PublishedModel::B200Rn, InputFormat::Bf16);
    assert_eq!(rn.dot(1.0, [(0x39C0, 0x3980)]), 1.0 + f32::EPSILON);
}

#[test]
fn tile_shape_errors_name_the_matrix() {
    let e = mma(
        Sm::Sm90,
        InputFormat::F16,
        (2, 2, 2),
        &[0; 4],
        &[0; 3],
        &[0.0; 4],
    )
    .unwrap_err();
    assert_eq!(
        e,
        TensorCoreError::Shape {
            name: "B",
            len: 3,
            rows: 2,
            cols: 2
        }
    );
    let e = mma(Sm::Sm75, InputFormat::F16, (1, 1, 1), &[0], &[0], &[0.0]).unwrap_err();
    assert!(e.to_string().contains("sm_75"), "{e}");
    // 2x2 · 2x2 + 0 with f16 ones
    let d = mma(
        Sm::Sm80,
        InputFormat::F16,
        (2, 2, 2),
        &[ONE_F16, 0x4000, 0, ONE_F16],
        &[ONE_F16, ONE_F16, ONE_F16, 0],
        &[0.0; 4],
    )
    .unwrap();
    assert_eq!(d, vec![3.0, 1.0, 1.0, 0.0]);
}

#[test]
fn any_width_is_accepted() {
    // a width above the stack buffer (64) takes the allocating path; a
    // width of 0 is read as 1
    let base = params(Sm::Sm90, InputFormat::F16).unwrap();
    for width in [0, 1, 65, 100] {
        let p = BlockFma { width, ..base };
        let d = p.dot(0.25, std::iter::repeat_n((ONE_F16, ONE_F16), 130));
        assert_eq!(d, 130.25, "width {width}");
    }
}
