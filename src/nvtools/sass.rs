//! The SASS model (instructions, functions, loops, opcode counts) and the
//! parser for `nvdisasm -c` listings.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use crate::target::Sm;

/// One SASS instruction as nvdisasm prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SassInstr {
    /// Byte offset within the function's section (`/*0120*/`).
    pub address: u32,
    /// Guard predicate without the `@` (`P0`, `!P1`, `UPT`), if any.
    pub predicate: Option<String>,
    /// Opcode with modifiers, e.g. `FADD.FTZ`, `LDS.128`, `BRA`.
    pub opcode: String,
    /// The operand text, without the trailing `;`.
    pub operands: String,
    /// For branches (`BRA*`), the resolved target address.
    pub target: Option<u32>,
}

impl SassInstr {
    /// The opcode without modifiers (text before the first `.`).
    pub fn base(&self) -> &str {
        self.opcode.split('.').next().unwrap_or("")
    }

    /// Whether this instruction matches `op`: the full opcode when `op`
    /// has a `.` (`FADD.FTZ`), else the base opcode (`FADD`).
    pub fn is(&self, op: &str) -> bool {
        if op.contains('.') {
            self.opcode == op
        } else {
            self.base() == op
        }
    }
}

/// The disassembly of one function.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SassFunction {
    /// The function's (kernel's) name.
    pub name: String,
    /// Its instructions, in address order.
    pub instructions: Vec<SassInstr>,
    /// Labels (`.L_x_2`) and their addresses.
    pub labels: BTreeMap<String, u32>,
}

impl SassFunction {
    /// Instructions whose address lies in `range`.
    pub fn in_range<'a>(
        &'a self,
        range: &'a RangeInclusive<u32>,
    ) -> impl Iterator<Item = &'a SassInstr> + 'a {
        self.instructions
            .iter()
            .filter(move |i| range.contains(&i.address))
    }

    /// How many instructions match `op` (see [`SassInstr::is`]).
    pub fn count(&self, op: &str) -> usize {
        self.instructions.iter().filter(|i| i.is(op)).count()
    }

    /// Histogram of base opcodes.
    pub fn opcode_histogram(&self) -> BTreeMap<String, usize> {
        let mut h = BTreeMap::new();
        for i in &self.instructions {
            *h.entry(i.base().to_string()).or_insert(0) += 1;
        }
        h
    }

    /// Loops: for every backward branch (a `BRA*`, predicated or not, to a
    /// strictly earlier address) the range `target..=branch address`.
    /// Sorted by start then end, duplicates removed. Left out: the
    /// self-branch (`.L_x_3: BRA .L_x_3`) ptxas puts after the final
    /// `EXIT`, and a back-jump whose range holds an unguarded `EXIT`
    /// before the branch: out-of-line code placed after the kernel's exit
    /// (a `div.rn` slow path) jumping back to where it was called from,
    /// which runs the code in between once, not again.
    pub fn loops(&self) -> Vec<RangeInclusive<u32>> {
        let exits: Vec<u32> = (self.instructions.iter())
            .filter(|i| i.base() == "EXIT" && i.predicate.as_deref().is_none_or(|p| p == "PT"))
            .map(|i| i.address)
            .collect();
        let mut v: Vec<RangeInclusive<u32>> = self
            .instructions
            .iter()
            .filter(|i| i.base() == "BRA")
            .filter_map(|i| match i.target {
                Some(t) if t < i.address => Some(t..=i.address),
                _ => None,
            })
            .filter(|r| !exits.iter().any(|e| r.start() <= e && e < r.end()))
            .collect();
        v.sort_by_key(|r| (*r.start(), *r.end()));
        v.dedup();
        v
    }

    /// Loops that contain no other loop.
    pub fn innermost_loops(&self) -> Vec<RangeInclusive<u32>> {
        let all = self.loops();
        all.iter()
            .filter(|r| {
                !all.iter()
                    .any(|o| o != *r && r.start() <= o.start() && o.end() <= r.end())
            })
            .cloned()
            .collect()
    }

    /// The loop with the most instructions (the first on a tie).
    pub fn largest_loop(&self) -> Option<RangeInclusive<u32>> {
        let mut best: Option<(usize, RangeInclusive<u32>)> = None;
        for r in self.loops() {
            let n = self.in_range(&r).count();
            if best.as_ref().is_none_or(|(m, _)| n > *m) {
                best = Some((n, r));
            }
        }
        best.map(|(_, r)| r)
    }

    /// Fraction (0..=1) of the instructions in `range` that match one of
    /// `ops` (see [`SassInstr::is`]); 0 for an empty range.
    pub fn share(&self, range: &RangeInclusive<u32>, ops: &[&str]) -> f64 {
        let mut total = 0usize;
        let mut hit = 0usize;
        for i in self.in_range(range) {
            total += 1;
            if ops.iter().any(|op| i.is(op)) {
                hit += 1;
            }
        }
        if total == 0 {
            0.0
        } else {
            hit as f64 / total as f64
        }
    }
}

/// A disassembled cubin.
#[derive(Debug, Clone)]
pub struct Sass {
    /// The target.
    pub sm: Sm,
    /// The functions, in listing order.
    pub functions: Vec<SassFunction>,
    /// nvdisasm's complete stdout.
    pub text: String,
    /// nvdisasm's stderr (warnings).
    pub warnings: String,
}

impl Sass {
    /// Parse an `nvdisasm -c` listing.
    pub fn parse(sm: Sm, text: &str) -> Sass {
        Sass {
            sm,
            functions: parse_sass(text),
            text: text.to_string(),
            warnings: String::new(),
        }
    }

    /// The function called `name`.
    pub fn function(&self, name: &str) -> Option<&SassFunction> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// Loops of function `name` (see [`SassFunction::loops`]); empty when
    /// there is no such function.
    pub fn loops(&self, function: &str) -> Vec<RangeInclusive<u32>> {
        self.function(function)
            .map(SassFunction::loops)
            .unwrap_or_default()
    }

    /// Histogram of base opcodes over all functions.
    pub fn opcode_histogram(&self) -> BTreeMap<String, usize> {
        let mut h = BTreeMap::new();
        for f in &self.functions {
            for (k, v) in f.opcode_histogram() {
                *h.entry(k).or_insert(0) += v;
            }
        }
        h
    }

    /// How many instructions over all functions match `op` (see
    /// [`SassInstr::is`]).
    pub fn count(&self, op: &str) -> usize {
        self.functions.iter().map(|f| f.count(op)).sum()
    }
}

/// Parse an `nvdisasm` listing into functions. Lines that are not
/// instructions, labels or function starts are ignored.
pub fn parse_sass(text: &str) -> Vec<SassFunction> {
    let mut declared: Vec<String> = Vec::new();
    let mut funcs: Vec<SassFunction> = Vec::new();
    let mut pending_labels: Vec<String> = Vec::new();
    // (function index, instruction index, label) for branch targets.
    let mut unresolved: Vec<(usize, usize, String)> = Vec::new();

    let finish = |f: &mut SassFunction, pending: &mut Vec<String>| {
        // Labels after the last instruction (the `.size` end label) point
        // one instruction past it.
        let end = f.instructions.last().map_or(0, |i| i.address + 16);
        for l in pending.drain(..) {
            f.labels.insert(l, end);
        }
    };

    for line in text.lines() {
        let t = line.trim();
        if let Some(r) = t.strip_prefix(".type") {
            if let Some(name) = r.trim().strip_suffix(",@function") {
                declared.push(name.trim().to_string());
            }
            continue;
        }
        if t.starts_with("//") {
            // Section banner: whatever follows is not the current function.
            if let Some(f) = funcs.last_mut() {
                finish(f, &mut pending_labels);
            }
            pending_labels.clear();
            continue;
        }
        if let Some(label) = t.strip_suffix(':')
            && !label.contains(char::is_whitespace)
        {
            if declared.iter().any(|d| d == label) && !line.starts_with(char::is_whitespace) {
                if let Some(f) = funcs.last_mut() {
                    finish(f, &mut pending_labels);
                }
                funcs.push(SassFunction {
                    name: label.to_string(),
                    ..SassFunction::default()
                });
            } else if label.starts_with(".L") {
                pending_labels.push(label.to_string());
            }
            continue;
        }
        let Some(instr) = parse_sass_line(t) else {
            continue;
        };
        let Some(fi) = funcs.len().checked_sub(1) else {
            continue;
        };
        let f = &mut funcs[fi];
        for l in pending_labels.drain(..) {
            f.labels.insert(l, instr.address);
        }
        if instr.base() == "BRA"
            && let Some(label) = branch_label(&instr.operands)
        {
            unresolved.push((fi, f.instructions.len(), label));
        }
        f.instructions.push(instr);
    }
    if let Some(f) = funcs.last_mut() {
        finish(f, &mut pending_labels);
    }
    for (fi, ii, label) in unresolved {
        let target = funcs[fi].labels.get(&label).copied();
        if target.is_some() {
            funcs[fi].instructions[ii].target = target;
        }
    }
    funcs
}

/// The label operands `` `(.L_x_2) `` of `operands`, in order: each
/// one's byte range (backquote to closing parenthesis) and its name.
fn label_operands(operands: &str) -> impl Iterator<Item = (std::ops::Range<usize>, &str)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let k = at + operands[at..].find("`(")?;
        let end = k + operands[k..].find(')')?;
        at = end + 1;
        Some((k..end + 1, operands[k + 2..end].trim()))
    })
}

/// The label of a branch operand `` `(.L_x_2) ``.
fn branch_label(operands: &str) -> Option<String> {
    label_operands(operands).next().map(|(_, l)| l.to_string())
}

/// `operands` with each label operand `` `(name) `` that `address` knows
/// replaced by its address (`0x1c0`, as `nvdisasm` prints operands in raw
/// mode); a label it does not know is kept as written.
pub fn replace_labels(operands: &str, address: impl Fn(&str) -> Option<u32>) -> String {
    let mut out = String::new();
    let mut from = 0;
    for (range, label) in label_operands(operands) {
        out.push_str(&operands[from..range.start]);
        match address(label) {
            Some(a) => out.push_str(&format!("0x{a:x}")),
            None => out.push_str(&operands[range.clone()]),
        }
        from = range.end;
    }
    out.push_str(&operands[from..]);
    out
}

/// Parse one instruction line `/*0120*/  @!P1 FMUL R5, R0, R5 ;` (already
/// trimmed). Returns `None` for anything else.
pub fn parse_sass_line(t: &str) -> Option<SassInstr> {
    let r = t.strip_prefix("/*")?;
    let (addr, rest) = r.split_once("*/")?;
    let address = u32::from_str_radix(addr.trim(), 16).ok()?;
    let mut rest = rest.trim();
    // Instructions end with ';' (an encoding comment may follow with -hex).
    if let Some((code, _)) = rest.split_once(';') {
        rest = code.trim();
    }
    if rest.is_empty() || rest.starts_with('.') {
        return None; // data directives inside non-code sections
    }
    let mut predicate = None;
    if let Some(p) = rest.strip_prefix('@') {
        let (pred, r) = p.split_once(char::is_whitespace)?;
        predicate = Some(pred.to_string());
        rest = r.trim_start();
    }
    let (opcode, operands) = match rest.split_once(char::is_whitespace) {
        Some((o, r)) => (o, r.trim()),
        None => (rest, ""),
    };
    let mut instr = SassInstr {
        address,
        predicate,
        opcode: opcode.to_string(),
        operands: operands.to_string(),
        target: None,
    };
    if instr.base() == "BRA" && !operands.contains('`') {
        // Without dataflow labels, nvdisasm prints an absolute offset.
        instr.target = operands
            .split(|c: char| c.is_whitespace() || c == ',')
            .find_map(|w| w.strip_prefix("0x"))
            .and_then(|h| u32::from_str_radix(h, 16).ok());
    }
    Some(instr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruction_lines() {
        let i = parse_sass_line("/*01c0*/              @!P1 BRA `(.L_x_2) ;").unwrap();
        assert_eq!(i.address, 0x1c0);
        assert_eq!(i.predicate.as_deref(), Some("!P1"));
        assert_eq!((i.opcode.as_str(), i.base()), ("BRA", "BRA"));
        assert_eq!(i.operands, "`(.L_x_2)");
        let i = parse_sass_line("/*0070*/   BAR.SYNC.DEFER_BLOCKING 0x0 ;").unwrap();
        assert_eq!((i.base(), i.predicate.clone()), ("BAR", None));
        assert!(i.is("BAR") && i.is("BAR.SYNC.DEFER_BLOCKING") && !i.is("BAR.SYNC"));
        let i = parse_sass_line("/*0100*/                   NOP;").unwrap();
        assert_eq!((i.opcode.as_str(), i.operands.as_str()), ("NOP", ""));
        let i = parse_sass_line("/*0010*/  LDS.128 R4, [R2+0x10] ;").unwrap();
        assert_eq!((i.opcode.as_str(), i.base()), ("LDS.128", "LDS"));
        let i = parse_sass_line("/*0200*/   @P0 BRA 0x120 ;").unwrap();
        assert_eq!(i.target, Some(0x120));
        assert!(parse_sass_line("/*0000*/ \t.byte\t0xff, 0xff").is_none());
        assert!(parse_sass_line("MOV R1, R2 ;").is_none());
    }

    #[test]
    fn label_operands_are_replaced_by_address() {
        let known = |l: &str| (l == ".L_x_2").then_some(0x1c0);
        assert_eq!(replace_labels("`(.L_x_2)", known), "0x1c0");
        assert_eq!(
            replace_labels("R0, `(.L_x_2), `(.L_x_9) ;", known),
            "R0, 0x1c0, `(.L_x_9) ;"
        );
        assert_eq!(replace_labels("R1, R2", known), "R1, R2");
        assert_eq!(branch_label("`( .L_x_3 )"), Some(".L_x_3".into()));
        assert_eq!(branch_label("`(.L_x_3"), None);
    }

    /// A function from raw listing lines (addresses give the branch
    /// targets).
    fn function(lines: &[&str]) -> SassFunction {
        SassFunction {
            name: "k".into(),
            instructions: lines.iter().map(|l| parse_sass_line(l).unwrap()).collect(),
            labels: BTreeMap::new(),
        }
    }

    #[test]
    fn out_of_line_back_jumps_are_not_loops() {
        // A loop (0x20..=0x40), a call into out-of-line code after the
        // exit (0x50 -> 0x80) that jumps back (0x90 -> 0x60), a guarded
        // early exit inside a second loop (0x60..=0x70 holds @P1 EXIT).
        let f = function(&[
            "/*0000*/ MOV R1, R2 ;",
            "/*0010*/ MOV R3, RZ ;",
            "/*0020*/ FFMA R3, R1, R1, R3 ;",
            "/*0030*/ ISETP.NE.AND P0, PT, R3, RZ, PT ;",
            "/*0040*/ @P0 BRA 0x20 ;",
            "/*0050*/ @P0 BRA 0x80 ;",
            "/*0060*/ @P1 EXIT ;",
            "/*0070*/ @P0 BRA 0x60 ;",
            "/*0080*/ EXIT ;",
            "/*0090*/ FADD R1, R1, R1 ;",
            "/*00a0*/ BRA 0x60 ;",
            "/*00b0*/ BRA 0xb0 ;",
        ]);
        assert_eq!(f.loops(), vec![0x20..=0x40, 0x60..=0x70]);
        assert_eq!(f.innermost_loops(), vec![0x20..=0x40, 0x60..=0x70]);
        // `@PT EXIT` is unguarded too.
        let g = function(&[
            "/*0000*/ NOP ;",
            "/*0010*/ @PT EXIT ;",
            "/*0020*/ BRA 0x0 ;",
        ]);
        assert!(g.loops().is_empty());
    }
}
