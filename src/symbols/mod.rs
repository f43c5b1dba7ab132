//! Kernel symbols: kallsyms parsed, and sampled stacks turned into names.

pub mod kallsyms;
pub mod symbolizer;
