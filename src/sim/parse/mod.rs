//! PTX text → [`Program`]: the pre-decoded form the executor runs.
//!
//! One concern per file:
//! * `lex`: comments, tokens and literals;
//! * `directives`: module-scope directives (`.version`, `.target`,
//!   `.shared`, `.const`, `.entry`), entry headers (parameters, performance
//!   directives) and entry-scope declarations (`.reg`, `.shared`, `.local`,
//!   labels), driving the decoder over the entry's instructions;
//! * `func`: `.func` definitions, `call` (inlined before decoding) and the
//!   scopes of `{ }` blocks;
//! * `operands`: operand syntax (registers, immediates, vectors,
//!   addresses) and its resolution to register slots and immediate bits;
//! * `decode`: instructions (opcode and modifiers → the IR's `Op`), with
//!   `decode_cvt` for `setp`/`cvt` and `decode_mem` for `ld`/`st`/`atom`.
//!
//! Anything not understood is refused with the line number and the
//! instruction text.

mod decode;
mod decode_async;
mod decode_cluster;
mod decode_cvt;
mod decode_mem;
mod decode_mma;
mod directives;
mod func;
#[cfg(test)]
mod func_tests;
mod globals;
mod lex;
mod operands;
#[cfg(test)]
mod tests;

use super::error::SimError;
use super::ir::*;
use directives::Parser;
pub use globals::GlobalVar;
use lex::Tok;
pub use lex::strip_comments;
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
    /// The `.const` variables: `(name, offset in the bank, size)`.
    pub(crate) const_vars: Vec<(String, u64, u64)>,
    /// Module-scope `.global` variables, laid out in the module image.
    pub(crate) globals: Vec<GlobalVar>,
    /// The module image's initial bytes.
    pub(crate) global_image: Vec<u8>,
    /// Where the image lives once loaded (`None`: addresses are the
    /// placeholders of `globals.rs`).
    pub(crate) global_base: Option<u64>,
    /// Address initialisers: `(image offset, target image offset)`.
    pub(crate) global_relocs: Vec<(u64, u64)>,
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
    /// The rule is [`Sm::target_runs_on`](crate::target::Sm::target_runs_on).
    pub fn runs_on(&self, cc: u32) -> bool {
        crate::target::Sm::target_runs_on((self.sm, self.suffix), cc)
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
