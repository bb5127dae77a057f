//! ptxsmith's private encoding of a tiled tensor map (one definition: the
//! simulator, [`TensorMap::encode_private`](super::TensorMap::encode_private)
//! and the CUDA driver emulator's `cuTensorMapEncodeTiled` all use this
//! module). A real driver's `CUtensorMap` is opaque and laid out
//! differently; [`decode`] refuses it ([`DecodeError`]).
//!
//! Layout of the 128 bytes (little-endian):
//!
//! | bytes    | field                                                      |
//! |----------|------------------------------------------------------------|
//! | 0..4     | magic `PXTM`                                               |
//! | 4..6     | version (1)                                                |
//! | 6        | data type (the CUDA code)                                  |
//! | 7        | rank                                                       |
//! | 8        | interleave, 9 swizzle, 10 L2 promotion, 11 OOB fill (codes)|
//! | 12..16   | zero                                                       |
//! | 16..24   | global address                                             |
//! | 24..64   | global dimensions, 5 × u64 (unused ones zero)              |
//! | 64..96   | global strides of dimensions 1..4, 4 × u64                 |
//! | 96..106  | box dimensions, 5 × u16                                    |
//! | 106..111 | element strides, 5 × u8                                    |
//! | 111..124 | zero                                                       |
//! | 124..128 | FNV-1a hash of bytes 0..124                                |

use super::{Interleave, L2Promotion, OobFill, Swizzle, TensorDataType, TensorMapError, TiledDesc};

/// The magic word.
pub const MAGIC: [u8; 4] = *b"PXTM";
/// The encoding's version.
pub const VERSION: u16 = 1;

/// Why 128 bytes are not a privately encoded tensor map.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Not 128 bytes.
    #[error("a tensor map is 128 bytes, not {0}")]
    Size(usize),
    /// No magic word: not encoded by ptxsmith (a real driver's map is
    /// opaque) or not a map at all.
    #[error(
        "not a tensor map of ptxsmith's private encoding (magic {0:02x?}; a map the real driver encoded is opaque to the simulator)"
    )]
    Magic([u8; 4]),
    /// Another version.
    #[error("tensor map encoding version {0} (this build reads {VERSION})")]
    Version(u16),
    /// The hash does not match (the bytes were altered).
    #[error("tensor map hash {found:#010x} does not match its bytes ({expected:#010x})")]
    Hash {
        /// The stored hash.
        found: u32,
        /// The bytes' hash.
        expected: u32,
    },
    /// The fields do not describe a valid map.
    #[error("tensor map fields: {0}")]
    Invalid(#[from] TensorMapError),
}

fn fnv1a(b: &[u8]) -> u32 {
    b.iter().fold(0x811c_9dc5u32, |h, &x| {
        (h ^ u32::from(x)).wrapping_mul(0x0100_0193)
    })
}

/// Encode a description ([`TiledDesc::validate`]d first: the bytes of an
/// invalid one decode to its error).
pub fn encode(d: &TiledDesc) -> [u8; 128] {
    let mut b = [0u8; 128];
    b[0..4].copy_from_slice(&MAGIC);
    b[4..6].copy_from_slice(&VERSION.to_le_bytes());
    b[6] = d.dtype as u8;
    b[7] = d.rank() as u8;
    b[8] = d.interleave as u8;
    b[9] = d.swizzle as u8;
    b[10] = d.l2_promotion as u8;
    b[11] = d.oob_fill as u8;
    b[16..24].copy_from_slice(&d.global_address.to_le_bytes());
    for (k, v) in d.global_dims.iter().enumerate() {
        b[24 + 8 * k..32 + 8 * k].copy_from_slice(&v.to_le_bytes());
    }
    for (k, v) in d.global_strides.iter().enumerate() {
        b[64 + 8 * k..72 + 8 * k].copy_from_slice(&v.to_le_bytes());
    }
    for (k, v) in d.box_dims.iter().enumerate() {
        b[96 + 2 * k..98 + 2 * k].copy_from_slice(&(*v as u16).to_le_bytes());
    }
    for (k, v) in d.element_strides.iter().enumerate() {
        b[106 + k] = *v as u8;
    }
    let h = fnv1a(&b[..124]);
    b[124..].copy_from_slice(&h.to_le_bytes());
    b
}

fn code<T: Copy>(what: &'static str, all: &[T], c: u8) -> Result<T, TensorMapError> {
    all.get(c as usize).copied().ok_or(TensorMapError::Code {
        what,
        code: u32::from(c),
    })
}

/// Decode (and validate) a privately encoded map.
pub fn decode(b: &[u8]) -> Result<TiledDesc, DecodeError> {
    let b: &[u8; 128] = b.try_into().map_err(|_| DecodeError::Size(b.len()))?;
    let magic: [u8; 4] = b[0..4].try_into().expect("4 bytes");
    if magic != MAGIC {
        return Err(DecodeError::Magic(magic));
    }
    let v = u16::from_le_bytes([b[4], b[5]]);
    if v != VERSION {
        return Err(DecodeError::Version(v));
    }
    let found = u32::from_le_bytes(b[124..].try_into().expect("4 bytes"));
    let expected = fnv1a(&b[..124]);
    if found != expected {
        return Err(DecodeError::Hash { found, expected });
    }
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
    let rank = b[7] as usize;
    if !(1..=super::MAX_RANK).contains(&rank) {
        return Err(TensorMapError::Rank { rank }.into());
    }
    let dtype = TensorDataType::from_code(u32::from(b[6])).ok_or(TensorMapError::Code {
        what: "data type",
        code: u32::from(b[6]),
    })?;
    let d = TiledDesc {
        dtype,
        global_address: u64_at(16),
        global_dims: (0..rank).map(|k| u64_at(24 + 8 * k)).collect(),
        global_strides: (0..rank - 1).map(|k| u64_at(64 + 8 * k)).collect(),
        box_dims: (0..rank)
            .map(|k| u32::from(u16::from_le_bytes([b[96 + 2 * k], b[97 + 2 * k]])))
            .collect(),
        element_strides: (0..rank).map(|k| u32::from(b[106 + k])).collect(),
        interleave: code(
            "interleave",
            &[Interleave::None, Interleave::B16, Interleave::B32],
            b[8],
        )?,
        swizzle: code("swizzle", &Swizzle::ALL, b[9])?,
        l2_promotion: code(
            "L2 promotion",
            &[
                L2Promotion::None,
                L2Promotion::B64,
                L2Promotion::B128,
                L2Promotion::B256,
            ],
            b[10],
        )?,
        oob_fill: code("OOB fill", &[OobFill::Zero, OobFill::Nan], b[11])?,
    };
    d.validate()?;
    Ok(d)
}

/// The description of `cuTensorMapEncodeTiled`'s raw arguments (the CUDA
/// enum codes; the arrays already read for `rank` entries), or the field
/// at fault. The emulator's entry point calls it after reading its
/// pointers.
#[allow(clippy::too_many_arguments)]
pub fn desc_from_codes(
    dtype: u32,
    global_address: u64,
    global_dims: &[u64],
    global_strides: &[u64],
    box_dims: &[u32],
    element_strides: &[u32],
    interleave: u32,
    swizzle: u32,
    l2_promotion: u32,
    oob_fill: u32,
) -> Result<TiledDesc, TensorMapError> {
    let c = |what, code: u32, n: u32| {
        if code < n {
            Ok(code as u8)
        } else {
            Err(TensorMapError::Code { what, code })
        }
    };
    let dtype = TensorDataType::from_code(dtype).ok_or(TensorMapError::Code {
        what: "data type",
        code: dtype,
    })?;
    let d = TiledDesc {
        dtype,
        global_address,
        global_dims: global_dims.to_vec(),
        global_strides: global_strides.to_vec(),
        box_dims: box_dims.to_vec(),
        element_strides: element_strides.to_vec(),
        interleave: [Interleave::None, Interleave::B16, Interleave::B32]
            [c("interleave", interleave, 3)? as usize],
        swizzle: Swizzle::ALL[c("swizzle", swizzle, 4)? as usize],
        l2_promotion: [
            L2Promotion::None,
            L2Promotion::B64,
            L2Promotion::B128,
            L2Promotion::B256,
        ][c("L2 promotion", l2_promotion, 4)? as usize],
        oob_fill: [OobFill::Zero, OobFill::Nan][c("OOB fill", oob_fill, 2)? as usize],
    };
    d.validate()?;
    Ok(d)
}
