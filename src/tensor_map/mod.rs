//! Tensor maps (`CUtensorMap`): the descriptors of the tensor-memory-access
//! copies (`cp.async.bulk.tensor`, sm_90), issue 31.
//!
//! A [`TiledDesc`] describes a tiled view of a tensor in global memory
//! (what `cuTensorMapEncodeTiled` takes); [`TiledDesc::validate`] checks it
//! against the requirements the CUDA driver API documents for
//! `cuTensorMapEncodeTiled` (CUDA Driver API, "Tensor Map Object
//! Managment", <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TENSOR__MEMORY.html>)
//! and names the field at fault ([`TensorMapError`]); nothing is encoded
//! when it fails. [`TensorMap::encode_tiled`] encodes on a context: the
//! real driver's `cuTensorMapEncodeTiled` on a CUDA device (its 128 bytes
//! are opaque), ptxsmith's private encoding ([`encoding`]) on the simulator.
//! The CUDA driver emulator (`cuda-emu`) writes the same private encoding
//! from its `cuTensorMapEncodeTiled`, and the simulator decodes it from a
//! kernel's `.param .align 64 .b8 name[128]` parameter; a map the real
//! driver encoded is not readable by the simulator (a finding, not a
//! crash).
//!
//! Dimension order is CUDA's: dimension 0 is the innermost (contiguous)
//! one; `global_strides[i]` is the byte stride of dimension `i + 1`.

pub mod encoding;
pub mod swizzle;

#[cfg(test)]
mod tests;

use crate::error::Result;
use crate::runtime::{Context, DeviceKind};

pub use swizzle::swizzle_offset;

/// The largest tensor rank.
pub const MAX_RANK: usize = 5;

/// `CUtensorMapDataType` (the CUDA codes 0 to 12; the packed sub-byte
/// types of CUDA 12.8 are not supported).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum TensorDataType {
    /// `CU_TENSOR_MAP_DATA_TYPE_UINT8`
    U8 = 0,
    /// `CU_TENSOR_MAP_DATA_TYPE_UINT16`
    U16 = 1,
    /// `CU_TENSOR_MAP_DATA_TYPE_UINT32`
    U32 = 2,
    /// `CU_TENSOR_MAP_DATA_TYPE_INT32`
    S32 = 3,
    /// `CU_TENSOR_MAP_DATA_TYPE_UINT64`
    U64 = 4,
    /// `CU_TENSOR_MAP_DATA_TYPE_INT64`
    S64 = 5,
    /// `CU_TENSOR_MAP_DATA_TYPE_FLOAT16`
    F16 = 6,
    /// `CU_TENSOR_MAP_DATA_TYPE_FLOAT32`
    F32 = 7,
    /// `CU_TENSOR_MAP_DATA_TYPE_FLOAT64`
    F64 = 8,
    /// `CU_TENSOR_MAP_DATA_TYPE_BFLOAT16`
    Bf16 = 9,
    /// `CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ`
    F32Ftz = 10,
    /// `CU_TENSOR_MAP_DATA_TYPE_TFLOAT32`
    Tf32 = 11,
    /// `CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ`
    Tf32Ftz = 12,
}

impl TensorDataType {
    /// Every type, in code order.
    pub const ALL: [TensorDataType; 13] = [
        Self::U8,
        Self::U16,
        Self::U32,
        Self::S32,
        Self::U64,
        Self::S64,
        Self::F16,
        Self::F32,
        Self::F64,
        Self::Bf16,
        Self::F32Ftz,
        Self::Tf32,
        Self::Tf32Ftz,
    ];

    /// The element size in bytes.
    pub fn size_bytes(self) -> u32 {
        match self {
            Self::U8 => 1,
            Self::U16 | Self::F16 | Self::Bf16 => 2,
            Self::U32 | Self::S32 | Self::F32 | Self::F32Ftz | Self::Tf32 | Self::Tf32Ftz => 4,
            Self::U64 | Self::S64 | Self::F64 => 8,
        }
    }

    /// Whether it is a floating-point type (NaN fill is allowed).
    pub fn is_float(self) -> bool {
        !matches!(
            self,
            Self::U8 | Self::U16 | Self::U32 | Self::S32 | Self::U64 | Self::S64
        )
    }

    /// The type of a CUDA code.
    pub fn from_code(c: u32) -> Option<Self> {
        Self::ALL.get(c as usize).copied()
    }
}

/// `CUtensorMapInterleave`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Interleave {
    /// `CU_TENSOR_MAP_INTERLEAVE_NONE`
    None = 0,
    /// `CU_TENSOR_MAP_INTERLEAVE_16B`
    B16 = 1,
    /// `CU_TENSOR_MAP_INTERLEAVE_32B`
    B32 = 2,
}

/// `CUtensorMapSwizzle`: how the box lands in shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Swizzle {
    /// `CU_TENSOR_MAP_SWIZZLE_NONE`: row-major, as in global memory.
    None = 0,
    /// `CU_TENSOR_MAP_SWIZZLE_32B`
    B32 = 1,
    /// `CU_TENSOR_MAP_SWIZZLE_64B`
    B64 = 2,
    /// `CU_TENSOR_MAP_SWIZZLE_128B`
    B128 = 3,
}

impl Swizzle {
    /// Every mode, in code order.
    pub const ALL: [Swizzle; 4] = [Self::None, Self::B32, Self::B64, Self::B128];

    /// The swizzle span in bytes (32, 64, 128), `None` unswizzled.
    pub fn span_bytes(self) -> Option<u32> {
        match self {
            Self::None => None,
            Self::B32 => Some(32),
            Self::B64 => Some(64),
            Self::B128 => Some(128),
        }
    }

    /// The bytes after which the pattern repeats (256, 512, 1024; 16
    /// unswizzled): a swizzled destination is aligned to it.
    pub fn pattern_bytes(self) -> u32 {
        self.span_bytes().map_or(16, |s| s * 8)
    }
}

/// `CUtensorMapL2promotion` (a hint; the simulator ignores it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum L2Promotion {
    /// `CU_TENSOR_MAP_L2_PROMOTION_NONE`
    None = 0,
    /// `CU_TENSOR_MAP_L2_PROMOTION_L2_64B`
    B64 = 1,
    /// `CU_TENSOR_MAP_L2_PROMOTION_L2_128B`
    B128 = 2,
    /// `CU_TENSOR_MAP_L2_PROMOTION_L2_256B`
    B256 = 3,
}

/// `CUtensorMapFloatOOBfill`: what lands for elements outside the tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum OobFill {
    /// `CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE`: zeros.
    Zero = 0,
    /// `CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA`: NaNs (float
    /// types only).
    Nan = 1,
}

/// A descriptor's field refused by [`TiledDesc::validate`] (the
/// requirements of `cuTensorMapEncodeTiled` in the CUDA Driver API
/// documentation), naming the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TensorMapError {
    /// The rank (`global_dims.len()`) is not 1 to 5.
    #[error("tensor rank {rank} (1 to 5)")]
    Rank {
        /// The rank.
        rank: usize,
    },
    /// An array's length does not match the rank.
    #[error("{what} has {len} entries; rank {rank} needs {needs}")]
    Length {
        /// The array.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The rank.
        rank: usize,
        /// The length needed.
        needs: usize,
    },
    /// Interleaved layouts need rank 3 or more.
    #[error("interleave {interleave:?} needs rank 3 or more, not {rank}")]
    InterleaveRank {
        /// The interleave.
        interleave: Interleave,
        /// The rank.
        rank: usize,
    },
    /// The global address is not aligned.
    #[error("global address {address:#x} is not {align}-byte aligned")]
    Address {
        /// The address.
        address: u64,
        /// The alignment needed (16; 32 with 32-byte interleave).
        align: u64,
    },
    /// A global dimension is 0 or above 2³².
    #[error("global dimension {dim} is {value} (1 to 2^32)")]
    GlobalDim {
        /// The dimension.
        dim: usize,
        /// Its size.
        value: u64,
    },
    /// A global stride is not a multiple of 16 (32 with 32-byte
    /// interleave) or not below 2⁴⁰.
    #[error(
        "global stride of dimension {dim} is {value} bytes (a multiple of {multiple} below 2^40)"
    )]
    GlobalStride {
        /// The dimension (1 to rank − 1).
        dim: usize,
        /// The stride in bytes.
        value: u64,
        /// The multiple needed.
        multiple: u64,
    },
    /// A box dimension is 0 or above 256.
    #[error("box dimension {dim} is {value} (1 to 256)")]
    BoxDim {
        /// The dimension.
        dim: usize,
        /// Its size.
        value: u32,
    },
    /// The box's inner dimension in bytes is not a multiple of 16
    /// (without interleave).
    #[error("box inner dimension is {bytes} bytes (a multiple of 16)")]
    BoxInnerBytes {
        /// `box_dims[0] × element size`.
        bytes: u64,
    },
    /// The box's inner dimension in bytes exceeds the swizzle span.
    #[error(
        "box inner dimension is {bytes} bytes, above the {span}-byte span of swizzle {swizzle:?}"
    )]
    BoxInnerSwizzle {
        /// `box_dims[0] × element size`.
        bytes: u64,
        /// The swizzle.
        swizzle: Swizzle,
        /// Its span in bytes.
        span: u32,
    },
    /// An element stride is 0 or above 8.
    #[error("element stride of dimension {dim} is {value} (1 to 8)")]
    ElementStride {
        /// The dimension.
        dim: usize,
        /// The stride.
        value: u32,
    },
    /// 32-byte interleave needs the 32-byte swizzle.
    #[error("interleave B32 needs swizzle B32, not {swizzle:?}")]
    InterleaveSwizzle {
        /// The swizzle given.
        swizzle: Swizzle,
    },
    /// NaN fill on an integer type.
    #[error("out-of-bounds NaN fill on the integer type {dtype:?}")]
    OobFill {
        /// The data type.
        dtype: TensorDataType,
    },
    /// A CUDA enum code that names no value (the emulator's entry point).
    #[error("{what} code {code} names no value")]
    Code {
        /// The enum.
        what: &'static str,
        /// The code.
        code: u32,
    },
}

/// A tiled tensor map's description: `cuTensorMapEncodeTiled`'s arguments
/// (the rank is `global_dims.len()`). Made with [`TiledDesc::new`] and the
/// builder methods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TiledDesc {
    /// The element type.
    pub dtype: TensorDataType,
    /// The tensor's address in global memory.
    pub global_address: u64,
    /// Its size per dimension (innermost first).
    pub global_dims: Vec<u64>,
    /// The byte strides of dimensions 1 to rank − 1.
    pub global_strides: Vec<u64>,
    /// The box (the tile one copy moves) per dimension.
    pub box_dims: Vec<u32>,
    /// The traversal strides per dimension (1: every element).
    pub element_strides: Vec<u32>,
    /// The interleave.
    pub interleave: Interleave,
    /// The shared-memory swizzle.
    pub swizzle: Swizzle,
    /// The L2 promotion hint.
    pub l2_promotion: L2Promotion,
    /// The out-of-bounds fill.
    pub oob_fill: OobFill,
}

impl TiledDesc {
    /// A tensor of `dtype` at `global_address` with `global_dims`, byte
    /// strides `global_strides` (dimensions 1 up) and box `box_dims`;
    /// element strides 1, no interleave or swizzle, no L2 promotion, zero
    /// fill.
    pub fn new(
        dtype: TensorDataType,
        global_address: u64,
        global_dims: &[u64],
        global_strides: &[u64],
        box_dims: &[u32],
    ) -> Self {
        TiledDesc {
            dtype,
            global_address,
            global_dims: global_dims.to_vec(),
            global_strides: global_strides.to_vec(),
            box_dims: box_dims.to_vec(),
            element_strides: vec![1; global_dims.len()],
            interleave: Interleave::None,
            swizzle: Swizzle::None,
            l2_promotion: L2Promotion::None,
            oob_fill: OobFill::Zero,
        }
    }

    /// With these element strides.
    pub fn element_strides(mut self, s: &[u32]) -> Self {
        self.element_strides = s.to_vec();
        self
    }

    /// With this interleave.
    pub fn interleave(mut self, i: Interleave) -> Self {
        self.interleave = i;
        self
    }

    /// With this swizzle.
    pub fn swizzle(mut self, s: Swizzle) -> Self {
        self.swizzle = s;
        self
    }

    /// With this L2 promotion.
    pub fn l2_promotion(mut self, p: L2Promotion) -> Self {
        self.l2_promotion = p;
        self
    }

    /// With this out-of-bounds fill.
    pub fn oob_fill(mut self, f: OobFill) -> Self {
        self.oob_fill = f;
        self
    }

    /// The rank.
    pub fn rank(&self) -> usize {
        self.global_dims.len()
    }

    /// The elements the box holds along dimension `d` (the box traversed
    /// with the element stride; dimension 0's stride is ignored without
    /// interleave, as the driver documents).
    pub fn box_elems(&self, d: usize) -> u32 {
        let s = if d == 0 && self.interleave == Interleave::None {
            1
        } else {
            self.element_strides[d]
        };
        self.box_dims[d].div_ceil(s)
    }

    /// The bytes one copy of the box writes to shared memory (the
    /// complete-tx count, filled elements included).
    pub fn box_bytes(&self) -> u64 {
        (0..self.rank())
            .map(|d| u64::from(self.box_elems(d)))
            .product::<u64>()
            * u64::from(self.dtype.size_bytes())
    }

    /// Check the description against `cuTensorMapEncodeTiled`'s documented
    /// requirements (the first field at fault).
    pub fn validate(&self) -> std::result::Result<(), TensorMapError> {
        use TensorMapError as E;
        let rank = self.rank();
        if !(1..=MAX_RANK).contains(&rank) {
            return Err(E::Rank { rank });
        }
        for (what, len, needs) in [
            ("global_strides", self.global_strides.len(), rank - 1),
            ("box_dims", self.box_dims.len(), rank),
            ("element_strides", self.element_strides.len(), rank),
        ] {
            if len != needs {
                return Err(E::Length {
                    what,
                    len,
                    rank,
                    needs,
                });
            }
        }
        if self.interleave != Interleave::None && rank < 3 {
            return Err(E::InterleaveRank {
                interleave: self.interleave,
                rank,
            });
        }
        let align = if self.interleave == Interleave::B32 {
            32
        } else {
            16
        };
        if !self.global_address.is_multiple_of(align) {
            return Err(E::Address {
                address: self.global_address,
                align,
            });
        }
        for (dim, &value) in self.global_dims.iter().enumerate() {
            if value == 0 || value > 1 << 32 {
                return Err(E::GlobalDim { dim, value });
            }
        }
        for (k, &value) in self.global_strides.iter().enumerate() {
            if !value.is_multiple_of(align) || value >= 1 << 40 {
                return Err(E::GlobalStride {
                    dim: k + 1,
                    value,
                    multiple: align,
                });
            }
        }
        for (dim, &value) in self.box_dims.iter().enumerate() {
            if value == 0 || value > 256 {
                return Err(E::BoxDim { dim, value });
            }
        }
        let inner = u64::from(self.box_dims[0]) * u64::from(self.dtype.size_bytes());
        if self.interleave == Interleave::None {
            if !inner.is_multiple_of(16) {
                return Err(E::BoxInnerBytes { bytes: inner });
            }
            if let Some(span) = self.swizzle.span_bytes()
                && inner > u64::from(span)
            {
                return Err(E::BoxInnerSwizzle {
                    bytes: inner,
                    swizzle: self.swizzle,
                    span,
                });
            }
        }
        for (dim, &value) in self.element_strides.iter().enumerate() {
            if value == 0 || value > 8 {
                return Err(E::ElementStride { dim, value });
            }
        }
        if self.interleave == Interleave::B32 && self.swizzle != Swizzle::B32 {
            return Err(E::InterleaveSwizzle {
                swizzle: self.swizzle,
            });
        }
        if self.oob_fill == OobFill::Nan && !self.dtype.is_float() {
            return Err(E::OobFill { dtype: self.dtype });
        }
        Ok(())
    }
}

/// A `CUtensorMap`: 128 bytes, 64-byte aligned, passed to a kernel by
/// value (a `.param .align 64 .b8 name[128]` parameter).
#[repr(C, align(64))]
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct TensorMap(pub [u8; 128]);

impl std::fmt::Debug for TensorMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match encoding::decode(&self.0) {
            Ok(d) => f.debug_tuple("TensorMap").field(&d).finish(),
            Err(_) => f.write_str("TensorMap(<opaque>)"),
        }
    }
}

impl TensorMap {
    /// Encode `desc` for `ctx`: validate it ([`TiledDesc::validate`],
    /// [`crate::Error::TensorMap`] naming the field; nothing is called
    /// then), then the driver's `cuTensorMapEncodeTiled` on a CUDA device
    /// (its result code as [`crate::Error::Driver`]) or the private
    /// encoding ([`encoding`]) on the simulator.
    pub fn encode_tiled(ctx: &Context, desc: &TiledDesc) -> Result<TensorMap> {
        desc.validate()?;
        match ctx.kind() {
            DeviceKind::Sim => Ok(Self::encode_private(desc)?),
            DeviceKind::Cuda { .. } => {
                ctx.make_current()?;
                let mut m = TensorMap([0; 128]);
                crate::runtime::gpu::ffi::tensor_map_encode_tiled(&mut m, desc)
                    .map_err(|e| crate::runtime::gpu::driver_error("cuTensorMapEncodeTiled", e))?;
                Ok(m)
            }
        }
    }

    /// Validate `desc` and write ptxsmith's private encoding (what the
    /// simulator and the CUDA driver emulator read).
    pub fn encode_private(desc: &TiledDesc) -> std::result::Result<TensorMap, TensorMapError> {
        desc.validate()?;
        Ok(TensorMap(encoding::encode(desc)))
    }

    /// The description of a privately encoded map.
    pub fn decode_private(&self) -> std::result::Result<TiledDesc, encoding::DecodeError> {
        encoding::decode(&self.0)
    }
}
