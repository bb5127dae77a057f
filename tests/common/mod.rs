//! Helpers shared by integration tests (`mod common;`).
#![allow(dead_code)]

use ptxsmith::runtime::Context;

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

/// `n` elements read back from a foreign simulator allocation.
pub fn foreign_get<T: bytemuck::Pod>(ctx: &Context, addr: u64, n: usize) -> Vec<T> {
    let mut out = vec![T::zeroed(); n];
    ctx.with_sim(|sim| sim.read(addr, bytemuck::cast_slice_mut(&mut out)).unwrap())
        .expect("a simulator context");
    out
}
