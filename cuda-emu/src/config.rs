//! The emulator's configuration, read from the environment once, at
//! `cuInit`.
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `PTXSMITH_EMU_DEVICES` | comma-separated SM of each emulated device, e.g. `sm_90,sm_80` (empty: no device) | `sm_90` |
//! | `PTXSMITH_EMU_DRIVER_VERSION` | the driver version `cuDriverGetVersion` reports, `12090` or `12.9`; it caps the PTX ISA `.version` a module may use | `12090` |
//! | `PTXSMITH_EMU_MEMORY_MIB` | device memory of each device, MiB (the host holds about twice as much: data plus the initialisation map) | `4096` |
//! | `PTXSMITH_EMU_LOG` | file the kernel findings are appended to | stderr |
//! | `PTXSMITH_EMU_CHECKS` | `0`/`off`: turn off the simulator's optional checks (races, uninitialised reads, `bra.uni` uniformity) | on |
//! | `PTXSMITH_EMU_MAX_INSTRUCTIONS` | per-launch instruction budget, exactly N (`0`: none) | `max(10⁹, threads × 2²⁴)` (the simulator's scaled default) |
//! | `PTXSMITH_EMU_APPROX` | `1`: run `.approx` instructions as the correctly rounded value instead of failing the launch | off |
//! | `PTXSMITH_EMU_TRACE` | `1`: print every call that returns an error, with its code | off |
//!
//! The simulator's own `PTXSMITH_SIM_THREADS` (worker threads for the
//! blocks of a launch, default every core) applies too: the emulator's
//! simulators keep `SimOptions::threads` at 0.

use std::path::PathBuf;

use ptxsmith::Sm;
use ptxsmith::sim::DEFAULT_INSTRUCTION_BUDGET;

/// At most this many emulated devices (each gets its own 2⁴³-byte slice of
/// the address space below the simulator's state-space windows).
pub const MAX_DEVICES: usize = 8;

/// One emulated device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSpec {
    /// The plain target of the device's architecture (its table row in
    /// `ptxsmith::target`, and the SM the simulator runs).
    pub sm: Sm,
    /// Device memory in bytes.
    pub memory: u64,
}

impl DeviceSpec {
    /// Compute capability `(major, minor)`.
    pub fn cc(&self) -> (u32, u32) {
        let (a, b) = self.sm.info().cc;
        (u32::from(a), u32::from(b))
    }

    /// The name `cuDeviceGetName` reports.
    pub fn name(&self, ordinal: usize) -> String {
        format!(
            "{} {} (device {ordinal}, CPU PTX simulator)",
            ptxsmith::runtime::EMULATOR_NAME_PREFIX,
            self.sm.plain()
        )
    }
}

/// Everything the environment configures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub devices: Vec<DeviceSpec>,
    /// `major * 1000 + minor * 10`, as `cuDriverGetVersion` reports it.
    pub driver_version: i32,
    pub log: Option<PathBuf>,
    pub checks: bool,
    pub max_instructions: Option<u64>,
    pub approx: bool,
    pub trace: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            devices: vec![DeviceSpec {
                sm: Sm::Sm90,
                memory: 4096 << 20,
            }],
            driver_version: 12090,
            log: None,
            checks: true,
            max_instructions: Some(DEFAULT_INSTRUCTION_BUDGET),
            approx: false,
            trace: false,
        }
    }
}

fn flag(v: &str) -> bool {
    !matches!(v.trim(), "" | "0" | "off" | "false" | "no")
}

/// Parse a driver version: `12090` or `12.9` (`13.0`, `11.8`, ...).
pub fn parse_driver_version(s: &str) -> Result<i32, String> {
    let t = s.trim();
    let bad = || format!("PTXSMITH_EMU_DRIVER_VERSION=`{s}`: expected e.g. `12090` or `12.9`");
    let v = if let Some((a, b)) = t.split_once('.') {
        let a: i32 = a.parse().map_err(|_| bad())?;
        let b: i32 = b.parse().map_err(|_| bad())?;
        if !(0..100).contains(&b) {
            return Err(bad());
        }
        a * 1000 + b * 10
    } else {
        t.parse().map_err(|_| bad())?
    };
    if !(9000..100_000).contains(&v) {
        return Err(format!("{}: below CUDA 9.0 or not a version", bad()));
    }
    Ok(v)
}

/// Parse a device list such as `sm_90,sm_80` (an `a` suffix names the same
/// device as the plain target).
pub fn parse_devices(s: &str, memory: u64) -> Result<Vec<DeviceSpec>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let sm = Sm::parse(part)
            .map_err(|e| format!("PTXSMITH_EMU_DEVICES: {e}"))?
            .plain();
        out.push(DeviceSpec { sm, memory });
    }
    if out.len() > MAX_DEVICES {
        return Err(format!(
            "PTXSMITH_EMU_DEVICES names {} devices, at most {MAX_DEVICES} are emulated",
            out.len()
        ));
    }
    Ok(out)
}

impl Config {
    /// The configuration from the environment variables in the module
    /// docs; an error names the variable and the value.
    pub fn from_env() -> Result<Config, String> {
        let var = |k: &str| std::env::var(k).ok();
        let mut c = Config::default();
        let memory = match var("PTXSMITH_EMU_MEMORY_MIB") {
            Some(v) => {
                let mib: u64 = v.trim().parse().map_err(|_| {
                    format!("PTXSMITH_EMU_MEMORY_MIB=`{v}`: expected a number of MiB")
                })?;
                if mib == 0 || mib > 1 << 20 {
                    return Err(format!(
                        "PTXSMITH_EMU_MEMORY_MIB={mib}: expected 1 to {} MiB",
                        1u64 << 20
                    ));
                }
                mib << 20
            }
            None => 4096 << 20,
        };
        c.devices = match var("PTXSMITH_EMU_DEVICES") {
            Some(v) => parse_devices(&v, memory)?,
            None => vec![DeviceSpec {
                sm: Sm::Sm90,
                memory,
            }],
        };
        if let Some(v) = var("PTXSMITH_EMU_DRIVER_VERSION") {
            c.driver_version = parse_driver_version(&v)?;
        }
        c.log = var("PTXSMITH_EMU_LOG")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        if let Some(v) = var("PTXSMITH_EMU_CHECKS") {
            c.checks = flag(&v);
        }
        if let Some(v) = var("PTXSMITH_EMU_MAX_INSTRUCTIONS") {
            let n: u64 = v.trim().parse().map_err(|_| {
                format!("PTXSMITH_EMU_MAX_INSTRUCTIONS=`{v}`: expected a number (0: no limit)")
            })?;
            c.max_instructions = (n > 0).then_some(n);
        }
        c.approx = var("PTXSMITH_EMU_APPROX").is_some_and(|v| flag(&v));
        c.trace = var("PTXSMITH_EMU_TRACE").is_some_and(|v| flag(&v));
        Ok(c)
    }
}

/// The newest PTX ISA version a driver of `version` (`cuDriverGetVersion`
/// form) JIT-compiles, as `(major, minor)`: PTX ISA release history (PTX
/// ISA 9.x §13; the same table as `ptxsmith::target::PtxVersion::min_driver`),
/// extended by the CUDA 13 pattern (ISA 9.x ships with CUDA 13.x).
pub fn max_ptx_isa(version: i32) -> (u32, u32) {
    const TABLE: [(i32, (u32, u32)); 25] = [
        (9000, (6, 0)),
        (9010, (6, 1)),
        (9020, (6, 2)),
        (10000, (6, 3)),
        (10010, (6, 4)),
        (10020, (6, 5)),
        (11000, (7, 0)),
        (11010, (7, 1)),
        (11020, (7, 2)),
        (11030, (7, 3)),
        (11040, (7, 4)),
        (11050, (7, 5)),
        (11060, (7, 6)),
        (11070, (7, 7)),
        (11080, (7, 8)),
        (12000, (8, 0)),
        (12010, (8, 1)),
        (12020, (8, 2)),
        (12030, (8, 3)),
        (12040, (8, 4)),
        (12050, (8, 5)),
        (12070, (8, 6)),
        (12080, (8, 7)),
        (12090, (8, 8)),
        (13000, (9, 0)),
    ];
    if version >= 13000 {
        let minor = ((version - 13000) / 10).clamp(0, 9) as u32;
        return (9, minor);
    }
    TABLE
        .iter()
        .rev()
        .find(|(v, _)| *v <= version)
        .map_or((0, 0), |&(_, isa)| isa)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ptxsmith::target::PtxVersion;

    #[test]
    fn versions_parse_in_both_spellings() {
        assert_eq!(parse_driver_version("12090"), Ok(12090));
        assert_eq!(parse_driver_version("12.9"), Ok(12090));
        assert_eq!(parse_driver_version(" 11.8 "), Ok(11080));
        assert!(parse_driver_version("12.x").is_err());
        assert!(parse_driver_version("8000").is_err());
    }

    #[test]
    fn device_lists_parse_and_refuse_unknown_sms() {
        let d = parse_devices("sm_90, sm_80,sm_100a", 1 << 20).unwrap();
        let sms: Vec<Sm> = d.iter().map(|d| d.sm).collect();
        assert_eq!(sms, [Sm::Sm90, Sm::Sm80, Sm::Sm100]);
        assert_eq!(d[2].cc(), (10, 0));
        assert!(parse_devices("", 1).unwrap().is_empty());
        let e = parse_devices("sm_90,sm_42", 1).unwrap_err();
        assert!(e.contains("sm_42"), "{e}");
        assert!(parse_devices(&["sm_80"; 9].join(","), 1).is_err());
    }

    #[test]
    fn the_isa_table_agrees_with_ptxsmiths_driver_table() {
        // Every ISA ptxsmith knows needs exactly the CUDA release its table
        // names: that release accepts it, the release before does not.
        for (major, minor) in [
            (6, 0),
            (6, 5),
            (7, 0),
            (7, 8),
            (8, 0),
            (8, 5),
            (8, 6),
            (8, 7),
            (8, 8),
        ] {
            let (cuda, _) = PtxVersion::new(major, minor).min_driver();
            let v = parse_driver_version(cuda).unwrap();
            assert_eq!(
                max_ptx_isa(v),
                (u32::from(major), u32::from(minor)),
                "{cuda}"
            );
            assert!(
                max_ptx_isa(v - 10) < (u32::from(major), u32::from(minor)),
                "{cuda}"
            );
        }
        assert_eq!(max_ptx_isa(12060), (8, 5));
        assert_eq!(max_ptx_isa(13010), (9, 1));
        assert_eq!(max_ptx_isa(8000), (0, 0));
    }
}
