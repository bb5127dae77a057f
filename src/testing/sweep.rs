//! Run a kernel on the simulator for every SM and compare its output with
//! a host model bit for bit.
//!
//! [`check_on_every_sm`] takes three closures: the kernel's generator
//! (`Fn(Sm) -> PtxResult<PtxModule>`, the signature of every generator in
//! [`crate::kernels`] and of a user's own), a launch closure that uploads
//! the inputs to a fresh [`Context::sim`], launches the module and
//! downloads the output, and the host model. For each SM of
//! [`Sm::ALL`] (every target the simulator runs) it generates the module,
//! launches it and compares the two outputs element by element through
//! [`BitExact`]: floats by their bits (`-0.0` differs from `0.0`, a NaN
//! equals only a NaN with the same payload), integers exactly.
//!
//! An SM the generator refuses with [`Error::UnsupportedFeature`] is
//! skipped and listed in the [`SmSweep`]; every other error, and every
//! mismatch, is a [`CheckError`] naming the SM.
//!
//! ```
//! use ptxsmith::kernels::dot::ptx::{self, DotRowsArgs};
//! use ptxsmith::dsl::params::KernelParams;
//! use ptxsmith::runtime::LaunchConfig;
//! use ptxsmith::testing::check_on_every_sm;
//!
//! let (x, y) = (vec![1.5f32, -2.0, 0.25], vec![4.0f32, 0.5, -8.0]);
//! let sweep = check_on_every_sm(
//!     ptx::generate,
//!     |ctx, module| {
//!         let st = ctx.default_stream();
//!         let (xd, yd, mut out) = (st.upload(&x)?, st.upload(&y)?, ctx.alloc::<f32>(1)?);
//!         let args = DotRowsArgs {
//!             x: st.arg("x", &xd)?,
//!             y: st.arg("y", &yd)?,
//!             out: st.arg_mut("out", &mut out)?,
//!             rows: 1,
//!             n: 3,
//!         };
//!         st.launch(module, LaunchConfig::linear(1, ptx::BLOCK), &args.args())?;
//!         st.to_vec(&out)
//!     },
//!     |_sm| ptxsmith::kernels::dot::host::dot_rows(&x, &y, 1, 3),
//! )?;
//! assert_eq!(sweep.passed.len(), ptxsmith::Sm::ALL.len());
//! # Ok::<(), ptxsmith::testing::CheckError>(())
//! ```

use std::fmt;

use crate::dsl::PtxModule;
use crate::error::Error;

/// ptxsmith's result type (the closures' return type).
type PtxResult<T> = crate::error::Result<T>;
use crate::runtime::Context;
use crate::target::Sm;

/// An element type compared bit for bit: floats by their bit pattern,
/// integers by value.
pub trait BitExact: Copy + fmt::Debug + 'static {
    /// The type's name in reports (`f32`).
    const NAME: &'static str;
    /// Hex digits of the bit pattern (twice the size in bytes).
    const HEX_DIGITS: usize;
    /// The bit pattern, zero-extended to 64 bits.
    fn bits(self) -> u64;
}

macro_rules! bit_exact {
    ($($t:ty => $name:literal, |$v:ident| $bits:expr;)*) => {$(
        impl BitExact for $t {
            const NAME: &'static str = $name;
            const HEX_DIGITS: usize = 2 * std::mem::size_of::<$t>();
            fn bits(self) -> u64 {
                let $v = self;
                $bits
            }
        }
    )*};
}

bit_exact! {
    f32 => "f32", |v| u64::from(v.to_bits());
    f64 => "f64", |v| v.to_bits();
    u8 => "u8", |v| u64::from(v);
    u16 => "u16", |v| u64::from(v);
    u32 => "u32", |v| u64::from(v);
    u64 => "u64", |v| v;
    i8 => "i8", |v| u64::from(v as u8);
    i16 => "i16", |v| u64::from(v as u16);
    i32 => "i32", |v| u64::from(v as u32);
    i64 => "i64", |v| v as u64;
}

/// The first differing element of one SM's output, with the count of
/// differing elements on that SM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The SM whose output differs (the first one in [`Sm::ALL`] order).
    pub sm: Sm,
    /// The output buffer (0 for [`check_on_every_sm`]).
    pub buffer: usize,
    /// The index of the first differing element.
    pub index: usize,
    /// The element type's name (`f32`).
    pub elem: &'static str,
    /// The device's value (`Debug` text).
    pub device: String,
    /// The host model's value (`Debug` text).
    pub host: String,
    /// The device value's bits.
    pub device_bits: u64,
    /// The host value's bits.
    pub host_bits: u64,
    /// How many elements of this buffer differ on this SM.
    pub mismatches: usize,
    /// The buffer's length.
    pub len: usize,
    /// Every SM whose output differed (this one first), for a sweep that
    /// went on after the first.
    pub failing_sms: Vec<Sm>,
    hex_digits: usize,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = self.hex_digits;
        write!(
            f,
            "{}: buffer {} element {} differs: device {} (0x{:0w$x}) vs host {} (0x{:0w$x}) \
             [{}]; {} of {} elements differ",
            self.sm,
            self.buffer,
            self.index,
            self.device,
            self.device_bits,
            self.host,
            self.host_bits,
            self.elem,
            self.mismatches,
            self.len,
        )?;
        if self.failing_sms.len() > 1 {
            let names: Vec<&str> = self.failing_sms.iter().map(|s| s.name()).collect();
            write!(f, " (SMs that differ: {})", names.join(", "))?;
        }
        Ok(())
    }
}

/// Why a sweep failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckError {
    /// The device output differs from the host model's.
    #[error("{0}")]
    Mismatch(Box<Mismatch>),
    /// The device and the host gave buffers of different lengths.
    #[error("{sm}: buffer {buffer} has {device} elements on the device and {host} on the host")]
    Length {
        /// The SM.
        sm: Sm,
        /// The buffer.
        buffer: usize,
        /// The device buffer's length.
        device: usize,
        /// The host buffer's length.
        host: usize,
    },
    /// The device and the host gave different numbers of buffers.
    #[error("{sm}: {device} output buffers from the launch, {host} from the host model")]
    BufferCount {
        /// The SM.
        sm: Sm,
        /// Buffers from the launch closure.
        device: usize,
        /// Buffers from the host closure.
        host: usize,
    },
    /// The generator failed with an error other than
    /// [`Error::UnsupportedFeature`].
    #[error("{sm}: generating the kernel failed: {source}")]
    Generate {
        /// The SM.
        sm: Sm,
        /// The generator's error.
        #[source]
        source: Box<Error>,
    },
    /// The launch closure failed (a simulator finding, a refused launch).
    #[error("{sm}: launching `{kernel}` failed: {source}")]
    Launch {
        /// The SM.
        sm: Sm,
        /// The module's kernel.
        kernel: String,
        /// The launch closure's error.
        #[source]
        source: Box<Error>,
    },
    /// The generator refused every SM it was asked for: nothing was
    /// compared.
    #[error("no SM was checked: the generator refused all of {}", names(.skipped))]
    NothingChecked {
        /// The SMs and the generator's reasons.
        skipped: Vec<(Sm, String)>,
    },
}

fn names(skipped: &[(Sm, String)]) -> String {
    skipped
        .iter()
        .map(|(s, _)| s.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a sweep checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmSweep {
    /// SMs whose output matched the host model bit for bit.
    pub passed: Vec<Sm>,
    /// SMs the generator refused with [`Error::UnsupportedFeature`], with
    /// its message.
    pub skipped: Vec<(Sm, String)>,
}

impl fmt::Display for SmSweep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let passed: Vec<&str> = self.passed.iter().map(|s| s.name()).collect();
        write!(f, "bit-exact on {}", passed.join(", "))?;
        for (sm, why) in &self.skipped {
            write!(f, "; skipped {sm}: {why}")?;
        }
        Ok(())
    }
}

/// Run `generate`'s kernel on the simulator for every SM of [`Sm::ALL`]
/// and compare the output of `launch` with `host`'s bit for bit (see the
/// [module docs](self)).
///
/// `launch` gets a fresh [`Context::sim`] for the SM and the generated
/// module; it uploads the inputs, launches and returns the downloaded
/// output. `host` gets the SM (a host model is usually the same for all).
///
/// # Errors
/// [`CheckError::Mismatch`] naming the first SM whose output differs, the
/// first differing index, both values and their bits, and the count of
/// differing elements (every SM is run; [`Mismatch::failing_sms`] lists
/// all that differ); [`CheckError::Generate`], [`CheckError::Launch`],
/// [`CheckError::Length`] naming the SM; [`CheckError::NothingChecked`]
/// when the generator refused every SM.
pub fn check_on_every_sm<T: BitExact>(
    generate: impl Fn(Sm) -> PtxResult<PtxModule>,
    launch: impl Fn(&Context, &PtxModule) -> PtxResult<Vec<T>>,
    host: impl Fn(Sm) -> Vec<T>,
) -> Result<SmSweep, CheckError> {
    check_on_sms(&Sm::ALL, generate, launch, host)
}

/// [`check_on_every_sm`] for the SMs in `sms` only.
///
/// # Errors
/// As [`check_on_every_sm`].
pub fn check_on_sms<T: BitExact>(
    sms: &[Sm],
    generate: impl Fn(Sm) -> PtxResult<PtxModule>,
    launch: impl Fn(&Context, &PtxModule) -> PtxResult<Vec<T>>,
    host: impl Fn(Sm) -> Vec<T>,
) -> Result<SmSweep, CheckError> {
    check_buffers_on_sms(
        sms,
        generate,
        |ctx, m| launch(ctx, m).map(|v| vec![v]),
        |sm| vec![host(sm)],
    )
}

/// [`check_on_every_sm`] for a kernel with several output buffers (all of
/// one element type): `launch` and `host` return them in the same order;
/// [`Mismatch::buffer`] names the one that differs.
///
/// # Errors
/// As [`check_on_every_sm`], and [`CheckError::BufferCount`] when the
/// two closures return different numbers of buffers.
pub fn check_buffers_on_every_sm<T: BitExact>(
    generate: impl Fn(Sm) -> PtxResult<PtxModule>,
    launch: impl Fn(&Context, &PtxModule) -> PtxResult<Vec<Vec<T>>>,
    host: impl Fn(Sm) -> Vec<Vec<T>>,
) -> Result<SmSweep, CheckError> {
    check_buffers_on_sms(&Sm::ALL, generate, launch, host)
}

/// [`check_buffers_on_every_sm`] for the SMs in `sms` only.
///
/// # Errors
/// As [`check_buffers_on_every_sm`].
pub fn check_buffers_on_sms<T: BitExact>(
    sms: &[Sm],
    generate: impl Fn(Sm) -> PtxResult<PtxModule>,
    launch: impl Fn(&Context, &PtxModule) -> PtxResult<Vec<Vec<T>>>,
    host: impl Fn(Sm) -> Vec<Vec<T>>,
) -> Result<SmSweep, CheckError> {
    let mut sweep = SmSweep {
        passed: Vec::new(),
        skipped: Vec::new(),
    };
    let mut first: Option<Mismatch> = None;
    let mut failing = Vec::new();
    for &sm in sms {
        let module = match generate(sm) {
            Ok(m) => m,
            Err(e @ Error::UnsupportedFeature { .. }) => {
                sweep.skipped.push((sm, e.to_string()));
                continue;
            }
            Err(source) => {
                return Err(CheckError::Generate {
                    sm,
                    source: Box::new(source),
                });
            }
        };
        let ctx = Context::sim(sm);
        let device = launch(&ctx, &module).map_err(|source| CheckError::Launch {
            sm,
            kernel: module.kernel.clone(),
            source: Box::new(source),
        })?;
        let expected = host(sm);
        match compare(sm, &device, &expected)? {
            None => sweep.passed.push(sm),
            Some(m) => {
                failing.push(sm);
                first.get_or_insert(m);
            }
        }
    }
    if let Some(mut m) = first {
        m.failing_sms = failing;
        return Err(CheckError::Mismatch(Box::new(m)));
    }
    if sweep.passed.is_empty() {
        return Err(CheckError::NothingChecked {
            skipped: sweep.skipped,
        });
    }
    Ok(sweep)
}

/// The first mismatch of `device` against `host` on `sm`, if any.
fn compare<T: BitExact>(
    sm: Sm,
    device: &[Vec<T>],
    host: &[Vec<T>],
) -> Result<Option<Mismatch>, CheckError> {
    if device.len() != host.len() {
        return Err(CheckError::BufferCount {
            sm,
            device: device.len(),
            host: host.len(),
        });
    }
    for (buffer, (d, h)) in device.iter().zip(host).enumerate() {
        if d.len() != h.len() {
            return Err(CheckError::Length {
                sm,
                buffer,
                device: d.len(),
                host: h.len(),
            });
        }
        let mut diff = d
            .iter()
            .zip(h)
            .enumerate()
            .filter(|(_, (a, b))| a.bits() != b.bits());
        if let Some((index, (a, b))) = diff.next() {
            return Ok(Some(Mismatch {
                sm,
                buffer,
                index,
                elem: T::NAME,
                device: format!("{a:?}"),
                host: format!("{b:?}"),
                device_bits: a.bits(),
                host_bits: b.bits(),
                mismatches: 1 + diff.count(),
                len: d.len(),
                failing_sms: vec![sm],
                hex_digits: T::HEX_DIGITS,
            }));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_compare_by_bits_integers_by_value() {
        assert_ne!(0.0f32.bits(), (-0.0f32).bits());
        assert_eq!(f32::NAN.bits(), f32::NAN.bits());
        assert_ne!(
            f32::from_bits(0x7fc0_0001).bits(),
            f32::from_bits(0x7fc0_0002).bits()
        );
        assert_eq!((-1i32).bits(), 0xffff_ffff);
        assert_eq!((-1i8).bits(), 0xff);
        assert_eq!(1.0f64.bits(), 0x3ff0_0000_0000_0000);
    }

    #[test]
    fn compare_reports_first_index_count_and_bits() {
        let d = vec![vec![1.0f32, 2.0, f32::NAN, -0.0]];
        let h = vec![vec![1.0f32, 2.5, f32::NAN, 0.0]];
        let m = compare(Sm::Sm80, &d, &h).unwrap().unwrap();
        assert_eq!((m.index, m.mismatches, m.len), (1, 2, 4));
        assert_eq!((m.device_bits, m.host_bits), (0x4000_0000, 0x4020_0000));
        let text = m.to_string();
        assert!(
            text.contains("sm_80") && text.contains("element 1"),
            "{text}"
        );
        assert!(
            text.contains("0x40000000") && text.contains("0x40200000"),
            "{text}"
        );
        assert!(compare(Sm::Sm80, &h, &h).unwrap().is_none());
    }

    #[test]
    fn length_and_count_differences_are_errors() {
        let a = vec![vec![1u32, 2]];
        let b = vec![vec![1u32]];
        assert!(matches!(
            compare(Sm::Sm90, &a, &b),
            Err(CheckError::Length {
                device: 2,
                host: 1,
                ..
            })
        ));
        assert!(matches!(
            compare(Sm::Sm90, &a, &[]),
            Err(CheckError::BufferCount { .. })
        ));
    }
}
