//! Helpers shared by integration tests (`mod common;`).
#![allow(dead_code)]

use ptxsmith::runtime::Context;

/// The bits of each value, every NaN as `0x7FC00000`: kernels and host
/// models agree on "is NaN", not on NaN payloads.
pub fn bits(v: &[f32]) -> Vec<u32> {
    v.iter()
        .map(|f| if f.is_nan() { 0x7FC0_0000 } else { f.to_bits() })
        .collect()
}

/// Memory a foreign allocator owns: on the simulator, an allocation made
/// on the `Sim` directly, which no ptxsmith buffer knows about, holding
/// `data`. Returns its address.
pub fn foreign_put<T: bytemuck::Pod>(ctx: &Context, data: &[T]) -> u64 {
    ctx.with_sim(|sim| {
        let a = sim.alloc(std::mem::size_of_val(data).max(4)).unwrap();
        sim.write(a, bytemuck::cast_slice(data)).unwrap();
        a
    })
    .expect("a simulator context")
}

/// A foreign simulator allocation of `bytes` that nobody has written (the
/// simulator reports a read of it before a write).
pub fn foreign_alloc(ctx: &Context, bytes: usize) -> u64 {
    ctx.with_sim(|sim| sim.alloc(bytes).unwrap())
        .expect("a simulator context")
}

/// `n` elements read back from a foreign simulator allocation.
pub fn foreign_get<T: bytemuck::Pod>(ctx: &Context, addr: u64, n: usize) -> Vec<T> {
    let mut out = vec![T::zeroed(); n];
    ctx.with_sim(|sim| sim.read(addr, bytemuck::cast_slice_mut(&mut out)).unwrap())
        .expect("a simulator context");
    out
}

/// splitmix64: a small deterministic generator (seeded by hand or by
/// proptest) for test data.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    /// Values in (−16, 16) with varied exponents, so that the order of
    /// rounding shows.
    pub fn value(&mut self) -> f32 {
        let m = (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0;
        m * 2f32.powi(self.below(7) as i32 - 3)
    }
    pub fn values(&mut self, len: usize) -> Vec<f32> {
        (0..len).map(|_| self.value()).collect()
    }
}
