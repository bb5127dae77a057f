//! Locating and running the pinned NVIDIA tools (ptxas, nvdisasm).
//! (Temporary stub; replaced by the tools branch.)
use crate::Sm;
pub struct NvTools {
    ptxas: std::path::PathBuf,
}
impl NvTools {
    pub fn for_tests() -> Option<NvTools> {
        let p = std::path::PathBuf::from("/tmp/nvx/nvidia/cuda_nvcc/bin/ptxas");
        p.exists().then_some(NvTools { ptxas: p })
    }
    pub fn assemble(&self, ptx: &str, sm: Sm) -> Result<String, String> {
        let dir = std::env::temp_dir().join(format!("stub{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join(format!("k{}.ptx", rand_id()));
        std::fs::write(&f, ptx).unwrap();
        let o = std::process::Command::new(&self.ptxas)
            .arg(format!("-arch={}", sm.name()))
            .arg("-v")
            .arg(&f)
            .arg("-o")
            .arg(f.with_extension("cubin"))
            .output()
            .unwrap();
        let log =
            String::from_utf8_lossy(&o.stderr).to_string() + &String::from_utf8_lossy(&o.stdout);
        if o.status.success() {
            Ok(log)
        } else {
            Err(log)
        }
    }
}
fn rand_id() -> u64 {
    use std::sync::atomic::*;
    static C: AtomicU64 = AtomicU64::new(0);
    C.fetch_add(1, Ordering::Relaxed)
}
