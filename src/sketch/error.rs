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
    #[error("loading the sketch program: {0}")]
    Load(String),
    #[error("attaching XDP to {iface}: native mode: {native}; generic mode: {generic}")]
    Attach {
        iface: String,
        native: io::Error,
        generic: io::Error,
    },
    #[error("mapping the sketch's per-CPU state: {0}")]
    Mmap(io::Error),
    #[error("running the sketch program on a test packet: {0}")]
    TestRun(String),
}

impl SketchError {
    /// libbpf-rs errors carry a chain of contexts; one line of them.
    pub(crate) fn load(e: libbpf_rs::Error) -> SketchError {
        SketchError::Load(one_line(&format!("{e:#}")))
    }

    pub(crate) fn test_run(e: libbpf_rs::Error) -> SketchError {
        SketchError::TestRun(one_line(&format!("{e:#}")))
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
