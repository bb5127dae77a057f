//! PTX generator for [`super`]: one thread per row (grid-stride), the row
//! walked in ascending `c` with `mul.rn` then `add.rn`.

use crate::dsl::params::Ptr;
use crate::dsl::types::{F32, U32};
use crate::dsl::{KernelBuilder, PtxModule, Rounding};
use crate::error::Result;
use crate::kernel_params;
use crate::target::Sm;

/// Entry name.
pub const KERNEL: &str = "dot_rows_f32";
/// Threads per block.
pub const BLOCK: u32 = 128;

kernel_params! {
    /// Launch arguments of [`KERNEL`].
    pub struct DotRowsArgs => DotRowsRegs {
        x: Ptr<F32>,
        y: Ptr<F32>,
        out: Ptr<F32>,
        rows: U32,
        n: U32,
    }
}

/// Generate the kernel for `sm`.
pub fn generate(sm: Sm) -> Result<PtxModule> {
    let mut b = KernelBuilder::new(KERNEL, sm);
    b.maxntid(BLOCK, 1, 1);
    let p = b.params::<DotRowsArgs>();
    b.grid_stride(p.rows, |b, r| {
        let row_start = b.mul_wide_u32(r, p.n);
        let xp = b.offset64(p.x, row_start);
        let yp = b.ptr_copy(p.y);
        let acc = b.mov(0.0f32);
        b.for_range(0u32, p.n, 1u32, |b, _c| {
            let xv = b.ld_global_nc(xp, 0);
            let yv = b.ld_global_nc(yp, 0);
            let prod = b.fmul(Rounding::Rn, xv, yv);
            let sum = b.fadd(Rounding::Rn, acc, prod);
            b.assign(acc, sum);
            b.advance(xp, 1);
            b.advance(yp, 1);
        });
        let out = b.offset(p.out, r);
        b.st_global(out, 0, acc);
    });
    b.finish()
}

/// Every kernel of the family for `sm` (the one dot-rows kernel).
pub fn variants(sm: Sm) -> Result<Vec<PtxModule>> {
    Ok(vec![generate(sm)?])
}
