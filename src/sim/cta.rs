//! The state of the CTA a worker runs: per-thread register files (with the
//! initialisation flags of the tracked registers), program counters and
//! run states, shared and local memory, and the per-CTA shadow state of
//! the shared-memory and `bra.uni` checks. A worker allocates it once per
//! launch and resets only what a CTA can observe ([`CtaState::reset`]).

use super::checks::shared_race::SharedShadow;
use super::checks::uniform::Bits;
use super::code::Code;
use super::interp::{get_le, sext};
use super::ir::sreg;
use super::machine::SM_COUNT;
use crate::exec::LaunchConfig;

/// The barrier epoch past which a CTA's start clears the shared tags and
/// counts from 0 again ([`CtaState::reset`]).
pub(crate) const EPOCH_RESTART: u32 = u32::MAX / 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TState {
    Run,
    Park,
    Exit,
}

pub(crate) struct CtaState {
    /// Threads per CTA.
    pub n: usize,
    /// Slots between two threads' register files ([`Code::stride`], a
    /// power of two).
    pub stride: usize,
    /// Slots from one thread's register file to the next: `stride` and a
    /// 64-byte line, so that the files of a warp do not all fall in the
    /// same sets of the host's cache (the lockstep schedule reads one slot
    /// of each in turn).
    pub pitch: usize,
    /// `n × pitch` values: per thread, `stride` slots (registers,
    /// constants, clock slots, the sink) and padding.
    pub regs: Vec<u64>,
    /// Initialisation flags, meaningful for [`Code::tracked`] registers.
    pub init: Vec<bool>,
    pub pc: Vec<u32>,
    pub state: Vec<TState>,
    pub shared: Vec<u8>,
    /// The race and initialisation tags of shared memory (see
    /// `checks::shared_race`), empty without checks.
    pub sh: SharedShadow,
    pub local: Vec<u8>,
    /// Barrier epoch; epochs keep counting across the CTAs of a worker, so
    /// that shadow tags of an earlier CTA are simply older.
    pub epoch: u32,
    /// The first epoch of the running CTA.
    pub epoch0: u32,
    /// Per warp: `bar.warp.sync` epoch.
    pub wepoch: Vec<u32>,
    /// The cluster barrier's window (`interp::cluster`, *Order within a
    /// CTA*): per thread, whether it arrived at the current phase; how
    /// many threads did; whether one of them accessed the CTA's shared
    /// memory after its arrive (then the phase's completion starts no new
    /// epoch).
    pub cl_arrived: Vec<bool>,
    pub cl_pending: u32,
    pub cl_window: bool,
    /// The epochs the cluster barrier's phases started in this CTA: the
    /// global check between warps (`checks::warp_race`) counts `epoch −
    /// cl_bumps`, the `bar.sync` epochs alone (it does not see the window
    /// of global accesses, so the cluster barrier orders none there).
    pub cl_bumps: u32,
    /// Per (thread, `bra.uni`): dynamic occurrences so far.
    pub bu_cnt: Vec<u32>,
    /// Per (warp, `bra.uni`): the outcome of each dynamic occurrence.
    pub bu_out: Vec<Bits>,
    /// A watch on one shared byte while the CTA runs again to name the
    /// earlier access of a race (`checks::probe`).
    pub probe: Option<Box<super::checks::probe::Probe>>,
    /// The pending `cp.async`s (`interp::async_copy`).
    pub asyncs: super::interp::async_copy::AsyncCopies,
    /// The mbarriers and pending bulk copies (`interp::bulk`).
    pub bulk: super::interp::bulk::BulkState,
    /// The CTA's same-value write-write conflicts in shared memory
    /// (`checks::benign`).
    pub same: super::checks::benign::SameWrites,
    /// Per warp: the instructions its threads issued in the running CTA
    /// (thread-instructions, counted as the launch's: predicated-off ones
    /// included), for [`crate::sim::LaunchReport::heaviest_warp`].
    pub warp_issued: Vec<u64>,
    /// The critical-path scoreboard, when the launch keeps one
    /// (`interp::timing`; reset with the CTA by `Exec`).
    pub time: Option<Box<crate::sim::interp::timing::Scoreboard>>,
}

impl CtaState {
    /// State for CTAs of `cfg` running `code`, with the per-thread slots
    /// that never change over the launch (constants, `%tid`, `%ntid`,
    /// `%nctaid`, lane and warp registers) written once.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        code: &Code,
        params: &[u8],
        cfg: LaunchConfig,
        smem: usize,
        local_bytes: u32,
        n_brauni: u32,
        checks: bool,
    ) -> CtaState {
        let (bx, by, bz) = cfg.block;
        let (gx, gy, gz) = cfg.grid;
        let n = (bx * by * bz) as usize;
        let nslots = code.nslots as usize;
        let stride = code.stride as usize;
        let pitch = stride + 8;
        let mut regs = vec![0u64; n * pitch];
        let nregs = nslots - code.consts.len() - 2 - code.param_loads.len();
        let pvals: Vec<(usize, u64)> = code
            .param_loads
            .iter()
            .map(|p| {
                let o = p.offset as usize;
                let v = get_le(&params[o..], p.size);
                let v = if p.signed {
                    sext(v, p.size * 8) as u64
                } else {
                    v
                };
                (p.slot as usize, v)
            })
            .collect();
        let nw = n.div_ceil(32) as u64;
        for t in 0..n {
            let b = t * pitch;
            let tu = t as u32;
            let lane = tu % 32;
            let vals: [u64; sreg::COUNT as usize] = [
                (tu % bx) as u64,
                ((tu / bx) % by) as u64,
                (tu / (bx * by)) as u64,
                bx as u64,
                by as u64,
                bz as u64,
                0,
                0,
                0,
                gx as u64,
                gy as u64,
                gz as u64,
                lane as u64,
                (tu / 32) as u64,
                nw,
                0,
                SM_COUNT as u64,
                1u64 << lane,
                (1u64 << lane) - 1,
                (1u64 << (lane + 1)) - 1,
                !((1u64 << (lane + 1)) - 1) & 0xFFFF_FFFF,
                !((1u64 << lane) - 1) & 0xFFFF_FFFF,
                cfg.dynamic_smem_bytes as u64,
                0,
                // the cluster registers (`interp::cluster` sets them)
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
            ];
            regs[b..b + vals.len()].copy_from_slice(&vals);
            regs[b + nregs..b + nregs + code.consts.len()].copy_from_slice(&code.consts);
            for &(slot, v) in &pvals {
                regs[b + slot] = v;
            }
        }
        CtaState {
            n,
            stride,
            pitch,
            regs,
            init: vec![false; n * pitch],
            pc: vec![0; n],
            state: vec![TState::Run; n],
            shared: vec![0; smem],
            sh: if checks {
                SharedShadow::new(smem)
            } else {
                SharedShadow::default()
            },
            local: vec![0; n * local_bytes as usize],
            epoch: 0,
            epoch0: 1,
            wepoch: vec![0; n.div_ceil(32)],
            cl_arrived: vec![false; n],
            cl_pending: 0,
            cl_window: false,
            cl_bumps: 0,
            bu_cnt: vec![0; n * n_brauni as usize],
            bu_out: vec![Bits::default(); n.div_ceil(32) * n_brauni as usize],
            probe: None,
            asyncs: super::interp::async_copy::AsyncCopies::new(
                n,
                smem,
                checks && code.insts.iter().any(|i| i.op.is_cp_async()),
            ),
            same: Default::default(),
            bulk: Default::default(),
            warp_issued: vec![0; n.div_ceil(32)],
            time: None,
        }
    }

    /// Start CTA `ctaid` (linear index `lin`): the CTA-dependent special
    /// registers, the tracked registers (zero, unwritten), program counters
    /// and states, a fresh barrier epoch, and the memory a CTA could read
    /// before writing (shared memory only without checks: with checks such
    /// a read is a finding; local memory always, it has no check).
    pub fn reset(&mut self, code: &Code, ctaid: (u32, u32, u32), lin: u64, checks: bool) {
        let ns = self.stride;
        for t in 0..self.n {
            let b = t * self.pitch;
            let r = &mut self.regs[b..b + ns];
            r[sreg::CTAID_X as usize] = ctaid.0 as u64;
            r[sreg::CTAID_X as usize + 1] = ctaid.1 as u64;
            r[sreg::CTAID_X as usize + 2] = ctaid.2 as u64;
            r[sreg::SMID as usize] = lin % SM_COUNT as u64;
            for &x in &code.tracked {
                r[x as usize] = 0;
                self.init[b + x as usize] = false;
            }
        }
        self.pc.fill(0);
        self.state.fill(TState::Run);
        self.same = Default::default();
        self.bulk.reset();
        if !checks {
            self.shared.fill(0);
        }
        self.local.fill(0);
        // tags compare epochs, so they must not wrap within a CTA: start
        // again (with cleared tags) once half the range is used, which
        // leaves a CTA 2³¹ barriers
        if self.epoch > EPOCH_RESTART {
            self.sh.clear();
            self.epoch = 0;
        }
        self.epoch += 1;
        self.epoch0 = self.epoch;
        self.wepoch.fill(0);
        self.cl_arrived.fill(false);
        self.cl_pending = 0;
        self.cl_window = false;
        self.cl_bumps = 0;
        self.warp_issued.fill(0);
        self.bu_cnt.fill(0);
        for v in self.bu_out.iter_mut() {
            v.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.version 7.0
.target sm_80
.address_size 64
.visible .entry k()
{
.shared .align 4 .b32 s[4];
bar.sync 0;
ret;
}
";

    /// Epochs restart (with the tags cleared) at a CTA's start once past
    /// half their range, so no CTA sees them wrap.
    #[test]
    fn epochs_restart_at_a_cta_start_past_half_their_range() {
        let prog = crate::sim::Program::parse(PTX).unwrap();
        let code = &prog.entry("k").unwrap().code;
        let cfg = LaunchConfig::linear(1, 32);
        let mut c = CtaState::new(code, &[], cfg, 16, 0, 0, true);
        c.epoch = EPOCH_RESTART;
        c.reset(code, (0, 0, 0), 0, true);
        assert_eq!((c.epoch, c.epoch0), (EPOCH_RESTART + 1, EPOCH_RESTART + 1));
        c.reset(code, (1, 0, 0), 1, true);
        assert_eq!((c.epoch, c.epoch0), (1, 1));
    }
}
