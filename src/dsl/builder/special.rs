//! Special registers (`%tid`, `%ctaid`, `%ntid`, `%nctaid`) and the
//! global thread index built from them.

use super::core::KernelBuilder;
use crate::dsl::ir::*;
use crate::dsl::types::*;

impl KernelBuilder {
    /// Read a special register.
    #[track_caller]
    pub fn special(&mut self, s: Special) -> Reg<U32> {
        self.def(|d| Op::MovSpecial { d, s })
    }

    /// `%tid.x`
    #[track_caller]
    pub fn tid_x(&mut self) -> Reg<U32> {
        self.special(Special::TidX)
    }

    /// `%ctaid.x`
    #[track_caller]
    pub fn ctaid_x(&mut self) -> Reg<U32> {
        self.special(Special::CtaidX)
    }

    /// `%ntid.x`
    #[track_caller]
    pub fn ntid_x(&mut self) -> Reg<U32> {
        self.special(Special::NtidX)
    }

    /// `%nctaid.x`
    #[track_caller]
    pub fn nctaid_x(&mut self) -> Reg<U32> {
        self.special(Special::NctaidX)
    }

    /// `%clock64`: the SM's 64-bit cycle counter (`mov.u64 d, %clock64`),
    /// to time a stretch of a kernel (the difference of two reads in one
    /// thread; counters of different SMs are not synchronised). Every
    /// target has it. In the simulator a read returns the thread's clock
    /// on the critical-path scoreboard when the launch keeps one
    /// ([`crate::sim::Sim::set_timing`]), else a counter that goes up by
    /// one at each read (`testing::calibrate` times the scoreboard's
    /// latencies with it).
    #[track_caller]
    pub fn clock64(&mut self) -> Reg<U64> {
        self.def(|d| Op::Clock64 { d })
    }

    /// `ctaid.x * ntid.x + tid.x` in 32 bits.
    #[track_caller]
    pub fn global_id_x(&mut self) -> Reg<U32> {
        let (c, n, t) = (self.ctaid_x(), self.ntid_x(), self.tid_x());
        self.mad_lo(c, n, t)
    }

    /// `ctaid.x * ntid.x + tid.x` in 64 bits (no overflow for any grid).
    #[track_caller]
    pub fn global_id_x_u64(&mut self) -> Reg<U64> {
        let (c, n, t) = (self.ctaid_x(), self.ntid_x(), self.tid_x());
        let t64 = self.u32_to_u64(t);
        self.mad_wide_u32(c, n, t64)
    }
}
