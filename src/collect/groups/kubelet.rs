//! The names of pods and containers, read on the node without the API
//! server. Under its log root (`/var/log`) the kubelet keeps one link per
//! container, `containers/POD_NAMESPACE_CONTAINER-ID.log`, pointing into
//! its pod's directory, `pods/NAMESPACE_POD_UID/CONTAINER/N.log`. A
//! cgroup path holds a container's id and its pod's uid: the link's name
//! names the container, and where it points names the pod (read with
//! `readlink`, never followed: the logs themselves are not read, and
//! `pods/` need not even be there). `pods/`, where it can be read, also
//! names the pods whose containers have no link yet.
//!
//! The directories are read only when a group's id or uid is not known
//! yet, at most once per naming (one interval), and only when one of them
//! changed since it was last read: a container the kubelet does not run
//! (a `docker run` on the node, a pod's sandbox, which logs nothing) costs
//! two `stat`s per interval, not a reading. A reading takes at most
//! [`MAX_ENTRIES`] entries per directory.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Where the kubelet writes pod logs unless `--kubelet-logs` says.
pub const DEFAULT_ROOT: &str = "/var/log";

/// Entries read per directory and reading: a node runs at most a few
/// hundred pods (the kubelet's default is 110).
pub const MAX_ENTRIES: usize = 16384;

/// A directory modified this recently may still change within the same
/// tick of its timestamp, which then would not move: it is read again
/// next time whatever its timestamp says.
const SETTLE: Duration = Duration::from_secs(1);

/// A container as the kubelet names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerName {
    pub namespace: String,
    pub pod: String,
    pub container: String,
}

/// A pod as the kubelet names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodName {
    pub namespace: String,
    pub pod: String,
}

/// What a cgroup's path holds that the kubelet names: a container's id
/// and its pod's uid (with `-`), each where the path has one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ids<'a> {
    pub container: Option<&'a str>,
    pub pod: Option<&'a str>,
}

/// What the kubelet's directories said when last read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    /// By full container id.
    containers: HashMap<String, ContainerName>,
    /// By pod uid, from where the containers' links point.
    linked_pods: HashMap<String, PodName>,
    /// By pod uid, from `pods/`.
    listed_pods: HashMap<String, PodName>,
}

impl Names {
    pub fn container(&self, id: &str) -> Option<&ContainerName> {
        self.containers.get(id)
    }

    pub fn pod(&self, uid: &str) -> Option<&PodName> {
        self.linked_pods
            .get(uid)
            .or_else(|| self.listed_pods.get(uid))
    }

    /// Whether the pod and container of `ids` are both known (or absent).
    fn knows(&self, ids: Ids<'_>) -> bool {
        let container = ids
            .container
            .is_none_or(|id| self.containers.contains_key(id));
        let pod = ids.pod.is_none_or(|uid| self.pod(uid).is_some());
        container && pod
    }

    fn pods(&self) -> usize {
        let listed_only = self
            .listed_pods
            .keys()
            .filter(|uid| !self.linked_pods.contains_key(*uid))
            .count();
        self.linked_pods.len() + listed_only
    }
}

/// What reading the kubelet's directories came to, for `netto check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    Read {
        containers: usize,
        pods: usize,
        /// A directory held more than [`MAX_ENTRIES`].
        truncated: bool,
    },
    /// `containers/` could not be read: (its path, why).
    Failed(String, String),
}

/// The kubelet's log root, and what was read from it.
#[derive(Debug)]
pub struct Kubelet {
    names: Names,
    containers: Dir,
    pods: Dir,
    /// Whether this naming may still read.
    may_read: bool,
}

/// One of the two directories, and its timestamp when last read.
#[derive(Debug)]
struct Dir {
    path: PathBuf,
    read_at: Option<Stamp>,
    /// It held more than [`MAX_ENTRIES`] when last read.
    cut: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: SystemTime,
    /// Whether it was older than [`SETTLE`] when read.
    settled: bool,
}

impl Kubelet {
    pub fn new(root: &Path) -> Kubelet {
        Kubelet {
            names: Names::default(),
            containers: Dir::new(root.join("containers")),
            pods: Dir::new(root.join("pods")),
            may_read: true,
        }
    }

    /// A new naming (interval): the directories may be read once more.
    pub fn begin(&mut self) {
        self.may_read = true;
    }

    /// The names, read again first when `ids` holds an id or uid not
    /// known yet and a directory changed since (once per naming).
    pub fn names_for(&mut self, ids: Ids<'_>) -> &Names {
        if self.may_read && !self.names.knows(ids) {
            self.may_read = false;
            self.refresh();
        }
        &self.names
    }

    /// Reads both directories now, whatever their timestamps: for `netto
    /// check`, which says what came of it.
    pub fn read_now(&mut self) -> Status {
        self.containers.read_at = None;
        self.pods.read_at = None;
        self.refresh()
    }

    /// `containers/` when it is there but cannot be read: (its path,
    /// why). A missing one is a host that is no Kubernetes node, or a pod
    /// that did not mount it, and no news.
    pub fn unreadable(&self) -> Option<(String, String)> {
        match fs::read_dir(&self.containers.path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Some((self.containers.path.display().to_string(), e.to_string()))
            }
            _ => None,
        }
    }

    /// Reads each directory that changed since it was last read. Only
    /// `containers/` must be there: `pods/` adds pods without links.
    fn refresh(&mut self) -> Status {
        let containers = self.containers.read_if_changed(container_entry);
        if let Ok(Some(read)) = self.pods.read_if_changed(|_, dir| pod_entry(dir)) {
            self.names.listed_pods = read.into_iter().collect();
        }
        match containers {
            Ok(Some(read)) => {
                self.names.linked_pods = read
                    .iter()
                    .filter_map(|(_, (_, pod))| pod.clone())
                    .collect();
                self.names.containers = read
                    .into_iter()
                    .map(|(id, (container, _))| (id, container))
                    .collect();
            }
            Ok(None) => {}
            Err(e) => {
                return Status::Failed(self.containers.path.display().to_string(), e.to_string())
            }
        }
        Status::Read {
            containers: self.names.containers.len(),
            pods: self.names.pods(),
            truncated: self.containers.cut || self.pods.cut,
        }
    }
}

impl Dir {
    fn new(path: PathBuf) -> Dir {
        Dir {
            path,
            read_at: None,
            cut: false,
        }
    }

    /// The entries `parse` takes (from each entry's path and name), if
    /// the directory changed since it was last read (or was never read,
    /// or had not settled when read).
    fn read_if_changed<T>(
        &mut self,
        parse: fn(&Path, &str) -> Option<(String, T)>,
    ) -> io::Result<Option<Vec<(String, T)>>> {
        let modified = fs::metadata(&self.path)?.modified()?;
        if self
            .read_at
            .is_some_and(|read| read.settled && read.modified == modified)
        {
            return Ok(None);
        }
        let settled = SystemTime::now()
            .duration_since(modified)
            .is_ok_and(|age| age > SETTLE);
        let mut entries = Vec::new();
        let mut cut = false;
        for (read, entry) in fs::read_dir(&self.path)?.enumerate() {
            if read == MAX_ENTRIES {
                cut = true;
                break;
            }
            let Ok(entry) = entry else { continue };
            if let Some(parsed) = entry
                .file_name()
                .to_str()
                .and_then(|name| parse(&entry.path(), name))
            {
                entries.push(parsed);
            }
        }
        self.read_at = Some(Stamp { modified, settled });
        self.cut = cut;
        Ok(Some(entries))
    }
}

/// A pod's uid and names.
type Pod = (String, PodName);

/// A container's link, `POD_NAMESPACE_CONTAINER-ID.log`: its id, its
/// names, and its pod's uid and names from where the link points
/// (`.../NAMESPACE_POD_UID/CONTAINER/N.log`), when it points there.
fn container_entry(link: &Path, file: &str) -> Option<(String, (ContainerName, Option<Pod>))> {
    let (names, id) = file.strip_suffix(".log")?.rsplit_once('-')?;
    if !(id.len() >= 12 && id.bytes().all(|b| b.is_ascii_hexdigit())) {
        return None;
    }
    let [pod, namespace, container] = three(names)?;
    let container = ContainerName {
        namespace: namespace.to_owned(),
        pod: pod.to_owned(),
        container: container.to_owned(),
    };
    let target = fs::read_link(link).ok();
    let pod = target
        .as_deref()
        .and_then(|t| t.parent()?.parent()?.file_name()?.to_str())
        .and_then(pod_entry)
        .filter(|(_, pod)| pod.namespace == container.namespace && pod.pod == container.pod);
    Some((id.to_owned(), (container, pod)))
}

/// A pod's directory, `NAMESPACE_POD_UID`: its uid and its names.
fn pod_entry(dir: &str) -> Option<Pod> {
    let (names, uid) = dir.rsplit_once('_')?;
    let uuid = uid.len() == 36
        && uid.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        });
    if !uuid {
        return None;
    }
    let (namespace, pod) = names.split_once('_')?;
    [namespace, pod].iter().all(|n| is_name(n)).then(|| {
        (
            uid.to_owned(),
            PodName {
                namespace: namespace.to_owned(),
                pod: pod.to_owned(),
            },
        )
    })
}

/// Three Kubernetes names joined by `_`, which none of them holds.
fn three(names: &str) -> Option<[&str; 3]> {
    let mut split = names.split('_');
    let three = [split.next()?, split.next()?, split.next()?];
    (split.next().is_none() && three.iter().all(|n| is_name(n))).then_some(three)
}

/// A Kubernetes object name: a DNS subdomain (lower-case letters, digits,
/// `-` and `.`, at most 253), which also covers namespaces and container
/// names (DNS labels).
fn is_name(name: &str) -> bool {
    (1..=253).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70";
    const UID: &str = "1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9";

    /// A link's name names the container; where it points, its pod (the
    /// pod's name must agree with the link's).
    #[test]
    fn a_containers_log_link_names_it_and_its_pod() {
        let dir = tempfile::tempdir().unwrap();
        let link = |file: &str, target: &str| {
            let link = dir.path().join(file);
            std::os::unix::fs::symlink(target, &link).unwrap();
            container_entry(&link, file)
        };
        let file = format!("coredns-5d78c9869d-8xv2k_kube-system_coredns-{ID}.log");
        let target =
            format!("/var/log/pods/kube-system_coredns-5d78c9869d-8xv2k_{UID}/coredns/0.log");
        let (id, (name, pod)) = link(&file, &target).unwrap();
        assert_eq!(id, ID);
        assert_eq!(
            name,
            ContainerName {
                namespace: "kube-system".into(),
                pod: "coredns-5d78c9869d-8xv2k".into(),
                container: "coredns".into(),
            }
        );
        assert_eq!(
            pod,
            Some((
                UID.to_owned(),
                PodName {
                    namespace: "kube-system".into(),
                    pod: "coredns-5d78c9869d-8xv2k".into(),
                }
            ))
        );
        // Pointing elsewhere, or into another pod: the container only.
        for (i, target) in [
            "/nowhere".to_owned(),
            format!("/var/log/pods/kube-system_other_{UID}/coredns/0.log"),
            format!(
                "/var/log/pods/kube-system_coredns-5d78c9869d-8xv2k_{}/c/0.log",
                &UID[..35]
            ),
        ]
        .iter()
        .enumerate()
        {
            let file = format!("coredns-5d78c9869d-8xv2k_kube-system_coredns-{i}{ID}.log");
            let (_, (name, pod)) = link(&file, target).unwrap();
            assert_eq!(name.container, "coredns", "{target}");
            assert_eq!(pod, None, "{target}");
        }
        for not_one in [
            format!("web_default_nginx-{ID}.txt"),
            format!("web_default-{ID}.log"),
            format!("web_default_nginx_x-{ID}.log"),
            format!("Web_default_nginx-{ID}.log"),
            format!("web__nginx-{ID}.log"),
            "web_default_nginx-xyz.log".into(),
            "web_default_nginx.log".into(),
        ] {
            assert_eq!(link(&not_one, "/nowhere"), None, "{not_one}");
        }
    }

    #[test]
    fn a_pods_log_directory_names_it() {
        let (uid, name) = pod_entry(&format!("kube-system_etcd-node1.example_{UID}")).unwrap();
        assert_eq!(uid, UID);
        assert_eq!(
            name,
            PodName {
                namespace: "kube-system".into(),
                pod: "etcd-node1.example".into(),
            }
        );
        for not_one in [
            format!("default_web_{}", &UID[..35]),
            format!("default_web_{}", UID.replace('-', "_")),
            format!("web_{UID}"),
            format!("default_web_x_{UID}"),
        ] {
            assert_eq!(pod_entry(&not_one), None, "{not_one}");
        }
    }

    /// An unknown id reads the directories at most once per naming, and
    /// only once they changed since the last reading.
    #[test]
    fn read_again_only_for_an_unknown_id_once_per_naming_and_after_a_change() {
        let root = tempfile::tempdir().unwrap();
        let containers = root.path().join("containers");
        fs::create_dir_all(&containers).unwrap();
        fs::create_dir_all(root.path().join("pods")).unwrap();
        let link = |pod: &str, id: &str| {
            let file = containers.join(format!("{pod}_default_app-{id}.log"));
            std::os::unix::fs::symlink("/nowhere", file).unwrap();
        };
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        link("first", &a);
        // Old enough to have settled: a reading is trusted until it moves.
        let old = SystemTime::now() - Duration::from_secs(60);
        let age = |dir: &Path| {
            fs::File::open(dir).unwrap().set_modified(old).unwrap();
        };
        age(&containers);
        age(&root.path().join("pods"));
        let mut kubelet = Kubelet::new(root.path());
        let pod_of = |k: &mut Kubelet, id: &str| {
            let path = format!("/cri-containerd-{id}.scope");
            k.names_for(super::super::cgroup_names::parts(&path).ids())
                .container(id)
                .map(|c| c.pod.clone())
        };
        assert_eq!(pod_of(&mut kubelet, &a).as_deref(), Some("first"));
        // b is added in the same naming: not read again until the next.
        link("second", &b);
        age(&containers);
        assert_eq!(pod_of(&mut kubelet, &b), None);
        kubelet.begin();
        // The directory's timestamp did not move (set back): not read.
        assert_eq!(pod_of(&mut kubelet, &b), None);
        fs::File::open(&containers)
            .unwrap()
            .set_modified(old + Duration::from_secs(1))
            .unwrap();
        kubelet.begin();
        assert_eq!(pod_of(&mut kubelet, &b).as_deref(), Some("second"));
        assert_eq!(
            kubelet.read_now(),
            Status::Read {
                containers: 2,
                pods: 0,
                truncated: false
            }
        );
    }

    #[test]
    fn a_missing_directory_is_a_status_not_an_error() {
        let root = tempfile::tempdir().unwrap();
        let status = Kubelet::new(&root.path().join("absent")).read_now();
        let Status::Failed(path, why) = status else {
            panic!("{status:?}")
        };
        assert!(path.ends_with("absent/containers"), "{path}");
        assert!(why.contains("No such file"), "{why}");
    }
}
