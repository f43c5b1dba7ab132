//! Kernel symbols.

pub mod kallsyms;
