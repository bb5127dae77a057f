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

/// Driver allocations made by [`foreign_put`] / [`foreign_alloc`] on a CUDA
/// context, by address: a foreign allocator's memory, kept for the life of
/// the test process.
static DRIVER_MEMORY: std::sync::Mutex<
    std::collections::BTreeMap<u64, oxicuda_memory::DeviceBuffer<u8>>,
> = std::sync::Mutex::new(std::collections::BTreeMap::new());

fn driver_buffer(buf: oxicuda_memory::DeviceBuffer<u8>) -> u64 {
    let addr = buf.as_device_ptr();
    DRIVER_MEMORY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(addr, buf);
    addr
}

/// Memory a foreign allocator owns, holding `data`: on the simulator an
/// allocation made on the `Sim` directly, which no ptxsmith buffer knows
/// about; on a CUDA context a plain driver allocation (`cuMemAlloc` in the
/// context, which is made current) filled with `cuMemcpyHtoD`, the way
/// another CUDA stack's memory looks to the raw entry points. Returns its
/// address.
pub fn foreign_put<T: bytemuck::Pod>(ctx: &Context, data: &[T]) -> u64 {
    let bytes: &[u8] = bytemuck::cast_slice(data);
    if let Some(a) = ctx.with_sim(|sim| {
        let a = sim.alloc(bytes.len().max(4)).unwrap();
        sim.write(a, bytes).unwrap();
        a
    }) {
        return a;
    }
    ctx.make_current().unwrap();
    let mut padded = bytes.to_vec();
    padded.resize(bytes.len().max(4), 0);
    // `from_host` waits for the legacy stream, so work on any stream sees
    // the bytes.
    driver_buffer(oxicuda_memory::DeviceBuffer::from_host(&padded).unwrap())
}

/// A foreign allocation of `bytes` that nobody has written (the simulator
/// reports a read of it before a write).
pub fn foreign_alloc(ctx: &Context, bytes: usize) -> u64 {
    if let Some(a) = ctx.with_sim(|sim| sim.alloc(bytes).unwrap()) {
        return a;
    }
    ctx.make_current().unwrap();
    driver_buffer(oxicuda_memory::DeviceBuffer::alloc(bytes.max(1)).unwrap())
}

/// `n` elements read back from a foreign allocation (on a CUDA context
/// with `cuMemcpyDtoH`, which waits only for the legacy stream and the
/// blocking streams: the caller synchronises work queued elsewhere first).
pub fn foreign_get<T: bytemuck::Pod>(ctx: &Context, addr: u64, n: usize) -> Vec<T> {
    let mut out = vec![T::zeroed(); n];
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
    if ctx
        .with_sim(|sim| sim.read(addr, &mut *bytes).unwrap())
        .is_some()
    {
        return out;
    }
    ctx.make_current().unwrap();
    let map = DRIVER_MEMORY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let buf = map
        .get(&addr)
        .expect("an address foreign_put/foreign_alloc returned");
    let mut all = vec![0u8; buf.len()];
    buf.copy_to_host(&mut all).unwrap();
    let len = bytes.len();
    bytes.copy_from_slice(&all[..len]);
    out
}

/// A linear congruential generator of values in `[−1, 1)` (24 bits of
/// the state), seeded by hand: the logcumsumexp tests' data.
pub fn lcg(seed: u32) -> impl FnMut() -> f32 {
    let mut s = seed;
    move || {
        s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (s >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
    }
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
    /// A value `±m · 2^e` with `m ∈ [0, 2)` and a random sign.
    pub fn scaled(&mut self, e: i32) -> f32 {
        let m = (self.next() >> 40) as f32 / (1u64 << 23) as f32;
        let s = if self.next() & 1 == 0 { 1.0 } else { -1.0 };
        s * m * 2f32.powi(e.clamp(-126, 127)) * if e < -126 { 2f32.powi(e + 126) } else { 1.0 }
    }
}
