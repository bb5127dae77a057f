//! Runtime: devices, module cache, launches and backends.

pub mod exec;
