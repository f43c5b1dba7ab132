//! What each of netto's BPF programs runs for, so that its cost can be
//! known from exact run counts. Every program adds to its hook's counter
//! (`netto_cpu.hook_runs`, see `enum netto_hook` in bpf/netto.h), and a
//! hook's programs run a fixed number of times per count: a softirq run is
//! one `softirq_entry` and one `softirq_exit`. BPF run-time statistics
//! then need to be on only long enough to price one run
//! (`collect::cost`).

use crate::abi::netto_hook;

/// A hook: its name in netto's cost figures, and how many program runs
/// one count stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hook {
    pub id: netto_hook,
    pub name: &'static str,
    pub runs_per_count: u32,
}

/// Every hook, indexed by `netto_hook`.
pub const HOOKS: [Hook; netto_hook::NETTO_NR_HOOKS as usize] = [
    Hook {
        id: netto_hook::NETTO_HOOK_SOFTIRQ,
        name: "softirq",
        runs_per_count: 2,
    },
    Hook {
        id: netto_hook::NETTO_HOOK_HARDIRQ,
        name: "hardirq",
        runs_per_count: 2,
    },
    Hook {
        id: netto_hook::NETTO_HOOK_CALLBACK,
        name: "callback",
        runs_per_count: 2,
    },
    Hook {
        id: netto_hook::NETTO_HOOK_SCHED_SWITCH,
        name: "sched_switch",
        runs_per_count: 1,
    },
    Hook {
        id: netto_hook::NETTO_HOOK_WINDOW,
        name: "window",
        runs_per_count: 2,
    },
    Hook {
        id: netto_hook::NETTO_HOOK_SAMPLE,
        name: "sample",
        runs_per_count: 1,
    },
];

/// The tracepoints of each hook's programs (the socket functions of the
/// fentry backend and the sampler's perf event go by section kind below).
const TRACEPOINTS: &[(netto_hook, &[&str])] = &[
    (
        netto_hook::NETTO_HOOK_SOFTIRQ,
        &["softirq_entry", "softirq_exit"],
    ),
    (
        netto_hook::NETTO_HOOK_HARDIRQ,
        &[
            "irq_handler_entry",
            "irq_handler_exit",
            "local_timer_entry",
            "local_timer_exit",
            "reschedule_entry",
            "reschedule_exit",
            "call_function_entry",
            "call_function_exit",
            "call_function_single_entry",
            "call_function_single_exit",
            "irq_work_entry",
            "irq_work_exit",
        ],
    ),
    (
        netto_hook::NETTO_HOOK_CALLBACK,
        &[
            "timer_expire_entry",
            "timer_expire_exit",
            "hrtimer_expire_entry",
            "hrtimer_expire_exit",
            "tasklet_entry",
            "tasklet_exit",
            "workqueue_execute_start",
            "workqueue_execute_end",
        ],
    ),
    (netto_hook::NETTO_HOOK_SCHED_SWITCH, &["sched_switch"]),
    (netto_hook::NETTO_HOOK_WINDOW, &["sys_enter", "sys_exit"]),
];

/// The hook of the program in ELF section `section`.
pub fn of_section(section: &str) -> Option<&'static Hook> {
    let id = if let Some(tp) = section.strip_prefix("tp_btf/") {
        TRACEPOINTS
            .iter()
            .find(|(_, tracepoints)| tracepoints.contains(&tp))?
            .0
    } else if section.starts_with("fentry/") || section.starts_with("fexit/") {
        netto_hook::NETTO_HOOK_WINDOW
    } else if section == "perf_event" {
        netto_hook::NETTO_HOOK_SAMPLE
    } else {
        return None;
    };
    Some(&HOOKS[id as usize])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::skel::account::AccountSkelBuilder;
    use libbpf_rs::skel::{OpenSkel, SkelBuilder};
    use std::mem::MaybeUninit;

    #[test]
    fn hooks_are_indexed_by_their_id() {
        for (i, hook) in HOOKS.iter().enumerate() {
            assert_eq!(hook.id as usize, i, "{}", hook.name);
        }
    }

    #[test]
    fn every_accounting_program_has_a_hook() {
        let mut storage = MaybeUninit::uninit();
        let open = AccountSkelBuilder::default().open(&mut storage).unwrap();
        for prog in open.open_object().progs() {
            let section = prog.section().to_string_lossy();
            assert!(
                of_section(&section).is_some(),
                "{} ({section}) counts its runs under no hook",
                prog.name().to_string_lossy()
            );
        }
        assert_eq!(of_section("perf_event").unwrap().name, "sample");
        assert_eq!(of_section("fexit/sock_recvmsg").unwrap().name, "window");
        assert!(of_section("xdp").is_none());
    }
}
