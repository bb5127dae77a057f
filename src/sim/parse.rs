//! PTX text → [`Program`]: tokenizer, module/entry/declaration parser and
//! the instruction decoder. Anything not understood is refused with the
//! line number and the instruction text.

use std::collections::HashMap;

use super::error::SimError;
use super::fp::{FOp, MiniFmt, Rnd};
use super::ir::*;

/// A parsed PTX module: its entries, ready to launch many times.
#[derive(Debug, Clone)]
pub struct Program {
    pub(crate) entries: Vec<Entry>,
    /// `.target` as a number (e.g. 80 for `sm_80`).
    pub(crate) sm: u32,
    /// The target's suffix: `Some('a')` for an arch-specific target
    /// (`sm_100a`), `Some('f')` for a family target (`sm_100f`).
    pub(crate) suffix: Option<char>,
    pub(crate) version: (u32, u32),
    /// The `.const` bank (module-scope `.const` variables with initialisers).
    pub(crate) consts: Vec<u8>,
}

impl Program {
    /// Parse and decode PTX text.
    pub fn parse(ptx: &str) -> Result<Program, SimError> {
        Parser::new(ptx).module()
    }

    /// Names of the module's entries.
    pub fn entry_names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// The `.target` SM number (e.g. 89; 100 for `sm_100a`).
    pub fn target_sm(&self) -> u32 {
        self.sm
    }

    /// The `.target` suffix: `Some('a')` for an arch-specific target such
    /// as `sm_100a`, `Some('f')` for a family target, `None` for a plain one.
    pub fn target_suffix(&self) -> Option<char> {
        self.suffix
    }

    /// Whether the module's target runs on a device of compute capability
    /// `cc` (e.g. 100 for 10.0): a plain target on every device at least as
    /// new, an `a` target only on exactly its architecture, an `f` target on
    /// its family (same major version) from its own on (PTX ISA §11.1.2).
    pub fn runs_on(&self, cc: u32) -> bool {
        match self.suffix {
            Some('a') => self.sm == cc,
            Some(_) => self.sm / 10 == cc / 10 && self.sm <= cc,
            None => self.sm <= cc,
        }
    }

    /// The `.version` of the module.
    pub fn version(&self) -> (u32, u32) {
        self.version
    }

    /// Number of decoded instructions of `entry`.
    pub fn instruction_count(&self, entry: &str) -> Option<usize> {
        self.entry(entry).map(|e| e.insts.len())
    }

    /// The decoded entry `name` (parameters, static shared memory,
    /// `.maxntid`/`.reqntid`, local frame size).
    pub fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }
}

/// The parameter list of `.entry name` in `ptx`, read from the entry's
/// header alone (the body is not decoded, so this works for PTX the
/// simulator cannot execute). The GPU runtime compares it with a module's
/// declared parameters before its first launch.
///
/// # Errors
/// [`SimError::Parse`] when there is no such entry or its header does not
/// parse.
pub fn entry_signature(ptx: &str, name: &str) -> Result<Vec<ParamInfo>, SimError> {
    let mut p = Parser::new(ptx);
    if let Some(e) = p.tok_err.take() {
        return Err(e);
    }
    let at = p
        .toks
        .windows(2)
        .position(|w| w[0].t == Tok::Id(".entry".into()) && w[1].t == Tok::Id(name.into()));
    let Some(at) = at else {
        return Err(p.perr(1, format!("no `.entry {name}` in the module")));
    };
    p.pos = at + 2;
    Ok(p.param_list()?.0)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Id(String),
    Num(String),
    Str(String),
    P(char),
}

#[derive(Debug, Clone)]
struct T {
    t: Tok,
    line: u32,
}

fn strip_comments(s: &str) -> String {
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

fn tokenize(src: &str) -> Result<Vec<T>, SimError> {
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
enum Lit {
    Int(u64),
    F32(u32),
    F64(u64),
    Dec(f64),
}

fn parse_num(s: &str) -> Option<Lit> {
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

/// A parsed operand (before resolution).
#[derive(Debug, Clone)]
enum Opnd {
    Blank,
    Name(String),
    Lit(Lit, bool),
    Not(Box<Opnd>),
    Vec(Vec<Opnd>),
    Pair(Box<Opnd>, Box<Opnd>),
    Mem(Option<String>, i64, Option<u64>),
}

/// A variable in a state space.
#[derive(Debug, Clone, Copy)]
struct Var {
    sp: Space,
    offset: u64,
}

/// Operand class for immediate conversion.
#[derive(Clone, Copy, PartialEq)]
enum Cls {
    Int,
    F32,
    F64,
}

struct Parser<'a> {
    src: &'a str,
    toks: Vec<T>,
    pos: usize,
    tok_err: Option<SimError>,
    sm: u32,
    suffix: Option<char>,
    version: (u32, u32),
    mod_shared: Vec<(String, u64, u64)>, // name, size, align
    /// Names of the `.extern .shared` arrays (they alias) and their alignment.
    dyn_shared: Option<(Vec<String>, u64)>,
    const_vars: HashMap<String, u64>,
    consts: Vec<u8>,
}

fn line_text(src: &str, line: u32) -> String {
    src.lines()
        .nth((line as usize).saturating_sub(1))
        .unwrap_or("")
        .trim()
        .to_string()
}

struct Stmt {
    line: u32,
    toks: Vec<Tok>,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Self {
        let (toks, tok_err) = match tokenize(src) {
            Ok(t) => (t, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        Parser {
            src,
            toks,
            pos: 0,
            tok_err,
            sm: 0,
            suffix: None,
            version: (0, 0),
            mod_shared: Vec::new(),
            dyn_shared: None,
            const_vars: HashMap::new(),
            consts: Vec::new(),
        }
    }

    fn line(&self) -> u32 {
        self.toks
            .get(self.pos)
            .or(self.toks.last())
            .map(|t| t.line)
            .unwrap_or(1)
    }

    fn perr(&self, line: u32, msg: impl Into<String>) -> SimError {
        SimError::Parse {
            line,
            text: line_text(self.src, line),
            message: msg.into(),
        }
    }

    fn unsup(&self, line: u32, reason: impl Into<String>) -> SimError {
        SimError::Unsupported {
            line,
            instr: line_text(self.src, line),
            reason: reason.into(),
        }
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.t)
    }

    fn next(&mut self) -> Result<Tok, SimError> {
        let l = self.line();
        let t = self
            .toks
            .get(self.pos)
            .map(|t| t.t.clone())
            .ok_or_else(|| self.perr(l, "unexpected end of input"))?;
        self.pos += 1;
        Ok(t)
    }

    fn expect_num(&mut self) -> Result<u64, SimError> {
        let l = self.line();
        match self.next()? {
            Tok::Num(n) => match parse_num(&n) {
                Some(Lit::Int(v)) => Ok(v),
                _ => Err(self.perr(l, format!("expected an integer, found `{n}`"))),
            },
            t => Err(self.perr(l, format!("expected an integer, found {t:?}"))),
        }
    }

    /// Tokens up to (excluding) the next `;` at the top level, consuming it.
    fn until_semi(&mut self) -> Result<Vec<Tok>, SimError> {
        let mut v = Vec::new();
        loop {
            let t = self.next()?;
            if t == Tok::P(';') {
                return Ok(v);
            }
            v.push(t);
        }
    }

    fn module(mut self) -> Result<Program, SimError> {
        if let Some(e) = self.tok_err.take() {
            return Err(e);
        }
        let mut entries = Vec::new();
        while self.pos < self.toks.len() {
            let line = self.line();
            let t = self.next()?;
            match t {
                Tok::Id(ref s) if s == ".version" => {
                    let l = self.line();
                    match self.next()? {
                        Tok::Num(n) => {
                            let (a, b) = n
                                .split_once('.')
                                .ok_or_else(|| self.perr(l, "bad .version"))?;
                            self.version = (a.parse().unwrap_or(0), b.parse().unwrap_or(0));
                        }
                        _ => return Err(self.perr(l, "bad .version")),
                    }
                }
                Tok::Id(ref s) if s == ".target" => loop {
                    let l = self.line();
                    match self.next()? {
                        Tok::Id(t) => {
                            if let Some(r) =
                                t.strip_prefix("sm_").or_else(|| t.strip_prefix("compute_"))
                            {
                                let d: String =
                                    r.chars().take_while(|c| c.is_ascii_digit()).collect();
                                self.sm = d.parse().map_err(|_| self.perr(l, "bad .target"))?;
                                self.suffix = match &r[d.len()..] {
                                    "" => None,
                                    "a" => Some('a'),
                                    "f" => Some('f'),
                                    _ => return Err(self.perr(l, "bad .target")),
                                };
                            }
                        }
                        _ => return Err(self.perr(l, "bad .target")),
                    }
                    if self.peek() == Some(&Tok::P(',')) {
                        self.pos += 1;
                    } else {
                        break;
                    }
                },
                Tok::Id(ref s) if s == ".address_size" => {
                    let n = self.expect_num()?;
                    if n != 64 {
                        return Err(self.unsup(line, "only .address_size 64 is supported"));
                    }
                }
                Tok::Id(ref s) if s == ".visible" || s == ".weak" || s == ".extern" => {
                    // qualifiers: look at what follows
                    match self.peek() {
                        Some(Tok::Id(n)) if n == ".entry" => {}
                        Some(Tok::Id(n)) if n == ".shared" && s == ".extern" => {
                            self.pos += 1;
                            let toks = self.until_semi()?;
                            self.decl_dyn_shared(line, &toks)?;
                        }
                        Some(Tok::Id(n)) if n == ".func" => {
                            return Err(self.unsup(line, ".func is not supported"));
                        }
                        _ => {}
                    }
                }
                Tok::Id(ref s) if s == ".entry" => {
                    let e = self.entry(line)?;
                    entries.push(e);
                }
                Tok::Id(ref s) if s == ".func" => {
                    return Err(self.unsup(line, ".func is not supported"));
                }
                Tok::Id(ref s) if s == ".shared" => {
                    let toks = self.until_semi()?;
                    let (name, size, align, _) = self.var_decl(line, &toks)?;
                    self.mod_shared.push((name, size, align));
                }
                Tok::Id(ref s) if s == ".const" => {
                    let toks = self.until_semi()?;
                    self.const_decl(line, &toks)?;
                }
                Tok::Id(ref s) if s == ".file" || s == ".pragma" || s == ".section" => {
                    self.until_semi().ok();
                }
                Tok::Id(ref s) if s == ".global" => {
                    return Err(
                        self.unsup(line, "module-scope .global variables are not supported")
                    );
                }
                _ => return Err(self.perr(line, format!("unexpected {t:?} at module scope"))),
            }
        }
        if entries.is_empty() {
            return Err(self.perr(1, "module has no .entry"));
        }
        Ok(Program {
            entries,
            sm: self.sm,
            suffix: self.suffix,
            version: self.version,
            consts: self.consts,
        })
    }

    fn decl_dyn_shared(&mut self, line: u32, toks: &[Tok]) -> Result<(), SimError> {
        let mut align = 1u64;
        let mut name = None;
        let mut i = 0;
        while i < toks.len() {
            match &toks[i] {
                Tok::Id(s) if s == ".align" => {
                    if let Some(Tok::Num(n)) = toks.get(i + 1)
                        && let Some(Lit::Int(v)) = parse_num(n)
                    {
                        align = v;
                    }
                    i += 1;
                }
                Tok::Id(s) if s.starts_with('.') => {
                    align = align.max(type_bytes(s).unwrap_or(1) as u64);
                }
                Tok::Id(s) => name = Some(s.clone()),
                _ => {}
            }
            i += 1;
        }
        let name = name.ok_or_else(|| self.perr(line, "missing name"))?;
        let mut names = vec![name];
        if let Some((old, a)) = self.dyn_shared.take() {
            align = align.max(a);
            names.extend(old);
        }
        self.dyn_shared = Some((names, align));
        Ok(())
    }

    /// `[.align N] .type name[dims]... [= init]` → (name, bytes, align, init tokens)
    fn var_decl(&self, line: u32, toks: &[Tok]) -> Result<(String, u64, u64, Vec<Tok>), SimError> {
        let mut align = 0u64;
        let mut elem = 0u32;
        let mut name = None;
        let mut count = 1u64;
        let mut i = 0;
        let mut init = Vec::new();
        while i < toks.len() {
            match &toks[i] {
                Tok::Id(s) if s == ".align" => {
                    match toks.get(i + 1) {
                        Some(Tok::Num(n)) => match parse_num(n) {
                            Some(Lit::Int(v)) if v.is_power_of_two() => align = v,
                            _ => return Err(self.perr(line, ".align must be a power of two")),
                        },
                        _ => return Err(self.perr(line, "bad .align")),
                    }
                    i += 1;
                }
                Tok::Id(s) if s.starts_with(".v") && (s == ".v2" || s == ".v4") => {
                    count = count.saturating_mul(s[2..].parse::<u64>().unwrap_or(1));
                }
                Tok::Id(s) if s.starts_with('.') => {
                    elem = type_bytes(s).ok_or_else(|| self.unsup(line, format!("type `{s}`")))?;
                }
                Tok::Id(s) => {
                    if name.is_some() {
                        return Err(self.perr(line, "unexpected identifier in declaration"));
                    }
                    name = Some(s.clone());
                }
                Tok::P('[') => {
                    match toks.get(i + 1) {
                        Some(Tok::Num(n)) => match parse_num(n) {
                            Some(Lit::Int(v)) => count = count.saturating_mul(v),
                            _ => return Err(self.perr(line, "bad array size")),
                        },
                        Some(Tok::P(']')) => {
                            return Err(self.unsup(line, "unsized array outside .extern .shared"));
                        }
                        _ => return Err(self.perr(line, "bad array size")),
                    }
                    i += 2;
                }
                Tok::P('=') => {
                    init = toks[i + 1..].to_vec();
                    break;
                }
                t => return Err(self.perr(line, format!("unexpected {t:?} in declaration"))),
            }
            i += 1;
        }
        if elem == 0 {
            return Err(self.perr(line, "declaration without a type"));
        }
        let name = name.ok_or_else(|| self.perr(line, "declaration without a name"))?;
        let align = if align == 0 { elem as u64 } else { align };
        let bytes = count.saturating_mul(elem as u64);
        if bytes > 1 << 30 {
            return Err(self.unsup(line, format!("declaration of {bytes} bytes")));
        }
        Ok((name, bytes, align, init))
    }

    fn const_decl(&mut self, line: u32, toks: &[Tok]) -> Result<(), SimError> {
        let elem = toks
            .iter()
            .filter_map(|t| match t {
                Tok::Id(s) if s.starts_with('.') && s != ".align" => type_bytes(s),
                _ => None,
            })
            .next()
            .unwrap_or(1);
        let float = toks
            .iter()
            .any(|t| matches!(t, Tok::Id(s) if s == ".f32" || s == ".f64"));
        let (name, size, align, init) = self.var_decl(line, toks)?;
        let off = (self.consts.len() as u64).div_ceil(align) * align;
        if off + size > 64 * 1024 {
            return Err(self.unsup(line, ".const data beyond the 64 KiB constant bank"));
        }
        self.consts.resize((off + size) as usize, 0);
        let mut k = off as usize;
        let mut neg = false;
        for t in init {
            match t {
                Tok::P('-') => neg = true,
                Tok::Num(n) => {
                    let lit = parse_num(&n).ok_or_else(|| self.perr(line, "bad initializer"))?;
                    let v = imm_bits(
                        lit,
                        neg,
                        if float {
                            if elem == 4 { Cls::F32 } else { Cls::F64 }
                        } else {
                            Cls::Int
                        },
                    );
                    neg = false;
                    if k + elem as usize > self.consts.len() {
                        return Err(self.perr(line, "too many initializers"));
                    }
                    self.consts[k..k + elem as usize]
                        .copy_from_slice(&v.to_le_bytes()[..elem as usize]);
                    k += elem as usize;
                }
                Tok::P('{') | Tok::P('}') | Tok::P(',') => {}
                t => return Err(self.unsup(line, format!("initializer {t:?}"))),
            }
        }
        self.const_vars.insert(name, off);
        Ok(())
    }

    fn entry(&mut self, _line: u32) -> Result<Entry, SimError> {
        let l = self.line();
        let name = match self.next()? {
            Tok::Id(n) => n,
            _ => return Err(self.perr(l, "expected entry name")),
        };
        let (params, param_bytes) = self.param_list()?;
        self.entry_rest(name, params, param_bytes)
    }

    /// The `( .param … )` list after an entry name, if any: the parameters
    /// with their offsets, and the parameter space's size.
    fn param_list(&mut self) -> Result<(Vec<ParamInfo>, u64), SimError> {
        let mut params = Vec::new();
        let mut param_bytes = 0u64;
        if self.peek() == Some(&Tok::P('(')) {
            self.pos += 1;
            loop {
                let l = self.line();
                if self.peek() == Some(&Tok::P(')')) {
                    self.pos += 1;
                    break;
                }
                let mut toks = Vec::new();
                loop {
                    match self.next()? {
                        Tok::P(',') => break,
                        Tok::P(')') => {
                            self.pos -= 1;
                            break;
                        }
                        t => toks.push(t),
                    }
                }
                // drop `.param`, `.ptr`, state-space attributes
                let mut elem = 0u32;
                let mut align = 0u64;
                let mut pname = None;
                let mut count = 1u64;
                let mut i = 0;
                while i < toks.len() {
                    match &toks[i] {
                        Tok::Id(s) if s == ".align" => {
                            if let Some(Tok::Num(n)) = toks.get(i + 1)
                                && let Some(Lit::Int(v)) = parse_num(n)
                                && (elem == 0
                                    || pname.is_some()
                                    || toks.iter().all(|t| t != &Tok::Id(".ptr".into())))
                            {
                                align = v;
                            }
                            i += 1;
                        }
                        Tok::Id(s)
                            if s == ".param"
                                || s == ".ptr"
                                || s == ".global"
                                || s == ".shared"
                                || s == ".const"
                                || s == ".local" => {}
                        Tok::Id(s) if s.starts_with('.') => {
                            elem = type_bytes(s)
                                .ok_or_else(|| self.unsup(l, format!("parameter type `{s}`")))?;
                        }
                        Tok::Id(s) => pname = Some(s.clone()),
                        Tok::P('[') => {
                            if let Some(Tok::Num(n)) = toks.get(i + 1)
                                && let Some(Lit::Int(v)) = parse_num(n)
                            {
                                count = v;
                            }
                            i += 2;
                        }
                        t => return Err(self.perr(l, format!("unexpected {t:?} in parameter"))),
                    }
                    i += 1;
                }
                // `.ptr .align N` describes the pointee; the param itself is aligned to its size
                let has_ptr = toks.iter().any(|t| t == &Tok::Id(".ptr".into()));
                let a = if has_ptr || align == 0 {
                    elem as u64
                } else {
                    align
                };
                if elem == 0 {
                    return Err(self.perr(l, "parameter without type"));
                }
                let pname = pname.ok_or_else(|| self.perr(l, "parameter without name"))?;
                let off = param_bytes.div_ceil(a.max(1)) * a.max(1);
                let size = (elem as u64).saturating_mul(count);
                if size > 32764 {
                    return Err(
                        self.perr(l, "parameter larger than the 32764-byte parameter space")
                    );
                }
                params.push(ParamInfo {
                    name: pname,
                    offset: off as u32,
                    size: size as u32,
                });
                param_bytes = off + size;
            }
        }
        Ok((params, param_bytes))
    }

    fn entry_rest(
        &mut self,
        name: String,
        params: Vec<ParamInfo>,
        param_bytes: u64,
    ) -> Result<Entry, SimError> {
        // performance directives
        let mut maxntid = None;
        let mut reqntid = None;
        loop {
            let l = self.line();
            match self.peek().cloned() {
                Some(Tok::P('{')) => {
                    self.pos += 1;
                    break;
                }
                Some(Tok::Id(d)) if d == ".maxntid" || d == ".reqntid" => {
                    self.pos += 1;
                    let mut dims = vec![self.expect_num()? as u32];
                    while self.peek() == Some(&Tok::P(',')) {
                        self.pos += 1;
                        dims.push(self.expect_num()? as u32);
                    }
                    dims.resize(3, 1);
                    let t = (dims[0], dims[1], dims[2]);
                    if d == ".maxntid" {
                        maxntid = Some(t)
                    } else {
                        reqntid = Some(t)
                    }
                }
                Some(Tok::Id(d))
                    if d == ".minnctapersm" || d == ".maxnreg" || d == ".maxnctapersm" =>
                {
                    self.pos += 1;
                    self.expect_num()?;
                }
                Some(Tok::Id(d)) if d == ".noreturn" => self.pos += 1,
                t => return Err(self.unsup(l, format!("entry directive {t:?}"))),
            }
        }
        // body statements
        let mut stmts: Vec<Stmt> = Vec::new();
        let mut depth = 1;
        while depth > 0 {
            let line = self.line();
            match self.peek().cloned() {
                None => return Err(self.perr(line, "unterminated entry body")),
                Some(Tok::P('{')) => {
                    self.pos += 1;
                    depth += 1;
                }
                Some(Tok::P('}')) => {
                    self.pos += 1;
                    depth -= 1;
                }
                Some(Tok::Id(lbl))
                    if self.toks.get(self.pos + 1).map(|t| &t.t) == Some(&Tok::P(':')) =>
                {
                    self.pos += 2;
                    stmts.push(Stmt {
                        line,
                        toks: vec![Tok::Id(lbl), Tok::P(':')],
                    });
                }
                Some(_) => {
                    let toks = self.until_semi()?;
                    stmts.push(Stmt { line, toks });
                }
            }
        }
        self.body(name, params, param_bytes as u32, maxntid, reqntid, stmts)
    }

    #[allow(clippy::too_many_arguments)]
    fn body(
        &mut self,
        name: String,
        params: Vec<ParamInfo>,
        param_bytes: u32,
        maxntid: Option<(u32, u32, u32)>,
        reqntid: Option<(u32, u32, u32)>,
        stmts: Vec<Stmt>,
    ) -> Result<Entry, SimError> {
        let mut regs: HashMap<String, u32> = HashMap::new();
        let mut reg_names: Vec<String> = (0..sreg::COUNT).map(|i| format!("%special{i}")).collect();
        let mut vars: HashMap<String, Var> = HashMap::new();
        let mut shared_size = 0u64;
        for (n, size, align) in self.mod_shared.clone() {
            let off = shared_size.div_ceil(align) * align;
            vars.insert(
                n,
                Var {
                    sp: Space::Shared,
                    offset: off,
                },
            );
            shared_size = off + size;
        }
        let mut local_size = 0u64;
        for p in &params {
            vars.insert(
                p.name.clone(),
                Var {
                    sp: Space::Param,
                    offset: p.offset as u64,
                },
            );
        }
        for (n, off) in &self.const_vars {
            vars.insert(
                n.clone(),
                Var {
                    sp: Space::Const,
                    offset: *off,
                },
            );
        }
        let mut labels: HashMap<String, u32> = HashMap::new();
        let mut ninst = 0u32;
        let mut instrs: Vec<&Stmt> = Vec::new();
        // pass 1: declarations and labels
        for st in &stmts {
            let first = match st.toks.first() {
                Some(Tok::Id(s)) => s.as_str(),
                Some(Tok::P('@')) => {
                    instrs.push(st);
                    ninst += 1;
                    continue;
                }
                _ => return Err(self.perr(st.line, "unexpected token")),
            };
            if st.toks.get(1) == Some(&Tok::P(':')) && st.toks.len() == 2 {
                labels.insert(first.to_string(), ninst);
                continue;
            }
            match first {
                ".reg" => {
                    let mut i = 1;
                    while i < st.toks.len() {
                        match &st.toks[i] {
                            Tok::Id(s) if s.starts_with('.') && !s.starts_with(".%") => {
                                if s == ".align" {
                                    i += 1;
                                } else if type_bytes(s).is_none() && s != ".pred" {
                                    return Err(self.unsup(st.line, format!("register type `{s}`")));
                                }
                            }
                            Tok::Id(s) => {
                                if st.toks.get(i + 1) == Some(&Tok::P('<')) {
                                    let n = match st.toks.get(i + 2) {
                                        Some(Tok::Num(n)) => match parse_num(n) {
                                            Some(Lit::Int(v)) => v,
                                            _ => {
                                                return Err(
                                                    self.perr(st.line, "bad register count")
                                                );
                                            }
                                        },
                                        _ => return Err(self.perr(st.line, "bad register count")),
                                    };
                                    if n + reg_names.len() as u64 > 1 << 16 {
                                        return Err(
                                            self.unsup(st.line, "more than 65536 registers")
                                        );
                                    }
                                    for k in 0..n {
                                        let rn = format!("{s}{k}");
                                        regs.entry(rn.clone()).or_insert_with(|| {
                                            reg_names.push(rn);
                                            reg_names.len() as u32 - 1
                                        });
                                    }
                                    i += 3;
                                } else {
                                    regs.entry(s.clone()).or_insert_with(|| {
                                        reg_names.push(s.clone());
                                        reg_names.len() as u32 - 1
                                    });
                                }
                            }
                            Tok::P(',') => {}
                            t => {
                                return Err(self.perr(st.line, format!("unexpected {t:?} in .reg")));
                            }
                        }
                        i += 1;
                    }
                }
                ".shared" | ".local" => {
                    let (n, size, align, init) = self.var_decl(st.line, &st.toks[1..])?;
                    if !init.is_empty() {
                        return Err(self.unsup(st.line, "initialised .shared/.local"));
                    }
                    if first == ".shared" {
                        let off = shared_size.div_ceil(align) * align;
                        vars.insert(
                            n,
                            Var {
                                sp: Space::Shared,
                                offset: off,
                            },
                        );
                        shared_size = off + size;
                    } else {
                        let off = local_size.div_ceil(align) * align;
                        vars.insert(
                            n,
                            Var {
                                sp: Space::Local,
                                offset: off,
                            },
                        );
                        local_size = off + size;
                        if local_size > 512 * 1024 {
                            return Err(
                                self.unsup(st.line, ".local frame beyond 512 KiB per thread")
                            );
                        }
                    }
                }
                ".pragma" | ".loc" | ".file" => {}
                ".const" | ".global" | ".param" => {
                    return Err(self.unsup(st.line, format!("{first} declaration inside an entry")));
                }
                s if s.starts_with('.') => {
                    return Err(self.unsup(st.line, format!("directive `{s}`")));
                }
                _ => {
                    instrs.push(st);
                    ninst += 1;
                }
            }
        }
        let (dyn_align, dyn_names) = match &self.dyn_shared {
            Some((n, a)) => (*a as u32, n.clone()),
            None => (1, Vec::new()),
        };
        let mut entry = Entry {
            name,
            params,
            param_bytes,
            insts: Vec::with_capacity(instrs.len()),
            lines: Vec::new(),
            texts: Vec::new(),
            opcodes: Vec::new(),
            nregs: reg_names.len() as u32,
            reg_names,
            static_shared: shared_size as u32,
            dyn_shared_align: dyn_align,
            local_bytes: local_size as u32,
            maxntid,
            reqntid,
            n_brauni: 0,
        };
        for n in dyn_names {
            vars.insert(
                n,
                Var {
                    sp: Space::Shared,
                    offset: entry.dyn_shared_offset() as u64,
                },
            );
        }
        if shared_size > crate::target::STATIC_SMEM_LIMIT as u64 {
            return Err(SimError::Unsupported {
                line: 1,
                instr: entry.name.clone(),
                reason: format!(
                    "{shared_size} bytes of static shared memory exceed the 48 KiB limit"
                ),
            });
        }
        let mut opcode_ids: HashMap<String, u16> = HashMap::new();
        let dec = Decoder {
            regs: &regs,
            vars: &vars,
            labels: &labels,
            sm: self.sm,
            suffix: self.suffix,
        };
        for st in instrs {
            let text = line_text(self.src, st.line);
            let (inst, opname) = dec.decode(st, &mut entry.n_brauni).map_err(|e| match e {
                DErr::Parse(m) => SimError::Parse {
                    line: st.line,
                    text: text.clone(),
                    message: m,
                },
                DErr::Unsup(m) => SimError::Unsupported {
                    line: st.line,
                    instr: text.clone(),
                    reason: m,
                },
            })?;
            let id = *opcode_ids.entry(opname.clone()).or_insert_with(|| {
                entry.opcodes.push(opname);
                entry.opcodes.len() as u16 - 1
            });
            let mut inst = inst;
            inst.opcode = id;
            entry.insts.push(inst);
            entry.lines.push(st.line);
            entry.texts.push(text);
        }
        Ok(entry)
    }
}

fn type_bytes(s: &str) -> Option<u32> {
    Some(match s {
        ".b8" | ".u8" | ".s8" | ".e4m3x2" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" => 8,
        ".pred" => 1,
        _ => return None,
    })
}

fn imm_bits(l: Lit, neg: bool, cls: Cls) -> u64 {
    match cls {
        Cls::Int => {
            let v = match l {
                Lit::Int(v) => v,
                Lit::F32(b) => b as u64,
                Lit::F64(b) => b,
                Lit::Dec(d) => d as i64 as u64,
            };
            if neg { v.wrapping_neg() } else { v }
        }
        Cls::F32 => {
            let x: f32 = match l {
                Lit::Int(v) => v as f32,
                Lit::F32(b) => f32::from_bits(b),
                Lit::F64(b) => f64::from_bits(b) as f32,
                Lit::Dec(d) => d as f32,
            };
            (if neg { -x } else { x }).to_bits() as u64
        }
        Cls::F64 => {
            let x: f64 = match l {
                Lit::Int(v) => v as f64,
                Lit::F32(b) => f32::from_bits(b) as f64,
                Lit::F64(b) => f64::from_bits(b),
                Lit::Dec(d) => d,
            };
            (if neg { -x } else { x }).to_bits()
        }
    }
}

enum DErr {
    Parse(String),
    Unsup(String),
}

fn unsup<T>(m: impl Into<String>) -> Result<T, DErr> {
    Err(DErr::Unsup(m.into()))
}
fn perr<T>(m: impl Into<String>) -> Result<T, DErr> {
    Err(DErr::Parse(m.into()))
}

struct Decoder<'a> {
    regs: &'a HashMap<String, u32>,
    vars: &'a HashMap<String, Var>,
    labels: &'a HashMap<String, u32>,
    sm: u32,
    suffix: Option<char>,
}

/// Parse a list of operand tokens (split at top-level commas).
fn operands(toks: &[Tok]) -> Result<Vec<Opnd>, DErr> {
    let mut out = Vec::new();
    let mut cur: Vec<Tok> = Vec::new();
    let mut depth = 0;
    for t in toks {
        match t {
            Tok::P('{') | Tok::P('[') => depth += 1,
            Tok::P('}') | Tok::P(']') => depth -= 1,
            _ => {}
        }
        if *t == Tok::P(',') && depth == 0 {
            out.push(operand(&cur)?);
            cur.clear();
        } else {
            cur.push(t.clone());
        }
    }
    if !cur.is_empty() {
        out.push(operand(&cur)?);
    }
    Ok(out)
}

fn operand(t: &[Tok]) -> Result<Opnd, DErr> {
    match t {
        [] => perr("empty operand"),
        [Tok::Id(s)] if s == "_" => Ok(Opnd::Blank),
        [Tok::Id(s)] => Ok(Opnd::Name(s.clone())),
        [Tok::Num(n)] => Ok(Opnd::Lit(
            parse_num(n).ok_or(DErr::Parse(format!("bad literal `{n}`")))?,
            false,
        )),
        [Tok::P('-'), Tok::Num(n)] => Ok(Opnd::Lit(
            parse_num(n).ok_or(DErr::Parse(format!("bad literal `{n}`")))?,
            true,
        )),
        [Tok::P('!'), rest @ ..] => Ok(Opnd::Not(Box::new(operand(rest)?))),
        [a, Tok::P('|'), b] => Ok(Opnd::Pair(
            Box::new(operand(std::slice::from_ref(a))?),
            Box::new(operand(std::slice::from_ref(b))?),
        )),
        [Tok::P('{'), inner @ .., Tok::P('}')] => {
            let v = operands(inner)?;
            Ok(Opnd::Vec(v))
        }
        [Tok::P('['), inner @ .., Tok::P(']')] => {
            let (base, rest) = match inner {
                [Tok::Id(s), rest @ ..] => (Some(s.clone()), rest),
                [Tok::Num(n), rest @ ..] => match parse_num(n) {
                    Some(Lit::Int(v)) => return mem_rest(None, rest, Some(v)),
                    _ => return perr("bad address"),
                },
                _ => return perr("bad address operand"),
            };
            mem_rest(base, rest, None)
        }
        _ => perr("unrecognised operand"),
    }
}

fn mem_rest(base: Option<String>, rest: &[Tok], abs: Option<u64>) -> Result<Opnd, DErr> {
    let off: i64 = match rest {
        [] => 0,
        [Tok::P('+'), Tok::Num(n)] => lit_i64(n)?,
        [Tok::P('+'), Tok::P('-'), Tok::Num(n)] | [Tok::P('-'), Tok::Num(n)] => -lit_i64(n)?,
        _ => {
            return unsup(
                "address form (only [reg], [reg+imm], [var], [var+imm], [imm] are supported)",
            );
        }
    };
    Ok(Opnd::Mem(base, off, abs))
}

fn lit_i64(n: &str) -> Result<i64, DErr> {
    match parse_num(n) {
        Some(Lit::Int(v)) => Ok(v as i64),
        _ => perr("bad offset"),
    }
}

fn int_ty(t: &str) -> Option<(u8, bool)> {
    Some(match t {
        "u8" | "b8" => (8, false),
        "s8" => (8, true),
        "u16" | "b16" => (16, false),
        "s16" => (16, true),
        "u32" | "b32" => (32, false),
        "s32" => (32, true),
        "u64" | "b64" => (64, false),
        "s64" => (64, true),
        _ => return None,
    })
}

fn cvt_ty(t: &str) -> Option<CvtTy> {
    Some(match t {
        "u8" => CvtTy::U8,
        "u16" => CvtTy::U16,
        "u32" => CvtTy::U32,
        "u64" => CvtTy::U64,
        "s8" => CvtTy::S8,
        "s16" => CvtTy::S16,
        "s32" => CvtTy::S32,
        "s64" => CvtTy::S64,
        "f16" => CvtTy::F16,
        "bf16" => CvtTy::Bf16,
        "f32" => CvtTy::F32,
        "f64" => CvtTy::F64,
        _ => return None,
    })
}

fn rnd_of(m: &str) -> Option<Rnd> {
    Some(match m {
        "rn" => Rnd::Rn,
        "rz" => Rnd::Rz,
        "rm" => Rnd::Rm,
        "rp" => Rnd::Rp,
        _ => return None,
    })
}

fn irnd_of(m: &str) -> Option<Rnd> {
    Some(match m {
        "rni" => Rnd::Rn,
        "rzi" => Rnd::Rz,
        "rmi" => Rnd::Rm,
        "rpi" => Rnd::Rp,
        _ => return None,
    })
}

fn blank_inst(op: Op) -> Inst {
    Inst {
        op,
        d: [NO_REG; 4],
        s: [Src::None; 5],
        off: 0,
        guard: NO_REG,
        guard_neg: false,
        neg: false,
        opcode: 0,
    }
}

impl Decoder<'_> {
    /// FP8 cvt exists from sm_89; the block-scale cvts (FP4 e2m1x2, UE8M0)
    /// only on arch-specific or family targets from sm_100 (`sm_100a`,
    /// `sm_120a`, `sm_100f`, …): ptxas refuses them on plain `sm_100` and
    /// on `sm_90a`.
    fn check_mini_target(&self, fmt: MiniFmt) -> Result<(), DErr> {
        if fmt != MiniFmt::E2M1 && self.sm < 89 {
            return unsup(format!(
                "FP8 cvt needs sm_89+, module targets sm_{}",
                self.sm
            ));
        }
        if fmt == MiniFmt::E2M1 {
            return self.check_block_scale_target("FP4 (e2m1x2)");
        }
        Ok(())
    }

    fn check_block_scale_target(&self, what: &str) -> Result<(), DErr> {
        if self.sm < 100 || self.suffix.is_none() {
            return unsup(format!(
                "{what} cvt needs an sm_100a/sm_120a-class target, module targets sm_{}{}",
                self.sm,
                self.suffix.map_or(String::new(), String::from)
            ));
        }
        Ok(())
    }

    fn reg(&self, o: &Opnd) -> Result<u32, DErr> {
        match o {
            Opnd::Name(n) => match self.regs.get(n) {
                Some(r) => Ok(*r),
                None if sreg::lookup(n).is_some() => {
                    perr(format!("special register `{n}` cannot be written"))
                }
                None => perr(format!("undeclared register `{n}`")),
            },
            Opnd::Blank => Ok(NO_REG),
            _ => perr("expected a register"),
        }
    }

    fn src(&self, o: &Opnd, cls: Cls) -> Result<Src, DErr> {
        match o {
            Opnd::Name(n) => {
                if let Some(r) = self.regs.get(n) {
                    return Ok(Src::Reg(*r));
                }
                if let Some(r) = sreg::lookup(n) {
                    return Ok(Src::Reg(r));
                }
                match n.as_str() {
                    "%clock" => return Ok(Src::Clock32),
                    "%clock64" => return Ok(Src::Clock64),
                    "WARP_SZ" => return Ok(Src::Imm(32)),
                    _ => {}
                }
                if let Some(v) = self.vars.get(n) {
                    return Ok(Src::Imm(v.offset));
                }
                if n.starts_with('%') {
                    return unsup(format!(
                        "register `{n}` (undeclared or unsupported special register)"
                    ));
                }
                perr(format!("unknown name `{n}`"))
            }
            Opnd::Lit(l, neg) => Ok(Src::Imm(imm_bits(*l, *neg, cls))),
            _ => perr("expected a register or immediate"),
        }
    }

    fn pred_src(&self, o: &Opnd) -> Result<(Src, bool), DErr> {
        match o {
            Opnd::Not(inner) => Ok((self.src(inner, Cls::Int)?, true)),
            o => Ok((self.src(o, Cls::Int)?, false)),
        }
    }

    fn decode(&self, st: &Stmt, n_brauni: &mut u32) -> Result<(Inst, String), DErr> {
        let mut toks = &st.toks[..];
        let mut guard = NO_REG;
        let mut guard_neg = false;
        if toks.first() == Some(&Tok::P('@')) {
            let mut i = 1;
            if toks.get(1) == Some(&Tok::P('!')) {
                guard_neg = true;
                i = 2;
            }
            guard = match toks.get(i) {
                Some(Tok::Id(p)) => *self
                    .regs
                    .get(p)
                    .ok_or(DErr::Parse(format!("undeclared predicate `{p}`")))?,
                _ => return perr("bad guard predicate"),
            };
            toks = &toks[i + 1..];
        }
        let opname = match toks.first() {
            Some(Tok::Id(s)) => s.clone(),
            _ => return perr("expected an opcode"),
        };
        const KNOWN: &[&str] = &[
            "mov", "add", "sub", "mul", "mad", "fma", "div", "rem", "min", "max", "sqrt", "rcp",
            "abs", "neg", "and", "or", "xor", "not", "cnot", "shl", "shr", "bfe", "bfi", "prmt",
            "clz", "popc", "brev", "setp", "selp", "cvt", "cvta", "ld", "st", "atom", "red", "bra",
            "ret", "exit", "trap", "membar", "fence", "bar", "barrier", "shfl", "vote", "redux",
            "ex2", "lg2", "rsqrt", "sin", "cos", "tanh",
        ];
        let base = opname.split('.').next().unwrap_or("");
        if !KNOWN.contains(&base) {
            return unsup(format!("opcode `{opname}`"));
        }
        let ops = operands(&toks[1..])?;
        let norm = opname.replace("::cta", "").replace("::entry", "");
        if norm.contains("::cluster") || norm.contains("::func") {
            return unsup("cluster / function state spaces");
        }
        let parts: Vec<&str> = norm.split('.').collect();
        let mut inst = self.decode_op(&parts, &ops, n_brauni)?;
        inst.guard = guard;
        inst.guard_neg = guard_neg;
        Ok((inst, opname))
    }

    fn nops(&self, ops: &[Opnd], n: usize) -> Result<(), DErr> {
        if ops.len() != n {
            return perr(format!("expected {n} operands, found {}", ops.len()));
        }
        Ok(())
    }

    /// d, a[, b[, c]] with the given class.
    fn simple(&self, op: Op, ops: &[Opnd], nsrc: usize, cls: Cls) -> Result<Inst, DErr> {
        self.nops(ops, nsrc + 1)?;
        let mut i = blank_inst(op);
        i.d[0] = self.reg(&ops[0])?;
        for k in 0..nsrc {
            i.s[k] = self.src(&ops[k + 1], cls)?;
        }
        Ok(i)
    }

    fn decode_op(&self, p: &[&str], ops: &[Opnd], n_brauni: &mut u32) -> Result<Inst, DErr> {
        let base = p[0];
        let mods = &p[1..];
        let last = *mods.last().unwrap_or(&"");
        let has = |m: &str| mods.contains(&m);
        let rnd = mods.iter().find_map(|m| rnd_of(m));
        let ftz = has("ftz");
        let sat = has("sat");
        let int = int_ty(last);
        match base {
            "mov" => {
                self.nops(ops, 2)?;
                let w = match last {
                    "pred" => 1,
                    "f32" => 32,
                    "f64" => 64,
                    "f16" => 16,
                    t => int_ty(t).ok_or(DErr::Unsup(format!("mov type `{t}`")))?.0,
                };
                let cls = match last {
                    "f32" => Cls::F32,
                    "f64" => Cls::F64,
                    _ => Cls::Int,
                };
                match (&ops[0], &ops[1]) {
                    (Opnd::Vec(ds), src) => {
                        let n = ds.len() as u8;
                        if !(2..=4).contains(&n) || w % n != 0 {
                            return perr("bad unpack");
                        }
                        let mut i = blank_inst(Op::Unpack { n, w: w / n });
                        for (k, d) in ds.iter().enumerate() {
                            i.d[k] = self.reg(d)?;
                        }
                        i.s[0] = self.src(src, Cls::Int)?;
                        Ok(i)
                    }
                    (d, Opnd::Vec(ss)) => {
                        let n = ss.len() as u8;
                        if !(2..=4).contains(&n) || w % n != 0 {
                            return perr("bad pack");
                        }
                        let mut i = blank_inst(Op::Pack { n, w: w / n });
                        i.d[0] = self.reg(d)?;
                        for (k, s) in ss.iter().enumerate() {
                            i.s[k] = self.src(s, Cls::Int)?;
                        }
                        Ok(i)
                    }
                    _ => self.simple(Op::Mov { w }, ops, 1, cls),
                }
            }
            "add" | "sub" | "mul" | "mad" | "fma" | "div" | "rem" | "min" | "max" | "sqrt"
            | "rcp" | "abs" | "neg" => {
                if has("cc")
                    || mods.iter().any(|m| m.starts_with("cc"))
                    || has("relu")
                    || has("xorsign")
                {
                    return unsup(format!("modifier of `{}`", p.join(".")));
                }
                match last {
                    "f32" => {
                        if has("approx") || has("full") {
                            let f = match base {
                                "sqrt" => ApproxFn::Sqrt,
                                "rcp" => ApproxFn::Rcp,
                                "div" => ApproxFn::Div,
                                _ => return unsup(p.join(".")),
                            };
                            let n = if f == ApproxFn::Div { 2 } else { 1 };
                            return self.simple(Op::Approx { f, ftz }, ops, n, Cls::F32);
                        }
                        let r = rnd.unwrap_or(Rnd::Rn);
                        let need_rnd = matches!(base, "fma" | "mad" | "div" | "sqrt" | "rcp");
                        if need_rnd && rnd.is_none() {
                            return perr(format!("{base}.f32 requires a rounding modifier"));
                        }
                        let (op, n) = match base {
                            "add" => (FOp::Add, 2),
                            "sub" => (FOp::Sub, 2),
                            "mul" => (FOp::Mul, 2),
                            "fma" | "mad" => (FOp::Fma, 3),
                            "div" => (FOp::Div, 2),
                            "sqrt" => (FOp::Sqrt, 1),
                            "rcp" => (FOp::Rcp, 1),
                            "min" | "max" => {
                                if sat {
                                    return unsup("min/max.sat");
                                }
                                return self.simple(
                                    Op::F32MinMax {
                                        max: base == "max",
                                        nan: has("NaN"),
                                        ftz,
                                    },
                                    ops,
                                    2,
                                    Cls::F32,
                                );
                            }
                            "abs" => return self.simple(Op::F32Abs { ftz }, ops, 1, Cls::F32),
                            "neg" => return self.simple(Op::F32Neg { ftz }, ops, 1, Cls::F32),
                            _ => return unsup(format!("{base}.f32")),
                        };
                        if sat && !matches!(op, FOp::Add | FOp::Sub | FOp::Mul | FOp::Fma) {
                            return perr(".sat not allowed");
                        }
                        self.simple(
                            Op::F32 {
                                op,
                                rnd: r,
                                ftz,
                                sat,
                            },
                            ops,
                            n,
                            Cls::F32,
                        )
                    }
                    "f64" => {
                        if has("approx") || has("full") || ftz || sat {
                            return unsup(format!("{} is not supported", p.join(".")));
                        }
                        if rnd.is_some() && rnd != Some(Rnd::Rn) {
                            return unsup("directed rounding on f64");
                        }
                        let (op, n) = match base {
                            "add" => (FOp::Add, 2),
                            "sub" => (FOp::Sub, 2),
                            "mul" => (FOp::Mul, 2),
                            "fma" | "mad" => (FOp::Fma, 3),
                            "div" => (FOp::Div, 2),
                            "sqrt" => (FOp::Sqrt, 1),
                            "rcp" => (FOp::Rcp, 1),
                            "min" | "max" => {
                                return self.simple(
                                    Op::F64MinMax { max: base == "max" },
                                    ops,
                                    2,
                                    Cls::F64,
                                );
                            }
                            "abs" => return self.simple(Op::F64Abs, ops, 1, Cls::F64),
                            "neg" => return self.simple(Op::F64Neg, ops, 1, Cls::F64),
                            _ => return unsup(format!("{base}.f64")),
                        };
                        if matches!(base, "fma" | "mad" | "div" | "sqrt" | "rcp") && rnd.is_none() {
                            return perr(format!("{base}.f64 requires a rounding modifier"));
                        }
                        self.simple(Op::F64 { op }, ops, n, Cls::F64)
                    }
                    _ => {
                        let (w, s) = int.ok_or(DErr::Unsup(format!("type `{last}` of {base}")))?;
                        if sat {
                            return unsup(format!("{base}.sat on integers"));
                        }
                        let hi = has("hi");
                        let wide = has("wide");
                        let op = match base {
                            "add" => Op::Add { w },
                            "sub" => Op::Sub { w },
                            "mul" if wide => {
                                if w > 32 {
                                    return perr("mul.wide needs a 16/32-bit type");
                                }
                                Op::MulWide { w, s }
                            }
                            "mul" if hi => Op::MulHi { w, s },
                            "mul" => Op::MulLo { w },
                            "mad" if wide => {
                                if w > 32 {
                                    return perr("mad.wide needs a 16/32-bit type");
                                }
                                return self.simple(Op::MadWide { w, s }, ops, 3, Cls::Int);
                            }
                            "mad" if hi => {
                                return self.simple(Op::MadHi { w, s }, ops, 3, Cls::Int);
                            }
                            "mad" => return self.simple(Op::MadLo { w }, ops, 3, Cls::Int),
                            "div" => Op::Div { w, s },
                            "rem" => Op::Rem { w, s },
                            "min" => Op::Min { w, s },
                            "max" => Op::Max { w, s },
                            "abs" => return self.simple(Op::Abs { w }, ops, 1, Cls::Int),
                            "neg" => return self.simple(Op::Neg { w }, ops, 1, Cls::Int),
                            _ => return unsup(format!("{base} on integers")),
                        };
                        self.simple(op, ops, 2, Cls::Int)
                    }
                }
            }
            "and" | "or" | "xor" | "not" | "cnot" => {
                let w = if last == "pred" {
                    1
                } else {
                    int.ok_or(DErr::Unsup(format!("type `{last}`")))?.0
                };
                match base {
                    "and" => self.simple(Op::And { w }, ops, 2, Cls::Int),
                    "or" => self.simple(Op::Or { w }, ops, 2, Cls::Int),
                    "xor" => self.simple(Op::Xor { w }, ops, 2, Cls::Int),
                    "not" => self.simple(Op::Not { w }, ops, 1, Cls::Int),
                    _ => self.simple(Op::CNot { w }, ops, 1, Cls::Int),
                }
            }
            "shl" | "shr" => {
                let (w, s) = int.ok_or(DErr::Unsup(format!("type `{last}`")))?;
                let op = if base == "shl" {
                    Op::Shl { w }
                } else {
                    Op::Shr { w, s }
                };
                self.simple(op, ops, 2, Cls::Int)
            }
            "bfe" => {
                let (w, s) = int.ok_or(DErr::Unsup(format!("type `{last}`")))?;
                self.simple(Op::Bfe { w, s }, ops, 3, Cls::Int)
            }
            "bfi" => {
                let (w, _) = int.ok_or(DErr::Unsup(format!("type `{last}`")))?;
                let mut i = blank_inst(Op::Bfi { w });
                self.nops(ops, 5)?;
                i.d[0] = self.reg(&ops[0])?;
                for k in 0..4 {
                    i.s[k] = self.src(&ops[k + 1], Cls::Int)?;
                }
                Ok(i)
            }
            "prmt" => {
                if last != "b32" && !mods.is_empty() && mods[0] != "b32" {
                    return unsup("prmt type");
                }
                let mode = match mods.iter().find(|m| **m != "b32").copied() {
                    None => 0,
                    Some("f4e") => 1,
                    Some("b4e") => 2,
                    Some("rc8") => 3,
                    Some("ecl") => 4,
                    Some("ecr") => 5,
                    Some("rc16") => 6,
                    Some(m) => return unsup(format!("prmt mode `{m}`")),
                };
                self.simple(Op::Prmt { mode }, ops, 3, Cls::Int)
            }
            "clz" | "popc" | "brev" => {
                let (w, _) = int.ok_or(DErr::Unsup(format!("type `{last}`")))?;
                let op = match base {
                    "clz" => Op::Clz { w },
                    "popc" => Op::Popc { w },
                    _ => Op::Brev { w },
                };
                self.simple(op, ops, 1, Cls::Int)
            }
            "setp" => self.setp(mods, ops),
            "selp" => {
                let (w, cls) = match last {
                    "f32" => (32, Cls::F32),
                    "f64" => (64, Cls::F64),
                    t => (
                        int_ty(t).ok_or(DErr::Unsup(format!("selp type `{t}`")))?.0,
                        Cls::Int,
                    ),
                };
                self.nops(ops, 4)?;
                let mut i = blank_inst(Op::Selp { w });
                i.d[0] = self.reg(&ops[0])?;
                i.s[0] = self.src(&ops[1], cls)?;
                i.s[1] = self.src(&ops[2], cls)?;
                let (c, neg) = self.pred_src(&ops[3])?;
                i.s[2] = c;
                i.neg = neg;
                Ok(i)
            }
            "cvt" => self.cvt(mods, ops),
            "cvta" => {
                let to = has("to");
                let sp = match mods
                    .iter()
                    .find(|m| matches!(**m, "global" | "shared" | "local" | "const" | "param"))
                {
                    Some(&"global") => Space::Global,
                    Some(&"shared") => Space::Shared,
                    Some(&"local") => Space::Local,
                    Some(&"const") => Space::Const,
                    _ => return unsup("cvta state space"),
                };
                let w = match last {
                    "u64" => 64,
                    "u32" if sp != Space::Global => 32,
                    _ => return unsup("cvta size (.u64, or .u32 for shared/local/const)"),
                };
                self.simple(Op::Cvta { to, sp, w }, ops, 1, Cls::Int)
            }
            "ld" | "st" => self.ldst(base == "ld", mods, ops),
            "atom" | "red" => self.atom(base == "atom", mods, ops),
            "bra" => {
                self.nops(ops, 1)?;
                let target = match &ops[0] {
                    Opnd::Name(l) => *self
                        .labels
                        .get(l)
                        .ok_or(DErr::Parse(format!("unknown label `{l}`")))?,
                    _ => return perr("bra needs a label"),
                };
                if has("uni") {
                    let idx = *n_brauni;
                    *n_brauni += 1;
                    Ok(blank_inst(Op::BraUni { target, idx }))
                } else {
                    Ok(blank_inst(Op::Bra { target }))
                }
            }
            "ret" | "exit" => Ok(blank_inst(Op::Exit)),
            "trap" => Ok(blank_inst(Op::Trap)),
            "ex2" | "lg2" | "rsqrt" | "sin" | "cos" | "tanh" => {
                if !has("approx") || last != "f32" {
                    return unsup(format!("`{}` (only .approx{{.ftz}}.f32)", p.join(".")));
                }
                let f = match base {
                    "ex2" => ApproxFn::Ex2,
                    "lg2" => ApproxFn::Lg2,
                    "rsqrt" => ApproxFn::Rsqrt,
                    "sin" => ApproxFn::Sin,
                    "cos" => ApproxFn::Cos,
                    _ => ApproxFn::Tanh,
                };
                self.simple(Op::Approx { f, ftz: has("ftz") }, ops, 1, Cls::F32)
            }
            "membar" | "fence" => Ok(blank_inst(Op::Nop)),
            "bar" | "barrier" => {
                if base == "bar" && has("warp") {
                    self.nops(ops, 1)?;
                    let mut i = blank_inst(Op::BarWarp);
                    i.s[0] = self.src(&ops[0], Cls::Int)?;
                    return Ok(i);
                }
                let kind = mods.first().copied().unwrap_or("");
                if !(kind == "sync" || (base == "bar" && mods.is_empty())) {
                    return unsup(format!("{base}.{kind} (only bar.sync / barrier.sync)"));
                }
                if ops.is_empty() || ops.len() > 2 {
                    return perr("bar.sync takes 1 or 2 operands");
                }
                let mut i = blank_inst(Op::Bar);
                i.s[0] = self.src(&ops[0], Cls::Int)?;
                if ops.len() == 2 {
                    i.s[1] = self.src(&ops[1], Cls::Int)?;
                }
                Ok(i)
            }
            "shfl" => {
                if !has("sync") {
                    return unsup("shfl without .sync");
                }
                let mode = match mods.get(1) {
                    Some(&"up") => ShflMode::Up,
                    Some(&"down") => ShflMode::Down,
                    Some(&"bfly") => ShflMode::Bfly,
                    Some(&"idx") => ShflMode::Idx,
                    _ => return unsup("shfl mode"),
                };
                if last != "b32" {
                    return unsup("shfl type");
                }
                self.nops(ops, 5)?;
                let mut i = blank_inst(Op::Shfl { mode });
                match &ops[0] {
                    Opnd::Pair(a, b) => {
                        i.d[0] = self.reg(a)?;
                        i.d[1] = self.reg(b)?;
                    }
                    o => i.d[0] = self.reg(o)?,
                }
                for k in 0..4 {
                    i.s[k] = self.src(&ops[k + 1], Cls::Int)?;
                }
                Ok(i)
            }
            "vote" => {
                if !has("sync") {
                    return unsup("vote without .sync");
                }
                let mode = match mods.get(1) {
                    Some(&"all") => VoteMode::All,
                    Some(&"any") => VoteMode::Any,
                    Some(&"uni") => VoteMode::Uni,
                    Some(&"ballot") => VoteMode::Ballot,
                    _ => return unsup("vote mode"),
                };
                self.nops(ops, 3)?;
                let mut i = blank_inst(Op::Vote { mode });
                i.d[0] = self.reg(&ops[0])?;
                let (a, neg) = self.pred_src(&ops[1])?;
                i.s[0] = a;
                i.neg = neg;
                i.s[1] = self.src(&ops[2], Cls::Int)?;
                Ok(i)
            }
            "redux" => {
                if self.sm < 80 {
                    return unsup(format!(
                        "redux.sync needs sm_80, module targets sm_{}",
                        self.sm
                    ));
                }
                let op = match mods.get(1) {
                    Some(&"add") => ReduxOp::Add,
                    Some(&"min") => ReduxOp::Min,
                    Some(&"max") => ReduxOp::Max,
                    Some(&"and") => ReduxOp::And,
                    Some(&"or") => ReduxOp::Or,
                    Some(&"xor") => ReduxOp::Xor,
                    _ => return unsup("redux op"),
                };
                let s = match last {
                    "u32" | "b32" => false,
                    "s32" => true,
                    t => return unsup(format!("redux type `{t}`")),
                };
                self.simple(Op::Redux { op, s }, ops, 2, Cls::Int)
            }
            _ => unsup(format!("opcode `{}`", p.join("."))),
        }
    }

    fn setp(&self, mods: &[&str], ops: &[Opnd]) -> Result<Inst, DErr> {
        let last = *mods.last().unwrap_or(&"");
        let cmp_s = mods.first().copied().unwrap_or("");
        let comb = match mods.get(1) {
            Some(&"and") => Comb::And,
            Some(&"or") => Comb::Or,
            Some(&"xor") => Comb::Xor,
            _ => Comb::None,
        };
        let ftz = mods.contains(&"ftz");
        let (op, cls) = match last {
            "f32" | "f64" => {
                let cmp = match cmp_s {
                    "eq" => Cmp::Eq,
                    "ne" => Cmp::Ne,
                    "lt" => Cmp::Lt,
                    "le" => Cmp::Le,
                    "gt" => Cmp::Gt,
                    "ge" => Cmp::Ge,
                    "equ" => Cmp::Equ,
                    "neu" => Cmp::Neu,
                    "ltu" => Cmp::Ltu,
                    "leu" => Cmp::Leu,
                    "gtu" => Cmp::Gtu,
                    "geu" => Cmp::Geu,
                    "num" => Cmp::Num,
                    "nan" => Cmp::Nan,
                    c => return unsup(format!("setp comparison `{c}` on floats")),
                };
                (
                    Op::SetpF {
                        cmp,
                        f64: last == "f64",
                        ftz,
                        comb,
                    },
                    if last == "f32" { Cls::F32 } else { Cls::F64 },
                )
            }
            t => {
                let (w, s) = int_ty(t).ok_or(DErr::Unsup(format!("setp type `{t}`")))?;
                let bits = t.starts_with('b');
                let (cmp, s) = match cmp_s {
                    "eq" => (Cmp::Eq, s),
                    "ne" => (Cmp::Ne, s),
                    "lt" if !bits => (Cmp::Lt, s),
                    "le" if !bits => (Cmp::Le, s),
                    "gt" if !bits => (Cmp::Gt, s),
                    "ge" if !bits => (Cmp::Ge, s),
                    "lo" if !bits => (Cmp::Lt, false),
                    "ls" if !bits => (Cmp::Le, false),
                    "hi" if !bits => (Cmp::Gt, false),
                    "hs" if !bits => (Cmp::Ge, false),
                    c => return unsup(format!("setp comparison `{c}` on `{t}`")),
                };
                (Op::SetpI { cmp, w, s, comb }, Cls::Int)
            }
        };
        let want = if comb == Comb::None { 3 } else { 4 };
        self.nops(ops, want)?;
        let mut i = blank_inst(op);
        match &ops[0] {
            Opnd::Pair(a, b) => {
                i.d[0] = self.reg(a)?;
                i.d[1] = self.reg(b)?;
            }
            o => i.d[0] = self.reg(o)?,
        }
        i.s[0] = self.src(&ops[1], cls)?;
        i.s[1] = self.src(&ops[2], cls)?;
        if comb != Comb::None {
            let (c, neg) = self.pred_src(&ops[3])?;
            i.s[2] = c;
            i.neg = neg;
        }
        Ok(i)
    }

    fn cvt(&self, mods: &[&str], ops: &[Opnd]) -> Result<Inst, DErr> {
        let has = |m: &str| mods.contains(&m);
        let relu = has("relu");
        let satfinite = has("satfinite");
        let types: Vec<&str> = mods
            .iter()
            .copied()
            .filter(|m| {
                !matches!(
                    *m,
                    "rn" | "rz"
                        | "rm"
                        | "rp"
                        | "rni"
                        | "rzi"
                        | "rmi"
                        | "rpi"
                        | "ftz"
                        | "sat"
                        | "relu"
                        | "satfinite"
                )
            })
            .collect();
        let rnd = mods.iter().find_map(|m| rnd_of(m));
        let irnd = mods.iter().find_map(|m| irnd_of(m));
        let mini = |s: &str| match s {
            "e4m3x2" => Some(MiniFmt::E4M3),
            "e5m2x2" => Some(MiniFmt::E5M2),
            "e2m1x2" => Some(MiniFmt::E2M1),
            _ => None,
        };
        if types.len() != 2 {
            return unsup(format!("cvt form `cvt.{}`", mods.join(".")));
        }
        let (dt, st) = (types[0], types[1]);
        if dt == "ue8m0x2" {
            if st != "f32" {
                return unsup(format!("cvt to ue8m0x2 from {st}"));
            }
            let r = match rnd {
                Some(r @ (Rnd::Rz | Rnd::Rp)) => r,
                _ => return perr("cvt to ue8m0x2 requires .rz or .rp"),
            };
            if !satfinite {
                // without .satfinite, overflow and Inf are not specified
                // where this simulator could check them: refuse
                return unsup("cvt to ue8m0x2 without .satfinite");
            }
            if relu {
                return perr("cvt to ue8m0x2 takes no .relu");
            }
            self.check_block_scale_target("UE8M0 (ue8m0x2)")?;
            return self.simple(Op::CvtUe8m0Enc { rnd: r }, ops, 2, Cls::F32);
        }
        if st == "ue8m0x2" {
            if dt != "bf16x2" {
                return unsup(format!("cvt from ue8m0x2 to {dt}"));
            }
            if rnd != Some(Rnd::Rn) || satfinite || relu {
                return perr("cvt.bf16x2.ue8m0x2 requires .rn and nothing else");
            }
            self.check_block_scale_target("UE8M0 (ue8m0x2)")?;
            return self.simple(Op::CvtUe8m0Dec, ops, 1, Cls::Int);
        }
        if let Some(fmt) = mini(dt) {
            if st != "f32" {
                return unsup(format!("cvt to {dt} from {st}"));
            }
            if rnd != Some(Rnd::Rn) || !satfinite {
                return perr(format!("cvt to {dt} requires .rn.satfinite"));
            }
            self.check_mini_target(fmt)?;
            return self.simple(Op::CvtMiniEnc { fmt, relu }, ops, 2, Cls::F32);
        }
        if let Some(fmt) = mini(st) {
            if dt != "f16x2" {
                return unsup(format!("cvt from {st} to {dt}"));
            }
            if rnd != Some(Rnd::Rn) {
                return perr(format!("cvt from {st} requires .rn"));
            }
            self.check_mini_target(fmt)?;
            return self.simple(Op::CvtMiniDec { fmt, relu }, ops, 1, Cls::Int);
        }
        if dt == "f16x2" && st == "f32" {
            let r = match rnd {
                Some(r @ (Rnd::Rn | Rnd::Rz)) => r,
                _ => return perr("cvt.f16x2.f32 requires .rn or .rz"),
            };
            return self.simple(
                Op::CvtF16x2 {
                    rnd: r,
                    relu,
                    satfinite,
                },
                ops,
                2,
                Cls::F32,
            );
        }
        let d = cvt_ty(dt).ok_or(DErr::Unsup(format!("cvt destination type `{dt}`")))?;
        let s = cvt_ty(st).ok_or(DErr::Unsup(format!("cvt source type `{st}`")))?;
        if relu {
            return unsup("cvt .relu");
        }
        // rounding requirements
        if d.is_int() && !s.is_int() && irnd.is_none() {
            return perr("float-to-int cvt requires .rni/.rzi/.rmi/.rpi");
        }
        if !d.is_int() && s.is_int() && rnd.is_none() {
            return perr("int-to-float cvt requires .rn/.rz/.rm/.rp");
        }
        if !d.is_int() && !s.is_int() {
            if d.bits() < s.bits() && rnd.is_none() {
                return perr("narrowing float cvt requires a rounding modifier");
            }
            if d.bits() == s.bits() && d != s {
                return unsup("cvt between f16 and bf16");
            }
            if d.bits() >= s.bits() && d != s && (rnd.is_some() || irnd.is_some()) {
                return perr("widening float cvt takes no rounding modifier");
            }
            if d == s && irnd.is_none() {
                return perr("same-type float cvt requires .rni/.rzi/.rmi/.rpi");
            }
            if d == s && !matches!(d, CvtTy::F32 | CvtTy::F64) {
                return unsup("cvt.rni on 16-bit floats");
            }
            if (d == CvtTy::Bf16 || s == CvtTy::Bf16) && self.sm < 80 {
                return unsup("bf16 cvt needs sm_80");
            }
        }
        if (d == CvtTy::F16 || d == CvtTy::Bf16) && s.is_int() {
            return unsup("cvt from integer to 16-bit float");
        }
        if (s == CvtTy::F16 || s == CvtTy::Bf16) && d.is_int() {
            return unsup("cvt from 16-bit float to integer");
        }
        if s == CvtTy::F64 && matches!(d, CvtTy::F16 | CvtTy::Bf16) {
            return unsup("cvt from f64 to 16-bit float");
        }
        if d == CvtTy::F32
            && s == CvtTy::F64
            && !matches!(rnd, Some(Rnd::Rn) | None)
            && irnd.is_none()
        {
            // directed f64->f32 is supported (exact path)
        }
        let cls = match s {
            CvtTy::F32 => Cls::F32,
            CvtTy::F64 => Cls::F64,
            _ => Cls::Int,
        };
        if (has("satfinite")) && d != CvtTy::F16 {
            return unsup("cvt .satfinite for this type");
        }
        let mut i = self.simple(
            Op::Cvt {
                d,
                s,
                rnd,
                irnd,
                sat: has("sat") || satfinite,
                ftz: has("ftz"),
            },
            ops,
            1,
            cls,
        )?;
        i.neg = false;
        Ok(i)
    }

    fn space_of(mods: &[&str]) -> Space {
        for m in mods {
            match *m {
                "global" => return Space::Global,
                "shared" => return Space::Shared,
                "local" => return Space::Local,
                "param" => return Space::Param,
                "const" => return Space::Const,
                _ => {}
            }
        }
        Space::Generic
    }

    fn mem_operand(&self, o: &Opnd, sp: Space) -> Result<(Src, i64, Space), DErr> {
        match o {
            Opnd::Mem(Some(base), off, _) => {
                if let Some(r) = self.regs.get(base) {
                    return Ok((Src::Reg(*r), *off, sp));
                }
                if let Some(v) = self.vars.get(base) {
                    let vsp = if sp == Space::Generic { v.sp } else { sp };
                    if vsp != v.sp {
                        return perr(format!(
                            "`{base}` is in .{} but the access is .{}",
                            v.sp, sp
                        ));
                    }
                    return Ok((Src::Imm(v.offset), *off, vsp));
                }
                perr(format!("unknown address base `{base}`"))
            }
            Opnd::Mem(None, off, Some(abs)) => Ok((Src::Imm(*abs), *off, sp)),
            _ => perr("expected an address operand"),
        }
    }

    fn ldst(&self, ld: bool, mods: &[&str], ops: &[Opnd]) -> Result<Inst, DErr> {
        for m in mods {
            if m.starts_with("v8") || *m == "v8" {
                return unsup("256-bit vector access");
            }
        }
        let sp = Self::space_of(mods);
        let last = *mods.last().unwrap_or(&"");
        let n: u8 = if mods.contains(&"v4") {
            4
        } else if mods.contains(&"v2") {
            2
        } else {
            1
        };
        let (size, signed) = match last {
            "f32" => (4, false),
            "f64" => (8, false),
            "f16" => (2, false),
            t => {
                let (w, s) = int_ty(t).ok_or(DErr::Unsup(format!(
                    "{} type `{t}`",
                    if ld { "ld" } else { "st" }
                )))?;
                (w / 8, s)
            }
        };
        let cls = match last {
            "f32" => Cls::F32,
            "f64" => Cls::F64,
            _ => Cls::Int,
        };
        if sp == Space::Param && !ld {
            return unsup("st.param");
        }
        if sp == Space::Const && !ld {
            return perr("st.const is illegal");
        }
        self.nops(ops, 2)?;
        let (vals, mem) = if ld {
            (&ops[0], &ops[1])
        } else {
            (&ops[1], &ops[0])
        };
        let (base, off, sp) = self.mem_operand(mem, sp)?;
        let mut i = blank_inst(if ld {
            Op::Ld {
                sp,
                size,
                signed,
                n,
            }
        } else {
            Op::St { sp, size, n }
        });
        i.off = off;
        i.s[0] = base;
        let elems: Vec<Opnd> = match vals {
            Opnd::Vec(v) => v.clone(),
            o => vec![o.clone()],
        };
        if elems.len() != n as usize {
            return perr(format!("expected {n} value operand(s)"));
        }
        if ld {
            for (k, e) in elems.iter().enumerate() {
                i.d[k] = self.reg(e)?;
            }
        } else {
            let vals = elems
                .iter()
                .map(|e| self.src(e, cls))
                .collect::<Result<Vec<_>, _>>()?;
            for (k, v) in vals.into_iter().enumerate() {
                i.s[k + 1] = v;
            }
        }
        Ok(i)
    }

    fn atom(&self, is_atom: bool, mods: &[&str], ops: &[Opnd]) -> Result<Inst, DErr> {
        let sp = Self::space_of(mods);
        let last = *mods.last().unwrap_or(&"");
        let opn = mods
            .iter()
            .find(|m| {
                matches!(
                    **m,
                    "add" | "min" | "max" | "inc" | "dec" | "and" | "or" | "xor" | "exch" | "cas"
                )
            })
            .copied()
            .ok_or(DErr::Unsup("atomic operation".into()))?;
        if mods.iter().any(|m| m.starts_with('v') && m.len() == 2) {
            return unsup("vector atomics");
        }
        let (w, s, op) = match (opn, last) {
            ("add", "f32") => (32, false, AtomOp::AddF32),
            ("add", "f64") => (64, false, AtomOp::AddF64),
            (_, t) => {
                let (w, s) = int_ty(t).ok_or(DErr::Unsup(format!("atomic type `{t}`")))?;
                if w < 32 {
                    return unsup("16-bit atomics");
                }
                let op = match opn {
                    "add" => AtomOp::Add,
                    "min" => AtomOp::Min,
                    "max" => AtomOp::Max,
                    "inc" => AtomOp::Inc,
                    "dec" => AtomOp::Dec,
                    "and" => AtomOp::And,
                    "or" => AtomOp::Or,
                    "xor" => AtomOp::Xor,
                    "exch" => AtomOp::Exch,
                    _ => AtomOp::Cas,
                };
                if op == AtomOp::Cas && !is_atom {
                    return perr("red.cas does not exist");
                }
                (w, s, op)
            }
        };
        if !matches!(sp, Space::Global | Space::Shared | Space::Generic) {
            return perr("atomics need .global, .shared or generic addressing");
        }
        let cls = match op {
            AtomOp::AddF32 => Cls::F32,
            AtomOp::AddF64 => Cls::F64,
            _ => Cls::Int,
        };
        let nsrc = if op == AtomOp::Cas { 2 } else { 1 };
        let (first, rest) = if is_atom {
            self.nops(ops, 2 + nsrc)?;
            (1, &ops[2..])
        } else {
            self.nops(ops, 1 + nsrc)?;
            (0, &ops[1..])
        };
        let (base, off, sp) = self.mem_operand(&ops[first], sp)?;
        let mut i = blank_inst(Op::Atom {
            sp,
            op,
            w,
            s,
            ret: is_atom,
        });
        if is_atom {
            i.d[0] = self.reg(&ops[0])?;
        }
        i.s[0] = base;
        i.off = off;
        for (k, o) in rest.iter().enumerate() {
            i.s[k + 1] = self.src(o, cls)?;
        }
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "// header comment
.version 8.1
.target sm_89
.address_size 64
.shared .align 8 .b8 mod_sh[12];
.extern .shared .align 16 .b8 dyn[];
.const .align 4 .u32 tbl[3] = {7, 0x10, -1};

/* a block
   comment */
.visible .entry k(
    .param .u32 n,
    .param .u64 .ptr .global .align 16 p,
    .param .align 8 .b8 blob[12]
)
.maxntid 256, 1, 1
.minnctapersm 2
{
    .reg .pred %p<3>;
    .reg .f32 %f<12>;
    .reg .b32 %x, %y;
    .shared .f32 sh[4];
    .local .align 8 .b8 stack[24];
    .pragma \"nounroll\";
$L0:
    @!%p1 bra $L1;   // forward label
    mov.u32 %x, sh;
    ld.const.u32 %y, [tbl+8];
    ld.param.u32 %x, [blob+4];
$L1:
    ret;
}
";

    #[test]
    fn entry_signature_reads_the_header_only() {
        // The body uses `.func`/`call`, which the simulator refuses to run:
        // the signature is still read.
        let ptx = concat!(
            ".version 7.0\n.target sm_80\n.address_size 64\n",
            ".func f() { ret; }\n",
            ".visible .entry a(.param .u32 a_n) { ret; }\n",
            ".visible .entry k(\n  .param .u64 .ptr .global .align 16 k_p,\n",
            "  .param .f32 k_s,\n  .param .align 8 .b8 k_blob[12]\n)\n{ call f; ret; }\n"
        );
        assert!(Program::parse(ptx).is_err());
        let sig = entry_signature(ptx, "k").unwrap();
        let sizes: Vec<(u32, u32)> = sig.iter().map(|p| (p.offset, p.size)).collect();
        assert_eq!(sizes, vec![(0, 8), (8, 4), (16, 12)]);
        assert_eq!(entry_signature(ptx, "a").unwrap().len(), 1);
        let e = entry_signature(ptx, "b").unwrap_err();
        assert!(e.to_string().contains("`.entry b`"), "{e}");
    }

    #[test]
    fn declarations_layout_and_labels() {
        let p = Program::parse(SRC).unwrap();
        assert_eq!(p.target_sm(), 89);
        assert_eq!(p.version(), (8, 1));
        let e = p.entry("k").unwrap();
        assert_eq!(
            e.params,
            vec![
                ParamInfo {
                    name: "n".into(),
                    offset: 0,
                    size: 4
                },
                ParamInfo {
                    name: "p".into(),
                    offset: 8,
                    size: 8
                },
                ParamInfo {
                    name: "blob".into(),
                    offset: 16,
                    size: 12
                },
            ]
        );
        assert_eq!(e.param_bytes, 28);
        // %p0..2, %f0..11, %x, %y after the reserved slots
        assert_eq!(e.nregs, sreg::COUNT + 3 + 12 + 2);
        assert_eq!(e.reg_names[sreg::COUNT as usize], "%p0");
        // module shared (12 bytes) then sh at 12 (f32 alignment), 28 bytes; dynamic at 32
        assert_eq!(e.static_shared, 28);
        assert_eq!(e.dyn_shared_offset(), 32);
        assert_eq!(e.local_bytes, 24);
        assert_eq!(e.maxntid, Some((256, 1, 1)));
        assert_eq!(e.insts.len(), 5);
        assert_eq!(e.insts[0].op, Op::Bra { target: 4 });
        assert!(e.insts[0].guard_neg);
        assert_eq!(e.insts[1].s[0], Src::Imm(12)); // shared-space address of sh
        assert_eq!(e.lines[1], 27);
        assert_eq!(e.texts[1], "mov.u32 %x, sh;");
        assert_eq!(
            &p.consts[..12],
            &[7, 0, 0, 0, 16, 0, 0, 0, 255, 255, 255, 255]
        );
        assert_eq!(e.insts[3].s[0], Src::Imm(16));
        assert_eq!(e.insts[3].off, 4);
        assert_eq!(e.opcodes[e.insts[2].opcode as usize], "ld.const.u32");
    }

    #[test]
    fn literals() {
        assert!(matches!(
            parse_num("0f3F800000"),
            Some(Lit::F32(0x3F80_0000))
        ));
        assert!(matches!(
            parse_num("0d3FF0000000000000"),
            Some(Lit::F64(0x3FF0_0000_0000_0000))
        ));
        assert!(matches!(parse_num("0x10U"), Some(Lit::Int(16))));
        assert!(matches!(parse_num("017"), Some(Lit::Int(15))));
        assert!(matches!(parse_num("42"), Some(Lit::Int(42))));
        assert!(matches!(parse_num("1.5e-3"), Some(Lit::Dec(_))));
        assert!(parse_num("0f3F80").is_none());
        assert_eq!(imm_bits(Lit::Int(1), true, Cls::Int), u64::MAX);
        assert_eq!(
            imm_bits(Lit::Dec(1.5), false, Cls::F32),
            1.5f32.to_bits() as u64
        );
        assert_eq!(
            imm_bits(Lit::F32(0x3F80_0000), false, Cls::F64),
            1f64.to_bits()
        );
    }

    #[test]
    fn refusals_name_the_line() {
        let bad = |body: &str| {
            let src = format!(
                ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{{\n.reg .b32 %r<4>;\n{body}\n}}\n"
            );
            Program::parse(&src).unwrap_err()
        };
        for body in [
            "call.uni foo, (%r1);",
            "add.cc.u32 %r1, %r1, %r2;",
            "mov.u32 %r1, %envreg0;",
            "ld.global.u32 %r1, [%r2+%r3];",
            "sin.approx.f64 %r1, %r1;",
            "bar.arrive 0, 64;",
        ] {
            match bad(body) {
                SimError::Unsupported { line, instr, .. } => {
                    assert_eq!(line, 7, "{body}");
                    assert_eq!(instr, body);
                }
                e => panic!("{body}: {e}"),
            }
        }
        for body in [
            "add.u32 %r1, %r9;",
            "bra $nowhere;",
            "fma.f32 %r1, %r1, %r1, %r1;",
        ] {
            match bad(body) {
                SimError::Parse { line, .. } => assert_eq!(line, 7, "{body}"),
                e => panic!("{body}: {e}"),
            }
        }
        assert!(matches!(
            Program::parse(".version 7.0\n.target sm_80\n.address_size 32\n"),
            Err(SimError::Unsupported { line: 3, .. })
        ));
        assert!(matches!(
            Program::parse(".version 7.0\n.target sm_80\n.visible .func f() { ret; }\n"),
            Err(SimError::Unsupported { .. })
        ));
    }
}
