//! Write every kernel variant's PTX to a folder, one file per variant,
//! named `<kernel>.<sm>.ptx`.
//!
//! ```text
//! cargo run --example dump_ptx -- --sm sm_80 --out DIR
//! cargo run --example dump_ptx -- --sm all --out DIR
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use ptxsmith::Sm;

fn usage() -> ExitCode {
    eprintln!("usage: dump_ptx --sm <sm_XY|all> --out <DIR>");
    eprintln!("supported: {}", Sm::ALL.map(Sm::name).join(", "));
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut sm, mut out) = (None, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--sm" => sm = it.next().cloned(),
            "--out" => out = it.next().map(PathBuf::from),
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
    let mut written = 0;
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
            written += 1;
        }
    }
    println!("{written} files written");
    ExitCode::SUCCESS
}
