//! Which of the accounting program's tracepoints the running kernel has.
//! Required ones make the backend unusable when missing; optional ones only
//! narrow what is measured, and `check` says how.

use std::mem::MaybeUninit;

use libbpf_rs::btf::types::Typedef;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::Btf;

use super::skel::account::AccountSkelBuilder;
use super::KernelError;

/// Tracepoints the accounting works without, grouped by what their absence
/// costs. Entry and exit of a pair are left out together.
#[derive(Debug)]
pub struct OptionalGroup {
    pub tracepoints: &'static [&'static str],
    pub without: &'static str,
}

pub const OPTIONAL: &[OptionalGroup] = &[
    OptionalGroup {
        tracepoints: &["local_timer_entry", "local_timer_exit"],
        without: "local timer interrupts are charged to the event they interrupt",
    },
    OptionalGroup {
        tracepoints: &["reschedule_entry", "reschedule_exit"],
        without: "reschedule IPIs are charged to the event they interrupt",
    },
    OptionalGroup {
        tracepoints: &["call_function_entry", "call_function_exit"],
        without: "function-call IPIs are charged to the event they interrupt",
    },
    OptionalGroup {
        tracepoints: &["call_function_single_entry", "call_function_single_exit"],
        without: "single function-call IPIs are charged to the event they interrupt",
    },
    OptionalGroup {
        tracepoints: &["irq_work_entry", "irq_work_exit"],
        without: "irq_work interrupts are charged to the event they interrupt",
    },
    OptionalGroup {
        tracepoints: &["tasklet_entry", "tasklet_exit"],
        without:
            "net_timers misses network tasklets (TCP small queues on kernels before BH workqueues)",
    },
];

/// The tracepoints that give the `tracepoint` backend its socket windows;
/// the `fentry` backend hooks socket functions instead and loads the rest.
pub const SYSCALL_WINDOWS: &[&str] = &["sys_enter", "sys_exit"];

/// The tracepoints the accounting programs attach to, from the object's
/// program sections (so the list cannot drift from bpf/).
pub fn accounting_tracepoints() -> Result<Vec<String>, KernelError> {
    let mut storage = MaybeUninit::uninit();
    let open = AccountSkelBuilder::default()
        .open(&mut storage)
        .map_err(|source| KernelError::Load {
            what: "the accounting object",
            source,
        })?;
    Ok(open
        .open_object()
        .progs()
        .filter_map(|prog| from_section(&prog.section().to_string_lossy()).map(str::to_owned))
        .collect())
}

/// A program named with this suffix reads kernel memory with direct loads
/// through the kfunc below (Linux 6.2+), where its twin without the suffix
/// calls probe-read helpers; one of the two is loaded.
const DIRECT_SUFFIX: &str = "_direct";
pub const DIRECT_KFUNC: &str = "bpf_rdonly_cast";

/// Which of twin programs to load.
pub struct Variants {
    /// Whether the kernel has [`DIRECT_KFUNC`].
    pub direct: bool,
    /// Every program of the object.
    pub names: Vec<String>,
}

impl Variants {
    /// Whether to load program `name`: a direct one where the kernel can
    /// run it, its twin where not, a program without a twin always.
    pub fn wanted(&self, name: &str) -> bool {
        if name.ends_with(DIRECT_SUFFIX) {
            return self.direct;
        }
        let twin = format!("{name}{DIRECT_SUFFIX}");
        !(self.direct && self.names.contains(&twin))
    }
}

/// The tracepoint a `tp_btf/NAME` program section attaches to.
pub fn from_section(section: &str) -> Option<&str> {
    section.strip_prefix("tp_btf/")
}

pub fn is_optional(tracepoint: &str) -> bool {
    optional_group(tracepoint).is_some()
}

pub fn optional_group(tracepoint: &str) -> Option<&'static OptionalGroup> {
    OPTIONAL
        .iter()
        .find(|group| group.tracepoints.contains(&tracepoint))
}

/// BTF-enabled tracepoints show up in vmlinux BTF as `btf_trace_NAME`.
pub fn exists(btf: &Btf<'_>, tracepoint: &str) -> bool {
    btf.type_by_name::<Typedef<'_>>(&format!("btf_trace_{tracepoint}"))
        .is_some()
}

/// The optional groups this kernel cannot fully provide.
pub fn missing_groups(btf: &Btf<'_>) -> Vec<&'static OptionalGroup> {
    OPTIONAL
        .iter()
        .filter(|group| !group.tracepoints.iter().all(|tp| exists(btf, tp)))
        .collect()
}

/// One of attribution's delivery points (`kernel::attribution`), all
/// optional: its program, the tracepoint it needs, and what a kernel
/// without that tracepoint leaves unattributed.
#[derive(Debug)]
pub struct Point {
    pub program: &'static str,
    pub tracepoint: &'static str,
    pub without: &'static str,
}

pub const POINTS: &[Point] = &[
    Point {
        program: "netto_attr_data_ready",
        tracepoint: "sk_data_ready",
        without: "receive time of packets for UDP and other non-TCP sockets stays unattributed",
    },
    Point {
        program: "netto_attr_tcp_probe",
        tracepoint: "tcp_probe",
        without: "receive time of TCP segments without new data (ACKs to a sender) stays unattributed",
    },
    Point {
        program: "netto_attr_dev_xmit",
        tracepoint: "net_dev_xmit",
        without: "softirq and timer time up to a transmit, and forwarded or bridged traffic, stay unattributed",
    },
    Point {
        program: "netto_attr_forwarded",
        tracepoint: "net_dev_start_xmit",
        without: "forwarded and bridged flows carry no bytes (`--by flow|port`)",
    },
    Point {
        program: "netto_attr_consume",
        tracepoint: "consume_skb",
        without: "transmit completions stay unattributed",
    },
    Point {
        program: "netto_attr_send_owner",
        tracepoint: "sock_send_length",
        without: "softirq time goes to the cgroup each socket was created in, and to no process, unless the socket also receives",
    },
    Point {
        program: "netto_attr_recv_owner",
        tracepoint: "sock_recv_length",
        without: "softirq time goes to the cgroup each socket was created in, and to no process, unless the socket also sends",
    },
];

/// The points this kernel lacks.
pub fn missing_points(btf: &Btf<'_>) -> Vec<&'static Point> {
    POINTS
        .iter()
        .filter(|point| !exists(btf, point.tracepoint))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_direct_program_or_its_twin_and_every_other_program() {
        let names = [
            "netto_sys_enter",
            "netto_sys_enter_direct",
            "netto_sys_exit",
        ];
        let variants = |direct| Variants {
            direct,
            names: names.map(str::to_owned).into(),
        };
        let loaded = |direct| -> Vec<&str> {
            let v = variants(direct);
            names.into_iter().filter(|n| v.wanted(n)).collect()
        };
        assert_eq!(loaded(true), ["netto_sys_enter_direct", "netto_sys_exit"]);
        assert_eq!(loaded(false), ["netto_sys_enter", "netto_sys_exit"]);
    }

    #[test]
    fn sections_and_groups() {
        assert_eq!(from_section("tp_btf/sched_switch"), Some("sched_switch"));
        assert_eq!(from_section("fentry/x"), None);
        assert!(is_optional("tasklet_exit"));
        assert!(!is_optional("softirq_entry"));
    }
}
