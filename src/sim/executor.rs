//! [`Executor`] for [`Sim`]: the same launch code that drives a GPU drives
//! the simulator.

use super::exec::{SM_COUNT, Sim};
use crate::dsl::PtxModule;
use crate::dsl::params::{ArgValue, check_args};
use crate::error::{Error, Result};
use crate::runtime::exec::{BufferId, Executor, LaunchConfig, Traffic};
use crate::target::Sm;

impl Executor for Sim {
    fn sm(&self) -> Sm {
        self.sm_target()
    }

    fn alloc(&mut self, bytes: usize) -> Result<BufferId> {
        let addr = Sim::alloc(self, bytes)?;
        Ok(BufferId { addr, bytes })
    }

    fn upload(&mut self, buf: BufferId, data: &[u8]) -> Result<()> {
        if data.len() > buf.bytes {
            return Err(Error::InvalidArgument(format!(
                "upload of {} bytes into a buffer of {} bytes",
                data.len(),
                buf.bytes
            )));
        }
        self.write(buf.addr, data)?;
        self.traffic.bytes_uploaded += data.len() as u64;
        Ok(())
    }

    fn download(&mut self, buf: BufferId, out: &mut [u8]) -> Result<()> {
        if out.len() > buf.bytes {
            return Err(Error::InvalidArgument(format!(
                "download of {} bytes from a buffer of {} bytes",
                out.len(),
                buf.bytes
            )));
        }
        self.read(buf.addr, out)?;
        self.traffic.bytes_downloaded += out.len() as u64;
        Ok(())
    }

    fn free(&mut self, buf: BufferId) -> Result<()> {
        Sim::free(self, buf.addr)?;
        Ok(())
    }

    fn launch(&mut self, module: &PtxModule, cfg: LaunchConfig, args: &[ArgValue]) -> Result<()> {
        check_args(&module.kernel, &module.params, args)?;
        let prog = self.program(&module.ptx)?;
        self.launch_program(&prog, &module.kernel, cfg, args)?;
        Ok(())
    }

    fn traffic(&self) -> Traffic {
        self.traffic
    }

    fn multiprocessor_count(&self) -> u32 {
        SM_COUNT
    }
}
