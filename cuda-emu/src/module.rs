//! Modules and functions: `cuModuleLoadData(Ex)` parses the PTX with the
//! simulator after checking it as the driver's JIT does (`jit.rs`),
//! `cuModuleGetFunction`, and the function attributes.

use std::collections::HashMap;
use std::sync::Arc;

use ptxsmith::sim::Program;

use crate::driver::Driver;
use crate::error::*;
use crate::handles::Kind;
use crate::jit::{DEFAULT_SMEM, Function, JitLog, JitRequest, Module, jit_image};

impl Driver {
    /// `cuModuleLoadDataEx` in the current context: the handle, or the
    /// error code; the JIT logs in both cases.
    pub fn module_load(&mut self, image: &[u8], req: JitRequest) -> (Res<u64>, JitLog) {
        let mut log = JitLog::default();
        let r = self.module_load_inner(image, req, &mut log);
        (r, log)
    }

    fn module_load_inner(&mut self, image: &[u8], req: JitRequest, log: &mut JitLog) -> Res<u64> {
        let ctx = self.current_ctx()?.handle;
        let fail = |log: &mut JitLog, (code, text): (CUresult, String)| {
            log.error = text;
            Err(code)
        };
        let dev = &self.devices[self.contexts[&ctx].device];
        let (cc_major, cc_minor) = dev.spec.cc();
        let sm_name = dev.spec.sm.name();
        let cc = cc_major * 10 + cc_minor;
        let program = match jit_image(image, self.config.driver_version, cc, req) {
            Ok(p) => Arc::new(p),
            Err(e) => return fail(log, e),
        };
        let program = self.load_globals(ctx, &program)?;
        let entries = program.entry_names().join("', '");
        log.info = format!(
            "ptxas info    : {} bytes gmem\nptxas info    : Compiling entry function(s) '{entries}' for '{sm_name}' (ptxsmith-emu: parsed for the CPU simulator)",
            program.global_image_len()
        );
        let h = self.new_handle(Kind::Module);
        let c = self.contexts.get_mut(&ctx).expect("current");
        c.modules.insert(
            h,
            Module {
                program,
                functions: HashMap::new(),
            },
        );
        self.owners.insert(h, ctx);
        Ok(h)
    }

    /// `cuModuleUnload`: its functions become invalid handles; launches
    /// already queued keep the code they need.
    pub fn module_unload(&mut self, m: u64) -> Res<()> {
        let ctx = self.owner(m, Kind::Module)?;
        self.contexts[&ctx].usable()?;
        let c = self.contexts.get_mut(&ctx).expect("owner");
        let module = c.modules.remove(&m).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
        drop_globals(c, &module.program);
        for f in module.functions.values() {
            c.functions.remove(f);
            self.owners.remove(f);
        }
        self.owners.remove(&m);
        Ok(())
    }

    /// Give the module variables of `program` storage in context `ctx`
    /// (one allocation, registered with the context's allocations so that
    /// copies to and from a variable's address are checked as any other;
    /// `CUDA_ERROR_OUT_OF_MEMORY` when the context's address range or the
    /// simulator's memory is used up).
    fn load_globals(&mut self, ctx: u64, program: &Arc<Program>) -> Res<Arc<Program>> {
        let c = self
            .contexts
            .get_mut(&ctx)
            .ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        let loaded = c
            .sim
            .load_module(program)
            .map_err(|_| CUDA_ERROR_OUT_OF_MEMORY)?;
        if let Some(base) = loaded.global_base() {
            let len = loaded.global_image_len().max(1) as u64;
            if base + len > c.range.1 {
                let _ = c.sim.unload_module(&loaded);
                return Err(CUDA_ERROR_OUT_OF_MEMORY);
            }
            c.allocs.insert(base, len);
        }
        Ok(loaded)
    }

    /// `cuModuleGetGlobal`: the device address and size of the module
    /// variable `name` (`CUDA_ERROR_NOT_FOUND` for a name that is not a
    /// module-scope `.global` or `.const` variable of the module; a
    /// `.const` variable's address is the module's device copy of the
    /// constant bank, which every later launch reads).
    pub fn module_get_global(&mut self, m: u64, name: &str) -> Res<(u64, usize)> {
        let ctx = self.owner(m, Kind::Module)?;
        self.contexts[&ctx].usable()?;
        let module = self.contexts[&ctx]
            .modules
            .get(&m)
            .ok_or(CUDA_ERROR_INVALID_HANDLE)?;
        module
            .program
            .global(name)
            .map(|(a, s)| (a, s as usize))
            .ok_or(CUDA_ERROR_NOT_FOUND)
    }

    /// `cuModuleGetFunction` (`CUDA_ERROR_NOT_FOUND` for a name that is not
    /// an entry); the same handle for the same name.
    pub fn module_get_function(&mut self, m: u64, name: &str) -> Res<u64> {
        let ctx = self.owner(m, Kind::Module)?;
        self.contexts[&ctx].usable()?;
        let c = &self.contexts[&ctx];
        let module = c.modules.get(&m).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
        if let Some(&f) = module.functions.get(name) {
            return Ok(f);
        }
        let program = Arc::clone(&module.program);
        let e = program.entry(name).ok_or(CUDA_ERROR_NOT_FOUND)?;
        let (major, minor) = program.version();
        let f = Function {
            module: m,
            name: name.to_string(),
            params: e.params.iter().map(|p| (p.offset, p.size)).collect(),
            param_bytes: e.param_bytes,
            static_smem: e.static_shared,
            local_bytes: e.local_bytes,
            maxntid: e.maxntid,
            reqntid: e.reqntid,
            regs: e.nregs.min(255),
            max_dyn_smem: DEFAULT_SMEM.saturating_sub(e.static_shared),
            carveout: -1,
            ptx_version: (major * 10 + minor) as i32,
            program: Arc::clone(&program),
        };
        let h = self.new_handle(Kind::Function);
        let c = self.contexts.get_mut(&ctx).expect("owner");
        c.functions.insert(h, f);
        c.modules
            .get_mut(&m)
            .expect("looked up")
            .functions
            .insert(name.to_string(), h);
        self.owners.insert(h, ctx);
        Ok(h)
    }

    /// `cuFuncGetParamInfo`: `(offset, size)` of parameter `i` of `f`
    /// (`CUDA_ERROR_INVALID_VALUE` past the last one).
    pub fn func_param_info(&self, f: u64, i: usize) -> Res<(u32, u32)> {
        let (_, func) = self.function(f)?;
        func.params.get(i).copied().ok_or(CUDA_ERROR_INVALID_VALUE)
    }

    /// The function behind handle `f` and its context.
    pub fn function(&self, f: u64) -> Res<(u64, &Function)> {
        let ctx = self.owner(f, Kind::Function)?;
        let c = &self.contexts[&ctx];
        c.usable()?;
        let func = c.functions.get(&f).ok_or(CUDA_ERROR_INVALID_HANDLE)?;
        Ok((ctx, func))
    }

    /// `cuFuncGetAttribute`.
    pub fn func_attribute(&self, f: u64, attr: i32) -> Res<i32> {
        let (ctx, func) = self.function(f)?;
        let (major, minor) = self.devices[self.contexts[&ctx].device].spec.cc();
        let v = match attr {
            0 => func.max_threads(),
            1 => func.static_smem,
            // CONST_SIZE_BYTES: the module's user `.const` bank.
            2 => u32::try_from(func.program.const_bank_len()).unwrap_or(u32::MAX),
            3 => func.local_bytes,
            4 => func.regs,
            5 => return Ok(func.ptx_version),
            6 => major * 10 + minor,
            7 => 0,
            8 => func.max_dyn_smem,
            9 => return Ok(func.carveout),
            // Cluster attributes (`cluster::func_attribute`).
            10..=15 => crate::cluster::func_attribute(func.program.entry(&func.name), attr),
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        };
        Ok(v as i32)
    }

    /// `cuFuncSetAttribute`: `MAX_DYNAMIC_SHARED_SIZE_BYTES` (static +
    /// value within the device's opt-in limit) and
    /// `PREFERRED_SHARED_MEMORY_CARVEOUT` (-1 to 100); the rest are
    /// read-only.
    pub fn func_set_attribute(&mut self, f: u64, attr: i32, value: i32) -> Res<()> {
        let (ctx, func) = self.function(f)?;
        let optin = self.devices[self.contexts[&ctx].device]
            .spec
            .sm
            .info()
            .max_smem_per_block_optin;
        let static_smem = func.static_smem;
        let func = self
            .contexts
            .get_mut(&ctx)
            .and_then(|c| c.functions.get_mut(&f))
            .expect("looked up");
        match attr {
            8 => {
                let v = u32::try_from(value).map_err(|_| CUDA_ERROR_INVALID_VALUE)?;
                if u64::from(static_smem) + u64::from(v) > u64::from(optin) {
                    return Err(CUDA_ERROR_INVALID_VALUE);
                }
                func.max_dyn_smem = v;
            }
            9 => {
                if !(-1..=100).contains(&value) {
                    return Err(CUDA_ERROR_INVALID_VALUE);
                }
                func.carveout = value;
            }
            _ => return Err(CUDA_ERROR_INVALID_VALUE),
        }
        Ok(())
    }
}

/// Release the module variables of `program` (a module of `c` being
/// unloaded): launches still queued that use them fault when they run.
pub(crate) fn drop_globals(c: &mut crate::context::Context, program: &Program) {
    if let Some(base) = program.global_base() {
        c.allocs.remove(&base);
        let _ = c.sim.unload_module(program);
    }
}
