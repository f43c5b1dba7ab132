//! Group names from the running system: a cgroup id is the inode of its
//! directory in the v2 hierarchy (wherever that is mounted: `/sys/fs/cgroup`,
//! or `/sys/fs/cgroup/unified` on hybrid hosts), opened by it or found by a
//! bounded walk of the tree (`CgroupTree`), its pod and container named
//! as the kubelet names them ([`super::kubelet`]); a process's command
//! from /proc; a network namespace's `ip netns` name (or a process in it).
//! Looked up only for ids not seen before.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

mod cgroup_tree;

use super::conns::{self, Services};
use super::kubelet::Kubelet;
use crate::collect::attribution::{GroupId, Namer};
use cgroup_tree::CgroupTree;
pub use cgroup_tree::{MAX_DEPTH, WALK_BUDGET};

/// Directories where tools keep named network namespaces, and the prefix
/// their names get.
const NAMESPACE_DIRS: &[(&str, &str)] = &[("/run/netns", ""), ("/run/docker/netns", "docker ")];

/// The names of groups, cached.
#[derive(Debug)]
pub struct Resolver {
    cgroups: CgroupTree,
    /// Names of pods and containers, under the kubelet's log root.
    kubelet: Kubelet,
    commands: HashMap<u32, String>,
    namespaces: HashMap<u32, String>,
    services: Services,
}

impl Resolver {
    /// Names cgroups under this host's v2 hierarchy, their pods and
    /// containers from the kubelet's logs under `kubelet_logs`.
    pub fn new(kubelet_logs: &Path) -> Resolver {
        Resolver {
            cgroups: CgroupTree::find(),
            kubelet: Kubelet::new(kubelet_logs),
            commands: HashMap::new(),
            namespaces: HashMap::new(),
            services: Services::of_host(),
        }
    }

    /// A resolver that names cgroups by walking the tree only, as it does
    /// without CAP_DAC_READ_SEARCH (the systemd unit): for the tests.
    #[cfg(any(test, feature = "test-support"))]
    pub fn walking_only() -> Resolver {
        let mut resolver = Resolver::new(Path::new(super::kubelet::DEFAULT_ROOT));
        resolver.cgroups.handles = None;
        resolver
    }

    /// A resolver of a node made up by a test: its cgroup hierarchy at
    /// `cgroups` (walked: ids are the inodes of its directories), the
    /// kubelet's logs under `kubelet_logs`.
    #[cfg(test)]
    fn of_node(cgroups: &Path, kubelet_logs: &Path) -> Resolver {
        Resolver {
            cgroups: CgroupTree {
                root: Some(cgroups.to_owned()),
                ..CgroupTree::default()
            },
            ..Resolver::new(kubelet_logs)
        }
    }

    /// Directories read by walks so far: for the tests of the walk's bound.
    #[cfg(any(test, feature = "test-support"))]
    pub fn directories_read(&self) -> u64 {
        self.cgroups.walk.read
    }

    /// Whether cgroups have names here: without a cgroup v2 hierarchy
    /// every task is in its root, and `--by cgroup` shows `/` only.
    pub fn names_cgroups(&self) -> bool {
        self.cgroups.root.is_some()
    }

    /// The kubelet's `containers/` when it is there but cannot be read
    /// (see [`Kubelet::unreadable`]): pods show by uid, containers by id.
    pub fn kubelet_unreadable(&self) -> Option<(String, String)> {
        self.kubelet.unreadable()
    }

    fn command(&mut self, pid: u32) -> String {
        match fs::read_to_string(format!("/proc/{pid}/comm")) {
            Ok(comm) => {
                let comm = without_newline(&comm).to_owned();
                self.commands.insert(pid, comm.clone());
                comm
            }
            Err(_) => self
                .commands
                .get(&pid)
                .cloned()
                .unwrap_or_else(|| "exited".to_owned()),
        }
    }

    fn namespace(&mut self, inode: u32, rescanned: &mut bool) -> String {
        if !self.namespaces.contains_key(&inode) && !*rescanned {
            *rescanned = true;
            self.scan_namespaces();
        }
        self.namespaces
            .get(&inode)
            .cloned()
            .unwrap_or_else(|| "gone".to_owned())
    }

    /// Names every namespace this host names, and a process of each other
    /// one.
    fn scan_namespaces(&mut self) {
        if let Ok(meta) = fs::metadata("/proc/1/ns/net") {
            self.namespaces.insert(meta.ino() as u32, "host".to_owned());
        }
        for (dir, prefix) in NAMESPACE_DIRS {
            for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
                if let Ok(meta) = fs::metadata(entry.path()) {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    self.namespaces
                        .entry(meta.ino() as u32)
                        .or_insert(format!("{prefix}{name}"));
                }
            }
        }
        for entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(meta) = fs::metadata(entry.path().join("ns/net")) else {
                continue;
            };
            if let std::collections::hash_map::Entry::Vacant(vacant) =
                self.namespaces.entry(meta.ino() as u32)
            {
                let comm = fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
                vacant.insert(format!("pid {pid} ({})", without_newline(&comm)));
            }
        }
    }
}

impl Namer for Resolver {
    fn names(&mut self, ids: &[GroupId]) -> Vec<(String, String)> {
        let mut rescanned = false;
        self.kubelet.begin();
        let cgroup_ids: Vec<u64> = ids
            .iter()
            .filter_map(|&id| match id {
                GroupId::Cgroup(id) => Some(id),
                _ => None,
            })
            .collect();
        let mut cgroups = self
            .cgroups
            .names(&cgroup_ids, &mut self.kubelet)
            .into_iter();
        ids.iter()
            .map(|&id| match id {
                GroupId::Cgroup(_) => cgroups.next().unwrap_or_default(),
                GroupId::Process(pid) => (pid.to_string(), self.command(pid)),
                GroupId::Netns(inode) => (inode.to_string(), self.namespace(inode, &mut rescanned)),
                GroupId::Flow { netns, conn } => (
                    conns::flow_name(&conn),
                    self.namespace(netns, &mut rescanned),
                ),
                GroupId::Port(service) => {
                    (conns::port_name(&service), self.services.name(&service))
                }
            })
            .collect()
    }
}

/// A /proc `comm` as the process named itself: the kernel ends it with a
/// newline; blanks are part of the name (front ends print names through
/// [`crate::frontends::label::printable`]).
fn without_newline(comm: &str) -> &str {
    comm.strip_suffix('\n').unwrap_or(comm)
}

#[cfg(test)]
mod tests;
