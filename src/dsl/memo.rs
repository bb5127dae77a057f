//! Generated modules, memoised: each kernel variant's PTX is generated
//! once per process for each `(generator, target, tuning)`, so a warm
//! launch neither regenerates the text nor hashes it.
//!
//! The kernel families' launch code asks for their modules through
//! [`memoized`] (the `memo!` macro of `crate::kernels`): the first call for
//! a key runs the generator, every later call returns the same
//! `&'static PtxModule`. A user's typed kernel is memoised the same way
//! through [`Kernel::memoized`](crate::dsl::Kernel::memoized). The modules are kept for the life of the process
//! (a few kilobytes to a few tens of kilobytes each; one per distinct
//! variant a program launches).
//!
//! The runtime's module cache ([`crate::runtime::ModuleCache`]) must refuse
//! two different texts under one module key, which needs a fingerprint of
//! the text. For a memoised module it is computed here, once, and found
//! again by the address of the text: a memoised
//! text is never freed or changed, so its address identifies it. Any
//! other module (a clone, one built by hand) is hashed as before.
//!
//! ```
//! use ptxsmith::dsl::memo;
//! use ptxsmith::kernels::dot;
//! use ptxsmith::Sm;
//!
//! let a = memo::memoized("doc-example dot", Sm::Sm80, (), || dot::ptx::generate(Sm::Sm80))?;
//! let before = memo::generations();
//! let b = memo::memoized("doc-example dot", Sm::Sm80, (), || dot::ptx::generate(Sm::Sm80))?;
//! assert!(std::ptr::eq(a, b));
//! assert_eq!(memo::generations(), before); // nothing generated the second time
//! # Ok::<(), ptxsmith::Error>(())
//! ```

use std::collections::HashMap;
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};

use crate::dsl::module::PtxModule;
use crate::error::Result;
use crate::target::Sm;

/// What identifies a memoised module: the generator (a name unique in the
/// crate), the target and the generator's other arguments (their `Debug`
/// text).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    generator: &'static str,
    sm: Sm,
    knobs: String,
}

static MODULES: Mutex<Option<HashMap<Key, &'static PtxModule>>> = Mutex::new(None);
/// Fingerprints of memoised texts, by the address and length of the text.
static TEXTS: RwLock<Option<HashMap<(usize, usize), u64>>> = RwLock::new(None);
static GENERATIONS: AtomicU64 = AtomicU64::new(0);

/// The fingerprint the runtime's module cache compares texts by
/// (deterministic within a process).
pub(crate) fn fingerprint_text(ptx: &str) -> u64 {
    let mut h = DefaultHasher::new();
    ptx.hash(&mut h);
    h.finish()
}

/// The module `generate` makes for `(generator, sm, knobs)`, generated on
/// the first call for that key and shared afterwards. `generator` names
/// the generator uniquely; `knobs` are its arguments besides `sm` (their
/// `Debug` text is part of the key, so it must show every argument that
/// changes the code).
///
/// A failed generation is returned and not remembered.
///
/// # Errors
/// What `generate` returns.
pub fn memoized<K: fmt::Debug>(
    generator: &'static str,
    sm: Sm,
    knobs: K,
    generate: impl FnOnce() -> Result<PtxModule>,
) -> Result<&'static PtxModule> {
    let key = Key {
        generator,
        sm,
        knobs: format!("{knobs:?}"),
    };
    if let Some(m) = lock_modules().as_ref().and_then(|map| map.get(&key)) {
        return Ok(m);
    }
    // Generate without the lock (a generator may take milliseconds); a
    // racing thread's module for the same key wins, this one is dropped.
    let module = generate()?;
    GENERATIONS.fetch_add(1, Ordering::Relaxed);
    tracing::debug!(
        target: "ptxsmith::generate",
        kernel = %module.kernel,
        tuning = %module.tuning,
        sm = %module.sm,
        ptx_version = %module.version,
        bytes = module.ptx.len(),
        "generated PTX"
    );
    let mut map = lock_modules();
    let map = map.get_or_insert_with(HashMap::new);
    if let Some(m) = map.get(&key) {
        return Ok(m);
    }
    let fp = fingerprint_text(&module.ptx);
    let leaked: &'static PtxModule = Box::leak(Box::new(module));
    if !leaked.ptx.is_empty() {
        TEXTS
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(HashMap::new)
            .insert((leaked.ptx.as_ptr() as usize, leaked.ptx.len()), fp);
    }
    map.insert(key, leaked);
    Ok(leaked)
}

fn lock_modules() -> std::sync::MutexGuard<'static, Option<HashMap<Key, &'static PtxModule>>> {
    MODULES.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The fingerprint of `module`'s text if it is a memoised module's own
/// text (the same allocation, which is never freed or changed); `None`
/// for any other module, whose text must be hashed.
pub(crate) fn known_fingerprint(module: &PtxModule) -> Option<u64> {
    let ptx = &module.ptx;
    if ptx.is_empty() {
        return None;
    }
    TEXTS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()?
        .get(&(ptx.as_ptr() as usize, ptx.len()))
        .copied()
}

/// How many times a generator ran through [`memoized`] in this process:
/// once per distinct key (plus the rare lost race). A warm launch adds
/// nothing.
pub fn generations() -> u64 {
    GENERATIONS.load(Ordering::Relaxed)
}

/// How many PTX module texts the DSL has printed in this process, by any
/// path (memoised or not, `dump_ptx`, tests): every generation of a
/// kernel's text counts. A warm launch adds nothing.
pub fn modules_printed() -> u64 {
    crate::dsl::printer::printed()
}

/// Number of memoised modules.
pub fn len() -> usize {
    lock_modules().as_ref().map_or(0, HashMap::len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::PtxVersion;

    fn module(text: &str) -> PtxModule {
        PtxModule {
            kernel: "k".into(),
            tuning: String::new(),
            sm: Sm::Sm80,
            version: PtxVersion::new(7, 0),
            params: vec![],
            ptx: text.into(),
        }
    }

    #[test]
    fn one_generation_per_key_and_known_fingerprints() {
        let mut runs = 0;
        let a = memoized("memo test", Sm::Sm80, (1u32, "x"), || {
            runs += 1;
            Ok(module("A"))
        })
        .unwrap();
        let b = memoized("memo test", Sm::Sm80, (1u32, "x"), || {
            runs += 1;
            Ok(module("B"))
        })
        .unwrap();
        assert!(std::ptr::eq(a, b));
        assert_eq!(runs, 1);
        let c = memoized("memo test", Sm::Sm80, (2u32, "x"), || Ok(module("C"))).unwrap();
        assert_eq!(c.ptx, "C");
        let d = memoized("memo test", Sm::Sm90, (1u32, "x"), || Ok(module("D"))).unwrap();
        assert_eq!(d.ptx, "D");
        assert_eq!(known_fingerprint(a), Some(fingerprint_text("A")));
        // A clone has its own text allocation: not known, hashed by the cache.
        assert_eq!(known_fingerprint(&a.clone()), None);
        assert_eq!(known_fingerprint(&module("A")), None);
    }

    #[test]
    fn failures_are_not_remembered() {
        let e = memoized("memo failing", Sm::Sm70, (), || {
            Err(crate::Error::invalid("no"))
        });
        assert!(e.is_err());
        let ok = memoized("memo failing", Sm::Sm70, (), || Ok(module("ok"))).unwrap();
        assert_eq!(ok.ptx, "ok");
    }
}
