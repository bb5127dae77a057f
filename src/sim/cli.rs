//! The logic of `examples/ptx_run.rs`: run one PTX entry from the command
//! line with scalar and file-backed buffer arguments. Kept in the library
//! so integration tests drive exactly what the example runs.

use std::fmt::Write as _;

use super::error::SimError;
use super::machine::Sim;
use super::options::DEFAULT_INSTRUCTION_BUDGET;
use super::parse::Program;
use crate::abi::ArgValue;
use crate::exec::LaunchConfig;
use crate::target::Sm;

/// Usage text of `ptx_run`.
pub const USAGE: &str = "\
usage: ptx_run FILE.ptx [--entry NAME] --grid X[,Y[,Z]] --block X[,Y[,Z]]
               [--smem BYTES] [--sm sm_XY] [--no-checks] [--approx] [--max-instructions N]
               [--threads N] [--arg SPEC]...

Runs one .entry of FILE.ptx in the CPU PTX simulator (checks on unless
--no-checks) and prints the findings and the dynamic instruction counts.

  --entry NAME   entry to run (default: the module's only entry)
  --grid, --block  launch shape; missing dimensions are 1
  --smem BYTES   dynamic shared memory (default 0)
  --sm sm_XY     simulated target (default: sm_120)
  --approx       run approximate instructions (ex2.approx, div.full, ...) as the
                 correctly rounded value instead of refusing them
  --max-instructions N
                 per-launch instruction budget (default: 1000000000 or
                 16777216 per thread of the launch, whichever is larger; 3-15 s
                 of simulation for a spin of up to 59 threads, about 48 ms a
                 thread above); a launch that would exceed it, e.g. a kernel
                 that never exits, stops with a finding naming the kernel,
                 block, thread and PTX line. N: exactly N. 0 = no limit
  --threads N    worker threads for the blocks (default: PTXSMITH_SIM_THREADS,
                 else every core); the results do not depend on it

Arguments, one --arg per kernel parameter, in order:
  u32:V  s32:V  u64:V  s64:V     integer scalars (decimal or 0x hex)
  f32:V  f64:V                   float scalars (decimal, or 0x raw bits)
  in:PATH                        buffer initialised from PATH (raw little-endian bytes)
  out:PATH:BYTES                 uninitialised buffer of BYTES (reading it before writing
                                 is a finding), written to PATH after the run
  zero:PATH:BYTES                zero-filled buffer of BYTES, written to PATH after the run
  inout:PATH                     buffer from PATH, written back to PATH after the run
Buffers are passed as pointers (.u64 parameters).";

enum ArgSpec {
    Scalar(ArgValue),
    In(String),
    Out(String, usize, bool),
    InOut(String),
}

fn parse_int(s: &str) -> Result<u64, String> {
    let r = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else if let Some(n) = s.strip_prefix('-') {
        n.parse::<u64>().map(|v| v.wrapping_neg())
    } else {
        s.parse::<u64>()
    };
    r.map_err(|e| format!("bad integer `{s}`: {e}"))
}

fn parse_arg(s: &str) -> Result<ArgSpec, String> {
    let (kind, rest) = s
        .split_once(':')
        .ok_or_else(|| format!("bad --arg `{s}` (expected KIND:VALUE)"))?;
    Ok(match kind {
        "u32" => ArgSpec::Scalar(ArgValue::U32(parse_int(rest)? as u32)),
        "s32" => ArgSpec::Scalar(ArgValue::S32(parse_int(rest)? as i32)),
        "u64" => ArgSpec::Scalar(ArgValue::U64(parse_int(rest)?)),
        "s64" => ArgSpec::Scalar(ArgValue::S64(parse_int(rest)? as i64)),
        "f32" => ArgSpec::Scalar(ArgValue::F32(if rest.starts_with("0x") {
            f32::from_bits(parse_int(rest)? as u32)
        } else {
            rest.parse().map_err(|e| format!("bad f32 `{rest}`: {e}"))?
        })),
        "f64" => ArgSpec::Scalar(ArgValue::F64(if rest.starts_with("0x") {
            f64::from_bits(parse_int(rest)?)
        } else {
            rest.parse().map_err(|e| format!("bad f64 `{rest}`: {e}"))?
        })),
        "in" => ArgSpec::In(rest.to_string()),
        "inout" => ArgSpec::InOut(rest.to_string()),
        "out" | "zero" => {
            let (p, n) = rest
                .rsplit_once(':')
                .ok_or_else(|| format!("bad --arg `{s}` (expected {kind}:PATH:BYTES)"))?;
            ArgSpec::Out(p.to_string(), parse_int(n)? as usize, kind == "zero")
        }
        k => return Err(format!("unknown argument kind `{k}` in `{s}`")),
    })
}

fn dims(s: &str) -> Result<(u32, u32, u32), String> {
    let v: Vec<u32> = s
        .split(',')
        .map(|x| parse_int(x.trim()).map(|v| v as u32))
        .collect::<Result<_, _>>()?;
    if v.is_empty() || v.len() > 3 {
        return Err(format!("bad dimensions `{s}`"));
    }
    Ok((v[0], *v.get(1).unwrap_or(&1), *v.get(2).unwrap_or(&1)))
}

/// Run `ptx_run` with the arguments after the program name. Returns the
/// report text (findings, counts) or an error message; output buffers
/// are written to their files on success.
pub fn run(args: &[String]) -> Result<String, String> {
    let mut file = None;
    let mut entry = None;
    let mut grid = None;
    let mut block = None;
    let mut smem = 0u32;
    let mut sm = Sm::Sm120;
    let mut checks = true;
    let mut approx = false;
    let mut max_instructions = Some(DEFAULT_INSTRUCTION_BUDGET);
    let mut threads = 0usize;
    let mut specs = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match a.as_str() {
            "-h" | "--help" => return Ok(USAGE.to_string()),
            "--entry" => entry = Some(val("--entry")?),
            "--grid" => grid = Some(dims(&val("--grid")?)?),
            "--block" => block = Some(dims(&val("--block")?)?),
            "--smem" => smem = parse_int(&val("--smem")?)? as u32,
            "--sm" => sm = Sm::parse(&val("--sm")?).map_err(|e| e.to_string())?,
            "--no-checks" => checks = false,
            "--approx" => approx = true,
            "--max-instructions" => {
                max_instructions = match parse_int(&val("--max-instructions")?)? {
                    0 => None,
                    n => Some(n),
                }
            }
            "--threads" => match parse_int(&val("--threads")?)? {
                0 => return Err("--threads must be at least 1".into()),
                n => threads = n as usize,
            },
            "--arg" => specs.push(parse_arg(&val("--arg")?)?),
            s if s.starts_with("--") => return Err(format!("unknown option `{s}`\n{USAGE}")),
            s => {
                if file.replace(s.to_string()).is_some() {
                    return Err(format!("more than one PTX file given\n{USAGE}"));
                }
            }
        }
    }
    let file = file.ok_or_else(|| format!("no PTX file given\n{USAGE}"))?;
    let grid = grid.ok_or_else(|| format!("--grid is required\n{USAGE}"))?;
    let block = block.ok_or_else(|| format!("--block is required\n{USAGE}"))?;
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{file}: {e}"))?;
    let prog = Program::parse(&text).map_err(|e| format!("{file}: {e}"))?;
    let entry = match entry {
        Some(e) => e,
        None => match prog.entry_names().as_slice() {
            [one] => one.to_string(),
            names => {
                return Err(format!(
                    "{file} has entries {names:?}; pick one with --entry"
                ));
            }
        },
    };
    let mut sim = Sim::new(sm);
    let mut o = sim.options();
    o.checks = checks;
    o.max_instructions = max_instructions;
    o.approx = approx;
    o.threads = threads;
    sim.set_options(o);
    // module variables get their storage in this simulator
    let prog = sim
        .load_module(&std::sync::Arc::new(prog))
        .map_err(|e| format!("{file}: {e}"))?;
    let mut values = Vec::new();
    let mut outputs: Vec<(String, u64, usize)> = Vec::new();
    for s in &specs {
        match s {
            ArgSpec::Scalar(v) => values.push(*v),
            ArgSpec::In(p) | ArgSpec::InOut(p) => {
                let data = std::fs::read(p).map_err(|e| format!("{p}: {e}"))?;
                let a = sim.alloc(data.len()).map_err(|e| e.to_string())?;
                sim.write(a, &data).map_err(|e| e.to_string())?;
                values.push(ArgValue::Ptr(a));
                if matches!(s, ArgSpec::InOut(_)) {
                    outputs.push((p.clone(), a, data.len()));
                }
            }
            ArgSpec::Out(p, n, zero) => {
                let a = if *zero {
                    sim.alloc_zeroed(*n)
                } else {
                    sim.alloc(*n)
                }
                .map_err(|e| e.to_string())?;
                values.push(ArgValue::Ptr(a));
                outputs.push((p.clone(), a, *n));
            }
        }
    }
    let cfg = LaunchConfig {
        grid,
        block,
        dynamic_smem_bytes: smem,
    };
    let mut out = String::new();
    let report = match sim.launch_program(&prog, &entry, cfg, &values) {
        Ok(r) => r,
        Err(e @ SimError::InstructionLimit { .. }) => {
            return Err(format!(
                "finding: {e}\n  ptx_run: raise the budget with --max-instructions N, \
                 or lift it with --max-instructions 0"
            ));
        }
        Err(e) => return Err(format!("finding: {e}")),
    };
    for (p, a, n) in &outputs {
        let mut buf = vec![0u8; *n];
        sim.read(*a, &mut buf).map_err(|e| e.to_string())?;
        std::fs::write(p, &buf).map_err(|e| format!("{p}: {e}"))?;
        let _ = writeln!(out, "wrote {n} bytes to {p}");
    }
    let _ = writeln!(
        out,
        "{entry}: grid {grid:?} block {block:?}: no findings ({}), {} instructions, {} barriers",
        if checks { "checks on" } else { "checks off" },
        report.instructions,
        report.barriers
    );
    if report.approximate > 0 {
        let _ = writeln!(
            out,
            "  note: {} approximate instructions ran as correctly rounded values (not bit-exact with the GPU)",
            report.approximate
        );
    }
    let mut ops: Vec<(&String, &u64)> = report.per_opcode.iter().collect();
    ops.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (k, v) in ops {
        let _ = writeln!(out, "  {v:>12}  {k}");
    }
    Ok(out)
}
