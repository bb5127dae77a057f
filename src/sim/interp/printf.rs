//! The C `printf` formatting of the `vprintf` builtin: the format string
//! with the device's argument buffer, which packs each argument at the
//! next multiple of its size (`int`-sized and smaller integers as 4 bytes,
//! `long`/`long long`/`size_t` and pointers as 8, every floating-point
//! value as an 8-byte `double`).
//!
//! Conversions: `d i u o x X c s p f F e E g G a A %`, flags `- + space #
//! 0`, width and precision (numbers or `*`, which take an `int` argument),
//! length modifiers `hh h l ll j z t L`. `%s` of a null pointer prints
//! `(null)`, `%p` of one `(nil)` (glibc's spellings); an unknown
//! conversion (`%n` included) is printed as written, consuming nothing.

use super::Res;

/// Where the arguments come from.
pub(crate) trait Args {
    /// The next argument of `size` bytes (4 or 8), at the next multiple of
    /// its size in the buffer.
    fn next(&mut self, size: u64) -> Res<u64>;
    /// The NUL-terminated string at `ptr` (a generic address, not null).
    fn string(&mut self, ptr: u64) -> Res<Vec<u8>>;
}

#[derive(Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    prec: Option<usize>,
}

/// `fmt` formatted with the arguments of `a`; also the number of
/// arguments read (what device `printf` returns).
pub(crate) fn format(fmt: &[u8], a: &mut impl Args) -> Res<(Vec<u8>, u32)> {
    let mut out = Vec::new();
    let mut nargs = 0u32;
    let mut i = 0;
    while i < fmt.len() {
        if fmt[i] != b'%' {
            out.push(fmt[i]);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        let mut s = Spec::default();
        while let Some(&c) = fmt.get(i) {
            match c {
                b'-' => s.left = true,
                b'+' => s.plus = true,
                b' ' => s.space = true,
                b'#' => s.alt = true,
                b'0' => s.zero = true,
                _ => break,
            }
            i += 1;
        }
        if fmt.get(i) == Some(&b'*') {
            i += 1;
            nargs += 1;
            let w = a.next(4)? as u32 as i32;
            if w < 0 {
                s.left = true;
            }
            s.width = w.unsigned_abs() as usize;
        } else {
            s.width = digits(fmt, &mut i);
        }
        if fmt.get(i) == Some(&b'.') {
            i += 1;
            if fmt.get(i) == Some(&b'*') {
                i += 1;
                nargs += 1;
                let p = a.next(4)? as u32 as i32;
                s.prec = (p >= 0).then_some(p as usize);
            } else {
                s.prec = Some(digits(fmt, &mut i));
            }
        }
        // length: h, hh, l, ll, j, z, t, L
        let mut len = 0i32; // -2 hh, -1 h, 0 int, 1 long and wider
        while let Some(&c) = fmt.get(i) {
            match c {
                b'h' => len -= 1,
                b'l' | b'j' | b'z' | b't' | b'L' | b'q' => len = 1,
                _ => break,
            }
            i += 1;
        }
        let Some(&conv) = fmt.get(i) else {
            out.extend_from_slice(&fmt[start..]);
            break;
        };
        i += 1;
        let isize_ = if len > 0 { 8 } else { 4 };
        let body: Vec<u8> = match conv {
            b'%' => {
                out.push(b'%');
                continue;
            }
            b'd' | b'i' => {
                nargs += 1;
                let v = a.next(isize_)?;
                let v = match len {
                    l if l > 0 => v as i64,
                    -1 => v as i16 as i64,
                    l if l < -1 => v as i8 as i64,
                    _ => v as u32 as i32 as i64,
                };
                let sign = if v < 0 {
                    "-"
                } else if s.plus {
                    "+"
                } else if s.space {
                    " "
                } else {
                    ""
                };
                let d = int_digits(v.unsigned_abs(), 10, false, s.prec);
                pad_num(&s, sign, &d, s.prec.is_none())
            }
            b'u' | b'o' | b'x' | b'X' => {
                nargs += 1;
                let v = a.next(isize_)?;
                let v = match len {
                    l if l > 0 => v,
                    -1 => v as u16 as u64,
                    l if l < -1 => v as u8 as u64,
                    _ => v as u32 as u64,
                };
                let (base, upper) = match conv {
                    b'u' => (10, false),
                    b'o' => (8, false),
                    b'x' => (16, false),
                    _ => (16, true),
                };
                let mut d = int_digits(v, base, upper, s.prec);
                let mut prefix = "";
                if s.alt && conv == b'o' && !d.starts_with('0') {
                    d.insert(0, '0');
                }
                if s.alt && v != 0 && base == 16 {
                    prefix = if upper { "0X" } else { "0x" };
                }
                pad_num(&s, prefix, &d, s.prec.is_none())
            }
            b'c' => {
                nargs += 1;
                let v = a.next(4)? as u8;
                pad(&s, vec![v])
            }
            b's' => {
                nargs += 1;
                let p = a.next(8)?;
                let mut v = if p == 0 {
                    b"(null)".to_vec()
                } else {
                    a.string(p)?
                };
                if let Some(n) = s.prec {
                    v.truncate(n);
                }
                pad(&s, v)
            }
            b'p' => {
                nargs += 1;
                let p = a.next(8)?;
                let t = if p == 0 {
                    "(nil)".to_string()
                } else {
                    format!("{p:#x}")
                };
                pad(&s, t.into_bytes())
            }
            b'f' | b'F' | b'e' | b'E' | b'g' | b'G' | b'a' | b'A' => {
                nargs += 1;
                let v = f64::from_bits(a.next(8)?);
                let sign = if v.is_sign_negative() {
                    "-"
                } else if s.plus {
                    "+"
                } else if s.space {
                    " "
                } else {
                    ""
                };
                let upper = conv.is_ascii_uppercase();
                let x = v.abs();
                let d = if x.is_nan() {
                    "nan".to_string()
                } else if x.is_infinite() {
                    "inf".to_string()
                } else {
                    match conv.to_ascii_lowercase() {
                        b'f' => fixed(x, s.prec.unwrap_or(6), s.alt),
                        b'e' => exp(x, s.prec.unwrap_or(6), s.alt),
                        b'g' => general(x, s.prec.unwrap_or(6), s.alt),
                        _ => hex_float(x, s.prec),
                    }
                };
                let d = if upper { d.to_ascii_uppercase() } else { d };
                pad_num(&s, sign, &d, x.is_finite())
            }
            _ => {
                out.extend_from_slice(&fmt[start..i]);
                continue;
            }
        };
        out.extend_from_slice(&body);
    }
    Ok((out, nargs))
}

fn digits(fmt: &[u8], i: &mut usize) -> usize {
    let mut n = 0usize;
    while let Some(c) = fmt.get(*i).filter(|c| c.is_ascii_digit()) {
        n = n.saturating_mul(10).saturating_add((c - b'0') as usize);
        *i += 1;
    }
    n
}

/// The digits of `v` in `base`, at least `prec` of them (`prec` 0 and
/// `v` 0: none).
fn int_digits(v: u64, base: u32, upper: bool, prec: Option<usize>) -> String {
    let mut d = match base {
        8 => format!("{v:o}"),
        16 if upper => format!("{v:X}"),
        16 => format!("{v:x}"),
        _ => v.to_string(),
    };
    match prec {
        Some(0) if v == 0 => d.clear(),
        Some(p) if d.len() < p => d.insert_str(0, &"0".repeat(p - d.len())),
        _ => {}
    }
    d
}

/// Sign or prefix, then digits, padded to the width: spaces on the left
/// (or right with `-`), or zeros after the prefix with `0` when `zero_ok`.
fn pad_num(s: &Spec, prefix: &str, digits: &str, zero_ok: bool) -> Vec<u8> {
    let n = prefix.len() + digits.len();
    let fill = s.width.saturating_sub(n);
    let mut o = String::with_capacity(n + fill);
    if s.left {
        o.push_str(prefix);
        o.push_str(digits);
        o.push_str(&" ".repeat(fill));
    } else if s.zero && zero_ok {
        o.push_str(prefix);
        o.push_str(&"0".repeat(fill));
        o.push_str(digits);
    } else {
        o.push_str(&" ".repeat(fill));
        o.push_str(prefix);
        o.push_str(digits);
    }
    o.into_bytes()
}

fn pad(s: &Spec, v: Vec<u8>) -> Vec<u8> {
    let fill = s.width.saturating_sub(v.len());
    let sp = vec![b' '; fill];
    if s.left {
        [v, sp].concat()
    } else {
        [sp, v].concat()
    }
}

/// `%f` of a finite non-negative `x` (Rust's formatting is correctly
/// rounded, as glibc's).
fn fixed(x: f64, prec: usize, alt: bool) -> String {
    let mut t = format!("{x:.prec$}");
    if alt && prec == 0 {
        t.push('.');
    }
    t
}

/// `%e`: `d.ddde±XX`.
fn exp(x: f64, prec: usize, alt: bool) -> String {
    let t = format!("{x:.prec$e}");
    let (m, e) = t.split_once('e').unwrap_or((&t, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    let mut m = m.to_string();
    if alt && prec == 0 {
        m.push('.');
    }
    format!(
        "{m}e{}{:02}",
        if e < 0 { '-' } else { '+' },
        e.unsigned_abs()
    )
}

/// `%g`: `%e` or `%f` by the exponent, trailing zeros removed unless `#`.
fn general(x: f64, prec: usize, alt: bool) -> String {
    let p = prec.max(1);
    let e_form = format!("{x:.*e}", p - 1);
    let x_exp: i64 = e_form
        .split_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    let mut t = if x_exp < -4 || x_exp >= p as i64 {
        exp(x, p - 1, alt)
    } else {
        fixed(x, (p as i64 - 1 - x_exp) as usize, alt)
    };
    if !alt {
        let (mant, tail) = match t.find('e') {
            Some(k) => (t[..k].to_string(), t[k..].to_string()),
            None => (t.clone(), String::new()),
        };
        let mant = if mant.contains('.') {
            mant.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            mant
        };
        t = mant + &tail;
    }
    t
}

/// `%a`: `0x1.hhhp±d` (subnormals as `0x0.hhhp-1022`); trailing zero
/// digits dropped when no precision is given, otherwise truncated or
/// padded to it (no rounding).
fn hex_float(x: f64, prec: Option<usize>) -> String {
    if x == 0.0 {
        let frac = prec.map_or(String::new(), |p| {
            if p > 0 {
                format!(".{}", "0".repeat(p))
            } else {
                String::new()
            }
        });
        return format!("0x0{frac}p+0");
    }
    let b = x.to_bits();
    let (lead, e) = if (b >> 52) & 0x7ff == 0 {
        (0, -1022)
    } else {
        (1, ((b >> 52) & 0x7ff) as i64 - 1023)
    };
    let mut m = format!("{:013x}", b & ((1u64 << 52) - 1));
    match prec {
        None => m = m.trim_end_matches('0').to_string(),
        Some(p) if p < 13 => m.truncate(p),
        Some(p) => m.push_str(&"0".repeat(p - 13)),
    }
    let frac = if m.is_empty() {
        String::new()
    } else {
        format!(".{m}")
    };
    format!(
        "0x{lead}{frac}p{}{}",
        if e < 0 { '-' } else { '+' },
        e.abs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Arguments from a byte buffer as the device packs them; strings from
    /// a table indexed by pointer value.
    struct Buf(Vec<u8>, usize, Vec<&'static str>);
    impl Args for Buf {
        fn next(&mut self, size: u64) -> Res<u64> {
            let s = size as usize;
            self.1 = self.1.next_multiple_of(s);
            let mut b = [0u8; 8];
            b[..s].copy_from_slice(&self.0[self.1..self.1 + s]);
            self.1 += s;
            Ok(u64::from_le_bytes(b))
        }
        fn string(&mut self, ptr: u64) -> Res<Vec<u8>> {
            Ok(self.2[ptr as usize - 1].as_bytes().to_vec())
        }
    }

    enum A {
        I(i32),
        L(i64),
        D(f64),
    }

    fn pack(args: &[A]) -> Vec<u8> {
        let mut v = Vec::new();
        for a in args {
            let (b, s): (Vec<u8>, usize) = match a {
                A::I(x) => (x.to_le_bytes().to_vec(), 4),
                A::L(x) => (x.to_le_bytes().to_vec(), 8),
                A::D(x) => (x.to_le_bytes().to_vec(), 8),
            };
            v.resize(v.len().next_multiple_of(s), 0xEE);
            v.extend(b);
        }
        v
    }

    fn f(fmt: &str, args: &[A]) -> String {
        let mut b = Buf(pack(args), 0, vec!["hello", "é"]);
        let (o, _) = format(fmt.as_bytes(), &mut b).ok().unwrap();
        String::from_utf8(o).unwrap()
    }

    #[test]
    fn integers() {
        use A::*;
        assert_eq!(f("%d|%i|%u", &[I(-5), I(7), I(-1)]), "-5|7|4294967295");
        assert_eq!(
            f("%5d|%-5d|%05d|%+d|% d", &[I(42), I(42), I(-42), I(3), I(3)]),
            "   42|42   |-0042|+3| 3"
        );
        assert_eq!(
            f("%x %X %#x %o %#o", &[I(255), I(255), I(255), I(8), I(8)]),
            "ff FF 0xff 10 010"
        );
        assert_eq!(
            f(
                "%ld %lld %lu %llx",
                &[L(-1 << 40), L(5), L(-1), L(0xABCDEF0123)]
            ),
            "-1099511627776 5 18446744073709551615 abcdef0123"
        );
        // an int then a long: the long is 8-aligned
        assert_eq!(f("%d %ld", &[I(1), L(2)]), "1 2");
        assert_eq!(
            f("%.3d|%.0d|%hd|%hhu", &[I(7), I(0), I(70000), I(300)]),
            "007||4464|44"
        );
        assert_eq!(f("%*d|%-*d|", &[I(4), I(1), I(3), I(2)]), "   1|2  |");
        assert_eq!(
            f("%c%c 100%%", &[I(b'o' as i32), I(b'k' as i32)]),
            "ok 100%"
        );
    }

    #[test]
    fn strings_and_pointers() {
        use A::*;
        assert_eq!(
            f("[%s] [%8s] [%-6.3s] [%s]", &[L(1), L(1), L(1), L(0)]),
            "[hello] [   hello] [hel   ] [(null)]"
        );
        assert_eq!(f("%p %p", &[L(0x7f00), L(0)]), "0x7f00 (nil)");
        assert_eq!(f("%s", &[L(2)]), "é");
        assert_eq!(f("%q %", &[]), "%q %");
    }

    #[test]
    fn floats_as_glibc() {
        use A::*;
        assert_eq!(
            f(
                "%f %.2f %8.3f %-8.1f|",
                &[D(1.5), D(2.675), D(-3.14149), D(0.25)]
            ),
            "1.500000 2.67   -3.141 0.2     |"
        );
        assert_eq!(
            f("%e %.2E %e", &[D(12345.678), D(-0.000123), D(0.0)]),
            "1.234568e+04 -1.23E-04 0.000000e+00"
        );
        assert_eq!(
            f(
                "%g %g %g %g %G",
                &[D(100000.0), D(1e6), D(0.0001), D(0.00001), D(1.5e-10)]
            ),
            "100000 1e+06 0.0001 1e-05 1.5E-10"
        );
        assert_eq!(
            f(
                "%g %.3g %#g %g",
                &[D(3.0), D(3.14149), D(3.0), D(123456789.0)]
            ),
            "3 3.14 3.00000 1.23457e+08"
        );
        assert_eq!(
            f(
                "%f %F %e %g",
                &[D(f64::INFINITY), D(f64::NEG_INFINITY), D(f64::NAN), D(-0.0)]
            ),
            "inf -INF nan -0"
        );
        assert_eq!(f("%05.1f|%+f", &[D(-2.5), D(1.0)]), "-02.5|+1.000000");
        assert_eq!(
            f("%a %a %A", &[D(1.0), D(0.5), D(-10.0)]),
            "0x1p+0 0x1p-1 -0X1.4P+3"
        );
        // a float argument reaches printf as a double
        assert_eq!(f("%f", &[D(0.1f32 as f64)]), "0.100000");
    }
}
