//! Many cubins through one nvdisasm run per target.
//!
//! nvdisasm 13.5 spends about half a second starting up, whatever the size
//! of its input (measured on the CI machine: 0.55 s for a 2 KiB cubin,
//! 0.38 s for eight kernels' code at once in raw mode). A test suite that
//! disassembles a thousand modules pays that a thousand times. Here the
//! code sections of every cubin for one target are laid end to end and
//! disassembled in raw mode (`nvdisasm -b SM90 code.bin`) once; the
//! listing is cut back into functions by the offsets the sections were
//! laid at, each address (and each branch target) rebased to its own
//! section. Instructions decode the same wherever they lie: on every
//! target nvdisasm reads (sm_75 and later) an instruction is 16 bytes and
//! branches are relative, and the sections are laid at offsets aligned to
//! 16 bytes.
//!
//! What raw mode does not give: the labels (`.L_x_2`), which come from the
//! ELF symbols; branch targets are addresses instead (the listing prints
//! them rebased, `BRA 0x120`, which [`parse_sass_line`] reads).
//! `tests/nvtools_batch.rs` checks, module by module, that the functions
//! equal the ELF-mode ones of [`NvTools::disassemble`] (addresses, guards,
//! opcodes, operands and branch targets) on every target.

use rayon::prelude::*;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::ops::Range;

use object::read::elf::ElfFile64;
use object::{
    Endianness, Object as _, ObjectSection as _, ObjectSymbol as _, SectionKind, SymbolKind,
};

use super::{Assembly, NvTools, Sass, ToolError, parse_sass_line, run};
use crate::target::Sm;

/// One code section (`.text.<kernel>`): its bytes and the functions in
/// it, `(name, offset)` in address order (the kernel at 0, then any
/// subroutine ptxas placed after it, such as the slow path of `div.rn`).
struct Code<'a> {
    bytes: &'a [u8],
    functions: Vec<(String, u64)>,
}

/// The code sections of `cubin`, in section-table order, with their
/// function symbols (what nvdisasm lists, in the same order, in ELF mode).
fn code_sections(sm: Sm, cubin: &[u8]) -> Result<Vec<Code<'_>>, ToolError> {
    let bad = |what: String| ToolError::Nvdisasm {
        sm,
        status: "not run".into(),
        log: format!("the cubin could not be read: {what}"),
    };
    let file = ElfFile64::<Endianness>::parse(cubin).map_err(|e| bad(e.to_string()))?;
    let mut out = Vec::new();
    for s in file.sections() {
        let Ok(name) = s.name() else { continue };
        let Some(kernel) = name.strip_prefix(".text.") else {
            continue;
        };
        if s.kind() != SectionKind::Text {
            continue; // not executable (SHF_EXECINSTR)
        }
        let bytes = s.data().map_err(|e| bad(format!("{name}: {e}")))?;
        if bytes.len() % 16 != 0 {
            return Err(bad(format!(
                "{name} is {} bytes, not whole 16-byte instructions",
                bytes.len()
            )));
        }
        let mut functions: Vec<(String, u64)> = file
            .symbols()
            .filter(|y| y.kind() == SymbolKind::Text && y.section_index() == Some(s.index()))
            .filter_map(|y| Some((y.name().ok()?.to_string(), y.address())))
            .collect();
        functions.sort_by_key(|f| f.1);
        if functions.first().is_none_or(|f| f.1 != 0) {
            functions.insert(0, (kernel.to_string(), 0));
        }
        out.push(Code { bytes, functions });
    }
    Ok(out)
}

/// nvdisasm's name for `sm` in `--binary` (`SM90a`).
fn raw_arch(sm: Sm) -> String {
    format!("SM{}", sm.name().trim_start_matches("sm_"))
}

/// Where one function lies in the laid-out code.
struct Placed {
    /// Index of its cubin in the batch.
    cubin: usize,
    name: String,
    /// Its section's first byte and one past its last: addresses are
    /// listed relative to the section, as in ELF mode.
    section: Range<u32>,
    /// Its own bytes.
    start: u32,
    end: u32,
}

impl NvTools {
    /// [`disassemble`](Self::disassemble) for many cubins, with one
    /// nvdisasm run per target among them: each target's code sections are
    /// laid end to end, disassembled in raw mode (`nvdisasm -b SM90`) and
    /// cut back into functions by section and function symbol, addresses
    /// and code-address operands rebased to their section. The result for
    /// each cubin has the same functions, instructions, operands and branch
    /// targets as `disassemble` gives, no labels (branch operands are
    /// addresses), and a listing (`Sass::text`) with a `name:` line before
    /// each function's instructions. Cubins for a target nvdisasm does not
    /// read (sm_70) are run one by one, so each gets `disassemble`'s error;
    /// a cubin that is not an ELF file gets [`ToolError::Nvdisasm`] saying
    /// so, and the others are still read.
    pub fn disassemble_many(&self, cubins: &[&Assembly]) -> Vec<Result<Sass, ToolError>> {
        let mut results: Vec<Option<Result<Sass, ToolError>>> =
            cubins.iter().map(|_| None).collect();
        let mut by_sm: BTreeMap<Sm, Vec<usize>> = BTreeMap::new();
        for (i, a) in cubins.iter().enumerate() {
            by_sm.entry(a.sm).or_default().push(i);
        }
        // The targets on worker threads (a large target's run takes a few
        // seconds: nvdisasm's listing, not its start-up, then).
        let groups: Vec<(Sm, Vec<usize>)> = by_sm.into_iter().collect();
        let done: Vec<(usize, Result<Sass, ToolError>)> = (groups.par_iter())
            .flat_map_iter(|(sm, members)| self.one_target(*sm, cubins, members))
            .collect();
        for (i, r) in done {
            results[i] = Some(r);
        }
        results
            .into_iter()
            .map(|r| r.expect("every cubin has a result"))
            .collect()
    }

    /// [`disassemble_many`](Self::disassemble_many) for the cubins
    /// `members` (indices into `cubins`), all for `sm`.
    fn one_target(
        &self,
        sm: Sm,
        cubins: &[&Assembly],
        members: &[usize],
    ) -> Vec<(usize, Result<Sass, ToolError>)> {
        if !Self::can_disassemble(sm) {
            return members
                .iter()
                .map(|&i| (i, self.disassemble(cubins[i])))
                .collect();
        }
        let mut out = Vec::with_capacity(members.len());
        let mut code = Vec::new();
        let mut placed = Vec::new();
        let mut read = Vec::with_capacity(members.len());
        for &i in members {
            match code_sections(sm, &cubins[i].cubin) {
                Ok(sections) => {
                    read.push(i);
                    for s in sections {
                        let base = code.len() as u32;
                        code.extend_from_slice(s.bytes);
                        let section = base..code.len() as u32;
                        let ends = s.functions.iter().skip(1).map(|f| base + f.1 as u32);
                        let ends = ends.chain([section.end]);
                        for ((name, at), end) in s.functions.iter().zip(ends) {
                            placed.push(Placed {
                                cubin: i,
                                name: name.clone(),
                                section: section.clone(),
                                start: base + *at as u32,
                                end,
                            });
                        }
                    }
                }
                Err(e) => out.push((i, Err(e))),
            }
        }
        match self.disassemble_raw(sm, &code) {
            Ok(listing) => {
                let mut texts = split(&listing, &placed);
                for i in read {
                    let text = texts.remove(&i).unwrap_or_default();
                    let mut sass = Sass::parse(sm, &text);
                    sass.text = text;
                    out.push((i, Ok(sass)));
                }
            }
            Err(e) => out.extend(read.into_iter().map(|i| (i, Err(e.clone_for(sm))))),
        }
        out
    }

    /// nvdisasm on raw code for `sm`: its listing (stdout).
    fn disassemble_raw(&self, sm: Sm, code: &[u8]) -> Result<String, ToolError> {
        let args = [
            OsString::from("-b"),
            OsString::from(raw_arch(sm)),
            OsString::from("code.bin"),
        ];
        let out = run::run(
            &self.nvdisasm,
            &args,
            &[("code.bin", code)],
            None,
            self.cache.as_deref(),
        )?;
        if !out.success {
            return Err(ToolError::Nvdisasm {
                sm,
                status: out.status,
                log: format!("{}{}", out.stderr, out.stdout),
            });
        }
        Ok(out.stdout)
    }
}

impl ToolError {
    /// A copy of a batch's error for each of its cubins (`std::io::Error`
    /// is not `Clone`, so an I/O error is copied as its message).
    fn clone_for(&self, sm: Sm) -> ToolError {
        match self {
            ToolError::Io { context, source } => ToolError::Io {
                context: context.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            ToolError::Nvdisasm { status, log, .. } => ToolError::Nvdisasm {
                sm,
                status: status.clone(),
                log: log.clone(),
            },
            ToolError::Ptxas { .. } => ToolError::Nvdisasm {
                sm,
                status: "not run".into(),
                log: self.to_string(),
            },
        }
    }
}

/// Each cubin's listing (by its index in the batch), cut out of the raw
/// `listing` of the laid-out code at the `placed` offsets and rebased:
/// `.type name,@function` and `name:` before each function's instructions,
/// the form [`Sass::parse`] reads.
fn split(listing: &str, placed: &[Placed]) -> BTreeMap<usize, String> {
    // `placed` is in address order and so are the listing's lines: one pass.
    let mut body: Vec<String> = vec![String::new(); placed.len()];
    let mut at = 0;
    for line in listing.lines() {
        let Some(instr) = parse_sass_line(line.trim()) else {
            continue;
        };
        while at < placed.len() && instr.address >= placed[at].end {
            at += 1;
        }
        let Some(p) = placed.get(at).filter(|p| instr.address >= p.start) else {
            continue;
        };
        body[at].push_str(&rebase(line, &p.section));
        body[at].push('\n');
    }
    // Each cubin's functions in placement order, each after its header.
    let mut out: BTreeMap<usize, String> = BTreeMap::new();
    for (p, b) in placed.iter().zip(body) {
        let t = out.entry(p.cubin).or_default();
        let _ = writeln!(t, "\t.type\t{},@function", p.name);
        let _ = writeln!(t, "{}:", p.name);
        t.push_str(&b);
    }
    out
}

/// Base opcodes whose operand may be a code address (a label in ELF
/// mode, an absolute offset in raw mode).
const ADDRESS_OPS: &[&str] = &[
    "BRA", "BSSY", "CALL", "WARPSYNC", "BRX", "JMP", "BREAK", "RET",
];

/// `line` with its `/*addr*/` and any code address among its operands that
/// lies in `section` rebased to the section's start.
fn rebase(line: &str, section: &Range<u32>) -> String {
    let Some(instr) = parse_sass_line(line.trim()) else {
        return line.to_string();
    };
    let (addr_end, rest) = match line.find("*/") {
        Some(k) => line.split_at(k + 2),
        None => return line.to_string(),
    };
    let indent = &addr_end[..addr_end.find("/*").unwrap_or(0)];
    let mut out = format!("{indent}/*{:04x}*/", instr.address - section.start);
    if !ADDRESS_OPS.contains(&instr.base()) {
        out.push_str(rest);
        return out;
    }
    // Rewrite each `0x<hex>` token inside the section.
    let mut r = rest;
    while let Some(k) = r.find("0x") {
        let (before, tail) = r.split_at(k);
        out.push_str(before);
        let digits = tail[2..]
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(tail.len() - 2);
        let hex = &tail[2..2 + digits];
        let bounded = !before.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        match u32::from_str_radix(hex, 16) {
            Ok(v) if bounded && section.contains(&v) => {
                let _ = write!(out, "0x{:x}", v - section.start);
            }
            _ => out.push_str(&tail[..2 + digits]),
        }
        r = &tail[2 + digits..];
    }
    out.push_str(r);
    out
}
