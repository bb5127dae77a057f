//! [`Executor`] for [`Gpu`]: device buffers, streams, JIT through the
//! module cache, checked asynchronous launches (layer 3 of the fence
//! described in [`crate::runtime`]).
//!
//! Launches, device-to-device copies and fills are queued and return at
//! once. Host copies return when the bytes have landed. A failure of queued
//! work is reported by the next synchronising call on its stream, naming
//! the kernels queued there since the last successful synchronisation; a
//! sticky fault (illegal address, trap, …) marks the `Gpu` lost, and every
//! later call returns [`Error::DeviceLost`] with the same description.

use std::sync::Arc;

use oxicuda_driver::error::CudaError;
use oxicuda_driver::module::{JitOptions, Module};
use oxicuda_driver::stream::Stream;

use crate::abi::{ArgValue, ParamDesc};
use crate::dsl::PtxModule;
use crate::error::{ArgError, Error, FOREIGN_CONTEXT, Result};
use crate::exec::{Executor, LaunchConfig, RawStream, Traffic};
use crate::runtime::gpu::cache::CacheStats;
use crate::runtime::gpu::ffi::{self, ArgPack, DeviceAlloc, Mem};
use crate::runtime::gpu::{
    DevBuf, ForeignRange, Gpu, LoadedKernel, Pending, code_of, driver_error,
};
use crate::target::{MAX_THREADS_PER_BLOCK, STATIC_SMEM_LIMIT, Sm};

/// The parameter sizes of `module`'s entry as its PTX text declares them
/// (how the driver reads the argument pack).
fn ptx_param_sizes(module: &PtxModule) -> Result<Vec<u32>> {
    let sig = crate::sim::parse::entry_signature(&module.ptx, &module.kernel).map_err(|e| {
        Error::invalid(format!(
            "module `{}`: cannot read the entry parameter list from its PTX: {e}",
            module.kernel
        ))
    })?;
    Ok(sig.iter().map(|p| p.size).collect())
}

/// Compare a module's declared parameters with the sizes its PTX entry
/// takes (`in_ptx`): the driver reads the argument pack by the PTX
/// signature, so a module whose text declares more or larger parameters
/// than its [`ParamDesc`]s would make it read past the pack.
fn check_declared(module: &PtxModule, in_ptx: &[u32]) -> Result<()> {
    let size = |p: &ParamDesc| p.kind.size();
    let declared: Vec<u32> = module.params.iter().map(size).collect();
    if declared != in_ptx {
        return Err(Error::invalid(format!(
            "module `{}`: its PTX entry takes parameters of {in_ptx:?} bytes, its description says {declared:?}",
            module.kernel
        )));
    }
    Ok(())
}

/// [`check_declared`] against the signature parsed from the module's own
/// text.
#[cfg(test)]
pub(crate) fn check_signature(module: &PtxModule) -> Result<()> {
    check_declared(module, &ptx_param_sizes(module)?)
}

/// JIT-compile `module` in the current context and look up its entry.
fn jit(module: &PtxModule, driver: Option<(u32, u32)>) -> Result<Arc<LoadedKernel>> {
    let _span = tracing::debug_span!(
        target: "ptxsmith::jit",
        "jit",
        kernel = %module.kernel,
        tuning = %module.tuning,
        sm = %module.sm,
        ptx_version = %module.version,
        bytes = module.ptx.len(),
    )
    .entered();
    let start = std::time::Instant::now();
    let r = jit_load(module, driver);
    match &r {
        Ok(k) => tracing::debug!(
            target: "ptxsmith::jit",
            ms = start.elapsed().as_secs_f64() * 1e3,
            static_smem = k.static_smem,
            "JIT compiled"
        ),
        Err(e) => tracing::warn!(target: "ptxsmith::jit", error = %e, "JIT failed"),
    }
    r
}

fn jit_load(module: &PtxModule, driver: Option<(u32, u32)>) -> Result<Arc<LoadedKernel>> {
    let param_sizes = ptx_param_sizes(module)?;
    check_declared(module, &param_sizes)?;
    let jit_error = |message: String, log: String| Error::Jit {
        kernel: module.kernel.clone(),
        sm: module.sm,
        message,
        log,
    };
    let needs = || {
        let (cuda, branch) = module.version.min_driver();
        let have = driver.map_or("an unknown version".to_string(), |(a, b)| {
            format!("{a}.{b}")
        });
        format!(
            "the module's PTX ISA {} needs CUDA {cuda} (driver {branch}) or newer; this driver supports CUDA {have}",
            module.version
        )
    };
    let (loaded, _info_log) = Module::from_ptx_with_options(&module.ptx, &JitOptions::default())
        .map_err(|e| match e {
            CudaError::JitFailed { log, source, .. } => {
                let text = [log.error.as_str(), log.info.as_str()]
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join("\n");
                let message = if *source == CudaError::UnsupportedPtxVersion {
                    format!("{source}: {}", needs())
                } else {
                    source.to_string()
                };
                jit_error(message, text)
            }
            CudaError::UnsupportedPtxVersion => {
                jit_error(format!("{e}: {}", needs()), String::new())
            }
            CudaError::NotInitialized => driver_error("cuModuleLoadDataEx", e),
            other => jit_error(other.to_string(), String::new()),
        })?;
    let function = loaded.get_function(&module.kernel).map_err(|e| {
        jit_error(
            format!(
                "entry `{}` not found in the loaded module: {e}",
                module.kernel
            ),
            String::new(),
        )
    })?;
    let static_smem = function
        .shared_memory_bytes()
        .ok()
        .and_then(|b| u32::try_from(b).ok())
        .unwrap_or(0);
    Ok(Arc::new(LoadedKernel {
        function,
        _module: loaded,
        static_smem,
        param_sizes,
    }))
}

/// Whether `e` is a sticky error that destroyed the context: oxicuda's
/// `is_fatal` list plus `CUDA_ERROR_LAUNCH_TIMEOUT`, which the Driver API
/// documents the same way ("the context cannot be used (and must be
/// destroyed similar to CUDA_ERROR_LAUNCH_FAILED)") but `is_fatal` misses.
pub(crate) fn is_sticky(e: &CudaError) -> bool {
    e.is_fatal() || matches!(e, CudaError::LaunchTimeout)
}

/// Check a launch shape against the limits every supported target shares
/// and the device's opt-in shared memory (static + dynamic per block).
fn check_config(kernel: &str, cfg: &LaunchConfig, static_smem: u32, max_smem: u32) -> Result<()> {
    let (gx, gy, gz) = cfg.grid;
    let (bx, by, bz) = cfg.block;
    if [gx, gy, gz, bx, by, bz].contains(&0) {
        return Err(Error::invalid(format!(
            "launch of `{kernel}`: grid {:?} and block {:?} must have no zero dimension",
            cfg.grid, cfg.block
        )));
    }
    let threads = u64::from(bx) * u64::from(by) * u64::from(bz);
    if threads > u64::from(MAX_THREADS_PER_BLOCK) {
        return Err(Error::invalid(format!(
            "launch of `{kernel}`: block {:?} has {threads} threads, above {MAX_THREADS_PER_BLOCK}",
            cfg.block
        )));
    }
    let total = u64::from(static_smem) + u64::from(cfg.dynamic_smem_bytes);
    if total > u64::from(max_smem) {
        return Err(Error::invalid(format!(
            "launch of `{kernel}`: {static_smem} bytes of static + {} bytes of dynamic shared memory = {total}, the device allows {max_smem} per block",
            cfg.dynamic_smem_bytes
        )));
    }
    Ok(())
}

/// Whether a block with `static_smem + dynamic` bytes of shared memory
/// must opt in above the default 48 KiB.
fn needs_smem_opt_in(static_smem: u32, dynamic: u32) -> bool {
    u64::from(static_smem) + u64::from(dynamic) > u64::from(STATIC_SMEM_LIMIT)
}

impl Gpu {
    /// The loaded entry of `module`, compiling it on first use.
    fn kernel(&mut self, module: &PtxModule) -> Result<Arc<LoadedKernel>> {
        if module.sm > self.info.sm {
            return Err(Error::UnsupportedSm(format!(
                "module `{}` targets {}, but device {} `{}` runs code for {} at most",
                module.kernel, module.sm, self.info.ordinal, self.info.name, self.info.sm
            )));
        }
        self.make_current()?;
        let driver = self.info.driver_version;
        self.modules
            .get_or_load(module, |m| jit(m, driver))
            .map(Arc::clone)
    }

    /// The memory holding `[addr, addr + len)`: a live buffer (and the
    /// offset of `addr` in it), or the foreign memory of a live foreign
    /// view.
    fn find(&self, addr: u64, len: usize, op: &str) -> Result<Mem<'_>> {
        let hit = self.buffers.range(..=addr).next_back();
        if let Some((&base, b)) = hit
            && (addr - base)
                .checked_add(len as u64)
                .is_some_and(|end| end <= b.bytes as u64)
        {
            return Ok(Mem::Own(&b.mem, (addr - base) as usize));
        }
        let end = addr.checked_add(len as u64);
        if self
            .foreign
            .iter()
            .any(|r| r.start <= addr && end.is_some_and(|e| e <= r.end))
        {
            return Ok(Mem::Foreign(addr));
        }
        Err(Error::invalid(format!(
            "{op}: [{addr:#x}, +{len}) is not inside a live buffer of device {}",
            self.info.ordinal
        )))
    }

    /// Every pointer argument must point into (or one past) a live buffer
    /// of this `Gpu` or a live foreign view, or be null: a stray address
    /// would fault on the device and lose the context.
    fn check_pointers(&self, module: &PtxModule, args: &[ArgValue]) -> Result<()> {
        for (p, a) in module.params.iter().zip(args) {
            let ArgValue::Ptr(addr) = *a else { continue };
            if addr != 0 && self.find(addr, 0, "").is_err() {
                return Err(Error::invalid(format!(
                    "kernel `{}` parameter `{}` = {addr:#x} is not inside a live buffer of device {}",
                    module.kernel, p.name, self.info.ordinal
                )));
            }
        }
        Ok(())
    }

    fn raw_default(&self) -> RawStream {
        RawStream::from_ptr(self.default_stream.raw().0)
    }

    /// Turn a failed synchronisation into an error naming the kernels
    /// queued on `s` since its last good one; mark the `Gpu` lost if the
    /// fault is sticky.
    fn sync_error(&mut self, s: Option<RawStream>, e: CudaError) -> Error {
        let kernels: Vec<String> = match s {
            Some(s) => self
                .pending
                .remove(&s.0)
                .map(|p| p.describe())
                .into_iter()
                .collect(),
            None => self.pending.drain().map(|(_, p)| p.describe()).collect(),
        };
        let kernel = if kernels.is_empty() {
            "(no kernel queued)".to_string()
        } else {
            kernels.join(", ")
        };
        let err = Error::Launch {
            kernel: kernel.clone(),
            code: code_of(&e),
            message: format!(
                "queued work failed on device {} ({e}); kernels queued since the last synchronisation: {kernel}",
                self.info.ordinal
            ),
        };
        tracing::warn!(
            target: "ptxsmith::launch",
            device = self.info.ordinal,
            code = %code_of(&e),
            kernels = %kernel,
            sticky = is_sticky(&e),
            "queued work failed"
        );
        if is_sticky(&e) {
            self.mark_lost(err.to_string());
        }
        err
    }

    fn copy_error(&mut self, call: &'static str, s: RawStream, e: CudaError) -> Error {
        // A synchronous copy also reports failures of earlier queued work.
        if is_sticky(&e) {
            return self.sync_error(Some(s), e);
        }
        driver_error(call, e)
    }
}

impl Executor for Gpu {
    fn sm(&self) -> Sm {
        self.info.sm
    }

    fn multiprocessor_count(&self) -> u32 {
        self.info.multiprocessors
    }

    fn default_stream(&self) -> RawStream {
        self.raw_default()
    }

    fn create_stream(&mut self) -> Result<RawStream> {
        self.make_current()?;
        let s = Stream::new(&self.ctx).map_err(|e| driver_error("cuStreamCreate", e))?;
        let raw = RawStream::from_ptr(s.raw().0);
        self.streams.insert(raw.0, s);
        Ok(raw)
    }

    fn destroy_stream(&mut self, s: RawStream) -> Result<()> {
        if self.lost.is_some() {
            return Ok(());
        }
        let r = self.synchronize(Some(s));
        self.streams.remove(&s.0);
        r
    }

    fn alloc(&mut self, bytes: usize, zeroed: bool) -> Result<u64> {
        self.make_current()?;
        let mem = DeviceAlloc::new(bytes).map_err(|e| match e {
            CudaError::OutOfMemory => Error::Driver {
                call: "cuMemAlloc",
                code: code_of(&e),
                message: format!(
                    "out of device memory allocating {bytes} bytes on device {}",
                    self.info.ordinal
                ),
            },
            e => driver_error("cuMemAlloc", e),
        })?;
        let addr = mem.addr();
        if zeroed {
            // Zero on the default stream and wait, so the buffer reads as
            // zero from every stream.
            let s = self.raw_default();
            ffi::zero(Mem::Own(&mem, 0), bytes, s)
                .and_then(|()| ffi::synchronize(s))
                .map_err(|e| driver_error("cuMemsetD32Async", e))?;
        }
        self.buffers.insert(addr, DevBuf { mem, bytes });
        self.traffic.allocations += 1;
        Ok(addr)
    }

    fn free(&mut self, addr: u64) -> Result<()> {
        if !self.buffers.contains_key(&addr) {
            return Err(Error::invalid(format!(
                "free of {addr:#x}, which is not a live buffer of device {}",
                self.info.ordinal
            )));
        }
        // `cuMemFree` needs the context current; a lost context has leaked
        // its buffers, and dropping them is a no-op.
        let _ = self.ctx.set_current();
        self.buffers.remove(&addr);
        Ok(())
    }

    fn copy_htod(&mut self, s: RawStream, dst: u64, src: &[u8]) -> Result<()> {
        self.make_current()?;
        let m = self.find(dst, src.len(), "upload")?;
        if let Err(e) = ffi::copy_htod(m, src, s) {
            return Err(self.copy_error("cuMemcpyHtoDAsync", s, e));
        }
        self.pending.remove(&s.0);
        self.traffic.bytes_uploaded += src.len() as u64;
        self.traffic.uploads += 1;
        Ok(())
    }

    fn copy_dtoh(&mut self, s: RawStream, src: u64, dst: &mut [u8]) -> Result<()> {
        self.make_current()?;
        let m = self.find(src, dst.len(), "download")?;
        if let Err(e) = ffi::copy_dtoh(m, dst, s) {
            return Err(self.copy_error("cuMemcpyDtoHAsync", s, e));
        }
        self.pending.remove(&s.0);
        self.traffic.bytes_downloaded += dst.len() as u64;
        self.traffic.downloads += 1;
        Ok(())
    }

    fn copy_dtod(&mut self, s: RawStream, dst: u64, src: u64, bytes: usize) -> Result<()> {
        self.make_current()?;
        let from = self.find(src, bytes, "device copy source")?;
        let to = self.find(dst, bytes, "device copy destination")?;
        let r = ffi::copy_dtod(to, from, bytes, s);
        r.map_err(|e| driver_error("cuMemcpyDtoDAsync", e))?;
        self.traffic.bytes_copied_on_device += bytes as u64;
        Ok(())
    }

    fn zero(&mut self, s: RawStream, dst: u64, bytes: usize) -> Result<()> {
        self.make_current()?;
        let m = self.find(dst, bytes, "zero")?;
        ffi::zero(m, bytes, s).map_err(|e| driver_error("cuMemsetD32Async", e))
    }

    fn launch(
        &mut self,
        s: RawStream,
        module: &PtxModule,
        cfg: LaunchConfig,
        args: &[ArgValue],
    ) -> Result<()> {
        let pack = ArgPack::new(&module.kernel, &module.params, args)?;
        self.check_pointers(module, args)?;
        let loaded = self.kernel(module)?;
        // The cache is keyed by the PTX text: a module with the same text
        // but another parameter description must still be refused (the
        // driver would read the pack by the text's signature).
        check_declared(module, &loaded.param_sizes)?;
        check_config(
            &module.kernel,
            &cfg,
            loaded.static_smem,
            self.info.max_smem_per_block_optin,
        )?;
        let launch_error = |stage: &str, e: CudaError| Error::Launch {
            kernel: module.kernel.clone(),
            code: code_of(&e),
            message: format!(
                "{stage} (grid {:?}, block {:?}, {} B dynamic + {} B static smem): {e}",
                cfg.grid, cfg.block, cfg.dynamic_smem_bytes, loaded.static_smem
            ),
        };
        if needs_smem_opt_in(loaded.static_smem, cfg.dynamic_smem_bytes) {
            let bytes = i32::try_from(cfg.dynamic_smem_bytes).unwrap_or(i32::MAX);
            loaded
                .function
                .set_max_dynamic_shared_memory(bytes)
                .map_err(|e| launch_error("opting in to dynamic shared memory", e))?;
        }
        if let Err(e) = ffi::launch(&loaded.function, &cfg, s, &pack) {
            if is_sticky(&e) {
                return Err(self.sync_error(Some(s), e));
            }
            return Err(launch_error("cuLaunchKernel", e));
        }
        self.pending.entry(s.0).or_default().push(&module.kernel);
        self.traffic.launches += 1;
        Ok(())
    }

    fn stream_wait(&mut self, waiter: RawStream, waited: RawStream) -> Result<()> {
        self.make_current()?;
        ffi::stream_wait(waiter, waited).map_err(|e| driver_error("cuStreamWaitEvent", e))
    }

    fn synchronize(&mut self, s: Option<RawStream>) -> Result<()> {
        self.make_current()?;
        let r = match s {
            Some(s) => ffi::synchronize(s),
            None => ffi::context_synchronize(),
        };
        match r {
            Ok(()) => {
                match s {
                    Some(s) => {
                        self.pending.remove(&s.0);
                    }
                    None => self.pending.clear(),
                }
                Ok(())
            }
            Err(e) => Err(self.sync_error(s, e)),
        }
    }

    fn traffic(&self) -> Traffic {
        self.traffic
    }

    fn lost(&self) -> Option<String> {
        self.lost.clone()
    }

    fn load(&mut self, module: &PtxModule) -> Result<()> {
        self.kernel(module).map(drop)
    }

    fn module_cache_stats(&self) -> Option<CacheStats> {
        Some(self.modules.stats())
    }

    fn adopt_foreign(&mut self, addr: u64, bytes: usize) -> Result<()> {
        self.make_current()?;
        let end = addr.checked_add(bytes as u64).ok_or_else(|| {
            Error::invalid(format!(
                "foreign view [{addr:#x}, +{bytes}) wraps the address space"
            ))
        })?;
        let info = ffi::pointer_info(addr).map_err(|e| {
            ArgError::new(
                "foreign view",
                format!(
                    "device memory of device {} (a CUDA allocation)",
                    self.info.ordinal
                ),
                format!("{addr:#x}, which the driver does not know ({e})"),
            )
            .with_message(format!(
                "foreign view at {addr:#x}: not device memory the driver knows ({})",
                code_of(&e)
            ))
        })?;
        let ours = self.ctx.raw().0 as usize;
        if info.context != 0 && info.context != ours {
            return Err(Error::WrongContext {
                what: format!("foreign memory at {addr:#x}"),
                owner: FOREIGN_CONTEXT,
                used: 0,
            });
        }
        let alloc_end = info.base.saturating_add(info.size as u64);
        if info.size != 0 && end > alloc_end {
            let room = alloc_end.saturating_sub(addr);
            return Err(ArgError::new(
                "foreign view",
                format!("at most {room} bytes (the allocation [{:#x}, +{}) ends there)", info.base, info.size),
                format!("{bytes} bytes"),
            )
            .with_message(format!(
                "foreign view [{addr:#x}, +{bytes}) runs past its allocation [{:#x}, +{}): {room} bytes remain",
                info.base, info.size
            ))
            .into());
        }
        match self
            .foreign
            .iter_mut()
            .find(|r| r.start == addr && r.end == end)
        {
            Some(r) => r.views += 1,
            None => self.foreign.push(ForeignRange {
                start: addr,
                end,
                views: 1,
            }),
        }
        Ok(())
    }

    fn forget_foreign(&mut self, addr: u64, bytes: usize) {
        let end = addr.saturating_add(bytes as u64);
        if let Some(i) = self
            .foreign
            .iter()
            .position(|r| r.start == addr && r.end == end)
        {
            self.foreign[i].views -= 1;
            if self.foreign[i].views == 0 {
                self.foreign.swap_remove(i);
            }
        }
    }

    fn verify_stream(&mut self, s: RawStream) -> Result<()> {
        self.make_current()?;
        // Recording an event of this context on the stream fails for a
        // stream of another context (CUDA_ERROR_INVALID_HANDLE) or one the
        // driver does not know.
        ffi::stream_wait(s, s).map_err(|e| driver_error("cuEventRecord", e))
    }

    fn driver_context(&self) -> Option<usize> {
        Some(self.ctx.raw().0 as usize)
    }

    fn timing_start(&mut self, s: RawStream) -> Result<bool> {
        self.make_current()?;
        let ev = ffi::timing_event(s).map_err(|e| driver_error("cuEventRecord", e))?;
        self.timing.insert(s.0, ev);
        Ok(true)
    }

    fn timing_end(&mut self, s: RawStream) -> Result<Option<std::time::Duration>> {
        let Some(start) = self.timing.remove(&s.0) else {
            return Ok(None);
        };
        self.make_current()?;
        let end = ffi::timing_event(s).map_err(|e| driver_error("cuEventRecord", e))?;
        // Through the executor's own synchronisation: a fault of the timed
        // work is reported naming its kernels, and marks the context lost.
        self.synchronize(Some(s))?;
        let ms = oxicuda_driver::event::Event::elapsed_time(&start, &end)
            .map_err(|e| driver_error("cuEventElapsedTime", e))?;
        Ok(Some(std::time::Duration::from_secs_f64(
            f64::from(ms.max(0.0)) / 1e3,
        )))
    }

    fn bookkeeping(&self) -> usize {
        self.pending.values().map(Pending::len).sum::<usize>() + self.foreign.len()
    }

    fn make_current(&self) -> Result<()> {
        Gpu::make_current(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watchdog_timeout_is_sticky_like_a_fault() {
        assert!(is_sticky(&CudaError::LaunchTimeout));
        assert!(is_sticky(&CudaError::IllegalAddress));
        assert!(is_sticky(&CudaError::LaunchFailed));
        assert!(!is_sticky(&CudaError::InvalidValue));
        assert!(!is_sticky(&CudaError::NotReady));
    }

    #[test]
    fn launch_shapes_are_checked() {
        let ok = LaunchConfig::linear(4, 256);
        assert!(check_config("k", &ok, 0, 48 * 1024).is_ok());
        let zero = LaunchConfig::linear(0, 256);
        assert!(
            matches!(check_config("k", &zero, 0, 0), Err(Error::InvalidArgument(m)) if m.contains("zero"))
        );
        let big = LaunchConfig {
            grid: (1, 1, 1),
            block: (32, 32, 2),
            dynamic_smem_bytes: 0,
        };
        assert!(
            matches!(check_config("k", &big, 0, 0), Err(Error::InvalidArgument(m)) if m.contains("2048 threads"))
        );
        let smem = LaunchConfig {
            dynamic_smem_bytes: 100_000,
            ..ok
        };
        assert!(
            matches!(check_config("k", &smem, 0, 99_000), Err(Error::InvalidArgument(m)) if m.contains("100000") && m.contains("99000"))
        );
        assert!(check_config("k", &smem, 0, 232_448).is_ok());
        // Static shared memory counts against the same per-block limit.
        let e = check_config("k", &smem, 40_000, 132_000).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains("40000 bytes of static") && m.contains("= 140000")),
            "{e}"
        );
    }

    #[test]
    fn opt_in_counts_static_and_dynamic_shared_memory() {
        assert!(!needs_smem_opt_in(0, 48 * 1024));
        assert!(needs_smem_opt_in(1, 48 * 1024));
        assert!(needs_smem_opt_in(40 * 1024, 9 * 1024));
        assert!(!needs_smem_opt_in(40 * 1024, 8 * 1024));
    }
}

#[cfg(test)]
mod signature_tests {
    use super::*;
    use crate::abi::{ParamKind, ScalarType};

    #[test]
    fn the_entry_signature_in_the_ptx_must_match_the_description() {
        // dot_rows_f32 takes (x, y, out: pointers; rows, n: u32).
        let good = crate::kernels::dot::ptx::generate(Sm::Sm80).unwrap();
        check_signature(&good).unwrap();
        // Fewer declared than the entry takes: the driver would read past
        // the argument pack.
        let mut fewer = good.clone();
        fewer.params.pop();
        let e = check_signature(&fewer).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains("[8, 8, 8, 4, 4]") && m.contains("[8, 8, 8, 4]")),
            "{e}"
        );
        // A smaller slot than the entry reads.
        let mut small = good.clone();
        small.params[0].kind = ParamKind::Scalar(ScalarType::U32);
        assert!(check_signature(&small).is_err());
        // An entry that is not in the text.
        let mut other = good;
        other.kernel = "missing".into();
        let e = check_signature(&other).unwrap_err();
        assert!(e.to_string().contains("missing"), "{e}");
    }
}
