use super::*;

/// A walk reads at most its budget per step, goes on where it stopped,
/// and does not go below MAX_DEPTH.
#[test]
fn a_walk_is_bounded_per_step_and_in_depth() {
    let root = tempfile::tempdir().unwrap();
    let mut deep = root.path().to_path_buf();
    for level in 0..MAX_DEPTH + 5 {
        deep.push(format!("d{level}"));
    }
    fs::create_dir_all(&deep).unwrap();
    for wide in 0..30 {
        fs::create_dir(root.path().join(format!("w{wide}"))).unwrap();
    }
    let mut walk = Walk {
        pending: vec![(root.path().to_path_buf(), 0)],
        attach_types: cgroup_attach_types("cgroup_skb").iter().copied().collect(),
        ..Walk::default()
    };
    let mut steps = Vec::new();
    while !walk.pending.is_empty() {
        steps.push(step(&mut walk, 10));
    }
    assert!(steps.iter().all(|&n| n <= 10), "{steps:?}");
    // The root, 30 wide, and the chain down to MAX_DEPTH below the root.
    assert_eq!(steps.iter().sum::<usize>(), 1 + 30 + MAX_DEPTH);
    // Not cgroups: nothing attached to find.
    assert!(walk.found.is_empty());
}

#[test]
fn nothing_unlocated_asks_nothing() {
    let mut cgroups = LegacyCgroups::default();
    assert!(cgroups.locate(&[]).is_empty());
    assert!(cgroups.walk.is_none() && cgroups.last_whole.is_none());
}
