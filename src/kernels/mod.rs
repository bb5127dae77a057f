//! Kernel families, one folder each: `ptx.rs` (generator), `host.rs`
//! (bit-exact host model, the spec), `launch.rs` (backend dispatch).
pub mod score;
