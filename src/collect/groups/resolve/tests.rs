use super::cgroup_tree::*;
use super::*;
use std::collections::BTreeMap;
use std::path::PathBuf;

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
