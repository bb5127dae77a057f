//! Print what ptxsmith sees of the CUDA device, and what a backend name
//! (first argument: cuda, auto, host or sim; default auto) resolves to.
//!
//! ```text
//! cargo run --example device_info -- cuda
//! ```

use ptxsmith::runtime::{Backend, Resolved, cuda_unavailable_reason, resolve};

fn main() -> ptxsmith::Result<()> {
    let backend: Backend = match std::env::args().nth(1) {
        Some(name) => name.parse()?,
        None => Backend::Auto,
    };
    if let Some(reason) = cuda_unavailable_reason() {
        println!("no CUDA device: {reason}");
    }
    let resolved = resolve(backend)?;
    match &resolved {
        Resolved::Cuda(ctx) => println!("{}", ctx.info().expect("a CUDA context has device info")),
        Resolved::Host | Resolved::Sim(_) => {}
    }
    println!("backend {backend} runs on: {}", resolved.ran());
    Ok(())
}
