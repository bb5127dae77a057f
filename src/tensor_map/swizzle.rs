//! The shared-memory swizzle of a tensor-map copy.
//!
//! The swizzle permutes the 16-byte chunks of each swizzle span by the
//! row index within the pattern, on the **shared-memory byte address**:
//! bits 4.. of the address (the 16-byte chunk) are XORed with bits 7.. (the
//! 128-byte row), one bit for 32B, two for 64B, three for 128B — CuTe's
//! `Swizzle<1,4,3>`, `Swizzle<2,4,3>` and `Swizzle<3,4,3>` (CUDA C++
//! Programming Guide, "Tensor Memory Access": "Shared memory bank swizzling";
//! PTX ISA 8.x "Tensor": "Tensor swizzling modes"). The pattern repeats
//! every 256, 512 and 1024 bytes, so a copy's destination is aligned to
//! that ([`Swizzle::pattern_bytes`]).

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
