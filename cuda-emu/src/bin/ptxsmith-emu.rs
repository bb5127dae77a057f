//! `ptxsmith-emu`: run a command with the CUDA driver emulator as its
//! `libcuda.so.1`, from any directory, for a crate that depends on
//! ptxsmith.
//!
//! ```text
//! cargo install --path /path/to/ptxsmith/cuda-emu   # once
//! ptxsmith-emu cargo test --release                 # in your crate
//! ptxsmith-emu --print-dir                          # build, print the folder
//! ```
//!
//! The runner builds the emulator library (release) from the sources it
//! was installed from — their folder is compiled in
//! (`env!("CARGO_MANIFEST_DIR")`: the checkout for `cargo install --path`,
//! `$CARGO_HOME/registry/src/…/ptxsmith-cuda-emu-<version>` for an
//! install from the registry) — into its own target folder under the user
//! cache (`$PTXSMITH_EMU_CACHE`, else `$XDG_CACHE_HOME/ptxsmith-emu`, else
//! `~/.cache/ptxsmith-emu`), links `libcuda.so.1` and `libcuda.so` to it in
//! a `lib/` folder there, puts that folder first on `LD_LIBRARY_PATH` and
//! runs the command in the current directory, exiting with its status.
//! Cargo rebuilds only what changed, so a later run costs a second.
//!
//! Only the standard library: it is a launcher, the emulator itself is the
//! package's cdylib.

use std::ffi::OsString;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The emulator package's sources, as they were when the runner was built.
const SOURCES: &str = env!("CARGO_MANIFEST_DIR");
const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The cdylib cargo writes.
const LIB_FILE: &str = "libptxsmith_cuda_emu.so";
/// Overrides the cache root.
const CACHE_VAR: &str = "PTXSMITH_EMU_CACHE";
/// Overrides the target folder the emulator is built in.
const TARGET_VAR: &str = "PTXSMITH_EMU_TARGET_DIR";

const USAGE: &str = "\
usage: ptxsmith-emu <command> [args...]   run the command with the emulator as libcuda.so.1
       ptxsmith-emu --print-dir           build the emulator, print the folder of libcuda.so.1
       ptxsmith-emu --help | --version

Builds the CUDA driver emulator (ptxsmith-cuda-emu) from the sources the
runner was installed from, into the cache ($PTXSMITH_EMU_CACHE, else
$XDG_CACHE_HOME/ptxsmith-emu, else ~/.cache/ptxsmith-emu), and runs the
command in the current directory with that folder first on LD_LIBRARY_PATH.
Example: ptxsmith-emu cargo test --release
The emulator reads PTXSMITH_EMU_* variables (devices, memory, checks; see
the package's README.md).";

/// A failure of the runner itself, printed as `ptxsmith-emu: <message>`.
struct Failure(String);

fn main() -> ExitCode {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    match args.first().and_then(|a| a.to_str()) {
        None => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
        Some("-h" | "--help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some("-V" | "--version") => {
            println!("ptxsmith-emu {VERSION} (emulator sources: {SOURCES})");
            return ExitCode::SUCCESS;
        }
        Some("--") => {
            args.remove(0);
            if args.is_empty() {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        }
        Some(flag) if flag.starts_with('-') && flag != "--print-dir" => {
            eprintln!("ptxsmith-emu: unknown option `{flag}`\n\n{USAGE}");
            return ExitCode::from(2);
        }
        _ => {}
    }
    let print_dir = args.first().is_some_and(|a| a == "--print-dir");
    if print_dir && args.len() > 1 {
        eprintln!("ptxsmith-emu: --print-dir takes no command\n\n{USAGE}");
        return ExitCode::from(2);
    }
    let dir = match prepare() {
        Ok(d) => d,
        Err(Failure(msg)) => {
            eprintln!("ptxsmith-emu: {msg}");
            return ExitCode::FAILURE;
        }
    };
    if print_dir {
        println!("{}", dir.display());
        return ExitCode::SUCCESS;
    }
    run(&dir, &args)
}

/// Build the emulator and make the `libcuda` links; the folder to put on
/// `LD_LIBRARY_PATH`.
fn prepare() -> Result<PathBuf, Failure> {
    if !cfg!(target_os = "linux") {
        return Err(Failure(
            "the emulator is a Linux libcuda.so.1 replacement; this system is not Linux".into(),
        ));
    }
    let sources = Path::new(SOURCES);
    let manifest = sources.join("Cargo.toml");
    if !manifest.is_file() || !sources.join("src").join("lib.rs").is_file() {
        return Err(Failure(format!(
            "the emulator's sources are gone from {SOURCES} (the folder this runner was \
             installed from: a checkout that moved or was deleted, or a cargo registry cache \
             that was cleaned).\nReinstall the runner: `cargo install --force --path \
             <ptxsmith checkout>/cuda-emu`, or `cargo install --force ptxsmith-cuda-emu` for \
             the published package."
        )));
    }
    let cache = cache_root()?.join(cache_key());
    let target = nonempty_var(TARGET_VAR).map_or_else(|| cache.join("target"), PathBuf::from);
    build(&manifest, &target)?;
    let lib = target.join("release").join(LIB_FILE);
    if !lib.is_file() {
        return Err(Failure(format!(
            "cargo finished but {} is missing",
            lib.display()
        )));
    }
    let dir = cache.join("lib");
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure(format!("cannot create {}: {e}", dir.display())))?;
    for name in ["libcuda.so.1", "libcuda.so"] {
        link(&lib, &dir.join(name))?;
    }
    Ok(dir)
}

/// `$PTXSMITH_EMU_CACHE`, else `$XDG_CACHE_HOME/ptxsmith-emu` (absolute
/// only, as the XDG spec says), else `$HOME/.cache/ptxsmith-emu`.
fn cache_root() -> Result<PathBuf, Failure> {
    cache_root_in(nonempty_var).ok_or_else(|| {
        Failure(format!(
            "no cache folder: set {CACHE_VAR}, XDG_CACHE_HOME or HOME"
        ))
    })
}

/// [`cache_root`] with the (non-empty) environment read through `var`.
fn cache_root_in(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(d) = var(CACHE_VAR) {
        return Some(PathBuf::from(d));
    }
    if let Some(x) = var("XDG_CACHE_HOME").map(PathBuf::from)
        && x.is_absolute()
    {
        return Some(x.join("ptxsmith-emu"));
    }
    var("HOME").map(|h| PathBuf::from(h).join(".cache").join("ptxsmith-emu"))
}

/// One folder per version and source location, so that runners installed
/// from two checkouts do not rebuild each other's library.
fn cache_key() -> String {
    let mut h = DefaultHasher::new();
    SOURCES.hash(&mut h);
    format!("{VERSION}-{:016x}", h.finish())
}

fn nonempty_var(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// `cargo build --release --lib` of the emulator package into `target`.
fn build(manifest: &Path, target: &Path) -> Result<(), Failure> {
    let cargo = nonempty_var("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(&cargo)
        .args(["build", "--release", "--quiet", "--lib", "--manifest-path"])
        .arg(manifest)
        .arg("--target-dir")
        .arg(target)
        // in the sources' folder, so that the caller's `.cargo/config.toml`
        // (build targets, flags of their project) does not apply
        .current_dir(manifest.parent().unwrap_or(Path::new(".")))
        // the library must be built for this machine, where it is loaded
        .env_remove("CARGO_BUILD_TARGET")
        .status()
        .map_err(|e| {
            let cargo = Path::new(&cargo).display();
            if e.kind() == std::io::ErrorKind::NotFound {
                Failure(format!(
                    "`{cargo}` not found: the runner builds the emulator with cargo, which must \
                     be on PATH (install Rust from https://rustup.rs) or named by $CARGO"
                ))
            } else {
                Failure(format!("cannot run `{cargo}`: {e}"))
            }
        })?;
    if !status.success() {
        return Err(Failure(format!(
            "building the emulator from {} failed ({status}); cargo's messages are above",
            manifest.display()
        )));
    }
    Ok(())
}

/// Point `link` at `lib`, replacing what is there (a new link renamed over
/// the old one, so a concurrent run never sees it missing).
#[cfg(unix)]
fn link(lib: &Path, link: &Path) -> Result<(), Failure> {
    if std::fs::read_link(link).is_ok_and(|t| t == lib) {
        return Ok(());
    }
    let tmp = link.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(lib, &tmp)
        .and_then(|()| std::fs::rename(&tmp, link))
        .map_err(|e| {
            Failure(format!(
                "cannot link {} to {}: {e}",
                link.display(),
                lib.display()
            ))
        })
}

#[cfg(not(unix))]
fn link(_lib: &Path, _link: &Path) -> Result<(), Failure> {
    Err(Failure("symbolic links need a Unix system".into()))
}

/// Run `args` with `dir` first on `LD_LIBRARY_PATH`; its exit status.
fn run(dir: &Path, args: &[OsString]) -> ExitCode {
    let mut path = OsString::from(dir);
    if let Some(old) = nonempty_var("LD_LIBRARY_PATH") {
        path.push(":");
        path.push(old);
    }
    let program = Path::new(&args[0]);
    let status = match Command::new(program)
        .args(&args[1..])
        .env("LD_LIBRARY_PATH", path)
        .status()
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ptxsmith-emu: cannot run `{}`: {e}", program.display());
            return ExitCode::from(127);
        }
    };
    if let Some(code) = status.code() {
        return ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1));
    }
    // killed by a signal: the shell's convention, 128 + signal
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            eprintln!(
                "ptxsmith-emu: `{}` was killed by signal {sig}",
                program.display()
            );
            return ExitCode::from(u8::try_from(128 + sig).unwrap_or(1));
        }
    }
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |k| {
            pairs
                .iter()
                .find(|(n, v)| *n == k && !v.is_empty())
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn the_cache_is_the_variable_then_xdg_then_home() {
        let all = &[
            ("PTXSMITH_EMU_CACHE", "/c"),
            ("XDG_CACHE_HOME", "/xdg"),
            ("HOME", "/home/u"),
        ];
        assert_eq!(cache_root_in(env(all)), Some(PathBuf::from("/c")));
        let xdg = &[
            ("PTXSMITH_EMU_CACHE", ""),
            ("XDG_CACHE_HOME", "/xdg"),
            ("HOME", "/home/u"),
        ];
        assert_eq!(
            cache_root_in(env(xdg)),
            Some(PathBuf::from("/xdg/ptxsmith-emu"))
        );
        // a relative XDG_CACHE_HOME is ignored (XDG spec)
        let rel = &[("XDG_CACHE_HOME", "rel"), ("HOME", "/home/u")];
        assert_eq!(
            cache_root_in(env(rel)),
            Some(PathBuf::from("/home/u/.cache/ptxsmith-emu"))
        );
        assert_eq!(cache_root_in(env(&[])), None);
    }

    #[test]
    fn the_cache_key_names_the_version_and_the_sources() {
        let k = cache_key();
        assert!(k.starts_with(&format!("{VERSION}-")), "{k}");
        assert_eq!(k.len(), VERSION.len() + 17, "{k}");
        assert_eq!(k, cache_key());
        // the sources the runner remembers are this package's
        assert!(Path::new(SOURCES).join("src/bin/ptxsmith-emu.rs").is_file());
    }
}
