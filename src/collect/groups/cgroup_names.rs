//! The short name of a cgroup, from its path: the systemd unit, the
//! container (docker, containerd, CRI-O, podman, LXC) and the Kubernetes
//! pod it belongs to, the last two by the names the kubelet gave them
//! where they are known ([`super::kubelet`]). The rules are data: a new
//! runtime is one row.

use super::kubelet::{Ids, Names};

/// What a path component says about its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Finding {
    /// A Kubernetes pod (its uid).
    Pod,
    /// A container of this runtime (its id).
    Container(&'static str),
    /// A systemd unit (the whole component).
    Unit,
}

/// How the part a rule captures must look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Id {
    /// A container id: at least 12 hexadecimal digits.
    Hex,
    /// A pod uid: a UUID, with `-` or (systemd slices) `_`.
    Uuid,
    /// Anything not empty.
    Name,
}

/// One path component pattern: `{}` is the captured id, `*` (before it)
/// any text; `after` is the component that must come before.
struct Rule {
    pattern: &'static str,
    after: Option<&'static str>,
    id: Id,
    finding: Finding,
}

/// First match wins, per component.
const RULES: &[Rule] = &[
    // systemd cgroup driver: kubepods-burstable-pod<uid>.slice
    Rule {
        pattern: "kubepods*-pod{}.slice",
        after: None,
        id: Id::Uuid,
        finding: Finding::Pod,
    },
    // cgroupfs driver: /kubepods/burstable/pod<uid>/<container id>
    Rule {
        pattern: "pod{}",
        after: None,
        id: Id::Uuid,
        finding: Finding::Pod,
    },
    Rule {
        pattern: "cri-containerd-{}.scope",
        after: None,
        id: Id::Hex,
        finding: Finding::Container("containerd"),
    },
    Rule {
        pattern: "crio-{}.scope",
        after: None,
        id: Id::Hex,
        finding: Finding::Container("cri-o"),
    },
    Rule {
        pattern: "docker-{}.scope",
        after: None,
        id: Id::Hex,
        finding: Finding::Container("docker"),
    },
    Rule {
        pattern: "libpod-{}.scope",
        after: None,
        id: Id::Hex,
        finding: Finding::Container("podman"),
    },
    // docker's cgroupfs driver: /docker/<id>
    Rule {
        pattern: "{}",
        after: Some("docker"),
        id: Id::Hex,
        finding: Finding::Container("docker"),
    },
    // cgroupfs drivers of Kubernetes and containerd: a bare id
    Rule {
        pattern: "{}",
        after: None,
        id: Id::Hex,
        finding: Finding::Container("container"),
    },
    Rule {
        pattern: "lxc.payload.{}",
        after: None,
        id: Id::Name,
        finding: Finding::Container("lxc"),
    },
    Rule {
        pattern: "{}.service",
        after: None,
        id: Id::Name,
        finding: Finding::Unit,
    },
    Rule {
        pattern: "{}.scope",
        after: None,
        id: Id::Name,
        finding: Finding::Unit,
    },
    Rule {
        pattern: "{}.slice",
        after: None,
        id: Id::Name,
        finding: Finding::Unit,
    },
];

/// Characters of a container id a label shows (as `docker ps` does).
const SHORT_ID: usize = 12;

impl Rule {
    /// The id `component` holds, if it matches.
    fn capture<'a>(&self, component: &'a str, before: Option<&str>) -> Option<&'a str> {
        if self.after.is_some_and(|after| before != Some(after)) {
            return None;
        }
        let (head, tail) = self.pattern.split_once("{}")?;
        let rest = component.strip_suffix(tail)?;
        let id = match head.split_once('*') {
            Some((start, marker)) => {
                let rest = rest.strip_prefix(start)?;
                let at = rest.find(marker)?;
                &rest[at + marker.len()..]
            }
            None => rest.strip_prefix(head)?,
        };
        self.id.accepts(id).then_some(id)
    }
}

impl Id {
    fn accepts(self, id: &str) -> bool {
        match self {
            Id::Hex => id.len() >= SHORT_ID && id.bytes().all(|b| b.is_ascii_hexdigit()),
            Id::Uuid => {
                id.len() == 36
                    && id.bytes().enumerate().all(|(i, b)| match i {
                        8 | 13 | 18 | 23 => b == b'-' || b == b'_',
                        _ => b.is_ascii_hexdigit(),
                    })
            }
            Id::Name => !id.is_empty(),
        }
    }
}

/// What a cgroup's path says about its group: the ids its components
/// hold, before any of them is named.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parts<'a> {
    /// A Kubernetes pod's uid, with `-` (systemd slices write `_`).
    pub pod: Option<String>,
    /// A container: its runtime, and its id as the path holds it.
    pub container: Option<(&'static str, &'a str)>,
    /// The innermost systemd unit.
    unit: Option<&'a str>,
    /// The last component, the name of last resort.
    last: Option<&'a str>,
}

impl Parts<'_> {
    /// The ids the kubelet names.
    pub fn ids(&self) -> Ids<'_> {
        Ids {
            container: self.container.map(|(_, id)| id),
            pod: self.pod.as_deref(),
        }
    }
}

/// The parts of the cgroup at `path` (under the v2 root, `/` first).
pub fn parts(path: &str) -> Parts<'_> {
    let mut parts = Parts::default();
    let mut before = None;
    for component in path.split('/').filter(|c| !c.is_empty()) {
        let found = RULES
            .iter()
            .find_map(|rule| rule.capture(component, before).map(|id| (rule.finding, id)));
        match found {
            Some((Finding::Pod, uid)) => parts.pod = Some(uid.replace('_', "-")),
            Some((Finding::Container(runtime), id)) => parts.container = Some((runtime, id)),
            Some((Finding::Unit, _)) => parts.unit = Some(component),
            None => {}
        }
        before = Some(component);
        parts.last = Some(component);
    }
    parts
}

/// The label of a cgroup of `parts`: its pod and container by the names
/// the kubelet gave them when `names` knows them, else by uid and id.
pub fn label(parts: &Parts<'_>, names: &Names) -> String {
    if let Some(known) = parts.container.and_then(|(_, id)| names.container(id)) {
        return format!(
            "pod {}/{} container {}",
            known.namespace, known.pod, known.container
        );
    }
    let container = parts.container.map(|(runtime, id)| {
        let short = if id.bytes().all(|b| b.is_ascii_hexdigit()) {
            &id[..id.len().min(SHORT_ID)]
        } else {
            id
        };
        format!("{runtime} {short}")
    });
    let pod = parts.pod.as_deref().map(|uid| match names.pod(uid) {
        Some(known) => format!("{}/{}", known.namespace, known.pod),
        None => uid.to_owned(),
    });
    match (pod, container, parts.unit) {
        (Some(pod), Some(container), _) => format!("pod {pod} {container}"),
        (Some(pod), None, _) => format!("pod {pod}"),
        (None, Some(container), _) => container,
        (None, None, Some(unit)) => unit.to_owned(),
        (None, None, None) => parts.last.unwrap_or("/").to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70";

    #[test]
    fn labels_people_recognise() {
        let uid = "1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9";
        let uid_ = uid.replace('-', "_");
        for (path, expected) in [
            ("/", "/".to_owned()),
            ("/system.slice/ssh.service", "ssh.service".to_owned()),
            (
                "/user.slice/user-1000.slice/session-3.scope",
                "session-3.scope".to_owned(),
            ),
            ("/system.slice", "system.slice".to_owned()),
            (
                &format!("/system.slice/docker-{ID}.scope"),
                "docker 3f2a1b4c5d6e".to_owned(),
            ),
            (&format!("/docker/{ID}"), "docker 3f2a1b4c5d6e".to_owned()),
            (
                &format!("/machine.slice/libpod-{ID}.scope"),
                "podman 3f2a1b4c5d6e".to_owned(),
            ),
            (
                &format!(
                    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice/cri-containerd-{ID}.scope"
                ),
                format!("pod {uid} containerd 3f2a1b4c5d6e"),
            ),
            (
                &format!("/kubepods.slice/kubepods-pod{uid_}.slice/crio-{ID}.scope"),
                format!("pod {uid} cri-o 3f2a1b4c5d6e"),
            ),
            (
                &format!("/kubepods/besteffort/pod{uid}/{ID}"),
                format!("pod {uid} container 3f2a1b4c5d6e"),
            ),
            (
                &format!("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{uid_}.slice"),
                format!("pod {uid}"),
            ),
            ("/lxc.payload.web1", "lxc web1".to_owned()),
            ("/netto-test-a", "netto-test-a".to_owned()),
            // Not an id: too short, not hex.
            ("/docker/abc", "abc".to_owned()),
            (
                "/system.slice/crio-conmon-zz.scope",
                "crio-conmon-zz.scope".to_owned(),
            ),
        ] {
            assert_eq!(label(&parts(path), &Names::default()), expected, "{path}");
        }
    }

    /// Pods and containers by the names the kubelet gave them, where it
    /// did; by uid and id where not.
    #[test]
    fn pods_and_containers_by_the_kubelets_names() {
        use crate::collect::groups::kubelet::Names;
        let uid = "1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9";
        let uid_ = uid.replace('-', "_");
        let dir = tempfile::tempdir().unwrap();
        for sub in ["containers", "pods"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        std::os::unix::fs::symlink(
            "/nowhere",
            dir.path()
                .join(format!("containers/web-7d4b-x2_shop_nginx-{ID}.log")),
        )
        .unwrap();
        std::fs::create_dir(dir.path().join(format!("pods/shop_web-7d4b-x2_{uid}"))).unwrap();
        let mut kubelet = crate::collect::groups::kubelet::Kubelet::new(dir.path());
        let mut label_of = |path: &str| {
            let parts = parts(path);
            label(&parts, kubelet.names_for(parts.ids()))
        };
        let slice =
            format!("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid_}.slice");
        assert_eq!(
            label_of(&format!("{slice}/cri-containerd-{ID}.scope")),
            "pod shop/web-7d4b-x2 container nginx"
        );
        // The pod's sandbox logs nothing: its pod by name, itself by id.
        let sandbox = "9".repeat(64);
        assert_eq!(
            label_of(&format!("{slice}/cri-containerd-{sandbox}.scope")),
            "pod shop/web-7d4b-x2 containerd 999999999999"
        );
        assert_eq!(label_of(&slice), "pod shop/web-7d4b-x2");
        assert_eq!(
            label_of(&format!("/kubepods/besteffort/pod{uid}/{ID}")),
            "pod shop/web-7d4b-x2 container nginx"
        );
        // Nothing known: as without a kubelet.
        let other = "2b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9";
        assert_eq!(
            label_of(&format!("/kubepods/pod{other}/{sandbox}")),
            format!("pod {other} container 999999999999")
        );
        assert_eq!(
            label(&parts("/system.slice/ssh.service"), &Names::default()),
            "ssh.service"
        );
    }
}
