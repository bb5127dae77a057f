//! The shared-memory swizzle of a tensor-map copy.
//!
//! The swizzle permutes the 16-byte chunks of each swizzle span by the
//! row index within the pattern, on the **shared-memory byte address**:
//! bits 4.. of the address (the 16-byte chunk) are XORed with bits 7.. (the
//! 128-byte row), one bit for 32B, two for 64B, three for 128B — CuTe's
//! `Swizzle<1,4,3>`, `Swizzle<2,4,3>` and `Swizzle<3,4,3>`, the byte
//! swizzles CUTLASS maps to `CU_TENSOR_MAP_SWIZZLE_32B/64B/128B`
//! (`include/cute/atom/copy_traits_sm90_tma_swizzle.hpp`,
//! `get_tma_swizzle_bits`: `M == 4`, `S == 3`, `B` = 1, 2, 3). The
//! pattern repeats every 256, 512 and 1024 bytes, so a copy's destination
//! is aligned to that ([`Swizzle::pattern_bytes`]; the PTX ISA's
//! "Tensor swizzling modes" and the CUDA C++ Programming Guide's TMA
//! swizzle section describe these modes; their text was not at hand here,
//! so the definition rests on CUTLASS's mapping and awaits a GPU check).

use super::Swizzle;

/// The shared-memory byte address where the byte that lands at `addr`
/// unswizzled goes with `swizzle` (an involution: applying it again
/// gives `addr` back).
pub fn swizzle_offset(swizzle: Swizzle, addr: u32) -> u32 {
    let bits = match swizzle {
        Swizzle::None => return addr,
        Swizzle::B32 => 1,
        Swizzle::B64 => 2,
        Swizzle::B128 => 3,
    };
    let mask = ((1u32 << bits) - 1) << 7;
    addr ^ ((addr & mask) >> 3)
}
