//! `netto check`: what this kernel allows and which backend netto would use.
//! Exits non-zero only when netto cannot run at all.

use std::process::ExitCode;

use anyhow::Result;
use netto::cli::CheckArgs;
use netto::collect::groups::kubelet::{self, Kubelet};
use netto::collect::network_programs::ProgramWatch;
use netto::frontends::{network_programs as programs_text, notes};
use netto::kernel::backend::{Backend, BackendChoice, TRACEPOINT_COST};
use netto::kernel::callbacks::NETWORK_CALLBACKS;
use netto::kernel::dispatch;
use netto::kernel::features::Features;
use netto::kernel::selection::{self, Storage};
use netto::source::notes::{self as source_notes, CheckSeen};
use netto::symbols::kallsyms::Kallsyms;
use netto::workload::traffic::each_call::Loopback;
use serde_json::json;

/// How many names of the callback table this kernel has (kallsyms lists
/// names even where it hides addresses).
fn present_callbacks() -> usize {
    let names: Vec<&str> = NETWORK_CALLBACKS.iter().map(|(name, _)| *name).collect();
    let Ok(syms) = Kallsyms::load(&names) else {
        return 0;
    };
    names.iter().filter(|name| syms.contains(name)).count()
}

/// Whether the kubelet's logs name pods and containers here, and what
/// came of reading them (or why `--by cgroup` shows uids and ids).
fn kubelet_names(root: &std::path::Path) -> (bool, String) {
    match Kubelet::new(root).read_now() {
        kubelet::Status::Read {
            containers,
            pods,
            truncated,
        } => (
            true,
            format!(
                "{}: {containers} containers, {pods} pods{}",
                root.display(),
                if truncated {
                    format!(
                        " (read {} entries per directory; the rest unnamed)",
                        kubelet::MAX_ENTRIES
                    )
                } else {
                    String::new()
                }
            ),
        ),
        kubelet::Status::Failed(path, why) => (
            false,
            format!(
                "{path}: {why}: --by cgroup shows pods by uid and containers by id (not a \
                 Kubernetes node, or its kubelet logs are not mounted here: --kubelet-logs)"
            ),
        ),
    }
}

/// Where netto finds the host's network programs, and what it cannot.
const NETWORK_SEEN: &str = "found by BPF links, XDP and classic tc (clsact and ingress qdiscs) \
     through netlink, tcx, the flow dissector and cgroup programs attached without a link by \
     query; socket filters and tc on other qdiscs are listed by type, not located, and priced \
     all the same";

pub fn run(args: &CheckArgs) -> Result<ExitCode> {
    let (kubelet_ok, kubelet_detail) = kubelet_names(&args.kubelet_logs);
    let features = Features::detect();
    // Before netto's programs attach, as a live run does.
    let dispatch = dispatch::measure();
    // The choice every measuring command makes, self-check included.
    let mut storage = Storage::default();
    let selected = selection::select(BackendChoice::Auto, &features, &mut storage, &Loopback);
    let tried: Vec<String> = selected
        .iter()
        .flat_map(source_notes::of_selection)
        .map(|note| notes::sentence(&note))
        .collect();
    // What a live run would list in its first interval, before its own
    // programs attach (so none of netto's is among them).
    let programs = ProgramWatch::new([]).price(0.0, &Default::default(), false);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();

    if args.json {
        let findings: serde_json::Map<String, serde_json::Value> = features
            .findings()
            .into_iter()
            .map(|(name, probe)| (name.to_owned(), json!(probe)))
            .collect();
        let report = match &selected {
            Ok(chosen) => json!({
                "kernel": kernel, "features": findings,
                "network_callbacks": present_callbacks(),
                "kubelet_names": {"ok": kubelet_ok, "detail": kubelet_detail},
                "backend": chosen.accounting.backend().name(), "why": tried.join("; "),
                "self_check": chosen.check, "can_run": true,
                "dispatch_ns": dispatch.as_ref().ok().map(|d| d.ns),
                "dispatch_error_ns": dispatch.as_ref().ok().map(|d| d.error_ns),
                "fentry_problem": features.fentry_backend_problem(),
                "network_programs": programs,
            }),
            Err(e) => json!({
                "kernel": kernel, "features": findings,
                "network_callbacks": present_callbacks(),
                "kubelet_names": {"ok": kubelet_ok, "detail": kubelet_detail},
                "backend": null, "why": e.describe(), "self_check": null, "can_run": false,
                "network_programs": programs,
            }),
        };
        println!("{report}");
    } else {
        println!("kernel {kernel}");
        for (name, probe) in features.findings() {
            println!(
                "{name:<14} {:<4} {}",
                if probe.ok { "yes" } else { "no" },
                probe.detail
            );
        }
        println!(
            "{:<14} {} of {} network timer callbacks present in this kernel",
            "callbacks",
            present_callbacks(),
            NETWORK_CALLBACKS.len()
        );
        println!(
            "{:<14} {:<4} {kubelet_detail}",
            "kubelet names",
            if kubelet_ok { "yes" } else { "no" }
        );
        match &selected {
            Ok(chosen) => {
                for note in &tried {
                    println!("{note}");
                }
                let check = &chosen.check;
                println!(
                    "{:<14} {}: {}",
                    "self-check",
                    check.backend,
                    notes::self_check(&CheckSeen::from(check))
                );
                match &dispatch {
                    Ok(d) => println!(
                        "{:<14} {:.0} ± {:.0} ns to enter a program (an estimate, \
                         timed on raw sys_enter/exit; priced into netto's own cost)",
                        "dispatch", d.ns, d.error_ns
                    ),
                    Err(e) => println!("{:<14} not measured: {}", "dispatch", e.describe()),
                }
                if chosen.accounting.backend() == Backend::Tracepoint {
                    if let Some(problem) = features.fentry_backend_problem() {
                        println!("{:<14} {problem}", "no fentry");
                        println!("{:<14} {TRACEPOINT_COST}", "cost");
                    }
                }
            }
            Err(e) => println!("backend        none: {}", e.describe()),
        }
        println!(
            "{:<14} {} on the network path ({NETWORK_SEEN}); {} more loaded, attached \
             nowhere netto looks",
            "eBPF programs",
            programs.programs.len(),
            programs.not_attached
        );
        print!("{}", programs_text::render_list(&programs));
    }
    Ok(if selected.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
