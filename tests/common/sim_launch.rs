//! The simulator race tests' launch scaffolding, written once (included by
//! `tests/sim_races.rs` and `tests/sim_same_value.rs` with
//! `#[path = "common/sim_launch.rs"] mod sim_launch;`): a one-parameter
//! kernel `k(out)` around a body, launched on every simulator thread count
//! and schedule of [`THREADS`], each outcome compared with the first.
#![allow(dead_code)]

use ptxsmith::Sm;
use ptxsmith::dsl::params::ArgValue;
use ptxsmith::runtime::exec::LaunchConfig;
use ptxsmith::sim::{LaunchReport, Program, Sim, SimError, SimOptions};

/// (worker threads, lockstep)
pub const THREADS: [(usize, bool); 5] = [(1, false), (1, true), (2, true), (7, false), (7, true)];

/// A kernel `k(out)` with `%r0` = `%tid.x`, `%rd0` = `out`, a 64-word
/// shared array `s`, then the line `setup` and `body`.
pub fn kernel(setup: &str, body: &str) -> String {
    format!(
        ".version 7.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{{
.shared .align 4 .b32 s[64];
.reg .b32 %r<8>;
.reg .b64 %rd<4>;
.reg .pred %p<8>;
ld.param.u64 %rd0, [out];
mov.u32 %r0, %tid.x;
{setup}
{body}
ret;
}}
"
    )
}

/// `k` of `ptx` on `grid` blocks of `block` threads with `out` = 16 words
/// of 7, on every configuration of [`THREADS`]: the outcome (the same on
/// each, an error's text included) and `out` afterwards.
pub fn run(ptx: &str, grid: u32, block: u32) -> (Result<LaunchReport, SimError>, Vec<u32>) {
    let prog = Program::parse(ptx).unwrap();
    let mut first: Option<(Result<LaunchReport, SimError>, Vec<u32>)> = None;
    for (threads, lockstep) in THREADS {
        let mut sim = Sim::new(Sm::Sm80);
        sim.set_options(SimOptions {
            threads,
            lockstep,
            ..Default::default()
        });
        let out = sim.alloc(64).unwrap();
        let init: Vec<u8> = (0..16).flat_map(|_| 7u32.to_le_bytes()).collect();
        sim.write(out, &init).unwrap();
        let r = sim.launch_program(
            &prog,
            "k",
            LaunchConfig::linear(grid, block),
            &[ArgValue::Ptr(out)],
        );
        let mut v = vec![0u8; 64];
        sim.read(out, &mut v).unwrap();
        let words = v
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let got = (r, words);
        match &first {
            None => first = Some(got),
            Some(f) => {
                assert_eq!(&got, f, "{threads} threads, lockstep {lockstep}");
                if let (Err(a), Err(b)) = (&got.0, &f.0) {
                    assert_eq!(a.to_string(), b.to_string());
                }
            }
        }
    }
    first.unwrap()
}
