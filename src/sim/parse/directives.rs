//! Directives and declarations: the module scope (`.version`, `.target`,
//! `.address_size`, module `.shared`/`.extern .shared`/`.const`, `.entry`),
//! an entry's header (parameter list, `.maxntid`/`.reqntid`/…) and body
//! declarations (`.reg`, `.shared`, `.local`, labels), laid out into the
//! entry's register slots and state-space offsets; then the instructions
//! are handed to the [`Decoder`].

use std::collections::HashMap;

use super::super::code::{self, Code};
use super::super::error::SimError;
use super::super::ir::*;
use super::Program;
use super::decode::{DErr, Decoder};
use super::globals::Globals;
use super::lex::{Lit, T, Tok, parse_num, tokenize};
use super::operands::{Cls, Var, imm_bits, type_bytes};

pub(super) struct Parser<'a> {
    /// The source lines (for the instruction texts and messages).
    pub(super) lines: Vec<&'a str>,
    pub(super) toks: Vec<T>,
    pub(super) pos: usize,
    pub(super) tok_err: Option<SimError>,
    pub(super) sm: u32,
    pub(super) suffix: Option<char>,
    pub(super) version: (u32, u32),
    pub(super) mod_shared: Vec<(String, u64, u64)>, // name, size, align
    /// Names of the `.extern .shared` arrays (they alias) and their alignment.
    pub(super) dyn_shared: Option<(Vec<String>, u64)>,
    pub(super) const_vars: HashMap<String, u64>,
    /// Sizes of the `.const` variables, by name.
    pub(super) const_sizes: HashMap<String, u64>,
    pub(super) consts: Vec<u8>,
    /// Module-scope `.global` variables (see `globals.rs`).
    pub(super) globals: Globals,
    /// `.func`s, and the call frame of the entry being decoded.
    pub(super) funcs: super::func::Funcs,
}

#[derive(Debug, Clone)]
pub(super) struct Stmt {
    pub(super) line: u32,
    pub(super) toks: Vec<Tok>,
}

impl<'a> Parser<'a> {
    pub(super) fn new(src: &'a str) -> Self {
        let (toks, tok_err) = match tokenize(src) {
            Ok(t) => (t, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        Parser {
            lines: src.lines().collect(),
            toks,
            pos: 0,
            tok_err,
            sm: 0,
            suffix: None,
            version: (0, 0),
            mod_shared: Vec::new(),
            dyn_shared: None,
            const_vars: HashMap::new(),
            const_sizes: HashMap::new(),
            consts: Vec::new(),
            globals: Globals::default(),
            funcs: Default::default(),
        }
    }

    /// The trimmed text of source line `line` (1-based).
    pub(super) fn line_text(&self, line: u32) -> String {
        self.lines
            .get((line as usize).saturating_sub(1))
            .map_or("", |l| l.trim())
            .to_string()
    }

    pub(super) fn line(&self) -> u32 {
        self.toks
            .get(self.pos)
            .or(self.toks.last())
            .map(|t| t.line)
            .unwrap_or(1)
    }

    pub(super) fn perr(&self, line: u32, msg: impl Into<String>) -> SimError {
        SimError::Parse {
            line,
            text: self.line_text(line),
            message: msg.into(),
        }
    }

    pub(super) fn unsup(&self, line: u32, reason: impl Into<String>) -> SimError {
        SimError::Unsupported {
            line,
            instr: self.line_text(line),
            reason: reason.into(),
        }
    }

    pub(super) fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.t)
    }

    pub(super) fn next(&mut self) -> Result<Tok, SimError> {
        let l = self.line();
        let t = self
            .toks
            .get(self.pos)
            .map(|t| t.t.clone())
            .ok_or_else(|| self.perr(l, "unexpected end of input"))?;
        self.pos += 1;
        Ok(t)
    }

    pub(super) fn expect_num(&mut self) -> Result<u64, SimError> {
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
    pub(super) fn until_semi(&mut self) -> Result<Vec<Tok>, SimError> {
        let mut v = Vec::new();
        loop {
            let t = self.next()?;
            if t == Tok::P(';') {
                return Ok(v);
            }
            v.push(t);
        }
    }

    pub(super) fn module(mut self) -> Result<Program, SimError> {
        if let Some(e) = self.tok_err.take() {
            return Err(e);
        }
        self.prescan_funcs()?;
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
                        Some(Tok::Id(n)) if n == ".global" => {
                            self.pos += 1;
                            let toks = self.until_semi()?;
                            self.global_decl(line, s, &toks)?;
                        }
                        _ => {}
                    }
                }
                Tok::Id(ref s) if s == ".entry" => {
                    let e = self.entry(line)?;
                    entries.push(e);
                }
                Tok::Id(ref s) if s == ".func" => self.skip_func(line)?,
                Tok::Id(ref s) if s == ".shared" => {
                    let toks = self.until_semi()?;
                    let (name, size, align, _) = self.var_decl(line, &toks)?;
                    self.mod_shared.push((name, size, align));
                }
                Tok::Id(ref s) if s == ".const" => {
                    let toks = self.until_semi()?;
                    self.const_decl(line, &toks)?;
                }
                Tok::Id(ref s) if s == ".file" || s == ".loc" || s == ".section" => {
                    self.skip_debug_directive(line)
                }
                Tok::Id(ref s) if s == ".pragma" => {
                    self.until_semi().ok();
                }
                Tok::Id(ref s) if s == ".global" => {
                    let toks = self.until_semi()?;
                    self.global_decl(line, "", &toks)?;
                }
                Tok::Id(ref s)
                    if s == ".common" && self.peek() == Some(&Tok::Id(".global".into())) =>
                {
                    self.pos += 1;
                    let toks = self.until_semi()?;
                    self.global_decl(line, ".common", &toks)?;
                }
                _ => return Err(self.perr(line, format!("unexpected {t:?} at module scope"))),
            }
        }
        if entries.is_empty() {
            return Err(self.perr(1, "module has no .entry"));
        }
        let global_relocs = self.finish_globals()?;
        let mut const_vars: Vec<(String, u64, u64)> = self
            .const_vars
            .iter()
            .map(|(n, &off)| (n.clone(), off, self.const_sizes[n]))
            .collect();
        const_vars.sort_by_key(|v| v.1);
        Ok(Program {
            entries,
            sm: self.sm,
            suffix: self.suffix,
            version: self.version,
            consts: self.consts,
            const_vars,
            globals: self.globals.vars,
            global_image: self.globals.image,
            global_base: None,
            global_relocs,
        })
    }

    pub(super) fn decl_dyn_shared(&mut self, line: u32, toks: &[Tok]) -> Result<(), SimError> {
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
    pub(super) fn var_decl(
        &self,
        line: u32,
        toks: &[Tok],
    ) -> Result<(String, u64, u64, Vec<Tok>), SimError> {
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

    pub(super) fn const_decl(&mut self, line: u32, toks: &[Tok]) -> Result<(), SimError> {
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
        self.const_sizes.insert(name.clone(), size);
        self.const_vars.insert(name, off);
        Ok(())
    }

    pub(super) fn entry(&mut self, _line: u32) -> Result<Entry, SimError> {
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
    pub(super) fn param_list(&mut self) -> Result<(Vec<ParamInfo>, u64), SimError> {
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

    pub(super) fn entry_rest(
        &mut self,
        name: String,
        params: Vec<ParamInfo>,
        param_bytes: u64,
    ) -> Result<Entry, SimError> {
        // performance directives
        let mut maxntid = None;
        let mut reqntid = None;
        let mut cluster = ClusterDirectives::default();
        loop {
            let l = self.line();
            match self.peek().cloned() {
                Some(Tok::P('{')) => {
                    self.pos += 1;
                    break;
                }
                Some(Tok::Id(d))
                    if d == ".maxntid" || d == ".reqntid" || d == ".reqnctapercluster" =>
                {
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
                    } else if d == ".reqntid" {
                        reqntid = Some(t)
                    } else {
                        cluster.req = Some(t)
                    }
                }
                Some(Tok::Id(d)) if d == ".maxclusterrank" => {
                    self.pos += 1;
                    cluster.max_rank = Some(self.expect_num()? as u32);
                }
                Some(Tok::Id(d)) if d == ".explicitcluster" => {
                    self.pos += 1;
                    cluster.explicit = true;
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
        // body statements, calls inlined (`super::func`)
        let l = self.line();
        let stmts = self.body_stmts(l)?;
        let stmts = self.inline_calls(stmts)?;
        let mut e = self.body(name, params, param_bytes as u32, maxntid, reqntid, stmts)?;
        e.reqnctapercluster = cluster.req;
        e.explicitcluster = cluster.explicit;
        e.maxclusterrank = cluster.max_rank;
        Ok(e)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn body(
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
        for (n, addr) in self.globals.addresses() {
            // a parameter of the same name shadows the module variable
            vars.entry(n.to_string()).or_insert(Var {
                sp: Space::Global,
                offset: addr,
            });
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
            reqnctapercluster: None,
            explicitcluster: false,
            maxclusterrank: None,
            n_brauni: 0,
            strong_global: false,
            mma: Vec::new(),
            relocs: Vec::new(),
            code: Code::default(),
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
            mma: Default::default(),
            frame: &self.funcs.frame,
        };
        let undefined = self.globals.undefined();
        for st in instrs {
            self.check_extern_use(st, &undefined)?;
            let text = self.line_text(st.line);
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
            self.record_relocs(st, &inst, entry.insts.len() as u32, &mut entry.relocs);
            if let Op::Ld { sp, .. } | Op::St { sp, .. } = inst.op
                && matches!(sp, Space::Global | Space::Generic)
                && entry.opcodes[id as usize]
                    .split('.')
                    .any(|m| matches!(m, "volatile" | "relaxed" | "acquire" | "release" | "mmio"))
            {
                entry.strong_global = true;
            }
            entry.insts.push(inst);
            entry.lines.push(st.line);
            entry.texts.push(text);
        }
        entry.mma = dec.mma.into_inner();
        entry.code = code::lower(&entry);
        Ok(entry)
    }
}

/// An entry's cluster directives (`.reqnctapercluster`, `.explicitcluster`,
/// `.maxclusterrank`; sm_90+).
#[derive(Default)]
struct ClusterDirectives {
    req: Option<(u32, u32, u32)>,
    explicit: bool,
    max_rank: Option<u32>,
}
