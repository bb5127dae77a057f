//! The `.extern .func` builtins, which the parser inlines as
//! pseudo-instructions (`super::super::parse` module `func`): `vprintf`
//! (C `printf` formatting in `super::printf`, the text kept per thread for
//! the launch's output) and `__assertfail` (a finding carrying the
//! assertion's message). Their strings and argument buffers are read
//! through the thread's ordinary memory accesses, so every check (bounds,
//! alignment, initialisation, races) applies to them.

use super::super::code::XInst;
use super::super::ir::Space;
use super::access::get_le;
use super::printf::{self, Args};
use super::step::{reg, set};
use super::{Exec, Fault, Res, fault};

/// The longest string a builtin reads (format, `%s`, assertion texts).
const MAX_STRING: usize = 1 << 20;

impl Exec<'_> {
    /// The NUL-terminated string at generic address `addr`, read byte by
    /// byte by thread `t` at instruction `pc`.
    fn c_string(&mut self, t: usize, pc: usize, addr: u64) -> Res<Vec<u8>> {
        let mut v = Vec::new();
        loop {
            let a = addr.wrapping_add(v.len() as u64);
            let b = self.load_bytes(t, pc, Space::Generic, a, 1)?[0];
            if b == 0 {
                return Ok(v);
            }
            v.push(b);
            if v.len() >= MAX_STRING {
                return fault(Fault::Trap("string argument without a NUL in 1 MiB"));
            }
        }
    }

    /// `vprintf(fmt, args)`: d0 = the number of arguments (−1 for a null
    /// format), s0 = format, s1 = argument buffer.
    pub(crate) fn exec_vprintf(
        &mut self,
        t: usize,
        pc: usize,
        rf: &mut [u64],
        i: &XInst,
    ) -> Res<()> {
        let (fmt, buf) = (reg(rf, i.s[0]), reg(rf, i.s[1]));
        if fmt == 0 {
            set(rf, i.d[0], u32::MAX as u64);
            return Ok(());
        }
        let f = self.c_string(t, pc, fmt)?;
        let mut a = DevArgs {
            ex: self,
            t,
            pc,
            buf,
            off: 0,
        };
        let (text, n) = printf::format(&f, &mut a)?;
        self.printf.push((t as u32, text));
        set(rf, i.d[0], n as u64);
        Ok(())
    }

    /// `__assertfail(message, file, line, function)`: the finding (s0 =
    /// message, s1 = file, s2 = line, s3 = function).
    pub(crate) fn assert_fault(
        &mut self,
        t: usize,
        pc: usize,
        rf: &[u64],
        i: &XInst,
    ) -> Box<Fault> {
        let text = |ex: &mut Self, s: u32| -> Res<String> {
            let p = reg(rf, s);
            if p == 0 {
                return Ok(String::new());
            }
            Ok(String::from_utf8_lossy(&ex.c_string(t, pc, p)?).into_owned())
        };
        let parts = (|| {
            Ok::<_, Box<Fault>>((
                text(self, i.s[0])?,
                text(self, i.s[1])?,
                text(self, i.s[3])?,
            ))
        })();
        match parts {
            Ok((message, file, function)) => Box::new(Fault::Assert {
                message,
                file,
                line: reg(rf, i.s[2]) as u32,
                function,
            }),
            Err(f) => f,
        }
    }
}

/// The arguments of a `vprintf`, from the device's argument buffer.
struct DevArgs<'e, 'a> {
    ex: &'e mut Exec<'a>,
    t: usize,
    pc: usize,
    buf: u64,
    off: u64,
}

impl Args for DevArgs<'_, '_> {
    fn next(&mut self, size: u64) -> Res<u64> {
        self.off = self.off.next_multiple_of(size);
        let a = self.buf.wrapping_add(self.off);
        let b = self
            .ex
            .load_bytes(self.t, self.pc, Space::Generic, a, size as u32)?;
        let v = get_le(b, size as u8);
        self.off += size;
        Ok(v)
    }

    fn string(&mut self, ptr: u64) -> Res<Vec<u8>> {
        self.ex.c_string(self.t, self.pc, ptr)
    }
}
