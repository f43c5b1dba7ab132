//! Names of the groups network time is attributed to: cgroup paths and the
//! units, containers and pods in them ([`rules`]), commands of processes,
//! names of network namespaces. Reading them is the only I/O attribution
//! does in user space ([`resolve`]).

pub mod resolve;
pub mod rules;
