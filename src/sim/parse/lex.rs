//! Lexing: comment stripping, tokens (with their source line) and numeric
//! literals.

use super::super::error::SimError;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Id(String),
    Num(String),
    Str(String),
    P(char),
}

#[derive(Debug, Clone)]
pub(super) struct T {
    pub(super) t: Tok,
    pub(super) line: u32,
}

pub(super) fn strip_comments(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut in_str = false;
    while i < b.len() {
        let c = b[i];
        if in_str {
            out.push(c as char);
            if c == b'"' {
                in_str = false;
            }
            i += 1;
        } else if c == b'"' {
            in_str = true;
            out.push('"');
            i += 1;
        } else if c == b'/' && i + 1 < b.len() && b[i + 1] == b'/' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && i + 1 < b.len() && b[i + 1] == b'*' {
            i += 2;
            while i < b.len() && !(b[i] == b'*' && i + 1 < b.len() && b[i + 1] == b'/') {
                if b[i] == b'\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 2;
        } else {
            out.push(c as char);
            i += 1;
        }
    }
    out
}

pub(super) fn tokenize(src: &str) -> Result<Vec<T>, SimError> {
    let s = strip_comments(src);
    let b = s.as_bytes();
    let mut v = Vec::new();
    let mut i = 0;
    let mut line = 1u32;
    let is_id =
        |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c == b'%' || c == b'.';
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' {
            let st = i + 1;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += 1;
            }
            v.push(T {
                t: Tok::Str(s[st..i.min(b.len())].to_string()),
                line,
            });
            i += 1;
        } else if c.is_ascii_digit() {
            let st = i;
            let hexish = b.len() > i + 1
                && c == b'0'
                && matches!(b[i + 1], b'x' | b'X' | b'f' | b'F' | b'd' | b'D');
            while i < b.len() {
                let d = b[i];
                let exp_sign =
                    (d == b'+' || d == b'-') && !hexish && matches!(b[i - 1], b'e' | b'E');
                if d.is_ascii_alphanumeric() || d == b'.' || d == b'_' || exp_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            v.push(T {
                t: Tok::Num(s[st..i].to_string()),
                line,
            });
        } else if is_id(c) {
            let st = i;
            while i < b.len() {
                if is_id(b[i]) {
                    i += 1;
                } else if b[i] == b':' && i + 1 < b.len() && b[i + 1] == b':' {
                    i += 2;
                } else {
                    break;
                }
            }
            v.push(T {
                t: Tok::Id(s[st..i].to_string()),
                line,
            });
        } else if "{}[]()<>,;:+-@!|=*".contains(c as char) {
            v.push(T {
                t: Tok::P(c as char),
                line,
            });
            i += 1;
        } else {
            let text = src
                .lines()
                .nth(line as usize - 1)
                .unwrap_or("")
                .trim()
                .to_string();
            return Err(SimError::Parse {
                line,
                text,
                message: format!("unexpected character `{}`", c as char),
            });
        }
    }
    Ok(v)
}

/// An integer or float literal.
#[derive(Debug, Clone, Copy)]
pub(super) enum Lit {
    Int(u64),
    F32(u32),
    F64(u64),
    Dec(f64),
}

pub(super) fn parse_num(s: &str) -> Option<Lit> {
    let l = s.to_ascii_lowercase();
    let l = l.strip_suffix('u').unwrap_or(&l);
    if let Some(h) = l.strip_prefix("0f") {
        if h.len() == 8 {
            return u32::from_str_radix(h, 16).ok().map(Lit::F32);
        }
        return None;
    }
    if let Some(h) = l.strip_prefix("0d") {
        if h.len() == 16 {
            return u64::from_str_radix(h, 16).ok().map(Lit::F64);
        }
        return None;
    }
    if let Some(h) = l.strip_prefix("0x") {
        return u64::from_str_radix(h, 16).ok().map(Lit::Int);
    }
    if let Some(h) = l.strip_prefix("0b") {
        return u64::from_str_radix(h, 2).ok().map(Lit::Int);
    }
    if l.contains('.') || l.contains('e') {
        return l.parse::<f64>().ok().map(Lit::Dec);
    }
    if l.len() > 1 && l.starts_with('0') {
        return u64::from_str_radix(&l[1..], 8).ok().map(Lit::Int);
    }
    l.parse::<u64>().ok().map(Lit::Int)
}
