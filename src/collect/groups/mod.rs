//! Names of the groups network time is attributed to: cgroup paths and the
//! units, containers and pods in them ([`cgroup_names`]), commands of processes,
//! names of network namespaces, connections and services ([`conns`]). Reading them is the only I/O attribution
//! does in user space ([`resolve`]).

pub mod cgroup_names;
pub mod conns;
pub mod kubelet;
pub mod resolve;
