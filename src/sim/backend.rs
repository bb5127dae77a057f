//! [`Executor`] for [`Sim`]: the launch code that drives a GPU drives the
//! simulator, through the same runtime `Context`.
//!
//! Every operation runs at once, so stream order holds trivially; streams
//! are ids the simulator hands out, and an operation on an id it did not
//! hand out is refused like a foreign handle would fail on a GPU.

use super::machine::{SIM_DEFAULT_STREAM, SM_COUNT, Sim};
use crate::abi::{ArgValue, check_args};
use crate::dsl::PtxModule;
use crate::error::{Error, Result};
use crate::exec::{Executor, LaunchConfig, RawStream, Traffic};
use crate::target::Sm;

impl Sim {
    fn check_stream(&self, s: RawStream, op: &str) -> Result<()> {
        if s.0 == SIM_DEFAULT_STREAM || self.streams.contains(&s.0) {
            return Ok(());
        }
        Err(Error::invalid(format!(
            "{op}: stream {:#x} is not a stream of this simulator",
            s.0
        )))
    }
}

impl Executor for Sim {
    fn sm(&self) -> Sm {
        self.sm_target()
    }

    fn multiprocessor_count(&self) -> u32 {
        SM_COUNT
    }

    fn default_stream(&self) -> RawStream {
        RawStream(SIM_DEFAULT_STREAM)
    }

    fn create_stream(&mut self) -> Result<RawStream> {
        let id = self.next_stream;
        self.next_stream += 1;
        self.streams.push(id);
        Ok(RawStream(id))
    }

    fn destroy_stream(&mut self, s: RawStream) -> Result<()> {
        self.check_stream(s, "destroy_stream")?;
        self.streams.retain(|&x| x != s.0);
        Ok(())
    }

    fn alloc(&mut self, bytes: usize, zeroed: bool) -> Result<u64> {
        let addr = if zeroed {
            Sim::alloc_zeroed(self, bytes)?
        } else {
            Sim::alloc(self, bytes)?
        };
        self.traffic.allocations += 1;
        Ok(addr)
    }

    fn free(&mut self, addr: u64) -> Result<()> {
        Sim::free(self, addr)?;
        Ok(())
    }

    fn copy_htod(&mut self, s: RawStream, dst: u64, src: &[u8]) -> Result<()> {
        self.check_stream(s, "upload")?;
        self.write(dst, src)?;
        self.traffic.bytes_uploaded += src.len() as u64;
        self.traffic.uploads += 1;
        Ok(())
    }

    fn copy_dtoh(&mut self, s: RawStream, src: u64, dst: &mut [u8]) -> Result<()> {
        self.check_stream(s, "download")?;
        self.read(src, dst)?;
        self.traffic.bytes_downloaded += dst.len() as u64;
        self.traffic.downloads += 1;
        Ok(())
    }

    fn copy_dtod(&mut self, s: RawStream, dst: u64, src: u64, bytes: usize) -> Result<()> {
        self.check_stream(s, "device copy")?;
        self.copy_within(dst, src, bytes)?;
        self.traffic.bytes_copied_on_device += bytes as u64;
        Ok(())
    }

    fn zero(&mut self, s: RawStream, dst: u64, bytes: usize) -> Result<()> {
        self.check_stream(s, "zero")?;
        self.fill_zero(dst, bytes)?;
        Ok(())
    }

    fn launch(
        &mut self,
        s: RawStream,
        module: &PtxModule,
        cfg: LaunchConfig,
        args: &[ArgValue],
    ) -> Result<()> {
        // Every access is bounds-checked by the simulator itself, so a
        // foreign pointer that strays is a finding, never undefined.
        self.check_stream(s, &format!("launch of `{}`", module.kernel))?;
        check_args(&module.kernel, &module.params, args)?;
        let prog = self.program(&module.ptx)?;
        self.launch_program(&prog, &module.kernel, cfg, args)?;
        Ok(())
    }

    fn stream_wait(&mut self, waiter: RawStream, waited: RawStream) -> Result<()> {
        self.check_stream(waiter, "stream_wait")?;
        self.check_stream(waited, "stream_wait")
    }

    fn synchronize(&mut self, s: Option<RawStream>) -> Result<()> {
        match s {
            Some(s) => self.check_stream(s, "synchronize"),
            None => Ok(()),
        }
    }

    fn traffic(&self) -> Traffic {
        self.traffic
    }

    fn is_synchronous(&self) -> bool {
        true
    }
}
