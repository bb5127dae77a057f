//! Write the per-SM tuning report: every kernel variant × every target,
//! assembled with the pinned ptxas (registers, spills, shared memory,
//! theoretical occupancy and what limits it) and disassembled with
//! nvdisasm (the hot loop's SASS mix), as `tuning.md` and `tuning.svg`.
//!
//! ```text
//! bash scripts/install-nvidia-tools.sh          # once
//! cargo run --release --example tuning_report   # writes docs/tuning.{md,svg}
//! cargo run --release --example tuning_report -- --out /tmp/report
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use ptxsmith::nvtools::NvTools;
use ptxsmith::report;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = match args.iter().position(|a| a == "--out") {
        Some(i) => match args.get(i + 1) {
            Some(d) => PathBuf::from(d),
            None => {
                eprintln!("--out needs a directory");
                return ExitCode::from(2);
            }
        },
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs"),
    };
    let Some(tools) = NvTools::locate() else {
        eprintln!("the pinned NVIDIA tools are missing: run scripts/install-nvidia-tools.sh");
        return ExitCode::FAILURE;
    };
    let r = match report::generate(&tools) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tuning report: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = std::fs::create_dir_all(&out)
        .and_then(|()| std::fs::write(out.join("tuning.md"), r.markdown()))
        .and_then(|()| std::fs::write(out.join("tuning.svg"), r.svg()))
    {
        eprintln!("writing {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    let spilling = r.rows.iter().filter(|row| row.spill_bytes > 0).count();
    println!(
        "{} variant × target rows ({} spilling) written to {}/tuning.{{md,svg}}",
        r.rows.len(),
        spilling,
        out.display()
    );
    ExitCode::SUCCESS
}
