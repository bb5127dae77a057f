//! Libraries and kernels (CUDA Driver API §6.12, "Library Management"):
//! context-independent loading. `cuLibraryLoadData` checks and parses the
//! PTX once; the library becomes a module of a context the first time
//! something of it is asked for there (`cuLibraryGetModule`,
//! `cuKernelGetFunction`, a launch of a `CUkernel` cast to `CUfunction`),
//! as the driver loads a library into each context lazily.

use std::collections::HashMap;
use std::sync::Arc;

use ptxsmith::sim::Program;

use crate::driver::Driver;
use crate::error::*;
use crate::handles::{self, Kind};
use crate::jit::{JitLog, JitRequest, Library, LibraryEntry, jit_image};

/// The entries of `program`, in PTX order, with their parameter layout.
fn names(program: &Program) -> Vec<LibraryEntry> {
    program
        .entry_names()
        .into_iter()
        .map(|n| {
            let params = program
                .entry(n)
                .map(|e| e.params.iter().map(|p| (p.offset, p.size)).collect())
                .unwrap_or_default();
            (n.to_string(), params)
        })
        .collect()
}

impl Driver {
    /// `cuLibraryLoadData`: the library handle, or the JIT's code; the logs
    /// in both cases. With a context current the library is loaded into it
    /// at once (its device's checks); without one it is checked against
    /// device 0.
    pub fn library_load(&mut self, image: &[u8], req: JitRequest) -> (Res<u64>, JitLog) {
        let mut log = JitLog::default();
        let r = self.library_load_inner(image, req, &mut log);
        (r, log)
    }

    fn library_load_inner(&mut self, image: &[u8], req: JitRequest, log: &mut JitLog) -> Res<u64> {
        let eager = crate::driver::current().is_some();
        let (module, entries) = if eager {
            let (m, l) = self.module_load(image, req);
            *log = l;
            let (ctx, m) = (self.current_handle()?, m?);
            let program = &self.contexts[&ctx].modules[&m].program;
            (Some((ctx, m)), names(program))
        } else {
            (None, self.check_detached(image, req, log)?)
        };
        let h = self.new_handle(Kind::Library);
        self.libraries.insert(
            h,
            Library {
                image: Arc::new(image.to_vec()),
                req,
                entries,
                modules: module.into_iter().collect(),
                kernels: HashMap::new(),
            },
        );
        Ok(h)
    }

    /// The JIT's checks without a context: against device 0.
    fn check_detached(
        &mut self,
        image: &[u8],
        req: JitRequest,
        log: &mut JitLog,
    ) -> Res<Vec<LibraryEntry>> {
        let fail = |log: &mut JitLog, (code, text): (CUresult, String)| {
            log.error = text;
            Err(code)
        };
        let dev = self.device(0)?;
        let (major, minor) = dev.spec.cc();
        match jit_image(image, self.config.driver_version, major * 10 + minor, req) {
            Ok(p) => Ok(names(&p)),
            Err(e) => fail(log, e),
        }
    }

    /// The library behind handle `l` (`CUDA_ERROR_INVALID_HANDLE`).
    pub fn library(&self, l: u64) -> Res<&Library> {
        if !handles::is(l, Kind::Library) {
            return Err(CUDA_ERROR_INVALID_HANDLE);
        }
        self.libraries.get(&l).ok_or(CUDA_ERROR_INVALID_HANDLE)
    }

    /// `cuLibraryUnload`: its kernels become invalid handles, and so do
    /// the modules made of it in every context and their functions.
    pub fn library_unload(&mut self, l: u64) -> Res<()> {
        self.library(l)?;
        let lib = self.libraries.remove(&l).expect("checked");
        for (ctx, m) in lib.modules {
            if let Some(c) = self.contexts.get_mut(&ctx)
                && let Some(module) = c.modules.remove(&m)
            {
                crate::module::drop_globals(c, &module.program);
                for f in module.functions.values() {
                    c.functions.remove(f);
                    self.owners.remove(f);
                }
                self.owners.remove(&m);
            }
        }
        for k in lib.kernels.values() {
            self.kernels.remove(k);
        }
        Ok(())
    }

    /// `cuLibraryGetKernel` (`CUDA_ERROR_NOT_FOUND` for a name that is not
    /// an entry); the same handle for the same name.
    pub fn library_get_kernel(&mut self, l: u64, name: &str) -> Res<u64> {
        let lib = self.library(l)?;
        if let Some(&k) = lib.kernels.get(name) {
            return Ok(k);
        }
        if !lib.entries.iter().any(|(e, _)| e == name) {
            return Err(CUDA_ERROR_NOT_FOUND);
        }
        let k = self.new_handle(Kind::Kernel);
        self.libraries
            .get_mut(&l)
            .expect("checked")
            .kernels
            .insert(name.to_string(), k);
        self.kernels.insert(k, (l, name.to_string()));
        Ok(k)
    }

    /// `cuLibraryGetModule`: the module of library `l` in the current
    /// context, loaded there now if it is not yet.
    pub fn library_module(&mut self, l: u64) -> Res<u64> {
        let ctx = self.current_handle()?;
        self.contexts[&ctx].usable()?;
        let lib = self.library(l)?;
        if let Some(&m) = lib.modules.get(&ctx)
            && self.contexts[&ctx].modules.contains_key(&m)
        {
            return Ok(m);
        }
        let (image, req) = (Arc::clone(&lib.image), lib.req);
        let m = self.module_load(&image, req).0?;
        self.libraries
            .get_mut(&l)
            .expect("checked")
            .modules
            .insert(ctx, m);
        Ok(m)
    }

    /// The kernel behind handle `k`: its library and entry name.
    pub fn kernel(&self, k: u64) -> Res<(u64, String)> {
        if !handles::is(k, Kind::Kernel) {
            return Err(CUDA_ERROR_INVALID_HANDLE);
        }
        self.kernels
            .get(&k)
            .cloned()
            .ok_or(CUDA_ERROR_INVALID_HANDLE)
    }

    /// `cuKernelGetFunction`: kernel `k` as a function of the current
    /// context.
    pub fn kernel_function(&mut self, k: u64) -> Res<u64> {
        let (l, name) = self.kernel(k)?;
        let m = self.library_module(l)?;
        self.module_get_function(m, &name)
    }

    /// A function handle, or a kernel handle cast to `CUfunction` (the
    /// driver accepts both in launches): the function of the current
    /// context.
    pub fn launchable(&mut self, f: u64) -> Res<u64> {
        if handles::is(f, Kind::Kernel) {
            self.kernel_function(f)
        } else {
            Ok(f)
        }
    }

    /// `cuKernelGetAttribute` / `cuKernelSetAttribute` resolve the kernel
    /// in the current context, which must be on device `dev`
    /// (`CUDA_ERROR_INVALID_DEVICE` otherwise).
    pub fn kernel_function_on(&mut self, k: u64, dev: i32) -> Res<u64> {
        self.device(dev)?;
        self.kernel(k)?;
        let ctx = self.current_handle()?;
        if self.contexts[&ctx].device as i32 != dev {
            return Err(CUDA_ERROR_INVALID_DEVICE);
        }
        self.kernel_function(k)
    }

    /// `cuLibraryGetKernelCount`.
    pub fn library_kernel_count(&self, l: u64) -> Res<usize> {
        Ok(self.library(l)?.entries.len())
    }

    /// `cuLibraryEnumerateKernels`: the kernels of the first `n` entries,
    /// in PTX order.
    pub fn library_kernels(&mut self, l: u64, n: usize) -> Res<Vec<u64>> {
        let names: Vec<String> = self
            .library(l)?
            .entries
            .iter()
            .take(n)
            .map(|(e, _)| e.clone())
            .collect();
        names
            .iter()
            .map(|e| self.library_get_kernel(l, e))
            .collect()
    }

    /// `cuKernelGetParamInfo`: `(offset, size)` of parameter `i`
    /// (`CUDA_ERROR_INVALID_VALUE` past the last).
    pub fn kernel_param_info(&self, k: u64, i: usize) -> Res<(u32, u32)> {
        let (l, name) = self.kernel(k)?;
        let lib = self.library(l)?;
        let (_, params) = lib
            .entries
            .iter()
            .find(|(e, _)| *e == name)
            .ok_or(CUDA_ERROR_INVALID_HANDLE)?;
        params.get(i).copied().ok_or(CUDA_ERROR_INVALID_VALUE)
    }

    /// `cuLibraryGetGlobal`: the variable `name` of the library's module
    /// in the current context (loaded there first if need be), as
    /// `cuModuleGetGlobal`.
    pub fn library_get_global(&mut self, l: u64, name: &str) -> Res<(u64, usize)> {
        let m = self.library_module(l)?;
        self.module_get_global(m, name)
    }
}
