//! Traffic to measure, kept apart from the profiler: the built-in demo
//! ([`demo`]), throwaway namespaces joined by veth pairs ([`netns`]) and the
//! traffic generator behind the demo, `netto-loadgen`, the tests and the
//! backend self-check's calls ([`traffic`]); and what undoes what they made
//! when a signal ends a process without its destructors ([`undo`]). Nothing
//! in the measuring path depends on it: the commands hand it in.

pub mod demo;
pub mod netns;
pub mod traffic;
pub mod undo;
