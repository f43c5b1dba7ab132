//! Group names from the running system: a cgroup id is the inode of its
//! directory in the v2 hierarchy (wherever that is mounted: `/sys/fs/cgroup`,
//! or `/sys/fs/cgroup/unified` on hybrid hosts), found by walking the tree;
//! a process's command from /proc; a network namespace's `ip netns` name
//! (or a process in it). Looked up again only for ids not seen before, at
//! most once per interval.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::rules;
use crate::collect::attribution::{GroupId, Namer};
use crate::kernel::cgroup::v2_hierarchy;

/// Directories where tools keep named network namespaces, and the prefix
/// their names get.
const NAMESPACE_DIRS: &[(&str, &str)] = &[("/run/netns", ""), ("/run/docker/netns", "docker ")];

/// The names of groups, cached.
#[derive(Debug, Default)]
pub struct Resolver {
    cgroups: CgroupTree,
    commands: HashMap<u32, String>,
    namespaces: HashMap<u32, String>,
}

impl Resolver {
    pub fn new() -> Resolver {
        Resolver {
            cgroups: CgroupTree::find(),
            ..Resolver::default()
        }
    }

    /// What the user should know about naming here.
    pub fn notes(&self) -> Vec<String> {
        match &self.cgroups.root {
            Some(_) => Vec::new(),
            None => vec![
                "note: no cgroup v2 hierarchy is mounted: every task is in its root, so --by cgroup shows `/` only".to_owned(),
            ],
        }
    }

    fn command(&mut self, pid: u32) -> String {
        match fs::read_to_string(format!("/proc/{pid}/comm")) {
            Ok(comm) => {
                let comm = comm.trim_end().to_owned();
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
                vacant.insert(format!("pid {pid} ({})", comm.trim_end()));
            }
        }
    }
}

impl Namer for Resolver {
    fn names(&mut self, ids: &[GroupId]) -> Vec<(String, String)> {
        let mut rescanned = false;
        ids.iter()
            .map(|&id| match id {
                GroupId::Cgroup(id) => {
                    let path = self.cgroups.path(id, &mut rescanned);
                    let label = rules::label(&path);
                    (path, label)
                }
                GroupId::Process(pid) => (pid.to_string(), self.command(pid)),
                GroupId::Netns(inode) => (inode.to_string(), self.namespace(inode, &mut rescanned)),
            })
            .collect()
    }
}

/// The cgroup v2 hierarchy: where it is mounted, and the path of each id
/// seen.
#[derive(Debug, Default)]
struct CgroupTree {
    root: Option<PathBuf>,
    paths: HashMap<u64, String>,
}

impl CgroupTree {
    fn find() -> CgroupTree {
        CgroupTree {
            root: v2_hierarchy(),
            paths: HashMap::new(),
        }
    }

    /// The path of cgroup `id` under the root; walks the tree again (once
    /// per `rescanned`) for an id not seen before. A group removed before
    /// it was seen has no path: `cgroup-id:ID`.
    fn path(&mut self, id: u64, rescanned: &mut bool) -> String {
        if !self.paths.contains_key(&id) && !*rescanned {
            *rescanned = true;
            if let Some(root) = self.root.clone() {
                self.walk(&root, "");
            }
        }
        if let Some(path) = self.paths.get(&id) {
            return path.clone();
        }
        if self.root.is_none() && id == ROOT_CGROUP_ID {
            return "/".to_owned();
        }
        format!("cgroup-id:{id}")
    }

    fn walk(&mut self, dir: &Path, relative: &str) {
        let Ok(meta) = fs::metadata(dir) else {
            return;
        };
        let path = if relative.is_empty() { "/" } else { relative };
        self.paths.insert(meta.ino(), path.to_owned());
        for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                let name = entry.file_name();
                let child = format!("{relative}/{}", name.to_string_lossy());
                self.walk(&entry.path(), &child);
            }
        }
    }
}

/// The id of the root cgroup, where every task is without a v2 hierarchy.
const ROOT_CGROUP_ID: u64 = 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_of_this_hosts_cgroups() {
        let mut tree = CgroupTree::find();
        let root = tree
            .root
            .clone()
            .expect("this host mounts a cgroup v2 hierarchy");
        let mut rescanned = false;
        let root_id = fs::metadata(&root).unwrap().ino();
        assert_eq!(root_id, ROOT_CGROUP_ID, "the root's inode is its id");
        assert_eq!(tree.path(root_id, &mut rescanned), "/");
        assert!(rescanned);
        assert_eq!(
            tree.path(u64::MAX, &mut rescanned),
            format!("cgroup-id:{}", u64::MAX)
        );
    }
}
