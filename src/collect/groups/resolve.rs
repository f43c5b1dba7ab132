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
use std::path::{Path, PathBuf};

use super::cgroup_names;
use super::kubelet::Kubelet;
use crate::collect::attribution::{GroupId, Namer};
use crate::kernel::cgroup::v2_hierarchy;

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
            })
            .collect()
    }
}

/// The deepest a walk goes below the root, and the longest path it names
/// (PATH_MAX): a delegated subtree is anyone's to nest, and the walk runs
/// on the measuring thread.
pub const MAX_DEPTH: usize = 32;
const MAX_PATH: usize = 4096;

/// Directories one naming (one interval) may read while walking: a walk
/// of a bigger tree goes on where it stopped in the next interval. A
/// user who makes a new group every interval costs at most this much.
pub const WALK_BUDGET: usize = 1024;

/// The cgroup v2 hierarchy: where it is mounted, and the path of each id
/// seen. An id is the kernfs id of the group's directory, which is also a
/// file handle of it: as root (CAP_DAC_READ_SEARCH) the directory is
/// opened by that handle and its path read back, one system call per new
/// group, whatever the tree. Without that capability (the systemd unit)
/// the tree is walked for ids not yet seen, within [`MAX_DEPTH`] and
/// [`WALK_BUDGET`].
#[derive(Debug, Default)]
struct CgroupTree {
    root: Option<PathBuf>,
    /// The root, open, while opening groups by handle works here.
    handles: Option<fs::File>,
    paths: HashMap<u64, String>,
    /// The id that holds each path now. A unit that restarts gets a new
    /// group at its old path: the path names the new one, and the old id
    /// (removed) is named by its id, so one interval never names two
    /// groups alike.
    holders: HashMap<String, u64>,
    walk: Walk,
}

/// A walk of the tree, in steps of at most [`WALK_BUDGET`] directories.
#[derive(Debug, Default)]
struct Walk {
    /// Directories still to read: (directory, path under the root, depth).
    pending: Vec<(PathBuf, String, usize)>,
    /// Walks begun so far.
    begun: u64,
    /// Directories read so far.
    read: u64,
    /// Whether the walk in progress left out a subtree (too deep, or its
    /// path too long).
    cut: bool,
    /// Ids not found yet, each with the number of walks begun when it was
    /// first looked for: only a walk begun later can tell it is not there.
    waiting: HashMap<u64, u64>,
    /// Ids a whole walk, begun after they were looked for, did not find,
    /// and whether that walk had left a subtree out.
    missing: HashMap<u64, bool>,
}

/// What became of looking a group up.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Found {
    Path(String),
    /// Looked for and not there (removed before it was named); `cut`: or
    /// in a subtree deeper than the walk goes.
    Missing {
        cut: bool,
    },
    /// Not found yet: the walk goes on in the next interval.
    Pending,
}

impl CgroupTree {
    fn find() -> CgroupTree {
        let root = v2_hierarchy();
        CgroupTree {
            handles: root.as_ref().and_then(|root| fs::File::open(root).ok()),
            root,
            ..CgroupTree::default()
        }
    }

    /// (name, label) of each group in `ids`: all are looked up first, so
    /// that a path taken over by a new group in this very naming is known
    /// before the old one is named.
    fn names(&mut self, ids: &[u64], kubelet: &mut Kubelet) -> Vec<(String, String)> {
        let mut label = |path: &str| {
            let parts = cgroup_names::parts(path);
            cgroup_names::label(&parts, kubelet.names_for(&parts))
        };
        let mut budget = WALK_BUDGET;
        let found: Vec<Found> = ids
            .iter()
            .map(|&id| self.look_up(id, &mut budget))
            .collect();
        ids.iter()
            .zip(found)
            .map(|(&id, found)| match found {
                Found::Path(path) if self.holders.get(&path).is_none_or(|&h| h == id) => {
                    let label = label(&path);
                    (path, label)
                }
                Found::Path(path) => (
                    unnamed(id),
                    format!("{} (removed, since restarted)", label(&path)),
                ),
                Found::Missing { cut: false } => {
                    (unnamed(id), "removed before it was named".into())
                }
                Found::Missing { cut: true } => (
                    unnamed(id),
                    format!("removed, or deeper than {MAX_DEPTH} levels"),
                ),
                Found::Pending => (unnamed(id), "not named yet".into()),
            })
            .collect()
    }

    fn look_up(&mut self, id: u64, budget: &mut usize) -> Found {
        if let Some(path) = self.paths.get(&id) {
            return Found::Path(path.clone());
        }
        if self.root.is_none() {
            return if id == ROOT_CGROUP_ID {
                Found::Path("/".to_owned())
            } else {
                Found::Missing { cut: false }
            };
        }
        if let Some(&cut) = self.walk.missing.get(&id) {
            return Found::Missing { cut };
        }
        match self.by_handle(id) {
            Some(Some(path)) => {
                self.remember(id, path.clone());
                return Found::Path(path);
            }
            Some(None) => return Found::Missing { cut: false },
            None => {}
        }
        let begun = self.walk.begun;
        self.walk.waiting.entry(id).or_insert(begun);
        self.walk_for(id, budget)
    }

    /// The path of group `id` by its file handle: `None` where handles
    /// cannot be used here (then they are not tried again), `Some(None)`
    /// for a group that is no more.
    fn by_handle(&mut self, id: u64) -> Option<Option<String>> {
        use std::os::fd::{AsRawFd, FromRawFd};
        let (root, handles) = (self.root.as_ref()?, self.handles.as_ref()?);
        /// struct file_handle with the 8 bytes of a kernfs handle.
        #[repr(C)]
        struct KernfsHandle {
            bytes: libc::c_uint,
            kind: libc::c_int,
            id: u64,
        }
        /// FILEID_KERNFS in linux/exportfs.h.
        const FILEID_KERNFS: libc::c_int = 0xfe;
        let mut handle = KernfsHandle {
            bytes: 8,
            kind: FILEID_KERNFS,
            id,
        };
        // SAFETY: the handle is a struct file_handle followed by the
        // handle_bytes it declares; the fd returned, if any, is ours.
        let fd = unsafe {
            libc::open_by_handle_at(
                handles.as_raw_fd(),
                (&raw mut handle).cast(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            let error = std::io::Error::last_os_error();
            return match error.raw_os_error() {
                Some(libc::ESTALE | libc::ENOENT) => Some(None),
                _ => {
                    self.handles = None;
                    None
                }
            };
        }
        // SAFETY: fd was just opened and is owned by nothing else.
        let dir = unsafe { fs::File::from_raw_fd(fd) };
        let path = fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd())).ok()?;
        let relative = path.strip_prefix(root).ok()?;
        Some(Some(format!("/{}", relative.to_string_lossy())))
    }

    fn remember(&mut self, id: u64, path: String) {
        self.holders.insert(path.clone(), id);
        self.paths.insert(id, path);
    }

    /// Walks on (begins a walk if none is under way) until `id` is found,
    /// the walk ends or the budget is spent.
    fn walk_for(&mut self, id: u64, budget: &mut usize) -> Found {
        if self.walk.pending.is_empty() {
            if *budget == 0 {
                return Found::Pending;
            }
            let Some(root) = self.root.clone() else {
                return Found::Missing { cut: false };
            };
            self.walk.begun += 1;
            self.walk.cut = false;
            self.walk.pending.push((root, String::new(), 0));
        }
        while *budget > 0 {
            let Some((dir, relative, depth)) = self.walk.pending.pop() else {
                break;
            };
            *budget -= 1;
            self.walk.read += 1;
            self.visit(&dir, relative, depth);
            if self.walk.pending.is_empty() {
                self.walk_ended();
                break;
            }
            if self.paths.contains_key(&id) {
                break;
            }
        }
        if let Some(path) = self.paths.get(&id) {
            return Found::Path(path.clone());
        }
        match self.walk.missing.get(&id) {
            Some(&cut) => Found::Missing { cut },
            None => Found::Pending,
        }
    }

    /// Names the directory and queues its subdirectories.
    fn visit(&mut self, dir: &Path, relative: String, depth: usize) {
        let Ok(meta) = fs::metadata(dir) else {
            return;
        };
        let path = if relative.is_empty() {
            "/".to_owned()
        } else {
            relative.clone()
        };
        self.walk.waiting.remove(&meta.ino());
        self.remember(meta.ino(), path);
        if depth >= MAX_DEPTH {
            self.walk.cut |= fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .any(|e| is_dir(&e));
            return;
        }
        for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
            if !is_dir(&entry) {
                continue;
            }
            let child = format!("{relative}/{}", entry.file_name().to_string_lossy());
            if child.len() > MAX_PATH {
                self.walk.cut = true;
                continue;
            }
            self.walk.pending.push((entry.path(), child, depth + 1));
        }
    }

    /// A whole walk is done: the ids looked for before it began and not
    /// found are not there.
    fn walk_ended(&mut self) {
        let (begun, cut) = (self.walk.begun, self.walk.cut);
        let missing: Vec<u64> = self
            .walk
            .waiting
            .iter()
            .filter(|&(_, &asked)| asked < begun)
            .map(|(&id, _)| id)
            .collect();
        for id in missing {
            self.walk.waiting.remove(&id);
            self.walk.missing.insert(id, cut);
        }
    }
}

/// A /proc `comm` as the process named itself: the kernel ends it with a
/// newline; blanks are part of the name (front ends print names through
/// [`crate::frontends::label::printable`]).
fn without_newline(comm: &str) -> &str {
    comm.strip_suffix('\n').unwrap_or(comm)
}

fn is_dir(entry: &fs::DirEntry) -> bool {
    entry.file_type().is_ok_and(|t| t.is_dir())
}

/// The name of a group that has no path: its id.
fn unnamed(id: u64) -> String {
    format!("cgroup-id:{id}")
}

/// The id of the root cgroup, where every task is without a v2 hierarchy.
const ROOT_CGROUP_ID: u64 = 1;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn paths_of_this_hosts_cgroups_by_handle_and_by_walking() {
        for by_handle in [true, false] {
            let mut tree = CgroupTree::find();
            let root = tree
                .root
                .clone()
                .expect("this host mounts a cgroup v2 hierarchy");
            if !by_handle {
                tree.handles = None;
            }
            let root_id = fs::metadata(&root).unwrap().ino();
            assert_eq!(root_id, ROOT_CGROUP_ID, "the root's inode is its id");
            let mut kubelet = Kubelet::new(Path::new("/nonexistent"));
            let names = tree.names(&[root_id, u64::MAX], &mut kubelet);
            assert_eq!(names[0], ("/".to_owned(), "/".to_owned()), "{by_handle}");
            assert_eq!(names[1].0, format!("cgroup-id:{}", u64::MAX), "{by_handle}");
            assert_eq!(names[1].1, "removed before it was named", "{by_handle}");
        }
    }

    /// A unit restarted: its new group has its path, the old one is named
    /// by its id, in the same interval and in any order.
    #[test]
    fn a_path_names_the_group_that_holds_it_now() {
        for ids in [[5, 6], [6, 5]] {
            let mut tree = CgroupTree {
                root: Some(PathBuf::from("/nonexistent")),
                ..CgroupTree::default()
            };
            tree.remember(5, "/system.slice/web.service".into());
            tree.remember(6, "/system.slice/web.service".into());
            let mut kubelet = Kubelet::new(Path::new("/nonexistent"));
            let names: BTreeMap<u64, (String, String)> = ids
                .into_iter()
                .zip(tree.names(&ids, &mut kubelet))
                .collect();
            assert_eq!(
                names[&6],
                (
                    "/system.slice/web.service".to_owned(),
                    "web.service".to_owned()
                )
            );
            assert_eq!(
                names[&5],
                (
                    "cgroup-id:5".to_owned(),
                    "web.service (removed, since restarted)".to_owned()
                )
            );
        }
    }

    /// A node made up by the test: a cgroup tree as the kubelet's systemd
    /// and cgroupfs drivers lay it out, and the kubelet's log directories.
    /// Each group is named by the names the kubelet gave its pod and
    /// container; where the logs say nothing, by uid and id, and where
    /// they cannot be read, by uid and id with the reason.
    #[test]
    fn a_nodes_cgroups_by_the_names_of_their_pods_and_containers() {
        const WEB: &str = "1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9";
        const DNS: &str = "5e6f7081-92a3-4b4c-8d5e-6f708192a3b4";
        const JOB: &str = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";
        let nginx = "3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70";
        let sidecar = "4f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f71";
        let coredns = "5f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f72";
        let sandbox = "6f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f73";
        let node = tempfile::tempdir().unwrap();
        let cgroups = node.path().join("cgroup");
        let logs = node.path().join("log");
        let web_slice = format!(
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice",
            WEB.replace('-', "_")
        );
        let groups = [
            format!("{web_slice}/cri-containerd-{nginx}.scope"),
            format!("{web_slice}/cri-containerd-{sidecar}.scope"),
            format!("{web_slice}/cri-containerd-{sandbox}.scope"),
            web_slice.clone(),
            format!("/kubepods/besteffort/pod{DNS}/{coredns}"),
            format!("/kubepods/besteffort/pod{JOB}"),
            "/system.slice/containerd.service".to_owned(),
        ];
        for group in &groups {
            fs::create_dir_all(cgroups.join(&group[1..])).unwrap();
        }
        let ids: Vec<GroupId> = groups
            .iter()
            .map(|g| GroupId::Cgroup(fs::metadata(cgroups.join(&g[1..])).unwrap().ino()))
            .collect();
        // The kubelet's logs: a link per container into its pod's
        // directory; the job's pod has its directory and no link yet; the
        // sandbox logs nothing.
        fs::create_dir_all(logs.join("containers")).unwrap();
        for (ns, pod, uid, container, id) in [
            ("shop", "web-7d4b-x2", WEB, "nginx", nginx),
            ("shop", "web-7d4b-x2", WEB, "envoy", sidecar),
            ("kube-system", "coredns-5d78-8xv2k", DNS, "coredns", coredns),
        ] {
            let dir = logs.join(format!("pods/{ns}_{pod}_{uid}/{container}"));
            fs::create_dir_all(&dir).unwrap();
            std::os::unix::fs::symlink(
                dir.join("0.log"),
                logs.join(format!("containers/{pod}_{ns}_{container}-{id}.log")),
            )
            .unwrap();
        }
        fs::create_dir_all(logs.join(format!("pods/batch_report-28911_{JOB}"))).unwrap();
        let short = |id: &str| id[..12].to_owned();
        let labels = |resolver: &mut Resolver| -> Vec<String> {
            resolver.names(&ids).into_iter().map(|(_, l)| l).collect()
        };

        let mut resolver = Resolver::of_node(&cgroups, &logs);
        assert_eq!(resolver.kubelet_unreadable(), None);
        assert_eq!(
            labels(&mut resolver),
            [
                "pod shop/web-7d4b-x2 container nginx".to_owned(),
                "pod shop/web-7d4b-x2 container envoy".to_owned(),
                format!("pod shop/web-7d4b-x2 containerd {}", short(sandbox)),
                "pod shop/web-7d4b-x2".to_owned(),
                "pod kube-system/coredns-5d78-8xv2k container coredns".to_owned(),
                "pod batch/report-28911".to_owned(),
                "containerd.service".to_owned(),
            ]
        );

        // Only the links mounted (no pods/): the pods of containers still
        // named from where the links point; the job's by its uid.
        fs::rename(logs.join("pods"), node.path().join("pods")).unwrap();
        let mut resolver = Resolver::of_node(&cgroups, &logs);
        let got = labels(&mut resolver);
        assert_eq!(got[0], "pod shop/web-7d4b-x2 container nginx");
        assert_eq!(got[3], "pod shop/web-7d4b-x2");
        assert_eq!(got[5], format!("pod {JOB}"));

        // No kubelet logs here: today's uid and id labels, and no note
        // (not a Kubernetes node).
        let uid_and_id = [
            format!("pod {WEB} containerd {}", short(nginx)),
            format!("pod {WEB} containerd {}", short(sidecar)),
            format!("pod {WEB} containerd {}", short(sandbox)),
            format!("pod {WEB}"),
            format!("pod {DNS} container {}", short(coredns)),
            format!("pod {JOB}"),
            "containerd.service".to_owned(),
        ];
        let absent = node.path().join("absent");
        let mut resolver = Resolver::of_node(&cgroups, &absent);
        assert_eq!(resolver.kubelet_unreadable(), None);
        assert_eq!(labels(&mut resolver), uid_and_id);
        // There and unreadable (not a directory): the same labels, and why.
        fs::create_dir(&absent).unwrap();
        fs::write(absent.join("containers"), "").unwrap();
        let mut resolver = Resolver::of_node(&cgroups, &absent);
        let (path, why) = resolver.kubelet_unreadable().unwrap();
        assert!(path.ends_with("absent/containers"), "{path}");
        assert!(why.contains("Not a directory"), "{why}");
        assert_eq!(labels(&mut resolver), uid_and_id);
    }
}
