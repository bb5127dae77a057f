//! Write every kernel variant's PTX to a folder, one file per variant,
//! named `<kernel>.<sm>.ptx`.
//!
//! ```text
//! cargo run --example dump_ptx -- --sm sm_80 --out DIR
//! cargo run --example dump_ptx -- --sm all --out DIR
//! cargo run --example dump_ptx -- --sm all --out DIR --assemble [--cache DIR]
//! ```
//!
//! `--assemble` then reads every written file back and assembles it with
//! the pinned ptxas for its target (all cores), failing if any is
//! rejected; `--cache DIR` reuses earlier identical ptxas runs kept there
//! ([`NvTools::with_cache`]; CI passes `target/tmp/nvtools-cache`, which
//! the test suite has filled with the same modules).

use std::path::PathBuf;
use std::process::ExitCode;

use ptxsmith::Sm;
use ptxsmith::nvtools::NvTools;
use rayon::prelude::*;

fn usage() -> ExitCode {
    eprintln!("usage: dump_ptx --sm <sm_XY|all> --out <DIR> [--assemble [--cache <DIR>]]");
    eprintln!("supported: {}", Sm::ALL.map(Sm::name).join(", "));
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut sm, mut out, mut assemble, mut cache) = (None, None, false, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--sm" => sm = it.next().cloned(),
            "--out" => out = it.next().map(PathBuf::from),
            "--assemble" => assemble = true,
            "--cache" => cache = it.next().map(PathBuf::from),
            "-h" | "--help" => return usage(),
            other => {
                eprintln!("unknown argument `{other}`");
                return usage();
            }
        }
    }
    let (Some(sm), Some(out)) = (sm, out) else {
        return usage();
    };
    let sms: Vec<Sm> = if sm == "all" {
        Sm::ALL.to_vec()
    } else {
        match Sm::parse(&sm) {
            Ok(s) => vec![s],
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        }
    };
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("cannot create {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    let mut written = Vec::new();
    for sm in sms {
        let variants = match ptxsmith::kernels::all_variants(sm) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("generating for {sm}: {e}");
                return ExitCode::FAILURE;
            }
        };
        for m in variants {
            let path = out.join(m.file_name());
            if let Err(e) = std::fs::write(&path, &m.ptx) {
                eprintln!("writing {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
            println!(
                "{}  (.version {}, {} bytes)",
                path.display(),
                m.version,
                m.ptx.len()
            );
            written.push((sm, path));
        }
    }
    println!("{} files written", written.len());
    if !assemble {
        return ExitCode::SUCCESS;
    }
    let Some(mut tools) = NvTools::locate() else {
        eprintln!(
            "--assemble: the pinned NVIDIA tools are not installed (scripts/install-nvidia-tools.sh)"
        );
        return ExitCode::FAILURE;
    };
    if let Some(dir) = cache {
        tools = tools.with_cache(dir);
    }
    let failures = assemble_all(&tools, &written);
    for f in &failures {
        eprintln!("{f}");
    }
    println!(
        "{} files assembled, {} rejected",
        written.len() - failures.len(),
        failures.len()
    );
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Assemble each written file, as read back from disk, on every core; the
/// failures, each naming its file.
fn assemble_all(tools: &NvTools, files: &[(Sm, PathBuf)]) -> Vec<String> {
    (files.par_iter())
        .filter_map(|(sm, path)| {
            let result = std::fs::read_to_string(path)
                .map_err(|e| e.to_string())
                .and_then(|ptx| tools.assemble(&ptx, *sm).map_err(|e| e.to_string()));
            result
                .err()
                .map(|e| format!("ptxas rejected {}: {e}", path.display()))
        })
        .collect()
}
