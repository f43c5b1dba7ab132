//! The short name of a cgroup, from its path: the systemd unit, the
//! container (docker, containerd, CRI-O, podman, LXC) and the Kubernetes
//! pod it belongs to. The rules are data: a new runtime is one row.

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

/// The label of the cgroup at `path` (under the v2 root, `/` first).
pub fn label(path: &str) -> String {
    let mut pod = None;
    let mut container = None;
    let mut unit = None;
    let mut before = None;
    let components: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    for &component in &components {
        let found = RULES
            .iter()
            .find_map(|rule| rule.capture(component, before).map(|id| (rule.finding, id)));
        match found {
            Some((Finding::Pod, uid)) => pod = Some(uid.replace('_', "-")),
            Some((Finding::Container(runtime), id)) => {
                let short = if id.bytes().all(|b| b.is_ascii_hexdigit()) {
                    &id[..id.len().min(SHORT_ID)]
                } else {
                    id
                };
                container = Some(format!("{runtime} {short}"));
            }
            Some((Finding::Unit, _)) => unit = Some(component),
            None => {}
        }
        before = Some(component);
    }
    match (pod, container, unit) {
        (Some(pod), Some(container), _) => format!("pod {pod} {container}"),
        (Some(pod), None, _) => format!("pod {pod}"),
        (None, Some(container), _) => container,
        (None, None, Some(unit)) => unit.to_owned(),
        (None, None, None) => components.last().map_or("/", |c| c).to_owned(),
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
            assert_eq!(label(path), expected, "{path}");
        }
    }
}
