//! The emulator library answers to the driver's soname, so `ldd` and
//! loaders that check it see `libcuda.so.1`; the file itself is linked
//! under that name by `with-emu.sh` (a symlink in `target/cuda-emu/`).
fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
    }
}
