//! Run one PTX kernel in the CPU simulator.
//!
//! ```text
//! cargo run --example ptx_run -- FILE.ptx [--entry NAME] --grid X[,Y[,Z]] --block X[,Y[,Z]]
//!     [--smem BYTES] [--sm sm_XY] [--no-checks] [--approx] [--max-instructions N]
//!     [--threads N] [--arg SPEC]...
//! ```
//!
//! Each launch has an instruction budget (default
//! `ptxsmith::sim::DEFAULT_INSTRUCTION_BUDGET`, 10⁹): a kernel that never
//! exits stops with a finding naming the kernel, block, thread and PTX line.
//! `--max-instructions N` changes the budget, `--max-instructions 0` lifts it.
//! `--threads N` sets the worker threads that run the blocks (default
//! `PTXSMITH_SIM_THREADS`, else every core); the output does not depend on it.
//!
//! One `--arg` per kernel parameter, in order:
//! * `u32:V`, `s32:V`, `u64:V`, `s64:V` — integer scalars (decimal or `0x` hex);
//! * `f32:V`, `f64:V` — float scalars (decimal, or `0x` raw bits);
//! * `in:PATH` — a buffer initialised from the file's little-endian bytes;
//! * `out:PATH:BYTES` — an uninitialised buffer of BYTES (a kernel read before a
//!   write is a finding), written to PATH after the run;
//! * `zero:PATH:BYTES` — the same, zero-filled;
//! * `inout:PATH` — a buffer from PATH, written back after the run.
//!
//! Example (saxpy on 1000 floats):
//! ```text
//! cargo run --example ptx_run -- tests/ptx/saxpy.ptx --grid 8 --block 128 \
//!     --arg in:x.bin --arg inout:y.bin --arg f32:2.5 --arg u32:1000
//! ```
//! Prints check findings (exit status 1) or the dynamic instruction counts.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match ptxsmith::sim::cli::run(&args) {
        Ok(report) => print!("{report}"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
