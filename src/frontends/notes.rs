//! A source's notes in words: one sentence each, the same on stderr (stat,
//! record, serve), in top's status line and help, and in the web API and
//! page (beside each note's data), and `netto check`'s account of the
//! backend chosen.

use crate::model::Tier;
use crate::source::notes::{BudgetPlan, CheckSeen, Note};

/// The note in one sentence.
pub fn sentence(note: &Note) -> String {
    match note {
        Note::Backend {
            backend,
            why,
            check,
        } => {
            let warning = if check.missed.is_empty() {
                ""
            } else {
                "; warning: those calls are not counted"
            };
            format!(
                "backend {backend}: {why}; self-check {}{warning}",
                self_check(check)
            )
        }
        Note::BackendMissed { backend, missed } => format!(
            "note: the {backend} backend missed {} in its self-check on this kernel; falling back",
            missed.join(", ")
        ),
        Note::BackendFailed { backend, error } => {
            format!("note: the {backend} backend failed to load ({error}); falling back")
        }
        Note::NoBpfStats { error } => format!(
            "note: BPF run-time statistics unavailable ({error}); program costs not reported"
        ),
        Note::NoTracepoints {
            tracepoints,
            without,
        } => format!(
            "note: no {} tracepoints here: {without}",
            tracepoints.join("/")
        ),
        Note::CallbacksHidden => {
            "note: kallsyms hides addresses (kernel.kptr_restrict): net_timers stays 0".to_owned()
        }
        Note::NoAttributionPoint {
            tracepoint,
            without,
        } => format!("note: no {tracepoint} tracepoint here: {without}"),
        Note::NoCgroupV2 => "note: no cgroup v2 hierarchy is mounted: every task is in its root, \
                             so --by cgroup shows `/` only"
            .to_owned(),
        Note::NoKubeletNames { path, error } => format!(
            "note: cannot read {path} ({error}): --by cgroup shows pods by uid, containers by id"
        ),
        Note::Demo { description } => description.clone(),
        Note::Sketch {
            interface,
            mode,
            probability,
            rows,
            columns,
        } => format!("XDP sketch on {interface} ({mode} XDP), p={probability}, {rows}x{columns}"),
        Note::Budget(plan) => budget(plan),
        Note::Calibrating { every_s } => format!(
            "calibrating: in a tier that estimates, one interval measures every event exactly \
             whenever none has for {every_s} s (that interval costs the exact tier's)"
        ),
        Note::Measuring {
            attached,
            tier,
            sampling_hz,
        } => match (tier, sampling_hz) {
            (Tier::Exact, _) | (_, None) => format!("measuring ({attached} BPF programs attached)"),
            (tier, Some(hz)) => format!(
                "measuring in the {} tier ({attached} accounting programs attached): {} \
                 estimated from stack samples at {hz} Hz, each with its error",
                tier.name(),
                if *tier == Tier::Softirq {
                    "socket calls"
                } else {
                    "every event"
                },
            ),
        },
        Note::Replaying {
            path,
            snapshots,
            duration_s,
            speed,
        } => format!(
            "replaying {path}: {snapshots} snapshots over {duration_s:.1} s at {}x",
            speed.unwrap_or(f64::INFINITY)
        ),
    }
}

/// What a backend's self-check saw, in a line: `netto check` prints it
/// on its own too.
pub fn self_check(check: &CheckSeen) -> String {
    let mut text = format!("saw {} of {} kinds of socket call", check.seen, check.kinds);
    if !check.missed.is_empty() {
        text.push_str(&format!(" (missed {})", check.missed.join(", ")));
    }
    if !check.hooks.is_empty() {
        text.push_str(&format!("; hooks {}", check.hooks.join(", ")));
    }
    text
}

/// What the budget will do in this run, and what it cannot see.
fn budget(plan: &BudgetPlan) -> String {
    let BudgetPlan {
        percent,
        sampling_hz,
        attribution,
        tier,
        estimate_hz,
        bpf_stats,
    } = *plan;
    // With prices, each step is the one that saves the most; without, the
    // ladder's order.
    let order = if bpf_stats { "or" } else { "then" };
    let tiers = match tier.lower() {
        Some(_) => format!(
            ", {order} the tier from {} down to sampled (estimates from stack samples at \
             {estimate_hz} Hz or more)",
            tier.name()
        ),
        None => String::new(),
    };
    let knob = match (sampling_hz, attribution) {
        (Some(hz), false) => format!("sampling steps down from {hz} Hz when over it{tiers}"),
        (Some(hz), true) => format!(
            "sampling steps down from {hz} Hz when over it, {order} attribution turns off{tiers}"
        ),
        (None, true) => "attribution turns off when over it".to_owned(),
        (None, false) => "nothing to turn down without sampling; said when over it".to_owned(),
    };
    let several = sampling_hz.is_some() && (attribution || tier.lower().is_some());
    let blind = if bpf_stats {
        if several {
            ", whichever saves the most"
        } else {
            ""
        }
    } else {
        " (BPF statistics off: it sees netto's processes only)"
    };
    format!("budget {percent} % of one CPU: {knob}{blind}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(missed: &[&str], hooks: &[&str]) -> CheckSeen {
        CheckSeen {
            seen: 13 - missed.len(),
            kinds: 13,
            missed: missed.iter().map(|&m| m.to_owned()).collect(),
            hooks: hooks.iter().map(|&h| h.to_owned()).collect(),
        }
    }

    #[test]
    fn the_backend_says_why_and_what_its_self_check_saw() {
        let chosen = Note::Backend {
            backend: "tracepoint".into(),
            why: "all of its tracepoints are present".into(),
            check: check(&[], &[]),
        };
        assert_eq!(
            sentence(&chosen),
            "backend tracepoint: all of its tracepoints are present; \
             self-check saw 13 of 13 kinds of socket call"
        );
        let last = Note::Backend {
            backend: "fentry".into(),
            why: "requested with --backend fentry".into(),
            check: check(&["sendfile", "splice"], &["sock_sendmsg", "sock_recvmsg"]),
        };
        assert_eq!(
            sentence(&last),
            "backend fentry: requested with --backend fentry; self-check saw 11 of 13 kinds \
             of socket call (missed sendfile, splice); hooks sock_sendmsg, sock_recvmsg; \
             warning: those calls are not counted"
        );
        let missed = Note::BackendMissed {
            backend: "fentry".into(),
            missed: vec!["sendfile".into(), "splice".into()],
        };
        assert_eq!(
            sentence(&missed),
            "note: the fentry backend missed sendfile, splice in its self-check on this \
             kernel; falling back"
        );
    }

    #[test]
    fn what_the_kernel_lacks_is_a_note() {
        let group = Note::NoTracepoints {
            tracepoints: vec!["tasklet_entry".into(), "tasklet_exit".into()],
            without: "net_timers misses network tasklets".into(),
        };
        assert_eq!(
            sentence(&group),
            "note: no tasklet_entry/tasklet_exit tracepoints here: net_timers misses network \
             tasklets"
        );
        assert!(sentence(&Note::CallbacksHidden).starts_with("note: kallsyms hides addresses"));
        assert!(sentence(&Note::NoCgroupV2).ends_with("--by cgroup shows `/` only"));
    }

    fn budget_note(sampling_hz: Option<u64>, attribution: bool, tier: Tier) -> Note {
        Note::Budget(BudgetPlan {
            percent: 2.0,
            sampling_hz,
            attribution,
            tier,
            estimate_hz: 49,
            bpf_stats: true,
        })
    }

    #[test]
    fn the_budget_says_what_it_turns_down_in_order() {
        assert_eq!(
            sentence(&budget_note(Some(99), true, Tier::Exact)),
            "budget 2 % of one CPU: sampling steps down from 99 Hz when over it, or \
             attribution turns off, or the tier from exact down to sampled (estimates from \
             stack samples at 49 Hz or more), whichever saves the most"
        );
        let ladder = Note::Budget(BudgetPlan {
            percent: 2.0,
            sampling_hz: Some(99),
            attribution: true,
            tier: Tier::Exact,
            estimate_hz: 49,
            bpf_stats: false,
        });
        assert_eq!(
            sentence(&ladder),
            "budget 2 % of one CPU: sampling steps down from 99 Hz when over it, then \
             attribution turns off, then the tier from exact down to sampled (estimates from \
             stack samples at 49 Hz or more) (BPF statistics off: it sees netto's processes \
             only)"
        );
        assert_eq!(
            sentence(&budget_note(Some(99), false, Tier::Sampled)),
            "budget 2 % of one CPU: sampling steps down from 99 Hz when over it"
        );
        assert_eq!(
            sentence(&budget_note(None, true, Tier::Exact)),
            "budget 2 % of one CPU: attribution turns off when over it"
        );
        let blind = Note::Budget(BudgetPlan {
            percent: 2.0,
            sampling_hz: None,
            attribution: false,
            tier: Tier::Exact,
            estimate_hz: 49,
            bpf_stats: false,
        });
        assert_eq!(
            sentence(&blind),
            "budget 2 % of one CPU: nothing to turn down without sampling; said when over it \
             (BPF statistics off: it sees netto's processes only)"
        );
    }

    #[test]
    fn measuring_says_the_tier_and_what_it_estimates() {
        let measuring = |tier, sampling_hz| {
            sentence(&Note::Measuring {
                attached: 12,
                tier,
                sampling_hz,
            })
        };
        assert_eq!(
            measuring(Tier::Exact, Some(99)),
            "measuring (12 BPF programs attached)"
        );
        assert_eq!(
            measuring(Tier::Softirq, Some(49)),
            "measuring in the softirq tier (12 accounting programs attached): socket calls \
             estimated from stack samples at 49 Hz, each with its error"
        );
        assert!(measuring(Tier::Sampled, Some(49)).contains(": every event estimated"));
    }

    #[test]
    fn a_replay_says_how_fast() {
        let replaying = |speed| {
            sentence(&Note::Replaying {
                path: "run.json".into(),
                snapshots: 12,
                duration_s: 11.96,
                speed,
            })
        };
        assert_eq!(
            replaying(Some(2.0)),
            "replaying run.json: 12 snapshots over 12.0 s at 2x"
        );
        assert_eq!(
            replaying(None),
            "replaying run.json: 12 snapshots over 12.0 s at infx"
        );
    }
}
