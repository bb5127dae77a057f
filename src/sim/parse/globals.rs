//! Module-scope `.global` variables: their declarations (`.global`,
//! `.visible .global`, `.weak .global`, `.common .global`, `.extern
//! .global`), initialisers, the module's global image, and the relocation
//! of their addresses when a module is loaded.
//!
//! # Where a variable's address is resolved
//!
//! A [`Program`] is context-independent: it can be cached and loaded into
//! many simulators (contexts), each of which gives the module's variables
//! their own storage, as each `cuModuleLoad` on a GPU does. So the parser
//! lays the variables out in one *module image* (offsets from its start,
//! each variable aligned, the bytes of the initialisers, zero elsewhere) and
//! resolves every use of a variable's name (`mov.u64 %rd1, var;`,
//! `ld.global.u32 %r1, [var+8];`, a generic access) to the placeholder
//! address `MODULE_WINDOW + offset`, recording the instruction and source
//! slot as a relocation of the entry; an address initialiser (`.u64 p =
//! generic(x)+8`) holds the placeholder in the image and is recorded as a
//! relocation of the image. Loading the module
//! ([`Sim::load_module`](crate::sim::Sim::load_module)) allocates the
//! image in the simulator's global memory (written whole, so every byte
//! counts as initialised for the initialisation check, as a GPU zero-fills
//! variables without an initialiser), and returns a copy of the program
//! whose relocations point into that allocation ([`Program::relocated`]),
//! its execution form lowered again. The variables then are ordinary global
//! memory: bounds, race and initialisation checks see them, and they keep
//! their values across launches of the loaded module. A program with
//! variables that was not loaded is refused at launch rather than run with
//! placeholder addresses.

use std::collections::{HashMap, HashSet};

use super::super::code;
use super::super::error::SimError;
use super::super::global_mem::MODULE_WINDOW;
use super::super::ir::{Inst, Src};
use super::Program;
use super::directives::{Parser, Stmt};
use super::lex::{Lit, Tok, parse_num};
use super::operands::{Cls, imm_bits};

/// Largest alignment of a module variable (global allocations are
/// 256-byte aligned).
const MAX_ALIGN: u64 = 256;
/// Largest module image (sum of the variables).
const MAX_IMAGE: u64 = 1 << 30;

/// A module-scope `.global` variable (a definition: with or without an
/// initialiser, `.common` included), laid out in the module image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalVar {
    /// The variable's name in the PTX.
    pub name: String,
    /// Byte offset in the module image.
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
    /// Alignment in bytes.
    pub align: u64,
}

/// The module's `.global` declarations while the module is parsed.
#[derive(Debug, Default)]
pub(super) struct Globals {
    pub(super) vars: Vec<GlobalVar>,
    pub(super) image: Vec<u8>,
    /// `.common` variables: name → index in `vars` (a later, larger
    /// `.common` declaration of the same name grows it).
    common: HashMap<String, usize>,
    /// `.extern .global` names (declared, maybe never defined here).
    pub(super) externs: HashSet<String>,
    /// Address initialisers: (line, image offset, variable, addend).
    addrs: Vec<(u32, u64, String, i64)>,
}

impl Globals {
    /// Name → placeholder address (`MODULE_WINDOW + offset`).
    pub(super) fn addresses(&self) -> impl Iterator<Item = (&str, u64)> {
        self.vars
            .iter()
            .map(|v| (v.name.as_str(), MODULE_WINDOW + v.offset))
    }

    /// `.extern` names without a definition in this module.
    pub(super) fn undefined(&self) -> HashSet<String> {
        self.externs
            .iter()
            .filter(|n| !self.vars.iter().any(|v| &v.name == *n))
            .cloned()
            .collect()
    }

    fn place(&mut self, name: String, size: u64, align: u64) -> u64 {
        let off = (self.image.len() as u64).div_ceil(align) * align;
        self.image.resize((off + size) as usize, 0);
        self.vars.push(GlobalVar {
            name,
            offset: off,
            size,
            align,
        });
        off
    }
}

impl Parser<'_> {
    /// A module-scope `.global` declaration (the tokens after `.global`, up
    /// to its `;`), with its linkage qualifier: `.extern` declares a name
    /// defined elsewhere, `.common` a variable that several declarations
    /// share (the largest wins), anything else defines it.
    pub(super) fn global_decl(
        &mut self,
        line: u32,
        linkage: &str,
        toks: &[Tok],
    ) -> Result<(), SimError> {
        let (name, size, align, init) = self.var_decl(line, toks)?;
        if align > MAX_ALIGN {
            return Err(self.unsup(
                line,
                format!(".align {align} of a module variable (at most {MAX_ALIGN})"),
            ));
        }
        let defined = self.globals.vars.iter().position(|v| v.name == name);
        match linkage {
            ".extern" => {
                if !init.is_empty() {
                    return Err(self.perr(line, "an .extern variable cannot be initialised"));
                }
                self.globals.externs.insert(name);
                return Ok(());
            }
            ".common" => {
                if !init.is_empty() {
                    return Err(self.perr(line, "a .common variable cannot be initialised"));
                }
                match (self.globals.common.get(&name), defined) {
                    // the same .common again: the larger one, at the end
                    (Some(&i), _) => {
                        let v = &self.globals.vars[i];
                        if size > v.size || align > v.align {
                            if i + 1 != self.globals.vars.len() {
                                return Err(self.unsup(
                                    line,
                                    format!("`.common` `{name}` grown after other variables"),
                                ));
                            }
                            let v = self.globals.vars.pop().expect("index");
                            self.globals.image.truncate(v.offset as usize);
                            self.globals
                                .place(name, size.max(v.size), align.max(v.align));
                        }
                    }
                    // a definition elsewhere in the module wins
                    (None, Some(_)) => {}
                    (None, None) => {
                        self.globals.place(name.clone(), size, align);
                        let i = self.globals.vars.len() - 1;
                        self.globals.common.insert(name, i);
                    }
                }
                return Ok(());
            }
            _ => {}
        }
        if let Some(i) = defined {
            if self.globals.common.remove(&name).is_none() {
                return Err(self.perr(line, format!("`{name}` is defined twice")));
            }
            // a definition replaces a `.common` declaration if it is last
            if i + 1 != self.globals.vars.len() {
                return Err(self.unsup(
                    line,
                    format!("`{name}` defined after a .common declaration and other variables"),
                ));
            }
            let v = self.globals.vars.pop().expect("index");
            self.globals.image.truncate(v.offset as usize);
        }
        let off = self.globals.place(name, size, align);
        if self.globals.image.len() as u64 > MAX_IMAGE {
            return Err(self.unsup(line, "module variables beyond 1 GiB"));
        }
        let elem = toks
            .iter()
            .filter_map(|t| match t {
                Tok::Id(s) if s.starts_with('.') && s != ".align" && !s.starts_with(".v") => {
                    super::operands::type_bytes(s).map(|b| (s.as_str(), b))
                }
                _ => None,
            })
            .next()
            .unwrap_or((".b8", 1));
        let cls = match elem.0 {
            ".f32" => Cls::F32,
            ".f64" => Cls::F64,
            _ => Cls::Int,
        };
        let range = off as usize..(off + size) as usize;
        let mut out = std::mem::take(&mut self.globals.image);
        let mut addrs = Vec::new();
        let r = self.fill_init(
            line,
            elem.1 as usize,
            cls,
            &init,
            &mut out[range],
            &mut addrs,
        );
        self.globals.image = out;
        (self.globals.addrs).extend(addrs.into_iter().map(|(k, n, a)| (line, off + k, n, a)));
        r
    }

    /// Write the initialiser `init` (`5`, `{1, 2, 3}`, nested braces,
    /// negative and float literals) as `elem`-byte values of class `cls`
    /// into `out` (the variable's bytes; the rest stays zero). An address
    /// element (`var`, `generic(var)`, either `+ N`) of a 64-bit variable
    /// is recorded in `addrs` as `(byte offset in out, name, addend)`; it
    /// is resolved when the module is complete.
    pub(super) fn fill_init(
        &self,
        line: u32,
        elem: usize,
        cls: Cls,
        init: &[Tok],
        out: &mut [u8],
        addrs: &mut Vec<(u64, String, i64)>,
    ) -> Result<(), SimError> {
        let mut k = 0usize;
        let mut neg = false;
        let mut i = 0;
        let len = out.len();
        let full = |k: usize| {
            (k + elem > len).then(|| {
                self.perr(
                    line,
                    format!(
                        "more initialisers than the variable's {} elements",
                        len / elem.max(1)
                    ),
                )
            })
        };
        while i < init.len() {
            match &init[i] {
                Tok::P('-') => neg = !neg,
                Tok::Num(n) => {
                    let lit = parse_num(n)
                        .ok_or_else(|| self.perr(line, format!("bad initialiser `{n}`")))?;
                    let v = imm_bits(lit, neg, cls);
                    neg = false;
                    if let Some(e) = full(k) {
                        return Err(e);
                    }
                    out[k..k + elem].copy_from_slice(&v.to_le_bytes()[..elem]);
                    k += elem;
                }
                Tok::P('{') | Tok::P('}') | Tok::P(',') => {}
                Tok::Id(s) => {
                    // `generic(name)` or `name`, then `+ N` / `- N`
                    let name = match (
                        s.as_str(),
                        init.get(i + 1),
                        init.get(i + 2),
                        init.get(i + 3),
                    ) {
                        ("generic", Some(Tok::P('(')), Some(Tok::Id(n)), Some(Tok::P(')'))) => {
                            i += 3;
                            n.clone()
                        }
                        _ => s.clone(),
                    };
                    let mut addend = 0i64;
                    if let (Some(Tok::P(c @ ('+' | '-'))), Some(Tok::Num(n))) =
                        (init.get(i + 1), init.get(i + 2))
                    {
                        let v = match parse_num(n) {
                            Some(Lit::Int(v)) => v as i64,
                            _ => return Err(self.perr(line, format!("bad offset `{n}`"))),
                        };
                        addend = if *c == '-' { -v } else { v };
                        i += 2;
                    }
                    if elem != 8 || cls != Cls::Int || neg {
                        return Err(self.unsup(
                            line,
                            format!(
                                "address initialiser `{name}` in a variable that is not a \
                                 64-bit integer"
                            ),
                        ));
                    }
                    if let Some(e) = full(k) {
                        return Err(e);
                    }
                    addrs.push((k as u64, name, addend));
                    k += elem;
                }
                t => return Err(self.unsup(line, format!("initialiser {t:?}"))),
            }
            i += 1;
        }
        Ok(())
    }

    /// Resolve the address initialisers once every variable is known: the
    /// image holds each one's placeholder address, and the module keeps
    /// `(image offset, target image offset)` for the load to relocate.
    /// An address of anything but a module `.global` variable is refused.
    pub(super) fn finish_globals(&mut self) -> Result<Vec<(u64, u64)>, SimError> {
        let mut out = Vec::new();
        for (line, at, name, addend) in std::mem::take(&mut self.globals.addrs) {
            let Some(v) = self.globals.vars.iter().find(|v| v.name == name) else {
                return Err(self.unsup(
                    line,
                    format!(
                        "address initialiser `{name}`: only the address of a module .global \
                         variable is supported"
                    ),
                ));
            };
            let target = (v.offset as i64).wrapping_add(addend) as u64;
            let a = at as usize;
            self.globals.image[a..a + 8]
                .copy_from_slice(&MODULE_WINDOW.wrapping_add(target).to_le_bytes());
            out.push((at, target));
        }
        Ok(out)
    }
}

impl Parser<'_> {
    /// Refuse an instruction that uses an `.extern .global` this module
    /// does not define (the simulator links no other module).
    pub(super) fn check_extern_use(
        &self,
        st: &Stmt,
        undefined: &HashSet<String>,
    ) -> Result<(), SimError> {
        if undefined.is_empty() {
            return Ok(());
        }
        for t in &st.toks {
            if let Tok::Id(n) = t
                && undefined.contains(n)
            {
                return Err(self.unsup(
                    st.line,
                    format!(
                        "`{n}` is declared `.extern .global` but not defined in this module \
                         (the simulator links no other module)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Record the source slots of `inst` (instruction `pc` of its entry)
    /// that hold a module variable's placeholder address.
    pub(super) fn record_relocs(
        &self,
        st: &Stmt,
        inst: &Inst,
        pc: u32,
        relocs: &mut Vec<(u32, u8)>,
    ) {
        if self.globals.vars.is_empty() {
            return;
        }
        let end = MODULE_WINDOW + self.globals.image.len() as u64;
        let in_window = |s: &Src| matches!(s, Src::Imm(v) if (MODULE_WINDOW..=end).contains(v));
        // cheap first: a placeholder-valued source at all, then whether the
        // statement names a variable (not a literal of the same value)
        if !inst.s.iter().any(in_window)
            || !st
                .toks
                .iter()
                .any(|t| matches!(t, Tok::Id(n) if self.globals.vars.iter().any(|v| &v.name == n)))
        {
            return;
        }
        for (k, s) in inst.s.iter().enumerate() {
            if in_window(s) {
                relocs.push((pc, k as u8));
            }
        }
    }
}

impl Program {
    /// The module-scope `.global` variables (definitions, `.common`
    /// included), laid out in the module image.
    pub fn globals(&self) -> &[GlobalVar] {
        &self.globals
    }

    /// Size in bytes of the module image: the `.global` variables, then
    /// (from [`Program::const_image_offset`]) the device copy of the
    /// `.const` bank.
    pub fn global_image_len(&self) -> usize {
        if self.consts.is_empty() {
            self.global_image.len()
        } else {
            self.const_image_offset() as usize + self.consts.len()
        }
    }

    /// Size in bytes of the module's `.const` bank (its `.const`
    /// variables; 0 without any).
    pub fn const_bank_len(&self) -> usize {
        self.consts.len()
    }

    /// Where the `.const` bank's device copy starts in the module image
    /// (after the `.global` variables, 256-byte aligned). Launches read
    /// the bank from there, so a host write to a `.const` variable's
    /// address (what `cuModuleGetGlobal` + `cuMemcpyHtoD` do to a
    /// `__constant__` variable) is seen by every later launch; a kernel
    /// running reads the bank as it was when the launch started.
    pub fn const_image_offset(&self) -> u64 {
        (self.global_image.len() as u64).div_ceil(256) * 256
    }

    /// The device address and size of the module variable `name` (a
    /// `.global` or a `.const` one), once the program is loaded
    /// ([`Sim::load_module`](crate::sim::Sim::load_module)); `None` for an
    /// unknown name or a program not loaded.
    pub fn global(&self, name: &str) -> Option<(u64, u64)> {
        let base = self.global_base?;
        if let Some(v) = self.globals.iter().find(|v| v.name == name) {
            return Some((base + v.offset, v.size));
        }
        self.const_vars
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|&(_, off, size)| (base + self.const_image_offset() + off, size))
    }

    /// The address of the module image once loaded.
    pub fn global_base(&self) -> Option<u64> {
        self.global_base
    }

    /// The initial bytes of the module image (the initialisers, zero
    /// elsewhere; address initialisers hold placeholder addresses until
    /// the program is loaded).
    pub fn global_image(&self) -> &[u8] {
        &self.global_image
    }

    /// A copy whose module variables live at `base` (the address of an
    /// allocation of [`Program::global_image_len`] bytes): every
    /// relocation of every entry points there, and so does every address
    /// initialiser in the image; the execution form is lowered again. The program itself is unchanged.
    pub fn relocated(&self, base: u64) -> Program {
        let mut p = self.clone();
        let old = self.global_base.unwrap_or(MODULE_WINDOW);
        for &(at, target) in &self.global_relocs {
            let a = at as usize;
            p.global_image[a..a + 8].copy_from_slice(&base.wrapping_add(target).to_le_bytes());
        }
        for e in &mut p.entries {
            if e.relocs.is_empty() {
                continue;
            }
            for &(pc, slot) in &e.relocs {
                if let Src::Imm(v) = &mut e.insts[pc as usize].s[slot as usize] {
                    *v = *v - old + base;
                }
            }
            e.code = code::lower(e);
        }
        p.global_base = Some(base);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = ".version 8.7\n.target sm_89\n.address_size 64\n";
    const BODY: &str = ".visible .entry k()\n{\n.reg .b64 %rd<4>;\n.reg .b32 %r<4>;\nret;\n}\n";

    fn parse(decls: &str, body: &str) -> Result<Program, SimError> {
        Program::parse(&format!("{HEAD}{decls}\n{body}"))
    }

    fn var<'a>(p: &'a Program, n: &str) -> &'a GlobalVar {
        p.globals().iter().find(|v| v.name == n).expect(n)
    }

    fn bytes<'a>(p: &'a Program, n: &str) -> &'a [u8] {
        let v = var(p, n);
        &p.global_image()[v.offset as usize..(v.offset + v.size) as usize]
    }

    #[test]
    fn plain_global_with_an_array_initialiser() {
        let p = parse(
            ".global .align 4 .b8 __cudart_i2opi_f[6] = {65, 144, 67, 131, 0, 255};",
            BODY,
        )
        .unwrap();
        let v = var(&p, "__cudart_i2opi_f");
        assert_eq!((v.offset, v.size, v.align), (0, 6, 4));
        assert_eq!(bytes(&p, "__cudart_i2opi_f"), &[65, 144, 67, 131, 0, 255]);
        // not loaded: no address yet
        assert_eq!(p.global("__cudart_i2opi_f"), None);
        assert_eq!(p.global_base(), None);
    }

    #[test]
    fn visible_scalar_and_partial_initialiser_zero_fills() {
        let p = parse(
            ".visible .global .u32 one = 5;\n.global .align 8 .u64 t[4] = {1, -2};",
            BODY,
        )
        .unwrap();
        assert_eq!(bytes(&p, "one"), &5u32.to_le_bytes());
        let v = var(&p, "t");
        assert_eq!((v.offset, v.size, v.align), (8, 32, 8));
        let mut want = Vec::new();
        for x in [1u64, (-2i64) as u64, 0, 0] {
            want.extend_from_slice(&x.to_le_bytes());
        }
        assert_eq!(bytes(&p, "t"), &want[..]);
        assert_eq!(p.global_image_len(), 40);
    }

    #[test]
    fn float_initialisers_hex_and_decimal() {
        let p = parse(
            ".global .f32 f[3] = {0f3F800000, 2.5, -1.0};\n\
             .global .f64 d[2] = {0d4000000000000000, -0.5};",
            BODY,
        )
        .unwrap();
        let mut want = Vec::new();
        for x in [1.0f32, 2.5, -1.0] {
            want.extend_from_slice(&x.to_bits().to_le_bytes());
        }
        assert_eq!(bytes(&p, "f"), &want[..]);
        let mut want = Vec::new();
        for x in [2.0f64, -0.5] {
            want.extend_from_slice(&x.to_bits().to_le_bytes());
        }
        assert_eq!(bytes(&p, "d"), &want[..]);
    }

    #[test]
    fn string_table_and_nested_braces() {
        let p = parse(
            ".global .align 1 .b8 $str[3] = {72, 105, 0};\n\
             .global .u16 m[2][2] = {{1, 2}, {3, 4}};",
            BODY,
        )
        .unwrap();
        assert_eq!(bytes(&p, "$str"), b"Hi\0");
        assert_eq!(bytes(&p, "m"), &[1, 0, 2, 0, 3, 0, 4, 0]);
    }

    #[test]
    fn common_is_zero_and_the_largest_declaration_wins() {
        let p = parse(
            ".common .global .align 8 .u64 _ZN08NumbaEnv;\n\
             .common .global .align 8 .b8 _ZN08NumbaEnv[16];",
            BODY,
        )
        .unwrap();
        assert_eq!(p.globals().len(), 1);
        let v = var(&p, "_ZN08NumbaEnv");
        assert_eq!((v.size, v.align), (16, 8));
        assert_eq!(bytes(&p, "_ZN08NumbaEnv"), &[0; 16]);
        // a definition replaces the .common one
        let p = parse(".common .global .u32 c;\n.global .u32 c = 9;", BODY).unwrap();
        assert_eq!(p.globals().len(), 1);
        assert_eq!(bytes(&p, "c"), &9u32.to_le_bytes());
    }

    #[test]
    fn extern_is_refused_only_when_used_undefined() {
        // declared, never used: fine, and not a variable of the module
        let p = parse(".extern .global .u32 e;", BODY).unwrap();
        assert!(p.globals().is_empty());
        // declared and defined later: the definition
        let used = ".visible .entry k()\n{\n.reg .b32 %r<2>;\nld.global.u32 %r1, [e];\nret;\n}\n";
        let p = parse(".extern .global .u32 e;\n.global .u32 e = 3;", used).unwrap();
        assert_eq!(bytes(&p, "e"), &3u32.to_le_bytes());
        // used, undefined: refused, naming it
        let e = parse(".extern .global .u32 e;", used).unwrap_err();
        assert!(
            matches!(&e, SimError::Unsupported { reason, .. } if reason.contains("`e`") && reason.contains(".extern")),
            "{e}"
        );
    }

    #[test]
    fn refusals() {
        let e = parse(".global .u32 a = 1;\n.global .u32 a = 2;", BODY).unwrap_err();
        assert!(e.to_string().contains("defined twice"), "{e}");
        let e = parse(".global .u32 a[2] = {1, 2, 3};", BODY).unwrap_err();
        assert!(e.to_string().contains("more initialisers"), "{e}");
        for bad in [
            ".global .u32 x;\n.global .u32 p = generic(x);",
            ".global .u64 p = generic(nowhere);",
            ".const .u32 c = 1;\n.global .u64 p = c;",
        ] {
            let e = parse(bad, BODY).unwrap_err();
            assert!(
                matches!(&e, SimError::Unsupported { reason, .. } if reason.contains("address initialiser")),
                "{bad}: {e}"
            );
        }
        let e = parse(".global .align 512 .u32 a;", BODY).unwrap_err();
        assert!(matches!(e, SimError::Unsupported { .. }), "{e}");
        let e = parse(".common .global .u32 a = 1;", BODY).unwrap_err();
        assert!(e.to_string().contains(".common"), "{e}");
    }

    #[test]
    fn a_parameter_shadows_a_module_variable_of_its_name() {
        let body = ".visible .entry k(.param .u64 t)\n{\n.reg .b64 %rd<2>;\n\
                    ld.param.u64 %rd1, [t];\nret;\n}\n";
        let p = parse(".global .u32 t = 1;", body).unwrap();
        assert!(p.entry("k").unwrap().relocs.is_empty());
    }

    #[test]
    fn address_initialisers_are_relocated_with_the_image() {
        let p = parse(
            ".global .align 4 .b8 $str[4] = {72, 105, 33, 0};\n\
             .global .align 8 .u64 names[3] = {generic($str), $str+2, later};\n\
             .global .u32 later = 7;",
            BODY,
        )
        .unwrap();
        let word = |img: &[u8], i: usize| {
            let o = var(&p, "names").offset as usize + 8 * i;
            u64::from_le_bytes(img[o..o + 8].try_into().unwrap())
        };
        let later = var(&p, "later").offset;
        // placeholders before the load
        assert_eq!(word(p.global_image(), 0), MODULE_WINDOW);
        assert_eq!(word(p.global_image(), 1), MODULE_WINDOW + 2);
        assert_eq!(word(p.global_image(), 2), MODULE_WINDOW + later);
        let r = p.relocated(0x5_0000_0000);
        assert_eq!(word(r.global_image(), 0), 0x5_0000_0000);
        assert_eq!(word(r.global_image(), 1), 0x5_0000_0002);
        assert_eq!(word(r.global_image(), 2), 0x5_0000_0000 + later);
        let r2 = r.relocated(0x6_0000_0000);
        assert_eq!(word(r2.global_image(), 1), 0x6_0000_0002);
    }

    #[test]
    fn uses_are_relocations_and_relocation_moves_them() {
        let body = ".visible .entry k()\n{\n.reg .b64 %rd<4>;\n.reg .b32 %r<4>;\n\
                    mov.u64 %rd1, t;\ncvta.global.u64 %rd2, %rd1;\n\
                    ld.global.u32 %r1, [t+4];\nld.u32 %r2, [u];\nadd.s64 %rd3, %rd1, 4096;\nret;\n}\n";
        let p = parse(".global .u32 t[2];\n.global .u32 u;", body).unwrap();
        let e = p.entry("k").unwrap();
        // mov, ld.global, ld (generic); not cvta or the add's literal
        assert_eq!(e.relocs.len(), 3, "{:?}", e.relocs);
        assert_eq!(e.insts[0].s[0], Src::Imm(MODULE_WINDOW));
        let r = p.relocated(0x1_0000_0000);
        let e = r.entry("k").unwrap();
        assert_eq!(e.insts[0].s[0], Src::Imm(0x1_0000_0000));
        assert_eq!(e.insts[2].s[0], Src::Imm(0x1_0000_0000));
        assert_eq!(e.insts[3].s[0], Src::Imm(0x1_0000_0008));
        assert_eq!(e.insts[4].s[1], Src::Imm(4096));
        assert_eq!(r.global("u"), Some((0x1_0000_0008, 4)));
        // relocating again starts from the relocated addresses
        let r2 = r.relocated(0x2_0000_0000);
        assert_eq!(
            r2.entry("k").unwrap().insts[3].s[0],
            Src::Imm(0x2_0000_0008)
        );
        // the original is untouched
        assert_eq!(p.entry("k").unwrap().insts[0].s[0], Src::Imm(MODULE_WINDOW));
    }
}
