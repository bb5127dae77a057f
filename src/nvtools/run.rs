//! Running one tool on files in a private temporary folder, with an
//! optional on-disk memo ([`NvTools::with_cache`](super::NvTools::with_cache)).
//!
//! The memo exists because two test binaries (`tests/kernels_ptxas.rs` and
//! `tests/tuning_report.rs`) assemble and disassemble the same ~900
//! modules in one CI run. An entry is keyed by everything the result can
//! depend on: the tool's path, size and modification time, its arguments,
//! and the names and bytes of its input files; the whole key is stored
//! beside the result and compared byte for byte on a hit, so a hash
//! collision is a miss, never a wrong answer. Entries are written to a
//! temporary name and renamed, so parallel workers never read half an entry.

use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{ToolError, io_err};

/// What one run of a tool gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RunOutput {
    /// Whether the tool exited with status 0.
    pub success: bool,
    /// The exit status, as `std::process::ExitStatus` prints it.
    pub status: String,
    pub stdout: String,
    pub stderr: String,
    /// The bytes of the requested output file (`None` when the tool did
    /// not write it).
    pub output: Option<Vec<u8>>,
}

/// Run `program` with `args` in a fresh temporary folder holding `inputs`
/// (`(file name, bytes)`), then read back the file `output` if named.
/// With `cache`, an earlier identical run's result is returned instead.
pub(super) fn run(
    program: &Path,
    args: &[OsString],
    inputs: &[(&str, &[u8])],
    output: Option<&str>,
    cache: Option<&Path>,
) -> Result<RunOutput, ToolError> {
    let key = cache.map(|_| key(program, args, inputs, output));
    if let (Some(dir), Some(key)) = (cache, &key)
        && let Some(hit) = lookup(dir, key)
    {
        return Ok(hit);
    }
    let dir = TempDir::new()?;
    for (name, bytes) in inputs {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).map_err(|e| io_err(format!("writing {}", p.display()), e))?;
    }
    let out = Command::new(program)
        .args(args)
        .current_dir(dir.path())
        .output()
        .map_err(|e| io_err(format!("running {}", program.display()), e))?;
    let output = match output {
        Some(name) if out.status.success() => {
            let p = dir.path().join(name);
            Some(std::fs::read(&p).map_err(|e| io_err(format!("reading {}", p.display()), e))?)
        }
        _ => None,
    };
    let result = RunOutput {
        success: out.status.success(),
        status: out.status.to_string(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        output,
    };
    if let (Some(dir), Some(key)) = (cache, &key) {
        // A memo that cannot be written only costs the next run time.
        let _ = store(dir, key, &result);
    }
    Ok(result)
}

/// Everything a run's result depends on, as bytes.
fn key(
    program: &Path,
    args: &[OsString],
    inputs: &[(&str, &[u8])],
    output: Option<&str>,
) -> Vec<u8> {
    let mut k = Vec::new();
    let mut field = |bytes: &[u8]| {
        k.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        k.extend_from_slice(bytes);
    };
    field(program.as_os_str().as_encoded_bytes());
    // The tool itself: a reinstalled or different binary is another key.
    let stamp = std::fs::metadata(program).ok().map(|m| {
        let mtime = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        format!("{} {mtime}", m.len())
    });
    field(stamp.unwrap_or_default().as_bytes());
    for a in args {
        field(a.as_encoded_bytes());
    }
    for (name, bytes) in inputs {
        field(name.as_bytes());
        field(bytes);
    }
    field(output.unwrap_or("").as_bytes());
    k
}

fn entry_name(key: &[u8]) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut h);
    format!("{:016x}-{}", h.finish(), key.len())
}

fn lookup(dir: &Path, key: &[u8]) -> Option<RunOutput> {
    let base = dir.join(entry_name(key));
    let stored = std::fs::read(base.with_extension("key")).ok()?;
    if stored != key {
        return None;
    }
    decode(&std::fs::read(base.with_extension("out")).ok()?)
}

fn store(dir: &Path, key: &[u8], r: &RunOutput) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let base = dir.join(entry_name(key));
    // The result first, the key last: a reader that finds the key finds a
    // complete result beside it.
    write_atomic(&base.with_extension("out"), &encode(r))?;
    write_atomic(&base.with_extension("key"), key)
}

fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}-{n}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

fn encode(r: &RunOutput) -> Vec<u8> {
    let mut v = vec![u8::from(r.success), u8::from(r.output.is_some())];
    for part in [
        r.status.as_bytes(),
        r.stdout.as_bytes(),
        r.stderr.as_bytes(),
    ] {
        v.extend_from_slice(&(part.len() as u64).to_le_bytes());
        v.extend_from_slice(part);
    }
    if let Some(o) = &r.output {
        v.extend_from_slice(&(o.len() as u64).to_le_bytes());
        v.extend_from_slice(o);
    }
    v
}

fn decode(v: &[u8]) -> Option<RunOutput> {
    let (&[success, has_output], mut rest) = v.split_first_chunk::<2>()?;
    let mut take = || -> Option<Vec<u8>> {
        let (len, tail) = rest.split_first_chunk::<8>()?;
        let len = usize::try_from(u64::from_le_bytes(*len)).ok()?;
        let (part, tail) = tail.split_at_checked(len)?;
        rest = tail;
        Some(part.to_vec())
    };
    let text = |b: Vec<u8>| String::from_utf8(b).ok();
    let status = text(take()?)?;
    let stdout = text(take()?)?;
    let stderr = text(take()?)?;
    let output = if has_output == 1 { Some(take()?) } else { None };
    (success <= 1 && has_output <= 1 && rest.is_empty()).then_some(RunOutput {
        success: success == 1,
        status,
        stdout,
        stderr,
        output,
    })
}

/// A private temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, ToolError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mut last = None;
        for _ in 0..16 {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let p = base.join(format!(
                "ptxsmith-nvtools-{}-{n}-{nanos}",
                std::process::id()
            ));
            match std::fs::create_dir(&p) {
                Ok(()) => return Ok(TempDir(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(io_err(format!("creating {}", p.display()), e)),
            }
        }
        Err(io_err(
            "creating a temporary directory".to_string(),
            last.unwrap_or_else(|| std::io::Error::other("name collisions")),
        ))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(output: Option<Vec<u8>>) -> RunOutput {
        RunOutput {
            success: output.is_some(),
            status: "exit status: 0".into(),
            stdout: "ptxas info    : Used 12 registers".into(),
            stderr: String::new(),
            output,
        }
    }

    #[test]
    fn an_entry_round_trips_and_a_truncated_one_is_a_miss() {
        for r in [sample(Some(vec![0x7f, b'E', b'L', b'F'])), sample(None)] {
            let bytes = encode(&r);
            assert_eq!(decode(&bytes), Some(r));
            assert_eq!(decode(&bytes[..bytes.len() - 1]), None);
        }
    }

    #[test]
    fn a_hit_needs_the_whole_key_and_a_changed_input_misses() {
        let dir = TempDir::new().unwrap();
        let prog = Path::new("/bin/true");
        let args = [OsString::from("-v")];
        let k1 = key(prog, &args, &[("kernel.ptx", b"a")], Some("kernel.cubin"));
        let k2 = key(prog, &args, &[("kernel.ptx", b"b")], Some("kernel.cubin"));
        assert_ne!(k1, k2);
        let r = sample(Some(vec![1, 2, 3]));
        store(dir.path(), &k1, &r).unwrap();
        assert_eq!(lookup(dir.path(), &k1), Some(r));
        assert_eq!(lookup(dir.path(), &k2), None);
        // An entry whose stored key differs (a collision of the file name)
        // is a miss.
        std::fs::write(dir.path().join(entry_name(&k1)).with_extension("key"), &k2).unwrap();
        assert_eq!(lookup(dir.path(), &k1), None);
    }
}
