//! Locating and running the pinned NVIDIA tools (ptxas, nvdisasm).
