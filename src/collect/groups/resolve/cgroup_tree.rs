//! The cgroup v2 hierarchy, and the path of each group id: opened by its
//! file handle where netto may, found by a bounded walk of the tree where
//! it may not.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::super::cgroup_names;
use super::super::kubelet::Kubelet;
use crate::kernel::cgroup::v2_hierarchy;

/// The walk's bounds, shared with the walk that finds cgroup programs
/// attached without a link (`kernel::network_programs`): one naming (one
/// interval) reads at most [`WALK_BUDGET`] directories, and a walk of a
/// bigger tree goes on where it stopped in the next interval.
pub use crate::kernel::cgroup::{MAX_DEPTH, MAX_PATH, WALK_BUDGET};

/// The cgroup v2 hierarchy: where it is mounted, and the path of each id
/// seen. An id is the kernfs id of the group's directory, which is also a
/// file handle of it: as root (CAP_DAC_READ_SEARCH) the directory is
/// opened by that handle and its path read back, one system call per new
/// group, whatever the tree. Without that capability (the systemd unit)
/// the tree is walked for ids not yet seen, within [`MAX_DEPTH`] and
/// [`WALK_BUDGET`].
#[derive(Debug, Default)]
pub(super) struct CgroupTree {
    pub(super) root: Option<PathBuf>,
    /// The root, open, while opening groups by handle works here.
    pub(super) handles: Option<fs::File>,
    pub(super) paths: HashMap<u64, String>,
    /// The id that holds each path now. A unit that restarts gets a new
    /// group at its old path: the path names the new one, and the old id
    /// (removed) is named by its id, so one interval never names two
    /// groups alike.
    pub(super) holders: HashMap<String, u64>,
    pub(super) walk: Walk,
}

/// A walk of the tree, in steps of at most [`WALK_BUDGET`] directories.
#[derive(Debug, Default)]
pub(super) struct Walk {
    /// Directories still to read: (directory, path under the root, depth).
    pending: Vec<(PathBuf, String, usize)>,
    /// Walks begun so far.
    begun: u64,
    /// Directories read so far.
    pub(super) read: u64,
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
    pub(super) fn find() -> CgroupTree {
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
    pub(super) fn names(&mut self, ids: &[u64], kubelet: &mut Kubelet) -> Vec<(String, String)> {
        let mut label = |path: &str| {
            let parts = cgroup_names::parts(path);
            cgroup_names::label(&parts, kubelet.names_for(parts.ids()))
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

    pub(super) fn remember(&mut self, id: u64, path: String) {
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

fn is_dir(entry: &fs::DirEntry) -> bool {
    entry.file_type().is_ok_and(|t| t.is_dir())
}

/// The name of a group that has no path: its id.
fn unnamed(id: u64) -> String {
    format!("cgroup-id:{id}")
}

/// The id of the root cgroup, where every task is without a v2 hierarchy.
pub(super) const ROOT_CGROUP_ID: u64 = 1;
