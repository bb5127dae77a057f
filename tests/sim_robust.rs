//! Malformed or mutated PTX is refused with an error (never a panic), and
//! whatever still parses runs to completion or to a finding.

use proptest::prelude::*;
use ptxsmith::Sm;
use ptxsmith::dsl::params::ArgValue;
use ptxsmith::runtime::exec::LaunchConfig;
use ptxsmith::sim::{Program, Sim, SimOptions};

const SOURCES: [&str; 3] = [
    include_str!("ptx/saxpy.ptx"),
    include_str!("ptx/reduce.ptx"),
    include_str!("ptx/dot.ptx"),
];

fn mutate(src: &str, ops: &[(u8, usize, u8)]) -> String {
    let mut lines: Vec<String> = src.lines().map(str::to_string).collect();
    for &(kind, pos, ch) in ops {
        if lines.is_empty() {
            break;
        }
        let li = pos % lines.len();
        match kind % 4 {
            0 => {
                lines.remove(li);
            }
            1 => {
                let l = lines[li].clone();
                lines.insert(li, l);
            }
            2 => {
                let mut b: Vec<char> = lines[li].chars().collect();
                if !b.is_empty() {
                    let i = pos % b.len();
                    b[i] = (b' ' + ch % 95) as char;
                }
                lines[li] = b.into_iter().collect();
            }
            _ => {
                let mut b: Vec<char> = lines[li].chars().collect();
                if !b.is_empty() {
                    b.remove(pos % b.len());
                }
                lines[li] = b.into_iter().collect();
            }
        }
    }
    lines.join("\n")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn mutated_ptx_never_panics(which in 0usize..3, ops in proptest::collection::vec((any::<u8>(), any::<usize>(), any::<u8>()), 1..4)) {
        let text = mutate(SOURCES[which], &ops);
        if let Ok(prog) = Program::parse(&text) {
            let mut sim = Sim::new(Sm::Sm120);
            sim.set_options(SimOptions { max_instructions: Some(200_000), ..Default::default() });
            let a = sim.alloc_zeroed(4096).unwrap();
            let b = sim.alloc_zeroed(4096).unwrap();
            let c = sim.alloc_zeroed(4096).unwrap();
            for name in prog.entry_names() {
                let args = match name {
                    "saxpy" => vec![ArgValue::Ptr(a), ArgValue::Ptr(b), ArgValue::F32(1.0), ArgValue::U32(100)],
                    "block_sum" => vec![ArgValue::Ptr(a), ArgValue::Ptr(b)],
                    _ => vec![ArgValue::Ptr(a), ArgValue::Ptr(b), ArgValue::Ptr(c), ArgValue::U32(300)],
                };
                let _ = sim.launch_program(&prog, name, LaunchConfig::linear(2, 64), &args);
            }
        }
    }
}
