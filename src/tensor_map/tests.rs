use proptest::prelude::*;

use super::encoding::{DecodeError, decode, desc_from_codes};
use super::*;

fn valid() -> TiledDesc {
    TiledDesc::new(TensorDataType::F16, 0x1000, &[64, 40], &[128], &[32, 8]).swizzle(Swizzle::B64)
}

#[test]
fn every_invalid_field_is_named() {
    use TensorMapError as E;
    let v = valid();
    assert_eq!(v.validate(), Ok(()));
    assert_eq!(v.box_bytes(), 32 * 8 * 2);
    let cases: Vec<(TiledDesc, TensorMapError)> = vec![
        (
            TiledDesc::new(TensorDataType::U8, 0, &[], &[], &[]),
            E::Rank { rank: 0 },
        ),
        (
            TiledDesc::new(TensorDataType::U8, 0, &[16; 6], &[16; 5], &[16; 6]),
            E::Rank { rank: 6 },
        ),
        (
            TiledDesc {
                global_strides: vec![],
                ..v.clone()
            },
            E::Length {
                what: "global_strides",
                len: 0,
                rank: 2,
                needs: 1,
            },
        ),
        (
            TiledDesc {
                box_dims: vec![32],
                ..v.clone()
            },
            E::Length {
                what: "box_dims",
                len: 1,
                rank: 2,
                needs: 2,
            },
        ),
        (
            v.clone().element_strides(&[1, 1, 1]),
            E::Length {
                what: "element_strides",
                len: 3,
                rank: 2,
                needs: 2,
            },
        ),
        (
            v.clone().interleave(Interleave::B16),
            E::InterleaveRank {
                interleave: Interleave::B16,
                rank: 2,
            },
        ),
        (
            TiledDesc {
                global_address: 0x1008,
                ..v.clone()
            },
            E::Address {
                address: 0x1008,
                align: 16,
            },
        ),
        (
            TiledDesc {
                global_dims: vec![64, 0],
                ..v.clone()
            },
            E::GlobalDim { dim: 1, value: 0 },
        ),
        (
            TiledDesc {
                global_dims: vec![(1 << 32) + 1, 4],
                ..v.clone()
            },
            E::GlobalDim {
                dim: 0,
                value: (1 << 32) + 1,
            },
        ),
        (
            TiledDesc {
                global_strides: vec![136],
                ..v.clone()
            },
            E::GlobalStride {
                dim: 1,
                value: 136,
                multiple: 16,
            },
        ),
        (
            TiledDesc {
                global_strides: vec![1 << 40],
                ..v.clone()
            },
            E::GlobalStride {
                dim: 1,
                value: 1 << 40,
                multiple: 16,
            },
        ),
        (
            TiledDesc {
                box_dims: vec![32, 257],
                ..v.clone()
            },
            E::BoxDim { dim: 1, value: 257 },
        ),
        (
            TiledDesc {
                box_dims: vec![0, 8],
                ..v.clone()
            },
            E::BoxDim { dim: 0, value: 0 },
        ),
        (
            TiledDesc {
                box_dims: vec![12, 8],
                ..v.clone()
            },
            E::BoxInnerBytes { bytes: 24 },
        ),
        (
            TiledDesc {
                box_dims: vec![64, 8],
                ..v.clone()
            },
            E::BoxInnerSwizzle {
                bytes: 128,
                swizzle: Swizzle::B64,
                span: 64,
            },
        ),
        (
            v.clone().element_strides(&[1, 9]),
            E::ElementStride { dim: 1, value: 9 },
        ),
        (
            v.clone().element_strides(&[0, 1]),
            E::ElementStride { dim: 0, value: 0 },
        ),
        (
            TiledDesc::new(TensorDataType::U32, 0, &[8, 8, 8], &[32, 256], &[8, 8, 8])
                .interleave(Interleave::B32)
                .swizzle(Swizzle::B128),
            E::InterleaveSwizzle {
                swizzle: Swizzle::B128,
            },
        ),
        (
            TiledDesc::new(TensorDataType::S32, 0, &[8], &[], &[8]).oob_fill(OobFill::Nan),
            E::OobFill {
                dtype: TensorDataType::S32,
            },
        ),
    ];
    for (d, e) in cases {
        assert_eq!(d.validate(), Err(e.clone()), "{d:?}");
        assert_eq!(TensorMap::encode_private(&d), Err(e));
    }
}

#[test]
fn sim_context_encodes_privately_and_refuses_before_encoding() {
    let ctx = crate::runtime::Context::sim(crate::Sm::Sm90);
    let m = TensorMap::encode_tiled(&ctx, &valid()).unwrap();
    assert_eq!(m.decode_private().unwrap(), valid());
    assert_eq!(std::mem::size_of::<TensorMap>(), 128);
    assert_eq!(std::mem::align_of::<TensorMap>(), 64);
    let bad = TiledDesc {
        global_address: 8,
        ..valid()
    };
    match TensorMap::encode_tiled(&ctx, &bad) {
        Err(crate::Error::TensorMap(TensorMapError::Address {
            address: 8,
            align: 16,
        })) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn foreign_or_altered_bytes_do_not_decode() {
    let m = TensorMap::encode_private(&valid()).unwrap();
    let mut b = m.0;
    b[20] ^= 1;
    assert!(matches!(decode(&b), Err(DecodeError::Hash { .. })));
    // what a real driver writes starts otherwise
    let mut f = [0u8; 128];
    f[0] = 0x40;
    assert!(matches!(decode(&f), Err(DecodeError::Magic(_))));
    assert_eq!(decode(&[0; 64]), Err(DecodeError::Size(64)));
    let mut v = m.0;
    v[4] = 2;
    assert!(matches!(decode(&v), Err(DecodeError::Version(2))));
    assert_eq!(format!("{:?}", TensorMap(f)), "TensorMap(<opaque>)");
}

#[test]
fn raw_codes_are_checked() {
    let ok = desc_from_codes(6, 0x1000, &[64, 40], &[128], &[32, 8], &[1, 1], 0, 2, 0, 0);
    assert_eq!(ok, Ok(valid()));
    for (args, what, code) in [
        ((13, 0, 0, 0, 0), "data type", 13),
        ((6, 3, 0, 0, 0), "interleave", 3),
        ((6, 0, 4, 0, 0), "swizzle", 4),
        ((6, 0, 0, 4, 0), "L2 promotion", 4),
        ((6, 0, 0, 0, 2), "OOB fill", 2),
    ] {
        let (t, i, s, l, o) = args;
        let r = desc_from_codes(t, 0x1000, &[64, 40], &[128], &[32, 8], &[1, 1], i, s, l, o);
        assert_eq!(r, Err(TensorMapError::Code { what, code }));
    }
}

/// Hand-computed landings: the chunk index within each 128-byte row XORed
/// with the row's index within the pattern (bits 7.. of the address).
#[test]
fn swizzle_lands_where_the_pattern_says() {
    // 128B: row 0 unchanged, row 1 (addr 128..) chunk c -> c ^ 1, row 5
    // chunk 2 -> 2 ^ 5 = 7, row 8 is row 0 again (1024-byte pattern)
    assert_eq!(swizzle_offset(Swizzle::B128, 0x00), 0x00);
    assert_eq!(swizzle_offset(Swizzle::B128, 0x30 + 3), 0x33);
    assert_eq!(swizzle_offset(Swizzle::B128, 128), 128 + 16);
    assert_eq!(
        swizzle_offset(Swizzle::B128, 5 * 128 + 2 * 16 + 7),
        5 * 128 + 7 * 16 + 7
    );
    assert_eq!(swizzle_offset(Swizzle::B128, 1024 + 5), 1024 + 5);
    // 64B: two bits; row 3 chunk 1 -> 1 ^ 3 = 2; row 4 repeats row 0
    assert_eq!(swizzle_offset(Swizzle::B64, 3 * 128 + 16), 3 * 128 + 32);
    assert_eq!(
        swizzle_offset(Swizzle::B64, 3 * 128 + 64 + 16),
        3 * 128 + 64 + 32
    );
    assert_eq!(swizzle_offset(Swizzle::B64, 4 * 128 + 16), 4 * 128 + 16);
    // 32B: one bit; row 1 chunk 0 -> 1; row 2 repeats row 0
    assert_eq!(swizzle_offset(Swizzle::B32, 128), 144);
    assert_eq!(swizzle_offset(Swizzle::B32, 128 + 48 + 1), 128 + 32 + 1);
    assert_eq!(swizzle_offset(Swizzle::B32, 256 + 16), 256 + 16);
    assert_eq!(swizzle_offset(Swizzle::None, 12345), 12345);
    for s in Swizzle::ALL {
        for a in 0..4096 {
            assert_eq!(swizzle_offset(s, swizzle_offset(s, a)), a);
            // a chunk stays within its 128-byte row and keeps its byte
            assert_eq!(swizzle_offset(s, a) / 128, a / 128);
            assert_eq!(swizzle_offset(s, a) % 16, a % 16);
        }
    }
}

fn arb_valid() -> impl Strategy<Value = TiledDesc> {
    (1usize..=5, 0usize..13, 0usize..4, 0usize..4, any::<bool>())
        .prop_flat_map(|(rank, t, sw, l2, nan)| {
            let dtype = TensorDataType::ALL[t];
            let es = dtype.size_bytes();
            let swizzle = Swizzle::ALL[sw];
            let max_inner = swizzle.span_bytes().unwrap_or(256 * es).min(256 * es);
            let chunks = max_inner / 16;
            (
                Just((rank, dtype, swizzle, l2, nan)),
                0u64..1 << 30,
                prop::collection::vec(1u64..=1 << 32, rank),
                prop::collection::vec(1u64..1 << 36, rank - 1),
                1u32..=chunks,
                prop::collection::vec(1u32..=256, rank - 1),
                prop::collection::vec(1u32..=8, rank),
            )
        })
        .prop_map(
            |((rank, dtype, swizzle, l2, nan), a, dims, strides, inner, boxes, el)| {
                let mut b = vec![inner * 16 / dtype.size_bytes()];
                b.extend(boxes);
                let _ = rank;
                TiledDesc {
                    dtype,
                    global_address: a * 16,
                    global_dims: dims,
                    global_strides: strides.iter().map(|s| s * 16).collect(),
                    box_dims: b,
                    element_strides: el,
                    interleave: Interleave::None,
                    swizzle,
                    l2_promotion: [
                        L2Promotion::None,
                        L2Promotion::B64,
                        L2Promotion::B128,
                        L2Promotion::B256,
                    ][l2],
                    oob_fill: if nan && dtype.is_float() {
                        OobFill::Nan
                    } else {
                        OobFill::Zero
                    },
                }
            },
        )
}

proptest! {
    #[test]
    fn valid_descriptors_round_trip(d in arb_valid()) {
        prop_assert_eq!(d.validate(), Ok(()));
        let m = TensorMap::encode_private(&d).unwrap();
        prop_assert_eq!(m.decode_private().unwrap(), d);
    }

    #[test]
    fn one_bad_field_is_refused_by_name(d in arb_valid(), which in 0usize..6, k in 0usize..5, x in any::<u64>()) {
        use TensorMapError as E;
        let mut d = d;
        let r = d.rank();
        let k = k % r;
        let expect = match which {
            0 => {
                d.global_address = d.global_address + 1 + x % 15;
                E::Address { address: d.global_address, align: 16 }
            }
            1 => {
                d.global_dims[k] = if x % 2 == 0 { 0 } else { (1 << 32) + 1 + x % 1000 };
                E::GlobalDim { dim: k, value: d.global_dims[k] }
            }
            2 if r > 1 => {
                let j = k % (r - 1);
                d.global_strides[j] = if x % 2 == 0 { 16 * (x % 1000) + 1 + x % 15 } else { (1 << 40) + 16 * (x % 1000) };
                E::GlobalStride { dim: j + 1, value: d.global_strides[j], multiple: 16 }
            }
            3 if k > 0 => {
                d.box_dims[k] = if x % 2 == 0 { 0 } else { 257 + (x % 100) as u32 };
                E::BoxDim { dim: k, value: d.box_dims[k] }
            }
            4 => {
                d.element_strides[k] = if x % 2 == 0 { 0 } else { 9 + (x % 100) as u32 };
                E::ElementStride { dim: k, value: d.element_strides[k] }
            }
            _ => {
                let es = u64::from(d.dtype.size_bytes());
                match d.swizzle.span_bytes() {
                    Some(span) => {
                        d.box_dims[0] = ((u64::from(span) + 16) / es) as u32;
                        E::BoxInnerSwizzle { bytes: u64::from(d.box_dims[0]) * es, swizzle: d.swizzle, span }
                    }
                    None if es < 16 => {
                        d.box_dims[0] = (16 / es + 1) as u32;
                        E::BoxInnerBytes { bytes: u64::from(d.box_dims[0]) * es }
                    }
                    None => return Ok(()),
                }
            }
        };
        prop_assert_eq!(d.validate(), Err(expect.clone()));
        prop_assert_eq!(TensorMap::encode_private(&d), Err(expect));
    }
}
