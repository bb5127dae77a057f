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

/// `ptx` without its comments (`// …` to the end of the line, `/* … */`),
/// keeping every newline so line numbers stay those of the source, and
/// keeping string literals (`.file 1 "//a/b.cu"`) whole. An unterminated
/// `/*` runs to the end. The one stripper of the crate: the simulator's
/// lexer and the driver emulator's header scan use it.
///
/// ```
/// use ptxsmith::sim::parse::strip_comments;
/// let ptx = ".version 8.0 // isa\n/* a\nb */.target sm_80\n.file 1 \"//x.cu\"";
/// assert_eq!(strip_comments(ptx), ".version 8.0 \n\n.target sm_80\n.file 1 \"//x.cu\"");
/// ```
pub fn strip_comments(ptx: &str) -> String {
    let b = ptx.as_bytes();
    let mut out = String::with_capacity(ptx.len());
    // `ptx[start..i]` is kept text not yet copied; every cut is at an ASCII
    // byte, so at a char boundary.
    let (mut start, mut i, mut in_str) = (0, 0, false);
    while i < b.len() {
        let next = b.get(i + 1).copied();
        match b[i] {
            b'"' => {
                in_str = !in_str;
                i += 1;
            }
            b'/' if !in_str && next == Some(b'/') => {
                out.push_str(&ptx[start..i]);
                i = ptx[i..].find('\n').map_or(b.len(), |e| i + e);
                start = i;
            }
            b'/' if !in_str && next == Some(b'*') => {
                out.push_str(&ptx[start..i]);
                let end = ptx[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                out.extend(ptx[i..end].chars().filter(|&c| c == '\n'));
                i = end;
                start = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&ptx[start..]);
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

#[cfg(test)]
mod strip_tests {
    use super::strip_comments;

    #[test]
    fn comments_go_newlines_and_strings_stay() {
        assert_eq!(strip_comments("a // b\nc"), "a \nc");
        assert_eq!(strip_comments("a /* b\n\nc */d"), "a \n\nd");
        assert_eq!(strip_comments("a /*/ b */c"), "a c");
        assert_eq!(strip_comments("a /* open\nend"), "a \n");
        assert_eq!(strip_comments("a // end"), "a ");
        assert_eq!(strip_comments(r#"s "/* // */" t"#), r#"s "/* // */" t"#);
        // Text outside comments keeps its characters (not byte by byte).
        assert_eq!(strip_comments("×é // ü\n/* ö */ä"), "×é \nä");
    }
}
