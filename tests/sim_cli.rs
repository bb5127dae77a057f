//! The `ptx_run` example's logic on the hand-written kernels, with real
//! files.

use ptxsmith::sim::cli;

fn tmp(name: &str) -> String {
    let d = std::env::temp_dir().join(format!("ptxsmith-sim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name).to_string_lossy().into_owned()
}

fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn saxpy_through_files() {
    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    let y: Vec<f32> = (0..n).map(|i| 1.0 - i as f32).collect();
    let (px, py) = (tmp("x.bin"), tmp("y.bin"));
    std::fs::write(
        &px,
        x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    )
    .unwrap();
    std::fs::write(
        &py,
        y.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>(),
    )
    .unwrap();
    let out = cli::run(&args(&[
        "tests/ptx/saxpy.ptx",
        "--grid",
        "8",
        "--block",
        "128",
        "--arg",
        &format!("in:{px}"),
        "--arg",
        &format!("inout:{py}"),
        "--arg",
        "f32:2.5",
        "--arg",
        "u32:1000",
    ]))
    .unwrap();
    assert!(out.contains("no findings"), "{out}");
    assert!(out.contains("fma.rn.f32"), "{out}");
    let got = std::fs::read(&py).unwrap();
    for i in 0..n {
        let v = f32::from_le_bytes(got[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!(v.to_bits(), 2.5f32.mul_add(x[i], y[i]).to_bits());
    }
}

#[test]
fn reduction_out_buffer_and_findings() {
    let input: Vec<u32> = (0..512).collect();
    let pin = tmp("in.bin");
    let pout = tmp("out.bin");
    std::fs::write(
        &pin,
        input
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let out = cli::run(&args(&[
        "tests/ptx/reduce.ptx",
        "--entry",
        "block_sum",
        "--grid",
        "4,1,1",
        "--block",
        "128",
        "--arg",
        &format!("in:{pin}"),
        "--arg",
        &format!("out:{pout}:16"),
    ]))
    .unwrap();
    assert!(out.contains("bar.sync"), "{out}");
    let got: Vec<u32> = std::fs::read(&pout)
        .unwrap()
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let want: Vec<u32> = (0..4).map(|b| (b * 128..(b + 1) * 128).sum()).collect();
    assert_eq!(got, want);
    // too-small input buffer: the out-of-bounds read of the first block
    // past it is reported, whatever the thread count
    std::fs::write(&pin, [0u8; 256]).unwrap();
    let run_small = |threads: &str| {
        cli::run(&args(&[
            "tests/ptx/reduce.ptx",
            "--grid",
            "4",
            "--block",
            "128",
            "--threads",
            threads,
            "--arg",
            &format!("in:{pin}"),
            "--arg",
            &format!("out:{pout}:16"),
        ]))
        .unwrap_err()
    };
    let err = run_small("1");
    assert!(err.contains("out-of-bounds global"), "{err}");
    assert!(err.contains("block (0,0,0) thread (64,0,0)"), "{err}");
    assert_eq!(run_small("3"), err);
    assert!(run_small("0").contains("--threads must be at least 1"));
    assert!(
        cli::run(&args(&["--help"]))
            .unwrap()
            .contains("out:PATH:BYTES")
    );
    assert!(cli::run(&args(&["tests/ptx/reduce.ptx", "--grid", "1"])).is_err());
}
