//! [`FuncDef`]: a built device function, as the modules that call it
//! print it (a leaf: the builder's core keeps them, `func` makes them).

use std::sync::Arc;

use crate::dsl::printer::SharedDecl;
use crate::target::{PtxVersion, Sm};

/// A built device function: what a module that calls it prints.
#[derive(Debug)]
pub(crate) struct FuncDef {
    /// The id of the builder that built it (identity within a module).
    pub(super) id: u32,
    /// Its `.func` name.
    pub(super) name: String,
    /// The target it was built for.
    pub(super) sm: Sm,
    /// The lowest `.version` its instructions allow on `sm`.
    pub(super) version: PtxVersion,
    /// The `.func` text.
    pub(super) text: String,
    /// Its shared arrays (printed at module scope).
    pub(super) shared: Vec<SharedDecl>,
    /// The functions it calls, transitively, callees first.
    pub(super) callees: Vec<Arc<FuncDef>>,
    /// The body's error, as text, when the body was refused.
    pub(super) broken: Option<String>,
}
