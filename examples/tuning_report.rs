//! Write the per-SM tuning report: every kernel variant × every target,
//! assembled with the pinned ptxas (registers, spills, shared memory,
//! theoretical occupancy and what limits it) and disassembled with
//! nvdisasm (the hot loop's SASS mix), as `tuning.md` and `tuning.svg`,
//! then the SASS instructions per call of the exact math routines, and the
//! roofline model of every kernel family on every card
//! (`tuning.md`'s last section, `roofline.svg`, and `roofline.tsv` for the
//! benches, which print the modeled figure next to the measured one).
//!
//! ```text
//! bash scripts/install-nvidia-tools.sh          # once
//! cargo run --release --example tuning_report   # writes docs/tuning.{md,svg}, docs/roofline.{svg,tsv}
//! cargo run --release --example tuning_report -- --out /tmp/report
//! cargo run --release --example tuning_report -- --roofline-only   # prints the model's section
//! PTXSMITH_ROOFLINE_ONLY=hmm cargo run --release --example tuning_report -- --roofline-only   # its HMM problems only
//! ```
//!
//! `--roofline-only` builds the roofline model alone (assembling only the
//! modules the problems launch) and prints its Markdown: quicker while a
//! problem description in `src/report/roofline/problems.rs` is edited.
//!
//! The report takes minutes: a progress bar (one tick per variant ×
//! target, per target of the math routines, per roofline problem × SM)
//! shows on stderr when stderr is a terminal, and nowhere otherwise; stdout
//! and the written files are the same either way.

use std::path::PathBuf;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use ptxsmith::nvtools::NvTools;
use ptxsmith::report::{self, Progress};

/// A bar on stderr (indicatif's default target, which draws nothing when
/// stderr is not a terminal), reset at each phase of the report.
fn progress_bar() -> ProgressBar {
    ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{prefix} {bar:30} {pos}/{len} {wide_msg} ({elapsed})")
            .expect("a valid template"),
    )
}

/// The callback that moves `bar`.
fn on_progress(bar: &ProgressBar) -> impl Fn(Progress<'_>) + Sync + '_ {
    move |p| match p {
        Progress::Phase { name, units } => {
            bar.set_prefix(name);
            bar.set_length(units as u64);
            bar.set_position(0);
            bar.set_message("");
        }
        Progress::Done { what } => {
            bar.set_message(what.to_string());
            bar.inc(1);
        }
    }
}

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
    let bar = progress_bar();
    if args.iter().any(|a| a == "--roofline-only") {
        let r = report::roofline::generate_with_progress(
            &tools,
            &Default::default(),
            &on_progress(&bar),
        );
        bar.finish_and_clear();
        return match r {
            Ok(r) => {
                print!("{}", r.markdown());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("roofline: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let r = report::generate_with_progress(&tools, &on_progress(&bar));
    bar.finish_and_clear();
    let r = match r {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tuning report: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = std::fs::create_dir_all(&out)
        .and_then(|()| std::fs::write(out.join("tuning.md"), r.markdown()))
        .and_then(|()| std::fs::write(out.join("tuning.svg"), r.svg()))
        .and_then(|()| std::fs::write(out.join("roofline.svg"), r.roofline_svg()))
        .and_then(|()| std::fs::write(out.join("roofline.tsv"), r.roofline_tsv()))
    {
        eprintln!("writing {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    let spilling = r.rows.iter().filter(|row| row.spill_bytes > 0).count();
    println!(
        "{} variant × target rows ({} spilling) and the roofline model of {} problems on {} cards written to {}/tuning.{{md,svg}} and roofline.{{svg,tsv}}",
        r.rows.len(),
        spilling,
        r.roofline.gpus.first().map_or(0, |g| g.problems.len()),
        r.roofline.gpus.len(),
        out.display()
    );
    ExitCode::SUCCESS
}
