//! Kernel families, one folder each: `ptx.rs` (generator), `host.rs`
//! (bit-exact host model, the spec), `launch.rs` (backend dispatch).

pub mod block_ell;
pub mod block_ell_tc;
pub mod block_scaled;
pub(crate) mod check;
pub mod dispatch;
pub mod dot;
pub mod fp8;
pub(crate) mod grid;
pub mod hmm;
pub mod logcumsumexp;
pub(crate) mod raw;
pub mod score;
pub(crate) mod seq;
pub mod viterbi;

/// The memoised module of generator `$gen` for target `$sm` and the
/// generator's other arguments (see [`crate::dsl::memo`]): generated on
/// the first launch, shared by every later one.
macro_rules! memo {
    ($gen:path, $sm:expr $(, $arg:expr)* $(,)?) => {{
        let sm: $crate::target::Sm = $sm;
        $crate::dsl::memo::memoized(
            concat!(module_path!(), "::", stringify!($gen)),
            sm,
            ($(&$arg,)*),
            || $gen(sm $(, $arg)*),
        )
    }};
}
pub(crate) use memo;

use crate::dsl::PtxModule;
use crate::error::Result;
use crate::target::Sm;

/// Every kernel variant ptxsmith generates for `sm` (default tunings).
/// `dump_ptx`, the ptxas tests and the demo iterate over this list.
pub fn all_variants(sm: Sm) -> Result<Vec<PtxModule>> {
    let mut all = dot::ptx::variants(sm)?;
    all.extend(fp8::ptx::variants(sm)?);
    all.extend(score::ptx::variants(sm)?);
    all.extend(viterbi::ptx::variants(sm)?);
    all.extend(logcumsumexp::ptx::variants(sm)?);
    all.extend(hmm::ptx::variants(sm)?);
    all.extend(block_ell::ptx::variants(sm)?);
    all.extend(block_ell_tc::ptx::variants(sm)?);
    all.extend(block_scaled::ptx::variants(sm)?);
    Ok(all)
}
