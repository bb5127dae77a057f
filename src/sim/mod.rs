//! # CPU PTX simulator
//!
//! A bit-exact, deterministic interpreter for the PTX that ptxsmith
//! generates, with compute-sanitizer style checks on by default. It is the
//! oracle the host models are tested against, so every semantic rule here
//! is written from `shared/reference/ptx-semantics.md` (PTX ISA 9.4), never
//! copied from a host model.
//!
//! ## Use
//!
//! ```
//! use ptxsmith::Sm;
//! use ptxsmith::abi::ArgValue;
//! use ptxsmith::exec::LaunchConfig;
//! use ptxsmith::sim::{Program, Sim};
//!
//! let prog = Program::parse(include_str!("../../tests/ptx/saxpy.ptx")).unwrap();
//! let mut sim = Sim::new(Sm::Sm80);
//! let x = sim.alloc(16).unwrap();
//! let y = sim.alloc(16).unwrap();
//! sim.write(x, &[0u8; 16]).unwrap();
//! sim.write(y, &[0u8; 16]).unwrap();
//! let args = [ArgValue::Ptr(x), ArgValue::Ptr(y), ArgValue::F32(2.0), ArgValue::U32(4)];
//! let report = sim.launch_program(&prog, "saxpy", LaunchConfig::linear(1, 32), &args).unwrap();
//! assert_eq!(report.per_opcode["fma.rn.f32"], 4);
//! ```
//!
//! [`Sim`] also implements [`crate::exec::Executor`], the backend under the
//! runtime's `Context::sim` (the runtime sits above the simulator: nothing
//! here imports it, `tests/layers.rs` checks): a
//! [`crate::dsl::PtxModule`] is parsed once (cached by its PTX text), its
//! arguments are checked with [`crate::abi::check_args`], and
//! uploads, downloads and launches are counted in `traffic()`.
//! `multiprocessor_count()` is [`SM_COUNT`] (4).
//! `examples/ptx_run.rs` (logic in [`cli`]) runs a PTX file from the
//! command line.
//!
//! ## Parsing
//!
//! [`Program::parse`] turns the text into a pre-decoded form once: a flat
//! instruction vector with registers resolved to slot indices, labels to
//! instruction indices, variables to state-space offsets, immediates to
//! bits. Each entry is then lowered to the interpreter's execution form
//! (operands as register-file slots, immediates and fixed `ld.param`
//! values in constant slots, basic blocks, the static register
//! initialisation analysis — see *Checks*). Accepted: `.version`,
//! `.target sm_XY` (also `compute_XY`, suffixes
//! `a`/`f`), `.address_size 64`, `.visible/.weak .entry` with `.param`
//! scalars of every size, `.ptr .global .align N` pointers and `.b8
//! name[N]` byte arrays (launched with [`Sim::launch_program_bytes`] when
//! a parameter is not 4 or 8 bytes),
//! `.maxntid/.reqntid/.minnctapersm/.maxnreg`, `.reg` ranges `%f<12>` and
//! lists, `.shared` (typed or `.b8`, `.align`), module-scope `.extern
//! .shared` (dynamic shared, placed after all static shared at its
//! alignment), `.local`, module-scope `.const` with initialisers,
//! module-scope `.global`/`.common` variables with initialisers (their
//! storage allocated by [`Sim::load_module`]: see `parse/globals.rs`), labels,
//! nested `{ }` scopes (a declaration in a block is visible until its
//! `}`), `.func` device functions and `call` (see *Device functions*),
//! `//` and `/* */` comments, `.pragma`,
//! `.loc`/`.file`. Operands: registers, special registers, `_`, `!%p`,
//! `%p|%q`, vectors `{a,b,c,d}`, immediates (`0fXXXXXXXX`, `0dX…`, decimal
//! or `0x` integers, decimal floats), addresses `[reg]`, `[reg+imm]`,
//! `[reg+-imm]`, `[var]`, `[var+imm]`, `[imm]`, and `mov r, var` (the
//! state-space address of a variable). Anything else — recursion
//! deeper than 32 activations (a trap when it runs), indirect calls, `.extern .func`s other than `vprintf` and
//! `__assertfail`, textures, `[r+r]`, f16/bf16 arithmetic, 256-bit
//! accesses, … — is refused with
//! [`SimError::Unsupported`] or [`SimError::Parse`] naming the line and the
//! instruction text. Nothing unknown is executed silently.
//!
//! ## Device functions
//!
//! `.func` definitions (`.visible`, `.weak`, forward declarations,
//! `.noreturn`; parameters and results scalar or `.align N .b8 p[M]`
//! structs) and `call` (`call.uni` or not, predicated, with or without
//! results and parameters) as NVRTC, NVVM and Numba emit them are
//! **inlined when the module is parsed** (`parse::func` has the design):
//! each call site gets its own copy of the callee with fresh registers,
//! labels and `.local` frame, `ret` becomes a branch to the copy's end, and
//! the caller's `.param` call frames live in the thread's `.local` frame
//! (the callee's formal parameters alias them). The interpreters see one
//! flat entry, so every check stays on inside callees and findings name
//! the callee's PTX line (a register's name in a finding carries the
//! function and call instance: `%r2@sq#1`). Recursion (direct or mutual) is
//! inlined to a depth of 32 activations of one function in a call chain;
//! a call past it is a trap ([`SimError::Trap`]) if it runs, the stand-in
//! for the device's stack limit. Limits: indirect calls (`call %rd, (…), proto`), `.reg`
//! function parameters and call arguments that are not `.param`
//! variables are [`SimError::Unsupported`]; a module whose inlined entry
//! would exceed 2²⁰ statements is refused.
//!
//! Two `.extern .func`s are builtins; any other is refused when a call
//! of it is parsed (a declaration alone is accepted):
//! * `vprintf(fmt, args)` — device `printf`: the format string and the
//!   argument buffer are read from device memory with the thread's
//!   ordinary checked accesses (each argument at the next multiple of its
//!   size; `%d %i %u %o %x %X %c %s %p %f %e %g %a` and their flags,
//!   width, precision and `h/l/ll/z/j/t` lengths, floats as doubles). The
//!   text goes to [`LaunchReport::printf`] and to the host's stdout when
//!   the launch ends, in a fixed order: block by block in linear order,
//!   within a block thread by thread (linear thread index), each thread's
//!   output in its program order. A launch that fails prints nothing.
//!   Entries that call `vprintf` run their blocks one after another on
//!   live memory (like entries with global atomics).
//! * `__assertfail(message, file, line, function, charSize)` — a failed
//!   device `assert`: the launch stops with [`SimError::Assert`], which
//!   displays as the device prints it (`file:line: function: block:
//!   [x,y,z], thread: [x,y,z] Assertion `message` failed.`).
//!
//! ## Instructions
//!
//! * f32 `add/sub/mul/fma/mad/div/sqrt/rcp` with `.rn/.rz/.rm/.rp`,
//!   `.ftz`, `.sat`; `min/max{.NaN}`, `abs`, `neg`. Directed rounding is
//!   exact: the infinitely precise result is held as an f64 pair (TwoSum,
//!   exact f64 products, fma residuals for div/sqrt) and the f32 rounding is
//!   stepped by one ulp where needed ([`fp::f32_op`]).
//! * f64 `add/sub/mul/fma/div/sqrt/rcp` (`.rn` only), `min/max/abs/neg`.
//! * integers: `add/sub/mul.{lo,hi,wide}/mad.{lo,hi,wide}/div/rem/min/max`
//!   on 16/32/64-bit types, `and/or/xor/not/cnot` (incl. `.pred`),
//!   `shl/shr`, `bfe/bfi`, `prmt` (generic and all modes), `clz/popc/brev`,
//!   `neg/abs`.
//! * `setp` (all integer and float comparisons, `p|q`, `.and/.or/.xor`
//!   with `{!}c`), `selp`, `mov` (incl. pack/unpack of 2 or 4 parts).
//! * `cvt`: all integer widths (sign/zero extension, truncation, `.sat`),
//!   int→float `.rn/.rz/.rm/.rp`, float→int `.rni/.rzi/.rmi/.rpi`
//!   (saturating; NaN → 0, or `1<<(N−1)` for an f64 source or 64-bit
//!   destination), float→float (`.rni`-style rounding to integers, f32↔f64,
//!   f16↔f32, bf16↔f32, `f16x2.f32`), FP8 `e4m3x2/e5m2x2` and FP4 `e2m1x2`
//!   encode (`.rn.satfinite{.relu}`) and decode to `f16x2`, UE8M0
//!   `ue8m0x2` encode from f32 (`.rz/.rp` with `.satfinite`; without it
//!   refused) and decode to `bf16x2`.
//! * memory: `ld/st` on `.global/.shared/.local/.param/.const` and generic
//!   addresses, `.v2/.v4`, 8–64-bit types (narrow loads sign/zero-extend),
//!   cache and ordering qualifiers accepted (`.nc/.ca/.cg/.cs/.volatile/…`),
//!   `cvta{.to}.{global,shared,local,const}.u64`, `atom` and `red` on
//!   `.global/.shared`/generic with `add/min/max/inc/dec/and/or/xor/exch/cas`
//!   on 32/64-bit integers and `add.f32/.f64`; `ldmatrix.sync.aligned.m8n8`
//!   `.x1/.x2/.x4{.trans}.b16` (warp-collective, sm_75) and
//!   `cp.async.{ca,cg}.shared.global` with `commit_group`, `wait_group N`
//!   and `wait_all` (sm_80; a copy lands at its covering wait).
//! * control: `bra`, `bra.uni` (uniformity checked), `ret`, `exit`, `trap`,
//!   `bar.sync/barrier.sync a{, b}`, `bar.warp.sync`, `membar`/`fence`
//!   (no-ops), `shfl.sync` (all modes, clamp and segment mask exactly as
//!   §7 of the reference), `vote.sync.{all,any,uni,ballot}`,
//!   `redux.sync` (refused when `.target` < sm_80; FP8 cvt refused below
//!   sm_89; FP4 and UE8M0 cvt refused unless the target is arch-specific
//!   or family (`sm_100a`, `sm_120a`, `sm_100f`, …) from sm_100, as
//!   ptxas does). A module for an `a` target launches only on a simulator
//!   of exactly that compute capability, an `f` target on later members of
//!   its family, a plain target on every newer one.
//! * approximate f32 instructions (`ex2/lg2/rsqrt/sin/cos/tanh.approx`,
//!   `sqrt/rcp/div.approx`, `div.full`) are parsed but refused at launch
//!   unless [`SimOptions::approx`] is set; then they return the f64 result
//!   rounded to f32 (reference §5 *Interp*) and are counted in
//!   [`LaunchReport::approximate`], because the GPU only meets error bounds.
//! * special registers: `%tid %ntid %ctaid %nctaid` (`.x/.y/.z`),
//!   `%laneid %warpid %nwarpid %smid %nsmid %lanemask_{eq,lt,le,gt,ge}`
//!   `%clock %clock64 %dynamic_smem_size %gridid`, `WARP_SZ`.
//!
//! ## Interpretation choices (*Interp*)
//!
//! * Every NaN produced by an f32 instruction (arithmetic, `abs`, `neg`,
//!   `cvt`, `min/max` of two NaNs, `.NaN` forms, `atom.add.f32`) is the
//!   canonical `0x7FFFFFFF`; f16 NaN results are `0x7FFF`. f64 arithmetic
//!   propagates payloads as the host does; `abs/neg.f64` are bit operations.
//! * f32 `add/sub/mul` without a rounding modifier execute as `.rn`, each
//!   rounded separately. The GPU may contract such an unmodified mul/add
//!   pair into an `fma` (reference §1); ptxsmith's printer always writes
//!   `.rn`, which forbids that, so only hand-written PTX is affected.
//! * `.ftz` flushes subnormal inputs and (rounded) results to zero of the
//!   same sign. `.sat` maps NaN to +0.
//! * Integer `div`/`rem` by zero stops the launch with [`SimError::Trap`];
//!   `INT_MIN / −1` wraps to `INT_MIN` (rem 0); `rem` truncates like C;
//!   `abs(INT_MIN)` = `INT_MIN`.
//! * FP8/FP4 encoding searches the code table for the nearest value
//!   (ties to the code with an even mantissa LSB); |x| above max-normal and
//!   ±∞ saturate to ±max-normal; −0 keeps its sign (`0x80`, FP4 `0x8`);
//!   any NaN (either sign) → `0x7F` for e4m3 and e5m2 (e5m2: the canonical
//!   NaN chosen here), +6.0 (`0x7`) for e2m1. `.relu` maps negative inputs
//!   (and −0) to +0 before encoding. Decoding is exact; NaN codes → `0x7FFF`.
//!   The sign of an FP4 zero result is undocumented (libraries disagree).
//! * UE8M0 (`ue8m0x2`, value 2^(b−127)): `.rp` → the smallest power of two
//!   ≥ |x|, `.rz` → the largest ≤ |x|; NaN → `0xFF`, above 2^127 and ±∞ →
//!   `0xFE`; below 2^-127 and ±0 → `0x00`; the sign of the input is
//!   ignored (UE8M0 has none). Decode `0xFF` → bf16 `0x7FFF`,
//!   `0x00` → the bf16 subnormal `0x0040`.
//! * `atom.add.f32` rounds to nearest and, on `.global` (incl. generic
//!   addresses that resolve to global), flushes subnormals; atomics execute
//!   in the deterministic thread order below.
//! * `%clock/%clock64` read a counter that increases by one per read of a
//!   block (every block counts from the launch's start value, which each
//!   launch advances by its reads); with the critical-path scoreboard on
//!   ([`Sim::set_timing`]) they read the thread's scoreboard clock instead
//!   (so two reads time the code between them as the scoreboard does);
//!   `%smid` is the linear block index modulo 4; `%warpid` = linear tid / 32.
//! * Instruction counts include predicated-off instructions (issued).
//!
//! ## Execution model
//!
//! Inside a CTA each thread (linear id x + y·ntid.x + z·ntid.x·ntid.y;
//! warp = id/32, lane = id%32) runs alone, in thread order, until it
//! reaches a synchronisation point (`bar.sync`, `bar.warp.sync`,
//! `shfl/vote/redux.sync`) or exits. When every thread is parked or exited:
//! * a warp collective executes when every existing lane of its membermask
//!   is parked at the same instruction with the same mask (lanes beyond a
//!   partial last warp are ignored); a member that exited or waits elsewhere,
//!   an executing lane outside its mask, or a `shfl` reading an inactive
//!   lane is [`SimError::WarpDivergence`];
//! * otherwise a `bar.sync` completes when every thread of the CTA waits at
//!   the same `bar` instruction (`.aligned` semantics). A thread that has
//!   exited, or threads at different barrier instructions, is
//!   [`SimError::BarrierDivergence`]. With a thread count `b` < CTA size the
//!   barrier completes once `b` threads wait at it;
//! * if nothing can proceed, [`SimError::Deadlock`] names the parked threads.
//!
//! That order defines the results. **The lockstep schedule**
//! ([`SimOptions::lockstep`], on by default) runs a block's threads faster
//! on the host, a warp at a time with each instruction done for every
//! thread at the same place before the next, and keeps the run only when
//! it cannot differ from thread order: a finding, a global access whose
//! value depends on which thread goes first (`checks::reorder`), or a
//! budget about to run out makes the block run again in thread order, and
//! entries with atomics or `%clock` reads, and runs without checks, always
//! use thread order. [`Sim::lockstep_blocks`] counts the blocks it kept.
//!
//! **Blocks run in parallel** on [`SimOptions::threads`] worker threads
//! (default: the `PTXSMITH_SIM_THREADS` environment variable, else every
//! core; the linear block index takes x fastest, then y, z). The CTAs of
//! a launch are unordered in PTX, so each one runs on the global memory
//! the launch started with plus its own writes: what a CTA computes never
//! depends on another CTA or on the thread count. When the launch ends,
//! the CTAs' writes reach global memory in block order. Results, memory
//! contents, [`LaunchReport`]s and findings are therefore the same for
//! every thread count, and for a kernel without races between blocks they
//! are the bits a one-block-at-a-time run gives. The outcome is defined
//! block by block in linear order, as if the blocks ran one after another:
//! * the launch reports the finding of the **lowest block** that has one,
//!   at that block's first offending instruction (its threads scheduled as
//!   above); a race between two blocks belongs to the later block, at its
//!   first access that conflicts with an earlier block's;
//! * the instruction budget is spent block by block in that order: the
//!   budget finding names the block, thread and instruction that would
//!   have issued the instruction past it;
//! * a launch with a finding leaves global memory as the blocks before the
//!   reporting one left it, plus that block's writes before its finding.
//!
//! Workers claim blocks in linear order (the calling thread is one of them,
//! and between its own blocks takes the finished ones in order for this
//! walk); a block that conflicts with an
//! earlier one, crosses the budget, or was stopped because the launch as a
//! whole passed the budget is re-run alone to find the exact instruction.
//! Entries whose blocks may talk to each other during a launch — a global
//! or generic `atom`/`red`, or a `.volatile`/`.relaxed`/`.acquire`/
//! `.release` global access — run their blocks one after another on live
//! memory whatever the thread count, so atomics see every earlier block's
//! updates in a fixed order (block order, then thread order). Without
//! checks, a block reading another block's output of the same launch reads
//! the launch's starting memory (the race is not reported): still the same
//! on every thread count.
//!
//! ## Checks (on by default; [`Sim::set_checks`] turns the optional ones off)
//!
//! Every finding stops the launch with its own [`SimError`] variant carrying
//! a [`Site`] (kernel, ctaid, tid, PTX line, instruction) and the address:
//! * [`SimError::OutOfBounds`] / [`SimError::Misaligned`] (always on):
//!   global accesses must fall inside one allocation made through the
//!   simulator (distinct addresses, ≥ 4 KiB unmapped guard gaps, freed
//!   ranges never reused); shared accesses inside static + dynamic shared;
//!   local inside the thread's `.local` frame; param/const inside their
//!   banks. Alignment is the natural alignment of the whole access
//!   (`ld.v4.b32` → 16 bytes).
//! * [`SimError::SharedRace`]: two different threads of a CTA touch the same
//!   shared byte between two CTA barriers, at least one writing, not both
//!   atomic. Per byte the last write and last read are tagged (barrier
//!   epoch, warp-sync epoch, thread); accesses by threads of one warp
//!   separated by `bar.warp.sync` are ordered. When several threads read
//!   a byte in one barrier interval the read tag keeps their warp (and the
//!   latest warp-sync epoch) if they all belong to one warp, otherwise it
//!   becomes "several warps", which conflicts with any later write in the
//!   interval (reported with `other_tid` = `u32::MAX`s). The tags are
//!   stored per 4-byte word, per byte only in words whose bytes got
//!   different tags (`checks::shared_race` has the contract); the findings
//!   are the per-byte rule's.
//! * [`SimError::GlobalRace`]: two blocks of one launch touch the same
//!   global byte, at least one writing, not both atomic (a block reading
//!   what another wrote, two blocks writing one word). Reported at the
//!   later block's first conflicting access, naming the earliest block it
//!   conflicts with. Fences are not modelled: a block that reads plain
//!   data another block wrote is reported even after a fence-and-flag
//!   handshake.
//! * [`SimError::WarpGlobalRace`]: threads of two warps of one block touch
//!   the same global byte between two `bar.sync`s, at least one writing,
//!   not both atomic: the shared-memory rule at warp granularity on
//!   global memory (a CTA barrier orders the accesses before it before
//!   those after it; lanes of one warp are not compared; fences and flags
//!   are not modelled). Reported at the later access in thread order.
//!
//! A race finding names both accesses, Miri-style: the later one's
//! [`Site`], and the earlier one's kind, thread (block, warp) and, in
//! `other_site`, its PTX line and instruction. The checks keep no
//! instruction per byte; the earlier access is found by running its block
//! again alone with a watch on the racing byte (the same deterministic
//! run, so the same accesses in the same order; only after a race is
//! found). Entries whose blocks run on live memory (global atomics,
//! `.volatile`/`.relaxed`/`.acquire`/`.release` global accesses, calls of
//! `vprintf`) cannot
//! run a block again: their race findings name the earlier access's
//! thread (or warp, or block) but not its line (`other_site` is `None`).
//! * [`SimError::UninitializedShared`]: a shared byte read (or atomically
//!   updated) before any thread of the CTA wrote it.
//! * [`SimError::AsyncCopyPending`]: a shared access of a byte that a
//!   `cp.async` will write before the covering `cp.async.wait_group` /
//!   `wait_all` of its thread (a copy's bytes land at that wait; see
//!   `docs/tensor-cores.md`).
//! * [`SimError::UninitializedGlobal`]: a kernel load (or atomic) of a
//!   global byte that neither the host ([`Sim::write`], `upload`) nor a
//!   kernel store wrote since [`Sim::alloc`] (use [`Sim::alloc_zeroed`] for
//!   memory that counts as zero-initialised).
//! * [`SimError::UninitializedRegister`]: a register (or guard predicate)
//!   read before the thread wrote it. A static analysis of the entry
//!   (registers definitely written along every path) proves most reads
//!   initialised; only the others are checked while running.
//! * `bra.uni` with a predicate that differs between lanes of a warp (in
//!   the same dynamic occurrence) is [`SimError::WarpDivergence`].
//! * Thread-block clusters (sm_90; `interp::cluster` has the rules): the
//!   CTAs of a cluster run together; [`SimError::ClusterRace`] (two CTAs
//!   of a cluster touch one CTA's shared byte, at least one writing, not
//!   ordered by a release `barrier.cluster.arrive` and an acquire
//!   `barrier.cluster.wait`), [`SimError::ClusterRank`] (`mapa` past the
//!   cluster), [`SimError::ClusterExit`] (a CTA exits while another may
//!   still access its shared memory), [`SimError::ClusterBarrier`] (a
//!   second arrive before the wait, a wait without an arrive); remote
//!   reads of unwritten bytes are [`SimError::UninitializedShared`], a
//!   cluster barrier that cannot complete a [`SimError::Deadlock`].
//!   Launches in clusters: [`Sim::launch_program_bytes_clustered`] or an
//!   entry's `.reqnctapercluster`; the grid must be a multiple of the
//!   shape.
//! * `mbarrier` and `cp.async.bulk` (sm_90, PTX 8.0; `interp::bulk` has
//!   the rules): barrier phases, pending arrivals and tx-counts; a bulk
//!   copy (with `.multicast::cluster`, into every CTA of its mask) lands
//!   at the wait that needs it; [`SimError::BulkCopy`] for a read of its
//!   bytes before that wait, a mask past the cluster, an odd size, a
//!   barrier used before its init (also in a peer CTA); a wait whose phase
//!   can never complete is a [`SimError::Deadlock`].
//!
//! Launch validation ([`SimError::InvalidLaunch`]): non-zero grid and block,
//! block ≤ (1024, 1024, 64) and ≤ 1024 threads, grid ≤ (2³¹−1, 65535,
//! 65535), `.maxntid` (product) and `.reqntid` (exact), shared memory within
//! the SM's opt-in limit, the module's `.target` not newer than the
//! simulated SM, and one argument of the parameter's size per parameter.
//! With checks on, a cluster launch of a kernel that arrives on an
//! mbarrier is refused with [`SimError::MbarClockBudget`] when the race
//! checks' clocks would take more than [`MBAR_CLOCK_BUDGET`] (256 MiB; the
//! square of the threads per cluster: a 16 × 1,024 cluster is refused), as
//! is the arrive that gives one barrier too many clocks; with checks off it
//! runs.
//!
//! Instruction budget (always on unless lifted): a launch may issue at most
//! its budget of instructions over all its blocks and threads
//! ([`SimOptions::launch_budget`]), by default `max(10⁹, threads ×`
//! [`DEFAULT_INSTRUCTIONS_PER_THREAD`]`)` ([`DEFAULT_INSTRUCTION_BUDGET`];
//! the floor is seconds of simulation, more than 10× the largest launch of
//! the tests and the demo; 2²⁴ a thread lets every thread run a
//! 10⁶-iteration loop of up to 16 instructions), or exactly [`SimOptions::max_instructions`] when
//! set to another value, so a kernel that never exits cannot hang the simulator: the launch stops
//! with [`SimError::InstructionLimit`], whose [`Site`] names the kernel, the
//! block, the thread and the PTX line it was spinning on. `None` lifts the
//! budget (`ptx_run --max-instructions 0`).
//!
//! ## Counters
//!
//! Each launch returns a [`LaunchReport`] with the dynamic instruction
//! count, a per-opcode map keyed by the full opcode string (`add.rn.f32`)
//! and one keyed by the base opcode (`add`), and the number of completed
//! CTA barriers; [`Sim::opcode_totals`] and [`Sim::total_instructions`]
//! accumulate over launches.

mod backend;
mod checks;
pub mod cli;
mod cluster;
mod code;
mod cta;
pub mod error;
pub mod fp;
mod global_mem;
mod grid;
mod interp;
/// The scoreboard's latencies (`testing::calibrate` times them).
pub(crate) use interp::timing as latency;
pub(crate) mod ir;
mod machine;
mod options;
pub mod parse;

pub use error::{AccessKind, SimError, Site};
pub use global_mem::{CONST_WINDOW, GLOBAL_BASE, LOCAL_WINDOW, SHARED_WINDOW};
pub use interp::mbar_order::MBAR_CLOCK_BUDGET;
pub use ir::{Entry, ParamInfo, Space};
pub use machine::{SIM_DEFAULT_STREAM, SM_COUNT, Sim};
pub use options::{DEFAULT_INSTRUCTION_BUDGET, LaunchReport, PathLine, SimOptions};
pub use options::{DEFAULT_INSTRUCTIONS_PER_THREAD, THREADS_ENV};
pub use parse::Program;
