//! Why the sketch could not be set up or read. Every message is one line,
//! so `netto: error: ...` stays one line.

use std::io;

use super::config::ConfigError;

#[derive(Debug, thiserror::Error)]
pub enum SketchError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("no network interface named {0:?}")]
    NoInterface(String),
    #[error("loading the sketch program")]
    Load(#[source] libbpf_rs::Error),
    #[error("attaching XDP to {iface}: native mode: {native}; generic mode: {generic}")]
    Attach {
        iface: String,
        native: io::Error,
        generic: io::Error,
    },
    #[error("mapping the sketch's per-CPU state")]
    Mmap(#[source] io::Error),
    #[cfg(any(test, feature = "test-support"))]
    #[error("running the sketch program on a test packet")]
    TestRun(#[source] libbpf_rs::Error),
}
