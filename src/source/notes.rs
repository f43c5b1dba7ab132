//! What a source has to say about its run, as values: the backend chosen
//! and why, what this kernel keeps from being measured, the traffic and the
//! knobs in force. Each front end words them for itself
//! (`frontends::notes`); in JSON each is an object tagged with its `kind`.

use serde::{Deserialize, Serialize};

use crate::kernel::selection::{GivenUp, Selection};
use crate::kernel::self_check::SelfCheck;
use crate::kernel::tracepoints::{OptionalGroup, Point};
use crate::model::Tier;

/// One thing the user should know about a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Note {
    /// The backend measured with, why, and what its self-check saw (it
    /// may have missed calls where no other backend was left to try).
    Backend {
        backend: String,
        why: String,
        check: CheckSeen,
    },
    /// A backend given up for the next: its self-check missed calls.
    BackendMissed {
        backend: String,
        missed: Vec<String>,
    },
    /// A backend given up for the next: it failed to load.
    BackendFailed { backend: String, error: String },
    /// BPF run-time statistics cannot be turned on: no program costs.
    NoBpfStats { error: String },
    /// Optional tracepoints this kernel lacks, and what goes unmeasured.
    NoTracepoints {
        tracepoints: Vec<String>,
        without: String,
    },
    /// kallsyms hides addresses: network callbacks cannot be told apart.
    CallbacksHidden,
    /// An attribution delivery point this kernel lacks, and what stays
    /// unattributed.
    NoAttributionPoint { tracepoint: String, without: String },
    /// No cgroup v2 hierarchy: every task is in its root.
    NoCgroupV2,
    /// The kubelet's log directory is there but cannot be read: pods are
    /// shown by uid, containers by id.
    NoKubeletNames { path: String, error: String },
    /// The built-in demo traffic runs, as it describes itself.
    Demo { description: String },
    /// The XDP sketch is co-hosted on an interface.
    Sketch {
        interface: String,
        /// `native` or `generic` XDP.
        mode: String,
        probability: f64,
        rows: u32,
        columns: u32,
    },
    /// What the budget will turn down when netto costs too much.
    Budget(BudgetPlan),
    /// In a tier that estimates, one interval measures every event exactly
    /// whenever none has for `every_s` seconds.
    Calibrating { every_s: f64 },
    /// Measuring has begun: programs attached, the tier, and the sampling
    /// frequency its estimates come from.
    Measuring {
        attached: usize,
        tier: Tier,
        sampling_hz: Option<u64>,
    },
    /// A recording plays back.
    Replaying {
        path: String,
        snapshots: usize,
        duration_s: f64,
        /// How many times faster than it was measured; `None`: all at
        /// once (JSON has no infinity).
        speed: Option<f64>,
    },
}

/// What the budget will turn down when netto costs more than `percent` of
/// one CPU, and what it sees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetPlan {
    pub percent: f64,
    /// The sampling frequency it steps down from; `None`: no sampling.
    pub sampling_hz: Option<u64>,
    /// Whether attribution (`--by`) is on, to be turned off.
    pub attribution: bool,
    /// The tier the run starts in, from which it steps down.
    pub tier: Tier,
    /// The lowest frequency the estimating tiers sample at.
    pub estimate_hz: u64,
    /// Without BPF statistics it sees netto's processes only.
    pub bpf_stats: bool,
}

/// What a backend's self-check saw.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckSeen {
    /// Kinds of socket call seen, of `kinds` made.
    pub seen: usize,
    pub kinds: usize,
    pub missed: Vec<String>,
    /// Socket functions hooked (fentry backend).
    pub hooks: Vec<String>,
}

impl From<&SelfCheck> for CheckSeen {
    fn from(check: &SelfCheck) -> CheckSeen {
        let functions = &check.functions;
        CheckSeen {
            seen: check.calls.iter().filter(|c| c.seen).count(),
            kinds: check.calls.len(),
            missed: owned(&check.missed()),
            hooks: functions
                .send
                .iter()
                .chain(&functions.recv)
                .cloned()
                .collect(),
        }
    }
}

/// What [`crate::kernel::selection::select`] tried, in order: the
/// backends given up, then the one chosen.
pub fn of_selection(selection: &Selection<'_>) -> Vec<Note> {
    let given_up = selection.given_up.iter().map(|given_up| match given_up {
        GivenUp::Missed { backend, missed } => Note::BackendMissed {
            backend: backend.name().to_owned(),
            missed: owned(missed),
        },
        GivenUp::Failed { backend, error } => Note::BackendFailed {
            backend: backend.name().to_owned(),
            error: error.clone(),
        },
    });
    given_up
        .chain([Note::Backend {
            backend: selection.accounting.backend().name().to_owned(),
            why: selection.why.clone(),
            check: CheckSeen::from(&selection.check),
        }])
        .collect()
}

impl From<&OptionalGroup> for Note {
    fn from(group: &OptionalGroup) -> Note {
        Note::NoTracepoints {
            tracepoints: owned(group.tracepoints),
            without: group.without.to_owned(),
        }
    }
}

impl From<&Point> for Note {
    fn from(point: &Point) -> Note {
        Note::NoAttributionPoint {
            tracepoint: point.tracepoint.to_owned(),
            without: point.without.to_owned(),
        }
    }
}

fn owned(names: &[&str]) -> Vec<String> {
    names.iter().map(|&name| name.to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::functions::SocketFunctions;
    use crate::kernel::self_check::CallSeen;

    #[test]
    fn a_self_check_counts_what_it_saw_and_names_the_rest() {
        let call = |call, seen| CallSeen {
            call,
            window: "send",
            seen,
        };
        let check = SelfCheck {
            backend: "fentry",
            calls: vec![call("sendto", true), call("sendfile", false)],
            functions: SocketFunctions {
                send: vec!["sock_sendmsg".into()],
                recv: vec!["sock_recvmsg".into()],
                absent: vec!["__sock_sendmsg".into()],
            },
        };
        assert_eq!(
            CheckSeen::from(&check),
            CheckSeen {
                seen: 1,
                kinds: 2,
                missed: vec!["sendfile".into()],
                hooks: vec!["sock_sendmsg".into(), "sock_recvmsg".into()],
            }
        );
    }

    #[test]
    fn notes_are_tagged_with_their_kind_and_read_back() {
        let notes = [
            Note::CallbacksHidden,
            Note::Calibrating { every_s: 30.0 },
            Note::Measuring {
                attached: 12,
                tier: Tier::Softirq,
                sampling_hz: Some(99),
            },
        ];
        let json = serde_json::to_value(&notes).unwrap();
        assert_eq!(json[0], serde_json::json!({"kind": "callbacks_hidden"}));
        assert_eq!(
            json[2],
            serde_json::json!({"kind": "measuring", "attached": 12, "tier": "softirq", "sampling_hz": 99})
        );
        let back: Vec<Note> = serde_json::from_value(json).unwrap();
        assert_eq!(back, notes);
    }
}
