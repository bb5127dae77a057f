//! [`BuildError`]: what a kernel generator did wrong, with the values.
//!
//! The builder records the first misuse (with the caller's source
//! location, see [`Error::Build`](crate::Error::Build)) and returns it from
//! [`KernelBuilder::finish`](super::KernelBuilder::finish) instead of
//! printing invalid PTX. A program matches on the variant, not the text.

use std::panic::Location;

use crate::abi::ScalarType;
use crate::dsl::ir::Cmp;
use crate::dsl::types::RegClass;

/// One misuse of a [`KernelBuilder`](super::KernelBuilder) (a bug in a
/// kernel generator), carried by [`Error::Build`](crate::Error::Build).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The kernel (entry) name is not a PTX identifier.
    #[error("`{name}` is not a valid PTX identifier")]
    InvalidName {
        /// The name given to [`KernelBuilder::new`](super::KernelBuilder::new).
        name: String,
    },

    /// [`KernelBuilder::params`](super::KernelBuilder::params) was called twice.
    #[error("params() called twice")]
    ParamsTwice,

    /// An operation PTX has no 8-bit form of (`mov`, `selp`) on a
    /// [`B8`](crate::dsl::types::B8) register.
    #[error("{op} has no .b8 form; widen with b8_to_u32 or pack with pack_4x8")]
    NoB8Form {
        /// The operation.
        op: &'static str,
    },

    /// A label placed inside a [`guarded`](super::KernelBuilder::guarded) region.
    #[error("a label cannot be placed inside a guarded region")]
    LabelInGuardedRegion,

    /// A branch ([`bra_if`](super::KernelBuilder::bra_if), or structured
    /// control flow) inside a guarded region.
    #[error("bra_if inside a guarded region")]
    BranchInGuardedRegion,

    /// A [`guarded`](super::KernelBuilder::guarded) region inside another.
    #[error("nested guarded regions")]
    NestedGuardedRegion,

    /// An unordered, `Num` or `Nan` comparison on integers.
    #[error("comparison {cmp:?} is for floats only")]
    FloatOnlyComparison {
        /// The comparison.
        cmp: Cmp,
    },

    /// `selp` on predicates (use `pand`/`por`).
    #[error("selp on predicates; use pand/por")]
    SelpOnPredicates,

    /// `shfl` of a register that is not 32 bits wide.
    #[error("shfl moves 32-bit registers only (got a {class:?} register)")]
    ShflWidth {
        /// The register class given.
        class: RegClass,
    },

    /// `redux.sync` of an integer that is not 32 bits wide.
    #[error("redux.sync reduces 32-bit integers only (got {bits} bits)")]
    ReduxWidth {
        /// The width given.
        bits: u32,
    },

    /// Integer division or remainder by the constant 0.
    #[error("integer {op} by the constant 0")]
    DivisionByZero {
        /// `"division"` or `"remainder"`.
        op: &'static str,
    },

    /// A shared array's alignment is not a power of two at least its
    /// element size.
    #[error("shared array `{array}`: alignment {align} must be a power of two ≥ {elem_size}")]
    SharedAlignment {
        /// The array.
        array: String,
        /// The alignment asked for.
        align: u32,
        /// The element size in bytes.
        elem_size: u32,
    },

    /// A shared array name that is not a PTX identifier or is declared twice.
    #[error("shared array name `{array}` is invalid or used twice")]
    SharedName {
        /// The name.
        array: String,
    },

    /// A constant index at or past the end of a shared array.
    #[error("constant index {index} past shared array `{array}` of {len}")]
    SharedIndex {
        /// The array.
        array: String,
        /// The index.
        index: u64,
        /// The array's length in elements.
        len: u32,
    },

    /// The static shared arrays together exceed the 48 KiB static limit.
    #[error("{bytes} bytes of static shared memory exceed {limit}")]
    StaticSharedLimit {
        /// The bytes declared so far (sizes plus alignment slack).
        bytes: u64,
        /// The limit ([`STATIC_SMEM_LIMIT`](crate::target::STATIC_SMEM_LIMIT)).
        limit: u32,
    },

    /// A vector load or store of elements narrower than 4 bytes.
    #[error("vector {access} of sub-word elements are not offered")]
    SubWordVector {
        /// `"loads"` or `"stores"`.
        access: &'static str,
    },

    /// A constant element offset whose byte offset overflows `i32`.
    #[error("element offset {offset} overflows")]
    OffsetOverflow {
        /// The element offset.
        offset: i32,
    },

    /// An atomic on a type the DSL does not offer atomics on.
    #[error(
        "atomics on {ty:?} are not offered (integers only: float atomics are not reproducible)"
    )]
    AtomicType {
        /// The element type.
        ty: ScalarType,
    },

    /// `cas` without a new value, or another atomic with one.
    #[error("cas takes a compare and a new value; other atomics take one operand")]
    AtomicOperands,

    /// A register (or predicate, or pointer) made by another
    /// [`KernelBuilder`](super::KernelBuilder). Printed, it would name an
    /// undeclared register or silently alias one of this kernel's.
    #[error(
        "register {register} belongs to kernel `{owner_kernel}`, used in kernel `{this_kernel}`"
    )]
    ForeignRegister {
        /// The register as it would print (`%f4`).
        register: String,
        /// The kernel whose builder made it (`#id` once that builder is gone).
        owner_kernel: String,
        /// The kernel it was used in.
        this_kernel: String,
    },

    /// A shared array declared by another builder.
    #[error(
        "shared array `{array}` belongs to kernel `{owner_kernel}`, used in kernel `{this_kernel}`"
    )]
    ForeignSharedArray {
        /// The array.
        array: String,
        /// The kernel whose builder declared it.
        owner_kernel: String,
        /// The kernel it was used in.
        this_kernel: String,
    },

    /// A label made by another builder.
    #[error("a label of kernel `{owner_kernel}` used in kernel `{this_kernel}`")]
    ForeignLabel {
        /// The kernel whose builder made it.
        owner_kernel: String,
        /// The kernel it was used in.
        this_kernel: String,
    },

    /// A register defined inside a loop body and read after that loop
    /// ended, not through a [`Var`](crate::dsl::Var) or
    /// [`assign`](super::KernelBuilder::assign): the generated loop
    /// computes the value afresh each iteration from the values before the
    /// loop (`acc = b.fadd(…, acc, v)` in a `for_range` body sums only the
    /// last `v`), and after zero iterations it is never written.
    #[error(
        "register {register} was defined inside the loop body opened at {loop_at} and is read after that loop; \
         carry a value across iterations in a Var (b.var / b.set) or with b.assign"
    )]
    LoopValueEscapes {
        /// The register as it prints (`%f4`).
        register: String,
        /// Where the loop (`for_range`, `while_`, `grid_stride`, …) was built.
        loop_at: &'static Location<'static>,
    },

    /// An entry-only directive or a kernel parameter load
    /// (`params`, `load_param`, `reqntid`, `maxntid`, `min_ctas_per_sm`)
    /// inside a device function body: a device function takes its
    /// arguments as typed registers.
    #[error("{op} is for kernel entries, not device function bodies")]
    NotInDeviceFunction {
        /// The method called.
        op: &'static str,
    },

    /// [`ret`](super::KernelBuilder::ret) inside a device function body
    /// (it would skip storing the return values): a device function
    /// returns where its body closure ends.
    #[error("ret inside a device function body; a device function returns where its body ends")]
    RetInDeviceFunction,

    /// A [`call`](super::KernelBuilder::call) inside a
    /// [`guarded`](super::KernelBuilder::guarded) region (a call sequence
    /// is a block of several instructions); branch around it with `if_`.
    #[error("call inside a guarded region; use if_ around the call")]
    CallInGuardedRegion,

    /// A device function built for another target than the kernel calling it.
    #[error(
        "device function `{function}` was built for {function_sm}, called from a body for {this_sm}"
    )]
    FunctionTarget {
        /// The function.
        function: String,
        /// The target it was built for.
        function_sm: crate::target::Sm,
        /// The target of the calling body.
        this_sm: crate::target::Sm,
    },

    /// A device function name that names the kernel or another device
    /// function of the same module (a name that is not a PTX identifier
    /// is [`InvalidName`](Self::InvalidName)).
    #[error("device function name `{name}` names another function of the module")]
    FunctionName {
        /// The name.
        name: String,
    },

    /// A call of a device function whose body was refused (the first
    /// error of that body, as text; the builder that built the function
    /// reports it in full).
    #[error("device function `{function}` was refused when it was built: {error}")]
    BrokenFunction {
        /// The function.
        function: String,
        /// Its body's error.
        error: String,
    },

    /// A module cache key already holds a different PTX text: the tuning
    /// key does not name every knob that changes the generated code.
    #[error(
        "module cache key {key} already holds a different PTX text; the tuning key must name every knob that changes the generated code"
    )]
    CacheKeyConflict {
        /// The key (`kernel[tuning]@sm`).
        key: String,
    },

    /// A generated module could not be inspected (the report's analysis of
    /// its own kernels with the pinned tools or the simulator's parser).
    #[error("{message}")]
    Inspect {
        /// What failed, with the values.
        message: String,
    },

    /// A constant `cp.async.bulk` size that is zero or not a multiple of
    /// 16 bytes (PTX ISA "cp.async.bulk": the size must be a multiple of
    /// 16).
    #[error("cp.async.bulk of {bytes} bytes: the size must be a non-zero multiple of 16")]
    BulkCopySize {
        /// The size given.
        bytes: u64,
    },

    /// A constant `.multicast::cluster` CTA mask that names no CTA or a
    /// bit past the 16 a `ctaMask` has.
    #[error("cp.async.bulk multicast mask {mask:#x}: must name 1 to 16 CTAs (bits 0..16)")]
    ClusterMask {
        /// The mask given.
        mask: u64,
    },
    /// A tensor-map copy with a coordinate count outside 1 to 3 (the
    /// DSL's `cp.async.bulk.tensor` forms: 1d, 2d, 3d).
    #[error("cp.async.bulk.tensor with {n} coordinates (1 to 3)")]
    TensorCoords {
        /// The count given.
        n: usize,
    },

    /// A constant `mbarrier` count out of its range (PTX ISA "Contents of
    /// the mbarrier object": the expected arrival count is 1 to 2²⁰ − 1,
    /// the tx-count −(2²⁰ − 1) to 2²⁰ − 1).
    #[error("mbarrier {what} {value} is outside 1..=1048575")]
    MbarrierCount {
        /// `"arrival count"` or `"expect_tx byte count"`.
        what: &'static str,
        /// The value given.
        value: u64,
    },
}
