//! An attribution's groups: bounded, named, adding up to each event.

use std::collections::BTreeMap;

use super::{checked_sum, OVERFLOW};
use crate::model::{Attribution, EventKey, Snapshot};
use crate::recording::{invalid, Invalid};

/// Most groups an attribution can show: `--max-groups`' bound and `other`.
const MAX_SHOWN_GROUPS: usize = 1001;
/// Longest group name or label: a cgroup path is at most PATH_MAX.
pub(in crate::recording) const MAX_GROUP_NAME: usize = 4096;

/// Groups with every event, named in text a terminal shows as it is, and
/// with `unattributed` adding up to each event's total.
pub(super) fn check_attribution(at: &str, a: &Attribution, s: &Snapshot) -> Result<(), Invalid> {
    if a.groups.len() > MAX_SHOWN_GROUPS {
        return Err(invalid(
            format!("{at}.groups"),
            format!("{} groups, more than {MAX_SHOWN_GROUPS}", a.groups.len()),
        ));
    }
    if !a.on && !a.groups.is_empty() {
        return Err(invalid(
            format!("{at}.groups"),
            "groups while attribution was off",
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    for (j, group) in a.groups.iter().enumerate() {
        let at = format!("{at}.groups[{j}]");
        // Names and labels are the host's (a process names itself, anyone
        // with a delegated subtree names cgroups): any text, control
        // characters and blanks included, which the front ends print
        // escaped. A name identifies its group, so it is never empty.
        if group.name.is_empty() {
            return Err(invalid(format!("{at}.name"), "is empty"));
        }
        for (field, text) in [("name", &group.name), ("label", &group.label)] {
            if text.len() > MAX_GROUP_NAME {
                return Err(invalid(
                    format!("{at}.{field}"),
                    format!("is longer than {MAX_GROUP_NAME} bytes"),
                ));
            }
        }
        if !names.insert(group.name.as_str()) {
            return Err(invalid(
                format!("{at}.name"),
                format!("{:?} appears twice", group.name),
            ));
        }
        checked_sum(0, group.events.values().copied())
            .ok_or_else(|| invalid(format!("{at}.events"), OVERFLOW))?;
    }
    checked_sum(0, a.unattributed.values().copied())
        .ok_or_else(|| invalid(format!("{at}.unattributed"), OVERFLOW))?;
    for key in EventKey::ALL {
        let part = |events: &BTreeMap<EventKey, u64>, at: String| {
            events
                .get(&key)
                .map(|&ns| u128::from(ns))
                .ok_or_else(|| invalid(at, format!("lacks {}", key.name())))
        };
        let mut sum = part(&a.unattributed, format!("{at}.unattributed"))?;
        for (j, group) in a.groups.iter().enumerate() {
            sum += part(&group.events, format!("{at}.groups[{j}].events"))?;
        }
        let total = s.event(key).total_ns;
        if sum != u128::from(total) {
            return Err(invalid(
                format!("{at}.unattributed.{}", key.name()),
                format!("groups and unattributed add up to {sum} ns, not the event's {total} ns"),
            ));
        }
    }
    Ok(())
}
