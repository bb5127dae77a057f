//! `.func` device functions, `call`, and scoped `{ }` blocks.
//!
//! **Design: inlining at decode time.** The simulator's interpreter (thread
//! order and the lockstep warp schedule alike) runs one flat instruction
//! vector per entry, so a `call` is expanded here, before the entry's body
//! is decoded, into a copy of the callee's statements:
//! * every register, label and `.local`/`.param` variable of the callee
//!   gets a fresh name per inlined instance (`%r1@_Z3addii#2`), so each
//!   instance has its own register slots and its own `.local` frame range;
//! * `.param` variables declared in a body (the caller's `callseq` blocks
//!   and the callee's own) become per-thread variables of the `.local`
//!   frame; `ld.param`/`st.param` on them are decoded as local accesses
//!   (bounds-checked like every local access). The callee's formal
//!   parameters and return values are *aliases* of the caller's actual
//!   `.param` variables (`call (retval0), f, (param0, param1)`), so nothing
//!   is copied;
//! * `ret` in a callee becomes a branch to the end of its instance; a
//!   predicated `@%p call` branches around the instance;
//! * nested `{ }` blocks open a scope: a declaration that repeats a name
//!   already declared in the function gets a fresh name, visible until the
//!   block's `}`.
//!
//! The instructions keep their source line, so every finding inside a
//! callee (uninitialised register, bounds, races, barriers) names the
//! callee's PTX line. **Recursion** (direct or mutual) is inlined to a
//! depth of [`MAX_RECURSION`] activations of one function in a call chain
//! (the simulator's stand-in for the device's stack limit): a call that
//! would go deeper becomes a trap at run time (`SimError::Trap` at the
//! call's line), reached only if the program really recurses that deep; a
//! branching recursion whose inlined copies pass the statement cap is
//! refused at load. Indirect
//! calls (`call %rd, (…), proto;`) and calls of `.extern .func`s other than
//! the builtins are refused with [`SimError::Unsupported`]; a declaration
//! that is never called is accepted.

use std::collections::{HashMap, HashSet};

use super::super::error::SimError;
use super::directives::{Parser, Stmt};
use super::lex::Tok;

/// Inlined statements past which a module is refused (a call tree that
/// explodes when inlined).
const MAX_INLINED: usize = 1 << 20;

/// Activations of one function a call chain may hold (its recursion
/// depth); a call past it traps when it runs.
pub(crate) const MAX_RECURSION: usize = 32;

/// A `.func` of the module.
#[derive(Debug, Clone)]
pub(super) struct FuncDef {
    /// Names of the return parameters (`func_retval0`), in order.
    pub(super) rets: Vec<String>,
    /// Names of the formal parameters, in order.
    pub(super) params: Vec<String>,
    /// The body with `{`/`}` block markers; `None` for a declaration
    /// (prototype or `.extern .func`).
    pub(super) body: Option<Vec<Stmt>>,
}

/// The module's functions and the state the inliner leaves for the decoder.
#[derive(Debug, Default)]
pub(super) struct Funcs {
    pub(super) defs: HashMap<String, FuncDef>,
    /// Token index of each `.func` keyword → index after its definition or
    /// declaration (the module walk skips them).
    pub(super) ends: HashMap<usize, usize>,
    /// The `.param` variables of the entry being decoded that live in the
    /// `.local` frame (call arguments and return values).
    pub(super) frame: HashSet<String>,
}

fn is_marker(st: &Stmt, c: char) -> bool {
    st.toks.len() == 1 && st.toks[0] == Tok::P(c)
}

impl Parser<'_> {
    /// Read every `.func` of the module first (so that an entry may call a
    /// function defined after it), remembering where each one ends.
    pub(super) fn prescan_funcs(&mut self) -> Result<(), SimError> {
        let mut depth = 0usize;
        let mut i = 0;
        while i < self.toks.len() {
            match &self.toks[i].t {
                Tok::P('{') => depth += 1,
                Tok::P('}') => depth = depth.saturating_sub(1),
                Tok::Id(s) if s == ".func" && depth == 0 => {
                    let line = self.toks[i].line;
                    self.pos = i + 1;
                    let (name, def) = self.func_def(line)?;
                    self.funcs.ends.insert(i, self.pos);
                    i = self.pos;
                    match self.funcs.defs.get(&name) {
                        Some(old) if old.body.is_some() && def.body.is_some() => {
                            return Err(self.perr(line, format!("`.func {name}` defined twice")));
                        }
                        Some(old) if old.body.is_some() => {}
                        _ => {
                            self.funcs.defs.insert(name, def);
                        }
                    }
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        self.pos = 0;
        Ok(())
    }

    /// Skip a `.func` at module scope (already read by [`Self::prescan_funcs`]);
    /// `self.pos` is just past the keyword.
    pub(super) fn skip_func(&mut self, line: u32) -> Result<(), SimError> {
        match self.funcs.ends.get(&(self.pos - 1)) {
            Some(&end) => {
                self.pos = end;
                Ok(())
            }
            None => Err(self.perr(line, "`.func` inside another definition")),
        }
    }

    /// `[(rets)] name [(params)] [.noreturn] ( ; | { body } )` after `.func`.
    fn func_def(&mut self, line: u32) -> Result<(String, FuncDef), SimError> {
        let rets = if self.peek() == Some(&Tok::P('(')) {
            self.name_list()?
        } else {
            Vec::new()
        };
        let l = self.line();
        let name = match self.next()? {
            Tok::Id(n) if !n.starts_with('.') => n,
            t => return Err(self.perr(l, format!("expected a function name, found {t:?}"))),
        };
        let params = if self.peek() == Some(&Tok::P('(')) {
            self.name_list()?
        } else {
            Vec::new()
        };
        loop {
            let l = self.line();
            match self.next()? {
                Tok::P(';') => {
                    let body = None;
                    return Ok((name, FuncDef { rets, params, body }));
                }
                Tok::P('{') => {
                    let body = Some(self.body_stmts(line)?);
                    return Ok((name, FuncDef { rets, params, body }));
                }
                Tok::Id(d) if d == ".noreturn" => {}
                Tok::Id(d) if d == ".maxnreg" || d == ".maxntid" || d == ".reqntid" => {
                    self.expect_num()?;
                    while self.peek() == Some(&Tok::P(',')) {
                        self.pos += 1;
                        self.expect_num()?;
                    }
                }
                t => return Err(self.unsup(l, format!("function directive {t:?}"))),
            }
        }
    }

    /// The names of a `( .param … , … )` list of a `.func` header.
    fn name_list(&mut self) -> Result<Vec<String>, SimError> {
        let l = self.line();
        self.pos += 1; // (
        let mut names = Vec::new();
        let mut cur: Option<String> = None;
        let mut any = false;
        loop {
            match self.next()? {
                Tok::P(')') | Tok::P(',') if any || cur.is_some() => {
                    let closing = self.toks[self.pos - 1].t == Tok::P(')');
                    names.push(
                        cur.take()
                            .ok_or_else(|| self.perr(l, "parameter without name"))?,
                    );
                    any = false;
                    if closing {
                        return Ok(names);
                    }
                }
                Tok::P(')') => return Ok(names),
                Tok::Id(s) if s == ".reg" => {
                    return Err(self.unsup(l, "`.reg` function parameters"));
                }
                Tok::Id(s) if s.starts_with('.') => any = true,
                Tok::Id(s) => {
                    if cur.is_none() {
                        cur = Some(s);
                    }
                }
                Tok::P('[') | Tok::P(']') | Tok::Num(_) => any = true,
                t => return Err(self.perr(l, format!("unexpected {t:?} in a parameter list"))),
            }
        }
    }

    /// Skip a debug directive whose keyword (on `line`) was just read:
    /// `.loc`/`.file`, which end with their line (no `;`), or `.section
    /// name { … }` (debug data).
    pub(super) fn skip_debug_directive(&mut self, line: u32) {
        let is_section = self.toks.get(self.pos.wrapping_sub(1)).map(|t| &t.t)
            == Some(&Tok::Id(".section".into()));
        while self.toks.get(self.pos).is_some_and(|t| t.line == line) {
            if self.peek() == Some(&Tok::P('{')) {
                break;
            }
            self.pos += 1;
        }
        if is_section && self.peek() == Some(&Tok::P('{')) {
            let mut depth = 0usize;
            while let Some(t) = self.toks.get(self.pos) {
                self.pos += 1;
                match t.t {
                    Tok::P('{') => depth += 1,
                    Tok::P('}') => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// The statements of a body up to its closing `}` (the opening one is
    /// consumed), with `{`/`}` markers for nested blocks.
    pub(super) fn body_stmts(&mut self, start: u32) -> Result<Vec<Stmt>, SimError> {
        let mut stmts: Vec<Stmt> = Vec::new();
        let mut depth = 1;
        loop {
            let line = self.line();
            match self.peek().cloned() {
                None => return Err(self.perr(start, "unterminated body")),
                // `.loc` has no `;`: it ends with its line
                Some(Tok::Id(d)) if d == ".loc" => {
                    self.pos += 1;
                    self.skip_debug_directive(line);
                }
                Some(Tok::P(c @ ('{' | '}'))) => {
                    self.pos += 1;
                    if c == '{' {
                        depth += 1;
                    } else {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(stmts);
                        }
                    }
                    stmts.push(Stmt {
                        line,
                        toks: vec![Tok::P(c)],
                    });
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
    }

    /// An entry's body with every call inlined and every nested scope
    /// flattened (see the module docs); the frame `.param`s are left in
    /// `self.funcs.frame` for the decoder.
    pub(super) fn inline_calls(&mut self, stmts: Vec<Stmt>) -> Result<Vec<Stmt>, SimError> {
        let mut inl = Inliner {
            p: self,
            out: Vec::with_capacity(stmts.len()),
            frame: HashSet::new(),
            instances: 0,
            fresh: 0,
        };
        let mut ctx = Ctx {
            func: None,
            scopes: vec![HashMap::new()],
            declared: HashSet::new(),
            ret_label: None,
            stack: Vec::new(),
        };
        inl.expand(&stmts, &mut ctx)?;
        let (out, frame) = (inl.out, inl.frame);
        self.funcs.frame = frame;
        Ok(out)
    }
}

/// One function instance being expanded (the entry itself, or an inlined
/// callee).
struct Ctx {
    /// `(function, instance)`; `None` for the entry.
    func: Option<(String, u32)>,
    /// Name maps, innermost last.
    scopes: Vec<HashMap<String, String>>,
    /// Every name declared in this instance so far (after renaming).
    declared: HashSet<String>,
    /// Label a `ret` branches to (callees only).
    ret_label: Option<String>,
    /// The call chain down to this instance.
    stack: Vec<String>,
}

impl Ctx {
    fn resolve<'n>(&'n self, n: &'n str) -> &'n str {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(n))
            .map_or(n, |s| s.as_str())
    }
}

struct Inliner<'a, 'p> {
    p: &'a Parser<'p>,
    out: Vec<Stmt>,
    frame: HashSet<String>,
    instances: u32,
    fresh: u32,
}

impl Inliner<'_, '_> {
    /// A call of the builtin `vprintf(fmt, args)` or
    /// `__assertfail(message, file, line, function, charSize)`: its
    /// parameters loaded from the caller's frame into fresh registers, then
    /// the pseudo-instruction `call#NAME` (decoded to [`Op::Vprintf`] /
    /// [`Op::AssertFail`]), then `vprintf`'s result stored.
    ///
    /// [`Op::Vprintf`]: super::super::ir::Op::Vprintf
    /// [`Op::AssertFail`]: super::super::ir::Op::AssertFail
    fn builtin(
        &mut self,
        line: u32,
        fname: &str,
        k: u32,
        rets: &[String],
        args: &[String],
    ) -> Result<(), SimError> {
        let id = |s: &str| Tok::Id(s.to_string());
        let reg = |n: &str| format!("%{n}@{fname}#{k}");
        let (wanted, types): (&[&str], &[&str]) = if fname == "vprintf" {
            (&["fmt", "args"], &[".b64", ".b64"])
        } else {
            (
                &["message", "file", "line", "function"],
                &[".b64", ".b64", ".b32", ".b64"],
            )
        };
        let nret = usize::from(fname == "vprintf");
        if args.len() < wanted.len() || rets.len() > nret {
            return Err(self
                .p
                .perr(line, format!("`{fname}` takes {} parameters", wanted.len())));
        }
        let mut ops = Vec::new();
        if nret == 1 {
            let r = reg("ret");
            self.push(Stmt {
                line,
                toks: vec![id(".reg"), id(".b32"), id(&r)],
            })?;
            ops.push(r);
        }
        for ((n, ty), a) in wanted.iter().zip(types.iter()).zip(args) {
            let r = reg(n);
            self.push(Stmt {
                line,
                toks: vec![id(".reg"), id(ty), id(&r)],
            })?;
            self.push(Stmt {
                line,
                toks: vec![
                    id(&format!("ld.param{ty}")),
                    id(&r),
                    Tok::P(','),
                    Tok::P('['),
                    id(a),
                    Tok::P(']'),
                ],
            })?;
            ops.push(r);
        }
        let mut toks = vec![id(&format!("call#{fname}"))];
        for (i, o) in ops.iter().enumerate() {
            if i > 0 {
                toks.push(Tok::P(','));
            }
            toks.push(id(o));
        }
        self.push(Stmt { line, toks })?;
        if let (Some(r), true) = (rets.first(), nret == 1) {
            self.push(Stmt {
                line,
                toks: vec![
                    id("st.param.b32"),
                    Tok::P('['),
                    id(r),
                    Tok::P(']'),
                    Tok::P(','),
                    id(&ops[0]),
                ],
            })?;
        }
        Ok(())
    }

    /// The name a declaration of `name` gets in `ctx` (and records it in
    /// the innermost scope).
    fn declare(&mut self, ctx: &mut Ctx, name: &str) -> String {
        let base = match &ctx.func {
            Some((f, k)) => format!("{name}@{f}#{k}"),
            None => name.to_string(),
        };
        let top_of_entry = ctx.func.is_none() && ctx.scopes.len() == 1;
        let new = if top_of_entry || !ctx.declared.contains(&base) {
            base
        } else {
            self.fresh += 1;
            format!("{base}#{}", self.fresh)
        };
        ctx.declared.insert(new.clone());
        if let Some(s) = ctx.scopes.last_mut() {
            s.insert(name.to_string(), new.clone());
        }
        new
    }

    fn push(&mut self, st: Stmt) -> Result<(), SimError> {
        if self.out.len() >= MAX_INLINED {
            return Err(self.p.unsup(
                st.line,
                format!("more than {MAX_INLINED} statements after inlining the calls"),
            ));
        }
        self.out.push(st);
        Ok(())
    }

    fn expand(&mut self, stmts: &[Stmt], ctx: &mut Ctx) -> Result<(), SimError> {
        // labels are function-scoped: rename them all up front
        if let Some((f, k)) = ctx.func.clone() {
            for st in stmts {
                if let [Tok::Id(l), Tok::P(':')] = &st.toks[..] {
                    ctx.scopes[0].insert(l.clone(), format!("{l}@{f}#{k}"));
                }
            }
        }
        for st in stmts {
            if is_marker(st, '{') {
                ctx.scopes.push(HashMap::new());
                continue;
            }
            if is_marker(st, '}') {
                ctx.scopes.pop();
                continue;
            }
            let line = st.line;
            match st.toks.first() {
                Some(Tok::Id(d)) if d == ".reg" => self.reg_decl(st, ctx)?,
                Some(Tok::Id(d)) if d == ".param" || d == ".local" => {
                    let mut toks = st.toks.clone();
                    let at = toks
                        .iter()
                        .position(|t| matches!(t, Tok::Id(s) if !s.starts_with('.')))
                        .ok_or_else(|| self.p.perr(line, "declaration without a name"))?;
                    let Tok::Id(name) = toks[at].clone() else {
                        unreachable!()
                    };
                    let new = self.declare(ctx, &name);
                    if d == ".param" {
                        toks[0] = Tok::Id(".local".into());
                        self.frame.insert(new.clone());
                    }
                    toks[at] = Tok::Id(new);
                    self.push(Stmt { line, toks })?;
                }
                Some(Tok::Id(d)) if d == ".shared" && ctx.func.is_some() => {
                    return Err(self.p.unsup(line, ".shared declared inside a .func"));
                }
                // a prototype only matters to an indirect call, refused
                Some(Tok::Id(d)) if d == ".callprototype" => {}
                Some(Tok::Id(d)) if d.starts_with('.') => self.push(st.clone())?,
                _ => self.instruction(st, ctx)?,
            }
        }
        Ok(())
    }

    /// `.reg .type a, b<4>, …`: pass through unchanged at the entry's top
    /// level, else with each name (ranges expanded) renamed.
    fn reg_decl(&mut self, st: &Stmt, ctx: &mut Ctx) -> Result<(), SimError> {
        let line = st.line;
        let mut types = Vec::new();
        let mut names = Vec::new();
        let mut i = 1;
        while i < st.toks.len() {
            match &st.toks[i] {
                Tok::Id(s) if s == ".align" => {
                    types.push(st.toks[i].clone());
                    if let Some(t) = st.toks.get(i + 1) {
                        types.push(t.clone());
                    }
                    i += 1;
                }
                Tok::Id(s) if s.starts_with('.') => types.push(st.toks[i].clone()),
                Tok::Id(s) => {
                    if st.toks.get(i + 1) == Some(&Tok::P('<')) {
                        let n = match st.toks.get(i + 2) {
                            Some(Tok::Num(n)) => n.parse::<u32>().ok(),
                            _ => None,
                        };
                        let Some(n) = n.filter(|&n| n <= 1 << 16) else {
                            // let the decoder refuse it as it always has
                            return self.push(st.clone());
                        };
                        names.extend((0..n).map(|k| format!("{s}{k}")));
                        i += 3;
                    } else {
                        names.push(s.clone());
                    }
                }
                Tok::P(',') => {}
                _ => return self.push(st.clone()),
            }
            i += 1;
        }
        let mut same = true;
        let mut renamed = Vec::with_capacity(names.len());
        for n in &names {
            let new = self.declare(ctx, n);
            same &= new == *n;
            renamed.push(new);
        }
        if same {
            return self.push(st.clone());
        }
        if renamed.is_empty() {
            return Err(self.p.perr(line, ".reg without a name"));
        }
        let mut toks = vec![Tok::Id(".reg".into())];
        toks.extend(types);
        for (k, n) in renamed.into_iter().enumerate() {
            if k > 0 {
                toks.push(Tok::P(','));
            }
            toks.push(Tok::Id(n));
        }
        self.push(Stmt { line, toks })
    }

    fn instruction(&mut self, st: &Stmt, ctx: &mut Ctx) -> Result<(), SimError> {
        let line = st.line;
        let toks: Vec<Tok> = st
            .toks
            .iter()
            .map(|t| match t {
                Tok::Id(s) => Tok::Id(ctx.resolve(s).to_string()),
                t => t.clone(),
            })
            .collect();
        // guard and opcode
        let (guard, rest) = match toks.first() {
            Some(Tok::P('@')) => {
                let g = if toks.get(1) == Some(&Tok::P('!')) {
                    3
                } else {
                    2
                };
                (
                    toks[..g.min(toks.len())].to_vec(),
                    &toks[g.min(toks.len())..],
                )
            }
            _ => (Vec::new(), &toks[..]),
        };
        let op = match rest.first() {
            Some(Tok::Id(s)) => s.clone(),
            _ => return self.push(Stmt { line, toks }), // the decoder refuses it
        };
        if let [Tok::Id(_), Tok::P(':')] = &toks[..] {
            return self.push(Stmt { line, toks });
        }
        if op == "call" || op == "call.uni" {
            let rest = rest[1..].to_vec();
            return self.call(line, guard, &rest, ctx);
        }
        if op.starts_with("call.") {
            return Err(self
                .p
                .unsup(line, format!("`{op}`: only `call` and `call.uni` exist")));
        }
        if let Some(end) = &ctx.ret_label
            && (op == "ret" || op == "ret.uni")
        {
            let mut toks = guard;
            toks.push(Tok::Id("bra".into()));
            toks.push(Tok::Id(end.clone()));
            return self.push(Stmt { line, toks });
        }
        let param_access = op.starts_with("ld.param") || op.starts_with("st.param");
        if !param_access
            && let Some(Tok::Id(v)) = rest[1..]
                .iter()
                .find(|t| matches!(t, Tok::Id(s) if self.frame.contains(s)))
        {
            let v = v.split('@').next().unwrap_or(v);
            return Err(self.p.unsup(
                line,
                format!("call parameter `{v}` used other than by ld.param/st.param (its address)"),
            ));
        }
        self.push(Stmt { line, toks })
    }

    /// Inline one `call` (`rest` = the tokens after the opcode, names
    /// already resolved in the caller's scope).
    fn call(
        &mut self,
        line: u32,
        guard: Vec<Tok>,
        rest: &[Tok],
        ctx: &mut Ctx,
    ) -> Result<(), SimError> {
        let p = self.p;
        let bad = |m: &str| p.perr(line, format!("malformed call: {m}"));
        let mut i = 0;
        let list = |i: &mut usize| -> Result<Vec<String>, SimError> {
            // at `(`
            *i += 1;
            let mut v = Vec::new();
            loop {
                match rest.get(*i) {
                    Some(Tok::P(')')) => {
                        *i += 1;
                        return Ok(v);
                    }
                    Some(Tok::P(',')) => *i += 1,
                    Some(Tok::Id(s)) => {
                        v.push(s.clone());
                        *i += 1;
                    }
                    Some(t) => {
                        return Err(p.unsup(
                            line,
                            format!("call operand {t:?} (only .param variables are supported)"),
                        ));
                    }
                    None => return Err(bad("unclosed `(`")),
                }
            }
        };
        let rets = if rest.first() == Some(&Tok::P('(')) {
            let r = list(&mut i)?;
            if rest.get(i) != Some(&Tok::P(',')) {
                return Err(bad("expected `,` after the return list"));
            }
            i += 1;
            r
        } else {
            Vec::new()
        };
        let fname = match rest.get(i) {
            Some(Tok::Id(f)) => f.clone(),
            _ => return Err(bad("expected the function name")),
        };
        i += 1;
        if fname.starts_with('%') {
            return Err(p.unsup(line, "indirect call through a register"));
        }
        let mut args = Vec::new();
        if rest.get(i) == Some(&Tok::P(',')) && rest.get(i + 1) == Some(&Tok::P('(')) {
            i += 1;
            args = list(&mut i)?;
        }
        if i < rest.len() {
            return Err(p.unsup(line, "call with a prototype or a target list"));
        }
        for a in rets.iter().chain(&args) {
            if !self.frame.contains(a) {
                return Err(p.unsup(
                    line,
                    format!("call argument `{a}` is not a .param variable of the caller"),
                ));
            }
        }
        let def = match p.funcs.defs.get(&fname) {
            Some(d) => d,
            None => {
                return Err(p.perr(line, format!("call of undeclared function `{fname}`")));
            }
        };
        let builtin = def.body.is_none() && matches!(fname.as_str(), "vprintf" | "__assertfail");
        if def.body.is_none() && !builtin {
            return Err(p.unsup(
                line,
                format!(
                    "call of the external function `{fname}`, which the simulator does not implement"
                ),
            ));
        }
        if def.rets.len() != rets.len() || def.params.len() != args.len() {
            return Err(p.perr(
                line,
                format!(
                    "`{fname}` takes {} return value(s) and {} parameter(s), the call passes {} and {}",
                    def.rets.len(),
                    def.params.len(),
                    rets.len(),
                    args.len()
                ),
            ));
        }
        let too_deep = ctx.stack.iter().filter(|f| **f == fname).count() >= MAX_RECURSION;
        self.instances += 1;
        let k = self.instances;
        let skip = if guard.is_empty() {
            None
        } else {
            // `@p call` → `@!p bra skip; <callee>; skip:`
            let l = format!("$__skip_call@{fname}#{k}");
            let mut toks = vec![Tok::P('@')];
            match &guard[..] {
                [_, Tok::P('!'), p] => toks.push(p.clone()),
                [_, p] => {
                    toks.push(Tok::P('!'));
                    toks.push(p.clone());
                }
                _ => return Err(bad("guard")),
            }
            toks.push(Tok::Id("bra".into()));
            toks.push(Tok::Id(l.clone()));
            self.push(Stmt { line, toks })?;
            Some(l)
        };
        if builtin {
            self.builtin(line, &fname, k, &rets, &args)?;
            if let Some(l) = skip {
                self.push(Stmt {
                    line,
                    toks: vec![Tok::Id(l), Tok::P(':')],
                })?;
            }
            return Ok(());
        }
        if too_deep {
            // The recursion's stand-in for a stack overflow: a trap where
            // the call would go deeper (branched around like the call).
            self.push(Stmt {
                line,
                toks: vec![Tok::Id("call#too_deep".into())],
            })?;
            if let Some(l) = skip {
                self.push(Stmt {
                    line,
                    toks: vec![Tok::Id(l), Tok::P(':')],
                })?;
            }
            return Ok(());
        }
        let Some(body) = &def.body else {
            unreachable!("checked above")
        };
        let end = format!("$__ret@{fname}#{k}");
        let mut base = HashMap::new();
        for (f, a) in def
            .rets
            .iter()
            .zip(&rets)
            .chain(def.params.iter().zip(&args))
        {
            base.insert(f.clone(), a.clone());
        }
        let mut stack = ctx.stack.clone();
        stack.push(fname.clone());
        let mut inner = Ctx {
            func: Some((fname, k)),
            scopes: vec![base],
            declared: HashSet::new(),
            ret_label: Some(end.clone()),
            stack,
        };
        self.expand(body, &mut inner)?;
        for l in std::iter::once(end).chain(skip) {
            self.push(Stmt {
                line,
                toks: vec![Tok::Id(l), Tok::P(':')],
            })?;
        }
        Ok(())
    }
}
