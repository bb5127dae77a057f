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
