//! Grid-stride loops: every thread of the grid walks its global index,
//! then that index plus the grid size, and so on below a bound (the launch
//! code may cap the grid; the loop covers the rest).

use super::core::KernelBuilder;
use crate::dsl::ir::Cmp;
use crate::dsl::types::{Reg, Src, U32, U64};

impl KernelBuilder {
    /// `for i in global_id .. total step ntid·nctaid` with unsigned 32-bit
    /// `i` (the caller keeps `total + grid_size` from wrapping).
    #[track_caller]
    pub fn grid_stride(
        &mut self,
        total: impl Into<Src<U32>>,
        body: impl FnOnce(&mut Self, Reg<U32>),
    ) {
        let gid = self.global_id_x();
        let nt = self.ntid_x();
        let nc = self.nctaid_x();
        let step = self.mul_lo(nt, nc);
        self.for_range(gid, total, step, body);
    }

    /// [`KernelBuilder::grid_stride`] with a 64-bit index and bound.
    #[track_caller]
    pub fn grid_stride_u64(&mut self, limit: Reg<U64>, body: impl FnOnce(&mut Self, Reg<U64>)) {
        let gid = self.global_id_x_u64();
        self.grid_stride_u64_from(gid, limit, body);
    }

    /// The 64-bit grid-stride loop from an already computed global index
    /// `gid` (callers that need `gid` again after the loop, such as
    /// [`blocks::grid_stride_vec4`](crate::dsl::blocks::grid_stride_vec4)'s
    /// tail, compute it once).
    #[track_caller]
    pub(crate) fn grid_stride_u64_from(
        &mut self,
        gid: Reg<U64>,
        limit: Reg<U64>,
        body: impl FnOnce(&mut Self, Reg<U64>),
    ) {
        let (nt, nc) = (self.ntid_x(), self.nctaid_x());
        let step = self.mul_wide_u32(nt, nc);
        let t = self.mov(gid);
        self.while_(
            |b| b.setp(Cmp::Lt, t, limit),
            |b| {
                body(b, t);
                let next = b.add(t, step);
                b.assign(t, next);
            },
        );
    }
}
