//! The module cache: each [`PtxModule`] is JIT-compiled once per context.
//!
//! Entries are keyed by [`ModuleKey`] = `(kernel, tuning, sm)`. The cache is
//! generic over what a load produces (a loaded kernel on the GPU, anything
//! in tests), so the keying logic is tested without a device.
//!
//! Two different PTX texts under one key would mean a generator whose
//! tuning key does not name every knob that changes the code; the cache
//! refuses that with [`Error::Build`] instead of running the wrong kernel.
//! The check compares fingerprints of the texts. A memoised module
//! ([`crate::dsl::memo`], what every kernel family launches) brings its
//! fingerprint, computed once when it was generated, so a warm launch
//! hashes nothing; any other module's text is hashed on every lookup
//! (counted by [`ModuleCache::text_hashes`]).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;

use crate::dsl::PtxModule;
use crate::dsl::memo;
use crate::error::{Error, Result};
use crate::target::Sm;

/// Counters of a [`ModuleCache`] (see
/// [`Context::module_cache_stats`](crate::runtime::Context::module_cache_stats));
/// defined in the leaf [`crate::exec`], which the backend trait lives in.
pub use crate::exec::CacheStats;

/// What identifies a compiled module within one context.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ModuleKey {
    /// The entry name.
    pub kernel: String,
    /// The tuning key (empty for kernels without knobs).
    pub tuning: String,
    /// The target.
    pub sm: Sm,
}

impl ModuleKey {
    /// The key of `module`.
    pub fn of(module: &PtxModule) -> Self {
        Self {
            kernel: module.kernel.clone(),
            tuning: module.tuning.clone(),
            sm: module.sm,
        }
    }
}

impl fmt::Display for ModuleKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.tuning.is_empty() {
            write!(f, "{}@{}", self.kernel, self.sm)
        } else {
            write!(f, "{}[{}]@{}", self.kernel, self.tuning, self.sm)
        }
    }
}

struct Cached<M> {
    fingerprint: u64,
    value: M,
}

/// A map from [`ModuleKey`] to a loaded module `M`, filled on first use.
pub struct ModuleCache<M> {
    entries: HashMap<ModuleKey, Cached<M>>,
    loads: u64,
    hits: u64,
    text_hashes: u64,
}

impl<M> Default for ModuleCache<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M> fmt::Debug for ModuleCache<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut keys: Vec<_> = self.entries.keys().map(ToString::to_string).collect();
        keys.sort();
        f.debug_struct("ModuleCache")
            .field("loads", &self.loads)
            .field("keys", &keys)
            .finish()
    }
}

impl<M> ModuleCache<M> {
    /// An empty cache.
    pub fn new() -> Self {
        Self {
            entries: HashMap::new(),
            loads: 0,
            hits: 0,
            text_hashes: 0,
        }
    }

    /// The fingerprint of `module`'s text: known for a memoised module,
    /// hashed (and counted) otherwise.
    fn fingerprint(&mut self, module: &PtxModule) -> u64 {
        memo::known_fingerprint(module).unwrap_or_else(|| {
            self.text_hashes += 1;
            memo::fingerprint_text(&module.ptx)
        })
    }

    /// The loaded form of `module`, calling `load` only if its key is not
    /// cached yet. A failed load is returned and not cached.
    ///
    /// [`Error::Build`] if the key is cached with a different PTX text.
    pub fn get_or_load<F>(&mut self, module: &PtxModule, load: F) -> Result<&M>
    where
        F: FnOnce(&PtxModule) -> Result<M>,
    {
        let fp = self.fingerprint(module);
        match self.entries.entry(ModuleKey::of(module)) {
            Entry::Occupied(e) => {
                if e.get().fingerprint != fp {
                    return Err(Error::Build {
                        kernel: module.kernel.clone(),
                        error: crate::dsl::BuildError::CacheKeyConflict {
                            key: e.key().to_string(),
                        },
                        location: None,
                    });
                }
                self.hits += 1;
                tracing::debug!(
                    target: "ptxsmith::jit",
                    kernel = %module.kernel,
                    tuning = %module.tuning,
                    sm = %module.sm,
                    "module cache hit"
                );
                Ok(&e.into_mut().value)
            }
            Entry::Vacant(e) => {
                tracing::debug!(
                    target: "ptxsmith::jit",
                    kernel = %module.kernel,
                    tuning = %module.tuning,
                    sm = %module.sm,
                    "module cache miss"
                );
                let value = load(module)?;
                self.loads += 1;
                Ok(&e
                    .insert(Cached {
                        fingerprint: fp,
                        value,
                    })
                    .value)
            }
        }
    }

    /// Whether `module`'s key is cached.
    pub fn contains(&self, module: &PtxModule) -> bool {
        self.entries.contains_key(&ModuleKey::of(module))
    }

    /// Number of cached modules.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Number of successful loads so far (cache misses that compiled).
    pub fn loads(&self) -> u64 {
        self.loads
    }

    /// Number of lookups that found their module loaded.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Number of module texts hashed so far: one per lookup of a module
    /// that is not memoised, none for memoised ones.
    pub fn text_hashes(&self) -> u64 {
        self.text_hashes
    }

    /// All counters at once.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits,
            loads: self.loads,
            text_hashes: self.text_hashes,
            modules: self.entries.len(),
        }
    }

    /// Drop every cached module.
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::PtxVersion;

    fn module(kernel: &str, tuning: &str, sm: Sm, text: &str) -> PtxModule {
        PtxModule {
            kernel: kernel.into(),
            tuning: tuning.into(),
            sm,
            version: PtxVersion::new(7, 0),
            params: vec![],
            ptx: text.into(),
        }
    }

    #[test]
    fn each_key_loads_once() {
        let mut cache = ModuleCache::new();
        let mut calls = 0;
        let a = module("k", "", Sm::Sm80, "A");
        for _ in 0..3 {
            let v = cache
                .get_or_load(&a, |m| {
                    calls += 1;
                    Ok(format!("loaded {}", m.kernel))
                })
                .unwrap();
            assert_eq!(v, "loaded k");
        }
        assert_eq!(calls, 1);
        assert_eq!(cache.loads(), 1);
        assert_eq!(cache.len(), 1);
        assert!(cache.contains(&a));
    }

    #[test]
    fn kernel_tuning_and_sm_each_make_a_distinct_entry() {
        let mut cache = ModuleCache::new();
        let variants = [
            module("k", "", Sm::Sm80, "A"),
            module("k", "", Sm::Sm90, "B"),
            module("k", "bs=128", Sm::Sm80, "C"),
            module("k2", "", Sm::Sm80, "D"),
        ];
        for (i, m) in variants.iter().enumerate() {
            assert_eq!(*cache.get_or_load(m, |_| Ok(i)).unwrap(), i);
        }
        assert_eq!(cache.len(), 4);
        assert_eq!(cache.loads(), 4);
        // Lookups hit their own entry.
        for (i, m) in variants.iter().enumerate() {
            assert_eq!(
                *cache
                    .get_or_load(m, |_| -> Result<usize> { panic!("reloaded") })
                    .unwrap(),
                i
            );
        }
        // The version and params are not part of the key; the text is checked.
        let mut same = variants[0].clone();
        same.version = PtxVersion::new(8, 0);
        assert_eq!(*cache.get_or_load(&same, |_| Ok(99)).unwrap(), 0);
    }

    #[test]
    fn failed_loads_are_not_cached() {
        let mut cache: ModuleCache<u32> = ModuleCache::new();
        let m = module("bad", "", Sm::Sm70, "X");
        let err = cache.get_or_load(&m, |m| {
            Err(Error::Jit {
                kernel: m.kernel.clone(),
                sm: m.sm,
                message: "no".into(),
                log: "l".into(),
            })
        });
        assert!(matches!(err, Err(Error::Jit { .. })));
        assert!(cache.is_empty());
        assert_eq!(cache.loads(), 0);
        assert_eq!(*cache.get_or_load(&m, |_| Ok(7)).unwrap(), 7);
    }

    #[test]
    fn a_different_text_under_the_same_key_is_refused() {
        let mut cache = ModuleCache::new();
        cache
            .get_or_load(&module("k", "t", Sm::Sm86, "A"), |_| Ok(()))
            .unwrap();
        let err = cache
            .get_or_load(&module("k", "t", Sm::Sm86, "A'"), |_| Ok(()))
            .unwrap_err();
        match err {
            Error::Build {
                kernel,
                error: crate::dsl::BuildError::CacheKeyConflict { key },
                location: None,
            } => {
                assert_eq!(kernel, "k");
                assert_eq!(key, "k[t]@sm_86");
            }
            e => panic!("unexpected {e:?}"),
        }
    }

    #[test]
    fn memoised_modules_are_not_hashed_again() {
        let mut cache = ModuleCache::new();
        let m = memo::memoized("cache test", Sm::Sm80, (), || {
            Ok(module("k", "", Sm::Sm80, "T"))
        })
        .unwrap();
        for _ in 0..5 {
            cache.get_or_load(m, |_| Ok(())).unwrap();
        }
        assert_eq!(
            cache.stats(),
            CacheStats {
                hits: 4,
                loads: 1,
                text_hashes: 0,
                modules: 1
            }
        );
        // A copy of the same text is hashed, and accepted.
        cache.get_or_load(&m.clone(), |_| Ok(())).unwrap();
        assert_eq!(cache.text_hashes(), 1);
        // A different text under the same key is still refused.
        let other = module("k", "", Sm::Sm80, "U");
        assert!(cache.get_or_load(&other, |_| Ok(())).is_err());
    }

    #[test]
    fn key_display_and_order() {
        assert_eq!(
            ModuleKey::of(&module("k", "", Sm::Sm80, "")).to_string(),
            "k@sm_80"
        );
        assert_eq!(
            ModuleKey::of(&module("k", "v4", Sm::Sm120, "")).to_string(),
            "k[v4]@sm_120"
        );
        let mut cache = ModuleCache::new();
        cache
            .get_or_load(&module("k", "", Sm::Sm80, ""), |_| Ok(()))
            .unwrap();
        cache.clear();
        assert!(cache.is_empty());
        assert_eq!(cache.loads(), 1);
    }
}
