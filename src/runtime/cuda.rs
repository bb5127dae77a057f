//! [`Executor`] for [`Gpu`]: device buffers, JIT through the module cache,
//! checked launches (layer 3 of the fence described in [`crate::runtime`]).
//!
//! Every operation is synchronous: copies and launches are queued on the
//! `Gpu`'s stream and the stream is synchronised before returning, so
//! errors are reported by the call that caused them.

use std::collections::BTreeMap;
use std::sync::Arc;

use oxicuda_driver::error::CudaError;
use oxicuda_driver::module::{JitOptions, Module};
use oxicuda_launch::{Dim3, Kernel, LaunchParams};
use oxicuda_memory::DeviceBuffer;

use crate::dsl::PtxModule;
use crate::dsl::params::ArgValue;
use crate::error::{Error, Result};
use crate::runtime::device::{DevBuf, Gpu, driver_error};
use crate::runtime::exec::{BufferId, Executor, LaunchConfig, Traffic};
use crate::runtime::ffi::{ArgPack, copy_dtoh_prefix, copy_htod_prefix};
use crate::target::{MAX_THREADS_PER_BLOCK, STATIC_SMEM_LIMIT, Sm};

/// JIT-compile `module` in the current context and look up its entry.
fn jit(module: &PtxModule) -> Result<Arc<Kernel>> {
    let jit_error = |message: String, log: String| Error::Jit {
        kernel: module.kernel.clone(),
        sm: module.sm,
        message,
        log,
    };
    let (loaded, _info_log) = Module::from_ptx_with_options(&module.ptx, &JitOptions::default())
        .map_err(|e| match e {
            CudaError::JitFailed { log, source, .. } => {
                let text = [log.error.as_str(), log.info.as_str()]
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join("\n");
                jit_error(source.to_string(), text)
            }
            CudaError::NotInitialized => driver_error("cuModuleLoadDataEx", e),
            other => jit_error(other.to_string(), String::new()),
        })?;
    let kernel = Kernel::from_module(Arc::new(loaded), &module.kernel).map_err(|e| {
        jit_error(
            format!(
                "entry `{}` not found in the loaded module: {e}",
                module.kernel
            ),
            String::new(),
        )
    })?;
    Ok(Arc::new(kernel))
}

/// The live buffer `buf` refers to.
fn lookup<'a>(
    buffers: &'a mut BTreeMap<u64, DevBuf>,
    buf: BufferId,
    op: &str,
) -> Result<&'a mut DevBuf> {
    match buffers.get_mut(&buf.addr) {
        Some(b) if b.bytes == buf.bytes => Ok(b),
        Some(b) => Err(Error::InvalidArgument(format!(
            "{op}: buffer {:#x} has {} bytes, the id says {}",
            buf.addr, b.bytes, buf.bytes
        ))),
        None => Err(Error::InvalidArgument(format!(
            "{op}: no live buffer at {:#x} on this device (freed, or from another executor)",
            buf.addr
        ))),
    }
}

/// Check a launch shape against the limits every supported target shares
/// and the device's opt-in shared memory.
fn check_config(kernel: &str, cfg: &LaunchConfig, max_dynamic_smem: u32) -> Result<()> {
    let (gx, gy, gz) = cfg.grid;
    let (bx, by, bz) = cfg.block;
    if [gx, gy, gz, bx, by, bz].contains(&0) {
        return Err(Error::InvalidArgument(format!(
            "launch of `{kernel}`: grid {:?} and block {:?} must have no zero dimension",
            cfg.grid, cfg.block
        )));
    }
    let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
    if threads > u64::from(MAX_THREADS_PER_BLOCK) {
        return Err(Error::InvalidArgument(format!(
            "launch of `{kernel}`: block {:?} has {threads} threads, above {MAX_THREADS_PER_BLOCK}",
            cfg.block
        )));
    }
    if cfg.dynamic_smem_bytes > max_dynamic_smem {
        return Err(Error::InvalidArgument(format!(
            "launch of `{kernel}`: {} bytes of dynamic shared memory, the device allows {max_dynamic_smem} per block",
            cfg.dynamic_smem_bytes
        )));
    }
    Ok(())
}

impl Gpu {
    /// JIT-compile `module` now (if not cached yet), e.g. to keep
    /// compilation out of a timed region. [`Error::Jit`] carries the JIT log.
    pub fn load(&mut self, module: &PtxModule) -> Result<()> {
        self.kernel(module).map(drop)
    }

    /// The loaded entry of `module`, compiling it on first use.
    fn kernel(&mut self, module: &PtxModule) -> Result<Arc<Kernel>> {
        if module.sm > self.info.sm {
            return Err(Error::UnsupportedSm(format!(
                "module `{}` targets {}, but device {} `{}` runs code for {} at most",
                module.kernel, module.sm, self.info.ordinal, self.info.name, self.info.sm
            )));
        }
        self.make_current()?;
        self.modules.get_or_load(module, jit).map(Arc::clone)
    }

    /// Every pointer argument must point into (or one past) a live buffer
    /// of this `Gpu`, or be null: a stray address would fault on the device
    /// and lose the whole context.
    fn check_pointers(&self, module: &PtxModule, args: &[ArgValue]) -> Result<()> {
        for (p, a) in module.params.iter().zip(args) {
            let ArgValue::Ptr(addr) = *a else { continue };
            if addr == 0 {
                continue;
            }
            let inside = self
                .buffers
                .range(..=addr)
                .next_back()
                .is_some_and(|(&base, b)| addr - base <= b.bytes as u64);
            if !inside {
                return Err(Error::InvalidArgument(format!(
                    "kernel `{}` parameter `{}` = {addr:#x} is not inside a live buffer of this device",
                    module.kernel, p.name
                )));
            }
        }
        Ok(())
    }
}

impl Executor for Gpu {
    fn sm(&self) -> Sm {
        self.info.sm
    }

    fn alloc(&mut self, bytes: usize) -> Result<BufferId> {
        self.make_current()?;
        // The driver refuses empty allocations; a 0-byte buffer still gets a
        // distinct address.
        let mem = DeviceBuffer::<u8>::alloc(bytes.max(1)).map_err(|e| match e {
            CudaError::OutOfMemory => Error::Driver {
                call: "cuMemAlloc",
                message: format!("out of device memory allocating {bytes} bytes"),
            },
            e => driver_error("cuMemAlloc", e),
        })?;
        let addr = mem.as_device_ptr();
        self.buffers.insert(addr, DevBuf { mem, bytes });
        Ok(BufferId { addr, bytes })
    }

    fn upload(&mut self, buf: BufferId, data: &[u8]) -> Result<()> {
        self.make_current()?;
        let b = lookup(&mut self.buffers, buf, "upload")?;
        if data.len() > b.bytes {
            return Err(Error::InvalidArgument(format!(
                "upload of {} bytes into buffer {:#x} of {} bytes",
                data.len(),
                buf.addr,
                b.bytes
            )));
        }
        copy_htod_prefix(&mut b.mem, data, &self.stream)
            .map_err(|e| driver_error("cuMemcpyHtoDAsync", e))?;
        self.traffic.bytes_uploaded += data.len() as u64;
        Ok(())
    }

    fn download(&mut self, buf: BufferId, out: &mut [u8]) -> Result<()> {
        self.make_current()?;
        let b = lookup(&mut self.buffers, buf, "download")?;
        if out.len() > b.bytes {
            return Err(Error::InvalidArgument(format!(
                "download of {} bytes from buffer {:#x} of {} bytes",
                out.len(),
                buf.addr,
                b.bytes
            )));
        }
        copy_dtoh_prefix(out, &b.mem, &self.stream)
            .map_err(|e| driver_error("cuMemcpyDtoHAsync", e))?;
        self.traffic.bytes_downloaded += out.len() as u64;
        Ok(())
    }

    fn free(&mut self, buf: BufferId) -> Result<()> {
        lookup(&mut self.buffers, buf, "free")?;
        // Nothing is in flight (every operation synchronises), so the memory
        // can be released now, with the context current for `cuMemFree`. A
        // lost context cannot fail a free: its memory goes with it.
        let _ = self.ctx.set_current();
        self.buffers.remove(&buf.addr);
        Ok(())
    }

    fn launch(&mut self, module: &PtxModule, cfg: LaunchConfig, args: &[ArgValue]) -> Result<()> {
        let pack = ArgPack::new(&module.kernel, &module.params, args)?;
        check_config(&module.kernel, &cfg, self.info.max_smem_per_block_optin)?;
        self.check_pointers(module, args)?;
        let kernel = self.kernel(module)?;
        let launch_error = |stage: &str, e: CudaError| Error::Launch {
            kernel: module.kernel.clone(),
            message: format!(
                "{stage} (grid {:?}, block {:?}, {} B dynamic smem): {e}",
                cfg.grid, cfg.block, cfg.dynamic_smem_bytes
            ),
        };
        if cfg.dynamic_smem_bytes > STATIC_SMEM_LIMIT {
            let bytes = i32::try_from(cfg.dynamic_smem_bytes).unwrap_or(i32::MAX);
            kernel
                .function()
                .set_max_dynamic_shared_memory(bytes)
                .map_err(|e| launch_error("opting in to dynamic shared memory", e))?;
        }
        let params = LaunchParams::new(
            Dim3::new(cfg.grid.0, cfg.grid.1, cfg.grid.2),
            Dim3::new(cfg.block.0, cfg.block.1, cfg.block.2),
        )
        .with_shared_mem(cfg.dynamic_smem_bytes);
        kernel
            .launch(&params, &self.stream, &pack)
            .map_err(|e| launch_error("cuLaunchKernel", e))?;
        self.traffic.launches += 1;
        if let Err(e) = self.stream.synchronize() {
            let err = launch_error("kernel execution", e);
            // Device-side faults are sticky: the context is gone.
            self.lost = Some(err.to_string());
            return Err(err);
        }
        Ok(())
    }

    fn traffic(&self) -> Traffic {
        self.traffic
    }

    fn multiprocessor_count(&self) -> u32 {
        self.info.multiprocessors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_shapes_are_checked() {
        let ok = LaunchConfig::linear(4, 256);
        assert!(check_config("k", &ok, 48 * 1024).is_ok());
        let zero = LaunchConfig::linear(0, 256);
        assert!(
            matches!(check_config("k", &zero, 0), Err(Error::InvalidArgument(m)) if m.contains("zero"))
        );
        let big = LaunchConfig {
            grid: (1, 1, 1),
            block: (32, 32, 2),
            dynamic_smem_bytes: 0,
        };
        assert!(
            matches!(check_config("k", &big, 0), Err(Error::InvalidArgument(m)) if m.contains("2048 threads"))
        );
        let smem = LaunchConfig {
            dynamic_smem_bytes: 100_000,
            ..ok
        };
        assert!(
            matches!(check_config("k", &smem, 99_000), Err(Error::InvalidArgument(m)) if m.contains("100000") && m.contains("99000"))
        );
        assert!(check_config("k", &smem, 232_448).is_ok());
    }
}
