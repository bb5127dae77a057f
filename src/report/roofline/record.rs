//! A recording backend for the model: the launch code of each family runs
//! on a [`Context`] over [`Recorder`], which logs every launch (module,
//! grid) and, when it wraps a simulator, the dynamic PTX instructions each
//! launch executed. Without a simulator (*dry*) nothing runs: allocations
//! are address ranges without memory, copies do nothing, downloads read
//! zeros, so the launch sequence of a full-size problem (its grids on the
//! card's SM count) costs nothing to obtain.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::dsl::PtxModule;
use crate::dsl::params::ArgValue;
use crate::error::Result;
use crate::exec::{Executor, LaunchConfig, RawStream, Traffic};
use crate::runtime::{Context, DeviceKind};
use crate::sim::Sim;
use crate::target::Sm;

/// One launch as the recorder saw it.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The module (its kernel, tuning, SM and PTX).
    pub module: Arc<PtxModule>,
    /// Grid, block and dynamic shared memory of the launch.
    pub cfg: LaunchConfig,
    /// Dynamic PTX instructions (thread-instructions, predicated-off ones
    /// included, as the simulator counts them); 0 in a dry run.
    pub ptx: u64,
    /// Of those, FP32 arithmetic (`add/sub/mul/fma/min/max` on `.f32`).
    pub fp32: u64,
    /// Of those, warp-level matrix multiply-adds (`mma.*`, counted per
    /// thread like the rest: 32 a warp's `mma.sync`, one `HMMA`).
    pub mma: u64,
    /// Of those, per region of the entry: one per innermost loop (address
    /// order), then the rest ([`super::regions`]); empty in a dry run.
    pub regions: Vec<u64>,
    /// Bytes of its global memory accesses, the L2 traffic
    /// ([`super::l2`]); 0 in a dry run.
    pub l2: u64,
    /// Dynamic PTX instructions of its heaviest CTA
    /// ([`crate::sim::LaunchReport::heaviest_block`]); 0 in a dry run.
    pub heaviest: u64,
    /// Dynamic PTX instructions of its heaviest warp, the
    /// thread-instructions of its lanes
    /// ([`crate::sim::LaunchReport::heaviest_warp`]); 0 in a dry run.
    pub heaviest_warp: u64,
    /// Its critical path in clocks: the longest CTA's, each instruction
    /// issued once its sources are ready and barriers joining their
    /// threads ([`crate::sim::LaunchReport::critical_path`]; the recorder
    /// turns the simulator's scoreboard on for the chain kernels only,
    /// [`super::speed::CHAIN_KERNELS`]); 0 for the others and in a dry run.
    pub critical_path: u64,
    /// Its arguments (a dry run's pointers are the dry allocator's).
    pub args: Vec<ArgValue>,
}

impl Launch {
    /// CTAs launched.
    pub fn ctas(&self) -> u64 {
        let (x, y, z) = self.cfg.grid;
        u64::from(x) * u64::from(y) * u64::from(z)
    }

    /// Warps launched: its CTAs × the warps of a CTA.
    pub fn warps(&self) -> u64 {
        let (x, y, z) = self.cfg.block;
        self.ctas() * u64::from((x * y * z).div_ceil(32))
    }
}

/// Whether a full PTX opcode as the simulator names it (`fma.rn.f32`) is
/// FP32 arithmetic that becomes one `FADD`/`FMUL`/`FFMA`/`FMNMX`
/// lane-instruction: its first token is one of those operations and its
/// last the `f32` type.
pub fn is_fp32_math(opcode: &str) -> bool {
    let mut parts = opcode.split('.');
    let base = parts.next().unwrap_or("");
    matches!(base, "add" | "sub" | "mul" | "fma" | "min" | "max")
        && parts.next_back() == Some("f32")
}

/// The launch log shared between a [`Recorder`] and its reader.
pub type Log = Arc<Mutex<Vec<Launch>>>;

/// The recording [`Executor`].
pub struct Recorder {
    sm: Sm,
    sms: u32,
    sim: Option<Sim>,
    next_addr: u64,
    next_stream: u64,
    traffic: Traffic,
    log: Log,
}

/// First address a dry recorder hands out.
const DRY_BASE: u64 = 0x10_0000_0000;

impl Recorder {
    /// A context over a recorder for `sm` that reports `sms`
    /// multiprocessors (so grid sizing follows the card), simulating when
    /// `simulate` (checks off: the kernels are tested elsewhere; only the
    /// counts matter here), and the log it fills.
    pub fn context(sm: Sm, sms: u32, simulate: bool) -> (Context, Log) {
        let log: Log = Arc::default();
        let sim = simulate.then(|| {
            let mut s = Sim::new(sm);
            s.set_checks(false);
            let mut o = s.options();
            o.max_instructions = None;
            s.set_options(o);
            s
        });
        let r = Recorder {
            sm,
            sms,
            sim,
            next_addr: DRY_BASE,
            next_stream: 1,
            traffic: Traffic::default(),
            log: log.clone(),
        };
        (
            Context::from_executor(DeviceKind::Sim, None, Box::new(r)),
            log,
        )
    }
}

/// Thread-instructions of the warp-level MMAs (`mma.sync…`, every shape).
fn mma_total(totals: &BTreeMap<String, u64>) -> u64 {
    totals
        .iter()
        .filter(|(k, _)| k.starts_with("mma."))
        .map(|(_, v)| *v)
        .sum()
}

fn fp32_total(totals: &BTreeMap<String, u64>) -> u64 {
    totals
        .iter()
        .filter(|(k, _)| is_fp32_math(k))
        .map(|(_, v)| *v)
        .sum()
}

impl Executor for Recorder {
    fn sm(&self) -> Sm {
        self.sm
    }

    fn multiprocessor_count(&self) -> u32 {
        self.sms
    }

    fn default_stream(&self) -> RawStream {
        match &self.sim {
            Some(s) => s.default_stream(),
            None => RawStream(0),
        }
    }

    fn create_stream(&mut self) -> Result<RawStream> {
        match &mut self.sim {
            Some(s) => s.create_stream(),
            None => {
                self.next_stream += 1;
                Ok(RawStream(self.next_stream))
            }
        }
    }

    fn destroy_stream(&mut self, st: RawStream) -> Result<()> {
        match &mut self.sim {
            Some(s) => s.destroy_stream(st),
            None => Ok(()),
        }
    }

    fn alloc(&mut self, bytes: usize, zeroed: bool) -> Result<u64> {
        match &mut self.sim {
            Some(s) => Executor::alloc(s, bytes, zeroed),
            None => {
                let a = self.next_addr;
                self.next_addr += (bytes as u64).max(1).next_multiple_of(256);
                self.traffic.allocations += 1;
                Ok(a)
            }
        }
    }

    fn free(&mut self, addr: u64) -> Result<()> {
        match &mut self.sim {
            Some(s) => Executor::free(s, addr),
            None => Ok(()),
        }
    }

    fn copy_htod(&mut self, st: RawStream, dst: u64, src: &[u8]) -> Result<()> {
        match &mut self.sim {
            Some(s) => s.copy_htod(st, dst, src),
            None => Ok(()),
        }
    }

    fn copy_dtoh(&mut self, st: RawStream, src: u64, dst: &mut [u8]) -> Result<()> {
        match &mut self.sim {
            Some(s) => s.copy_dtoh(st, src, dst),
            None => {
                dst.fill(0);
                Ok(())
            }
        }
    }

    fn copy_dtod(&mut self, st: RawStream, dst: u64, src: u64, bytes: usize) -> Result<()> {
        match &mut self.sim {
            Some(s) => s.copy_dtod(st, dst, src, bytes),
            None => Ok(()),
        }
    }

    fn zero(&mut self, st: RawStream, dst: u64, bytes: usize) -> Result<()> {
        match &mut self.sim {
            Some(s) => s.zero(st, dst, bytes),
            None => Ok(()),
        }
    }

    fn launch(
        &mut self,
        st: RawStream,
        module: &PtxModule,
        cfg: LaunchConfig,
        args: &[ArgValue],
    ) -> Result<()> {
        let (ptx, fp32, mma, regions, l2, heaviest, heaviest_warp, critical_path) =
            match &mut self.sim {
                Some(s) => {
                    let (i0, f0) = (s.total_instructions(), fp32_total(s.opcode_totals()));
                    let m0 = mma_total(s.opcode_totals());
                    // The scoreboard only where the report reads it (chain
                    // kernels' critical paths): it costs the simulator about
                    // half again its time, and CI runs every recorded launch.
                    s.set_timing(super::speed::is_chain(&module.kernel));
                    s.launch(st, module, cfg, args)?;
                    let prog = s.program(&module.ptx)?;
                    let entry = prog.entry(&module.kernel);
                    let regions = entry
                        .map(|e| super::regions::region_counts(e, s.last_launch_counts()))
                        .unwrap_or_default();
                    let l2 = entry.map_or(0, |e| {
                        super::l2::launch_bytes(e, s.last_launch_counts(), args)
                    });
                    (
                        s.total_instructions() - i0,
                        fp32_total(s.opcode_totals()) - f0,
                        mma_total(s.opcode_totals()) - m0,
                        regions,
                        l2,
                        s.last_launch_heaviest_block(),
                        s.last_launch_heaviest_warp(),
                        s.last_launch_critical_path(),
                    )
                }
                None => (0, 0, 0, Vec::new(), 0, 0, 0, 0),
            };
        self.traffic.launches += 1;
        self.log.lock().expect("launch log poisoned").push(Launch {
            module: Arc::new(module.clone()),
            cfg,
            ptx,
            fp32,
            mma,
            regions,
            l2,
            heaviest,
            heaviest_warp,
            critical_path,
            args: args.to_vec(),
        });
        Ok(())
    }

    fn stream_wait(&mut self, waiter: RawStream, waited: RawStream) -> Result<()> {
        match &mut self.sim {
            Some(s) => s.stream_wait(waiter, waited),
            None => Ok(()),
        }
    }

    fn synchronize(&mut self, st: Option<RawStream>) -> Result<()> {
        match &mut self.sim {
            Some(s) => s.synchronize(st),
            None => Ok(()),
        }
    }

    fn traffic(&self) -> Traffic {
        match &self.sim {
            Some(s) => s.traffic(),
            None => self.traffic,
        }
    }

    fn is_synchronous(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An opcode as the simulator spells it, from its dot-separated
    /// tokens.
    fn op(tokens: &[&str]) -> String {
        tokens.join(".")
    }

    #[test]
    fn fp32_opcodes() {
        for t in [
            &["add", "rn", "f32"][..],
            &["fma", "rn", "f32"],
            &["max", "f32"],
            &["min", "NaN", "f32"],
            &["sub", "rn", "f32"],
        ] {
            assert!(is_fp32_math(&op(t)), "{t:?}");
        }
        for t in [
            &["add", "u32"][..],
            &["setp", "gt", "f32"],
            &["selp", "f32"],
            &["fma", "rn", "f64"],
            &["mul", "wide", "u32"],
            &["add"],
        ] {
            assert!(!is_fp32_math(&op(t)), "{t:?}");
        }
    }
}
