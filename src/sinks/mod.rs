//! Where snapshots go. Sinks only consume the model; none touches BPF.

pub mod stat;
