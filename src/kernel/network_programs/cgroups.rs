//! Cgroup programs attached without a link (`BPF_PROG_ATTACH`), which no
//! link walk finds: each cgroup of the v2 hierarchy is asked with
//! `BPF_PROG_QUERY` for the attach types of the program types not located
//! otherwise. The walk is bounded as attribution's naming walk is (depth,
//! path length, directories per interval, going on in the next interval
//! where it stopped), and its findings are kept: a steady host is walked
//! once, then the places found are checked with one query per cgroup and attach
//! type per interval. A
//! program that no walk has looked for yet begins a new walk, and so does
//! one still not located [`REWALK`] after the last whole walk.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{attachment, query, Attachment};
use crate::kernel::cgroup::{v2_hierarchy, MAX_DEPTH, MAX_PATH, WALK_BUDGET};
use crate::kernel::network_hooks::{cgroup_attach_types, hook_of};

/// How long a program not located stays unlooked-for after a whole walk:
/// one attached after that walk to a cgroup, having been loaded before
/// (or moved), is found within this long.
pub const REWALK: Duration = Duration::from_secs(60);

/// A cgroup program's place, as found: enough to ask again.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Place {
    prog: u32,
    dir: PathBuf,
    attach_type: u32,
    at: Attachment,
}

/// A walk under way.
#[derive(Debug, Default)]
struct Walk {
    /// Directories still to read, with their depth.
    pending: Vec<(PathBuf, usize)>,
    attach_types: BTreeSet<u32>,
    looking_for: BTreeSet<u32>,
    found: Vec<Place>,
}

/// The search across intervals.
#[derive(Debug, Default)]
pub struct LegacyCgroups {
    /// Places the last whole walk found, still there when last asked.
    found: Vec<Place>,
    /// Programs a whole walk has looked for.
    looked_for: BTreeSet<u32>,
    walk: Option<Walk>,
    last_whole: Option<Instant>,
}

impl LegacyCgroups {
    /// The places of cgroup programs attached without a link; `unlocated`:
    /// (program id, type name) of each cgroup-type program no link
    /// locates now.
    pub fn locate(&mut self, unlocated: &[(u32, &str)]) -> Vec<(u32, Attachment)> {
        if unlocated.is_empty() {
            self.found.clear();
            return Vec::new();
        }
        still_there(&mut self.found);
        // Forget programs gone or located since: the set stays as small as
        // the host's unlocated programs.
        let ids: BTreeSet<u32> = unlocated.iter().map(|&(id, _)| id).collect();
        self.looked_for.retain(|id| ids.contains(id));
        let new = unlocated
            .iter()
            .any(|(id, _)| !self.looked_for.contains(id));
        // Programs the kept places locate need no walk: a host whose
        // cgroup programs are all found is not walked again.
        let placed: BTreeSet<u32> = self.found.iter().map(|p| p.prog).collect();
        let stale = self.last_whole.is_none_or(|t| t.elapsed() >= REWALK)
            && unlocated.iter().any(|(id, _)| !placed.contains(id));
        if self.walk.is_none() && (new || stale) {
            self.walk = begin(unlocated);
        }
        if let Some(walk) = self.walk.as_mut() {
            step(walk, WALK_BUDGET);
            if walk.pending.is_empty() {
                let walk = self.walk.take().unwrap_or_default();
                self.looked_for.extend(walk.looking_for);
                self.found = walk.found;
                self.last_whole = Some(Instant::now());
            }
        }
        let partial = self.walk.iter().flat_map(|w| &w.found);
        let places: BTreeSet<(u32, Attachment)> = self
            .found
            .iter()
            .chain(partial)
            .map(|p| (p.prog, p.at.clone()))
            .collect();
        places.into_iter().collect()
    }
}

/// A walk for the attach types of `unlocated`'s program types, from the
/// root of the v2 hierarchy; `None` without one.
fn begin(unlocated: &[(u32, &str)]) -> Option<Walk> {
    let root = v2_hierarchy()?;
    Some(Walk {
        pending: vec![(root, 0)],
        attach_types: unlocated
            .iter()
            .flat_map(|(_, t)| cgroup_attach_types(t))
            .copied()
            .collect(),
        looking_for: unlocated.iter().map(|&(id, _)| id).collect(),
        found: Vec::new(),
    })
}

/// Reads up to `budget` directories of the walk; how many it read.
fn step(walk: &mut Walk, budget: usize) -> usize {
    let mut read = 0;
    while read < budget {
        let Some((dir, depth)) = walk.pending.pop() else {
            break;
        };
        read += 1;
        walk.found.extend(places_in(&dir, &walk.attach_types));
        if depth >= MAX_DEPTH {
            continue;
        }
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) && path.as_os_str().len() <= MAX_PATH {
                walk.pending.push((path, depth + 1));
            }
        }
    }
    read
}

/// The programs attached directly to one cgroup, for each attach type.
fn places_in(dir: &Path, attach_types: &BTreeSet<u32>) -> Vec<Place> {
    let Ok(file) = fs::File::open(dir) else {
        return Vec::new();
    };
    let Ok(cgroup_id) = file.metadata().map(|m| m.ino()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for &attach_type in attach_types {
        let Some(hook) = hook_of(attach_type) else {
            continue;
        };
        for prog in query(file.as_raw_fd(), attach_type) {
            out.push(Place {
                prog,
                dir: dir.to_path_buf(),
                attach_type,
                at: Attachment {
                    cgroup_id: Some(cgroup_id),
                    ..attachment(hook, false)
                },
            });
        }
    }
    out
}

/// The places found before that are still there: their cgroup the same
/// (a directory made anew at the path is another cgroup) and the program
/// still attached. One query per cgroup and attach type, however many
/// programs share them.
fn still_there(places: &mut Vec<Place>) {
    let mut asked: BTreeMap<(PathBuf, u32), (Option<u64>, Vec<u32>)> = BTreeMap::new();
    for place in places.iter() {
        let key = (place.dir.clone(), place.attach_type);
        asked
            .entry(key)
            .or_insert_with(|| match fs::File::open(&place.dir) {
                Ok(file) => (
                    file.metadata().ok().map(|m| m.ino()),
                    query(file.as_raw_fd(), place.attach_type),
                ),
                Err(_) => (None, Vec::new()),
            });
    }
    places.retain(|p| {
        asked
            .get(&(p.dir.clone(), p.attach_type))
            .is_some_and(|(id, progs)| *id == p.at.cgroup_id && progs.contains(&p.prog))
    });
}

#[cfg(test)]
mod tests;
