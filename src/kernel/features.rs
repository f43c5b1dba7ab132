//! What the running kernel allows, found by trying it. Backend selection and
//! `netto check` read the same findings, so `check` never promises more
//! than `stat` can do.

use std::mem::MaybeUninit;

use libbpf_rs::libbpf_sys;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::Btf;
use serde::Serialize;

use super::skel::probe::ProbeSkelBuilder;
use super::tracepoints::{self, OptionalGroup};
use super::{perf, privileges};
use crate::symbols::kallsyms::Kallsyms;

/// The outcome of one probe.
#[derive(Debug, Clone, Serialize)]
pub struct Probe {
    pub ok: bool,
    pub detail: String,
}

impl Probe {
    fn yes(detail: impl Into<String>) -> Self {
        Probe {
            ok: true,
            detail: detail.into(),
        }
    }

    fn no(detail: impl Into<String>) -> Self {
        Probe {
            ok: false,
            detail: detail.into(),
        }
    }

    fn from_result(result: Result<String, String>) -> Self {
        match result {
            Ok(detail) => Probe::yes(detail),
            Err(detail) => Probe::no(detail),
        }
    }
}

const NOT_TRIED: &str = "not tried: needs privileges";

#[derive(Debug)]
pub struct Features {
    pub privileges: Probe,
    pub btf: Probe,
    pub task_storage: Probe,
    pub fentry: Probe,
    pub tracepoints: Probe,
    pub perf_events: Probe,
    pub xdp: Probe,
    pub bpf_stats: Probe,
    pub kallsyms: Probe,
    /// What attribution (`--by`) can see here.
    pub attribution: Probe,
    /// Required tracepoints this kernel lacks.
    missing_tracepoints: Vec<String>,
}

impl Features {
    pub fn detect() -> Self {
        let privileged = privileges::sufficient();
        let btf = Btf::from_vmlinux();
        let (missing_required, missing_optional) = match &btf {
            Ok(btf) => missing_tracepoints(btf),
            Err(_) => (Vec::new(), Vec::new()),
        };
        let tracepoints = if btf.is_err() {
            Probe::no("unknown without BTF")
        } else if missing_required.is_empty() {
            let mut detail = "all required present".to_owned();
            for group in &missing_optional {
                detail.push_str(&format!(
                    "; missing {}: {}",
                    group.tracepoints.join("/"),
                    group.without
                ));
            }
            Probe::yes(detail)
        } else {
            Probe::no(format!("missing {}", missing_required.join(", ")))
        };
        Features {
            privileges: if privileged {
                Probe::yes("may load and attach BPF programs")
            } else {
                Probe::no(privileges::REQUIREMENT)
            },
            btf: match &btf {
                Ok(_) => Probe::yes("/sys/kernel/btf/vmlinux"),
                Err(e) => Probe::no(format!(
                    "/sys/kernel/btf/vmlinux unreadable ({e}); needs CONFIG_DEBUG_INFO_BTF"
                )),
            },
            task_storage: probe_map_type(libbpf_sys::BPF_MAP_TYPE_TASK_STORAGE, privileged),
            fentry: if privileged {
                Probe::from_result(try_fentry())
            } else {
                Probe::no(NOT_TRIED)
            },
            tracepoints,
            perf_events: if privileged {
                Probe::from_result(perf::try_cpu_clock())
            } else {
                Probe::no(NOT_TRIED)
            },
            xdp: probe_prog_type(libbpf_sys::BPF_PROG_TYPE_XDP, privileged),
            bpf_stats: if privileged {
                Probe::from_result(
                    super::stats::StatsGuard::enable()
                        .map(|_| "BPF_ENABLE_STATS run time".to_owned())
                        .map_err(|e| format!("BPF_ENABLE_STATS refused: {e}")),
                )
            } else {
                Probe::no(NOT_TRIED)
            },
            kallsyms: kallsyms_probe(),
            attribution: match &btf {
                Ok(btf) => attribution_probe(btf, privileged),
                Err(_) => Probe::no("unknown without BTF"),
            },
            missing_tracepoints: missing_required,
        }
    }

    /// Why the tracepoint backend cannot run here, if it cannot.
    pub fn tracepoint_backend_problem(&self) -> Option<String> {
        [
            ("privileges", &self.privileges),
            ("BTF", &self.btf),
            ("task storage", &self.task_storage),
            ("tracepoints", &self.tracepoints),
        ]
        .into_iter()
        .find(|(_, probe)| !probe.ok)
        .map(|(what, probe)| format!("{what}: {}", probe.detail))
    }

    /// Why the fentry backend cannot run here, if it cannot. It needs the
    /// tracepoints too, except the syscall ones its function hooks replace.
    pub fn fentry_backend_problem(&self) -> Option<String> {
        let common = [
            ("privileges", &self.privileges),
            ("BTF", &self.btf),
            ("task storage", &self.task_storage),
            ("fentry/fexit", &self.fentry),
        ]
        .into_iter()
        .find(|(_, probe)| !probe.ok)
        .map(|(what, probe)| format!("{what}: {}", probe.detail));
        let missing: Vec<&str> = self
            .missing_tracepoints
            .iter()
            .map(String::as_str)
            .filter(|tp| !tracepoints::SYSCALL_WINDOWS.contains(tp))
            .collect();
        common.or_else(|| {
            (!missing.is_empty()).then(|| format!("tracepoints: missing {}", missing.join(", ")))
        })
    }

    /// Every finding in display order, for `check`.
    pub fn findings(&self) -> Vec<(&'static str, &Probe)> {
        vec![
            ("privileges", &self.privileges),
            ("btf", &self.btf),
            ("task_storage", &self.task_storage),
            ("tracepoints", &self.tracepoints),
            ("fentry_fexit", &self.fentry),
            ("perf_events", &self.perf_events),
            ("xdp", &self.xdp),
            ("bpf_stats", &self.bpf_stats),
            ("kallsyms", &self.kallsyms),
            ("attribution", &self.attribution),
        ]
    }
}

fn missing_tracepoints(btf: &Btf<'_>) -> (Vec<String>, Vec<&'static OptionalGroup>) {
    let required = tracepoints::accounting_tracepoints()
        .unwrap_or_default()
        .into_iter()
        .filter(|tp| !tracepoints::is_optional(tp) && !tracepoints::exists(btf, tp))
        .collect();
    (required, tracepoints::missing_groups(btf))
}

fn probe_map_type(map_type: libbpf_sys::bpf_map_type, privileged: bool) -> Probe {
    if !privileged {
        return Probe::no(NOT_TRIED);
    }
    // SAFETY: libbpf probe with no options; it creates and closes a map.
    match unsafe { libbpf_sys::libbpf_probe_bpf_map_type(map_type, std::ptr::null()) } {
        1 => Probe::yes("supported"),
        0 => Probe::no(
            "not supported by this kernel (task storage for tracing programs needs 5.12+)",
        ),
        err => Probe::no(format!(
            "probe failed: {}",
            std::io::Error::from_raw_os_error(-err)
        )),
    }
}

fn probe_prog_type(prog_type: libbpf_sys::bpf_prog_type, privileged: bool) -> Probe {
    if !privileged {
        return Probe::no(NOT_TRIED);
    }
    // SAFETY: libbpf probe with no options; it loads and closes a program.
    match unsafe { libbpf_sys::libbpf_probe_bpf_prog_type(prog_type, std::ptr::null()) } {
        1 => Probe::yes("program type supported"),
        0 => Probe::no("program type not supported"),
        err => Probe::no(format!(
            "probe failed: {}",
            std::io::Error::from_raw_os_error(-err)
        )),
    }
}

/// Loads and attaches an fentry and an fexit program: the only reliable
/// test, since BTF may list the function while ftrace refuses the hook.
fn try_fentry() -> Result<String, String> {
    let mut storage = MaybeUninit::uninit();
    let open = ProbeSkelBuilder::default()
        .open(&mut storage)
        .map_err(|e| format!("opening the probe failed: {e}"))?;
    let skel = open.load().map_err(|e| match ftrace_refused() {
        Some(cause) => format!("load refused: {e}: {cause}"),
        None => format!("load refused: {e}"),
    })?;
    let _entry = skel
        .progs
        .netto_probe_fentry
        .attach()
        .map_err(|e| format!("attach refused: {e}"))?;
    let _exit = skel
        .progs
        .netto_probe_fexit
        .attach()
        .map_err(|e| format!("attach refused: {e}"))?;
    Ok("fentry/fexit attach to sock_recvmsg".to_owned())
}

/// Why the kernel refuses function hooks, when it says so: fentry and
/// fexit ride on the function tracer (ftrace), which a kernel can lock
/// down or turn off. Only read, never written.
fn ftrace_refused() -> Option<String> {
    let lockdown = std::fs::read_to_string("/sys/kernel/security/lockdown").unwrap_or_default();
    if let Some(mode) = lockdown
        .split_whitespace()
        .find(|mode| mode.starts_with('[') && *mode != "[none]")
    {
        return Some(format!(
            "the kernel is in lockdown mode {}",
            mode.trim_matches(['[', ']'])
        ));
    }
    let enabled = std::fs::read_to_string("/proc/sys/kernel/ftrace_enabled").unwrap_or_default();
    if enabled.trim() == "0" {
        return Some("the function tracer is off (sysctl kernel.ftrace_enabled = 0)".to_owned());
    }
    FTRACE_FUNCTIONS
        .iter()
        .find_map(|path| match std::fs::File::open(path) {
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Some(format!(
                "the function tracer (ftrace) is locked down here: even reading {path} is refused"
            )),
            _ => None,
        })
}

/// Where tracefs lists the functions ftrace may hook.
const FTRACE_FUNCTIONS: [&str; 2] = [
    "/sys/kernel/tracing/available_filter_functions",
    "/sys/kernel/debug/tracing/available_filter_functions",
];

/// Attribution needs socket storage (the owner of each socket); each
/// delivery point this kernel lacks leaves some time unattributed, and
/// without a cgroup v2 hierarchy every task is in its root.
fn attribution_probe(btf: &Btf<'_>, privileged: bool) -> Probe {
    let storage = probe_map_type(libbpf_sys::BPF_MAP_TYPE_SK_STORAGE, privileged);
    if !storage.ok {
        return Probe::no(format!("socket storage: {}", storage.detail));
    }
    let mut detail = match super::cgroup::v2_hierarchy() {
        Some(root) => format!("cgroup v2 at {}", root.display()),
        None => "no cgroup v2 hierarchy mounted: --by cgroup shows only /".to_owned(),
    };
    let missing = tracepoints::missing_points(btf);
    if missing.is_empty() {
        detail.push_str(&format!(
            "; all {} delivery points present",
            tracepoints::POINTS.len()
        ));
    }
    for point in missing {
        detail.push_str(&format!("; no {}: {}", point.tracepoint, point.without));
    }
    Probe::yes(detail)
}

fn kallsyms_probe() -> Probe {
    match Kallsyms::load(&[]) {
        Ok(syms) if syms.addresses_hidden() => Probe::no(
            "addresses hidden (kernel.kptr_restrict); net_timers cannot recognise callbacks",
        ),
        Ok(_) => Probe::yes("addresses readable"),
        Err(e) => Probe::no(e.to_string()),
    }
}
