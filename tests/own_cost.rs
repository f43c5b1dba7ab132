//! netto's own cost in every snapshot: BPF run-time statistics held for a
//! slice of each interval only, the BPF part priced from that slice and
//! labelled an estimate with its error, and the estimate against intervals
//! in which statistics were on throughout (held by the test, as another
//! tool on the host would), under the same steady load. Needs root and
//! BPF.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use netto::kernel::skel::baseline::BaselineSkelBuilder;
use netto::kernel::stats::{run_stats, StatsGuard};
use netto::model::{percent, BudgetChange, BudgetStatus, EventKey, Recording, Snapshot, Tier};
use netto::source::budget::SKETCH_FLOOR;
use std::mem::MaybeUninit;
use std::os::fd::AsFd;

/// A UDP send loop over loopback into a discard server, on CPU 1, for
/// `seconds`: steady work for every accounting hook.
fn steady_load(port: u16, seconds: f64) -> (Server, thread::JoinHandle<LoadReport>) {
    let dest = format!("127.0.0.1:{port}");
    let sink = Server::start(loadgen(&format!(
        "discard --proto udp --listen {dest} --duration {}",
        seconds + 2.0
    )));
    let sender = thread::spawn(move || {
        run_client(loadgen(&format!(
            "send --proto udp --syscall sendto --dest {dest} --duration {seconds} --cpu 1"
        )))
    });
    (sink, sender)
}

/// netto's BPF cost per program run in the interval.
fn ns_per_run(s: &Snapshot) -> f64 {
    let runs: u64 = s.overhead.programs.iter().map(|p| p.run_count).sum();
    s.overhead.bpf_run_time_ns as f64 / runs.max(1) as f64
}

/// An interval under the steady load. In an idle one a few hundred runs
/// make the whole cost, so one run that falls between the reading of the
/// counters and of the statistics is a percent of it (seen in the kernel
/// matrix's guests, where those readings are further apart).
fn is_busy(s: &Snapshot) -> bool {
    s.overhead.programs.iter().map(|p| p.run_count).sum::<u64>() > 10_000
}

#[test]
fn statistics_are_held_for_a_slice_and_the_bpf_part_is_an_estimate() {
    let seconds = 6.0;
    let (sink, sender) = steady_load(5601, seconds);
    let netto = NettoStat::start(0, &["--interval", "1"]);
    // How often the kernel's statistics are on while netto measures: an
    // empty program on sys_enter, which this loop's own system calls run,
    // counts runs only while they are (the sysctl does not show the
    // fd-held switch).
    let mut storage = MaybeUninit::uninit();
    let baseline = BaselineSkelBuilder::default()
        .open(&mut storage)
        .unwrap()
        .load()
        .unwrap();
    let _link = baseline.progs.baseline_sys_enter.attach().unwrap();
    let runs = || {
        run_stats(baseline.progs.baseline_sys_enter.as_fd())
            .unwrap()
            .run_count
    };
    let started = Instant::now();
    let (mut on, mut polls, mut last) = (0u32, 0u32, runs());
    while started.elapsed() < Duration::from_secs_f64(seconds - 1.0) {
        thread::sleep(Duration::from_millis(7));
        let now = runs();
        on += u32::from(now > last);
        polls += 1;
        last = now;
    }
    sender.join().unwrap();
    let snaps = netto.stop();
    drop(sink);
    let share = f64::from(on) / f64::from(polls);
    assert!(
        (0.02..0.3).contains(&share),
        "statistics on in {on} of {polls} polls: not a tenth of the time"
    );

    assert!(snaps.len() >= 4, "only {} snapshots", snaps.len());
    for s in &snaps[1..snaps.len() - 1] {
        let o = &s.overhead;
        let at = format!("interval at {}", s.ts);
        assert!(o.bpf_stats && o.estimated, "{at}: {o:?}");
        assert!(
            (0.05..=0.15).contains(&o.bpf_stats_held_s),
            "{at}: statistics held {} s of {} s",
            o.bpf_stats_held_s,
            s.interval_s
        );
        let cost = o.cost_percent.expect("every live snapshot has its cost");
        let sum = percent(
            o.process_cpu_ns + o.bpf_run_time_ns + o.dispatch_run_time_ns,
            s.interval_s,
        );
        assert!((cost - sum).abs() < 1e-9, "{at}: {cost} vs {sum}");
        // Under load every hook runs: the BPF part is the larger, and
        // priced by the slices of the intervals before it, its error is
        // a fraction of it.
        assert!(o.bpf_run_time_ns > o.process_cpu_ns, "{at}: {o:?}");
        assert!(
            o.error_percent > 0.0 && o.bpf_error_ns < o.bpf_run_time_ns,
            "{at}: error {} ns of {} ns",
            o.bpf_error_ns,
            o.bpf_run_time_ns
        );
        let runs: u64 = o.programs.iter().map(|p| p.run_count).sum();
        let priced: u64 = o.programs.iter().map(|p| p.run_time_ns).sum();
        assert!(runs > 10_000, "{at}: {runs} program runs");
        assert!(priced.abs_diff(o.bpf_run_time_ns) <= o.programs.len() as u64);
    }
    // Past the first interval (priced by one slice alone) the error is a
    // small part of the estimate.
    let later: Vec<f64> = snaps[2..snaps.len() - 1]
        .iter()
        .map(|s| s.overhead.bpf_error_ns as f64 / s.overhead.bpf_run_time_ns as f64)
        .collect();
    assert!(median(&later) < 0.25, "relative errors {later:?}");
}

/// Statistics held by the test for two seconds, released for two, over and
/// over: intervals they covered are measured in full (`estimated` false,
/// no error); the others are priced from netto's slices. Under the same
/// load both must find the same cost per program run.
#[test]
fn estimated_intervals_price_runs_like_fully_measured_ones() {
    let seconds = 14.0;
    let (sink, sender) = steady_load(5602, seconds);
    let netto = NettoStat::start(0, &["--interval", "0.5"]);
    let done = Arc::new(AtomicBool::new(false));
    let toggler = {
        let done = done.clone();
        thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let guard = StatsGuard::enable().expect("BPF statistics");
                thread::sleep(Duration::from_secs(2));
                drop(guard);
                thread::sleep(Duration::from_secs(2));
            }
        })
    };
    sender.join().unwrap();
    done.store(true, Ordering::Relaxed);
    toggler.join().unwrap();
    let snaps = netto.stop();
    drop(sink);

    let busy: Vec<&Snapshot> = snaps[1..snaps.len() - 1]
        .iter()
        .filter(|s| is_busy(s))
        .collect();
    let (exact, estimated): (Vec<&Snapshot>, Vec<&Snapshot>) =
        busy.iter().partition(|s| !s.overhead.estimated);
    assert!(
        exact.len() >= 4 && estimated.len() >= 4,
        "{} fully measured and {} estimated intervals",
        exact.len(),
        estimated.len()
    );
    for s in &exact {
        assert_eq!(s.overhead.bpf_error_ns, 0, "measured in full, no error");
    }
    let exact_per_run = median(&exact.iter().map(|s| ns_per_run(s)).collect::<Vec<_>>());
    let estimated_per_run = median(&estimated.iter().map(|s| ns_per_run(s)).collect::<Vec<_>>());
    eprintln!(
        "cost per run: {exact_per_run:.1} ns measured in full, {estimated_per_run:.1} ns estimated"
    );
    let ratio = estimated_per_run / exact_per_run;
    assert!(
        (0.8..1.25).contains(&ratio),
        "estimated {estimated_per_run:.1} ns per run vs {exact_per_run:.1} ns measured in full"
    );
}

/// The most error one interval may carry while the statistics are held
/// throughout. A hook whose runs the counters and the statistics disagree
/// on by over 0.5 % is priced (`collect::cost`), at the spread of its
/// recent costs per run; on the host that stays under 1 %. In the emulated
/// guests single intervals read 1.18 % (6.12, interval 4) and 1.57 % (6.1,
/// interval 2), with the fentry backend, about one run of the row in eight
/// over the last eight matrix runs. Why is not established:
/// likely the two reads further apart under emulation, priced at the wide
/// spread of early intervals' costs per run (cold translation caches).
/// The bound there leaves three times the worst seen; each interval's
/// error is printed, to read the next by.
fn held_error_bound() -> f64 {
    if emulated() {
        0.05
    } else {
        0.01
    }
}

/// Each program's cost per run, and a socket call's cost in window
/// programs, with BPF statistics held throughout (every run measured). The
/// kernel matrix runs this once per backend in the same guest, and the performance
/// page (docs/src/performance.md) sets the two side by side. Whatever the backend, every call of the load
/// must have run at least a window's open and its close.
#[test]
fn each_program_and_each_socket_call_has_a_measured_cost() {
    let interval_s = 1.0;
    let _stats = StatsGuard::enable().expect("BPF statistics");
    let netto = NettoStat::start(0, &["--interval", &interval_s.to_string()]);
    let (sink, sender) = steady_load(5605, scaled_secs(4) as f64);
    let run = sender.join().unwrap();
    // The last full interval holds the load's end.
    thread::sleep(scaled(Duration::from_secs_f64(1.5 * interval_s)));
    let snaps = netto.stop();
    drop(sink);

    let mut programs: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut busy = 0;
    for (i, s) in snaps.iter().enumerate() {
        // Held throughout, the statistics measured every run but strays
        // (counters and statistics are read one after the other), save in
        // the first interval, which began before netto's first reading.
        // Only intervals under the load are judged (see `is_busy`).
        let o = &s.overhead;
        if i > 0 && is_busy(s) {
            busy += 1;
            let error = o.bpf_error_ns as f64 / o.bpf_run_time_ns as f64;
            eprintln!(
                "interval {i}: error {:.2} % of {} ns",
                100.0 * error,
                o.bpf_run_time_ns
            );
            assert!(
                error <= held_error_bound(),
                "statistics were held, yet interval {i} has an error over {:.0} %: {o:?}",
                100.0 * held_error_bound()
            );
        }
        for p in &o.programs {
            let sum = programs.entry(p.name.clone()).or_default();
            sum.0 += p.run_count;
            sum.1 += p.run_time_ns;
        }
    }
    let backend = &snaps[0].backend;
    eprintln!("backend {backend}: program, runs, ns/run");
    for (name, (runs, ns)) in &programs {
        eprintln!(
            "  {name:<28} {runs:>10} {:>8.1}",
            *ns as f64 / (*runs).max(1) as f64
        );
        assert!(
            *runs == 0 || *ns > 0,
            "{name}: {runs} runs measured at no cost"
        );
    }
    let (window_runs, window_ns) = programs
        .iter()
        .filter(|(name, _)| is_window_program(name))
        .fold((0, 0), |(r, t), (_, (runs, ns))| (r + runs, t + ns));
    let per_call = window_ns as f64 / run.calls as f64;
    eprintln!(
        "backend {backend}: window programs {per_call:.0} ns per datagram, the sender's \
         and the receiver's calls ({:.2} runs per datagram, {} datagrams)",
        window_runs as f64 / run.calls as f64,
        run.calls
    );
    assert!(run.calls > 1000, "only {} calls", run.calls);
    assert!(busy >= 2, "only {busy} intervals under the load");
    assert!(
        window_runs >= 2 * run.calls,
        "{window_runs} window program runs for {} socket calls",
        run.calls
    );
}

/// `netto record` under `budget` % at `hz`, in 0.5 s intervals, for
/// `record_s` while [`steady_load`] runs for `load_s` on `port`: the
/// recording (loaded and checked as `report` loads it) and netto's stderr.
fn record_under_budget(
    budget: f64,
    port: u16,
    hz: u32,
    load_s: f64,
    record_s: f64,
    extra: &[&str],
) -> (Recording, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("budget.json");
    let (sink, sender) = steady_load(port, load_s);
    let (budget, hz, record_s) = (budget.to_string(), hz.to_string(), record_s.to_string());
    let mut args = vec![
        "record",
        "--budget",
        &budget,
        "--frequency",
        &hz,
        "--interval",
        "0.5",
        "--duration",
        &record_s,
        "-o",
        path.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = netto(&args);
    sender.join().unwrap();
    drop(sink);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let recording = netto::recording::load(&path).expect("a valid recording");
    (recording.into_inner(), stderr)
}

/// `--budget`: under a load that puts netto over its budget it steps the
/// sampling frequency down within a few intervals, and back up once the
/// load has stopped; each step is in the recording and on stderr. In the
/// `sampled` tier, so that the frequency is the knob (under this load the
/// exact hooks would save more), starting at the highest frequency, where
/// the load's stacks cost more than [`SAMPLING_BUDGET_PERCENT`] (at
/// 1000 Hz they cost less than netto's work per interval, and only
/// start-up put it over).
#[test]
fn the_budget_steps_sampling_down_under_load_and_back_up_after() {
    let budget = SAMPLING_BUDGET_PERCENT;
    let (recording, stderr) =
        record_under_budget(budget, 5602, 10_000, 6.0, 13.0, &["--tier", "sampled"]);
    let snaps = &recording.snapshots;
    let frequency = |s: &Snapshot| s.sampling.as_ref().unwrap().frequency_hz;
    let budgets: Vec<&BudgetStatus> = snaps.iter().map(|s| s.budget.as_ref().unwrap()).collect();
    for (s, b) in snaps.iter().zip(&budgets) {
        eprintln!(
            "{:5} Hz  cost {:.3} % +-{:.3}  {:?}",
            frequency(s),
            s.overhead.cost_percent.unwrap(),
            s.overhead.error_percent,
            b.change
        );
    }
    assert!(budgets.iter().all(|b| b.percent == budget));
    assert_eq!(frequency(&snaps[0]), 10_000);
    // Every interval samples at the frequency the last change left.
    for (i, pair) in snaps.windows(2).enumerate() {
        let expected = match budgets[i].change {
            Some(BudgetChange::Down { to_hz, .. } | BudgetChange::Up { to_hz, .. }) => to_hz,
            _ => frequency(&pair[0]),
        };
        assert_eq!(frequency(&pair[1]), expected, "interval {}", i + 1);
    }
    // Down within a few intervals of the start (two over, then the step).
    let first_down = budgets
        .iter()
        .position(|b| matches!(b.change, Some(BudgetChange::Down { .. })))
        .expect("no step down under load");
    assert!(
        first_down < 6,
        "first step down after interval {first_down}"
    );
    assert!(stderr.contains(&format!(
        "netto: budget {budget} %: over it, sampling 10000 Hz -> "
    )));
    // A step up only from an interval whose measuring cost left room under
    // the budget: under load, too, once a lower frequency has brought it
    // there (the budget judges measuring, not what start-up cost).
    for (s, b) in snaps.iter().zip(&budgets) {
        if matches!(b.change, Some(BudgetChange::Up { .. })) {
            let measuring = s.overhead.measuring_percent.unwrap();
            assert!(measuring < budget, "up from {measuring:.3} %");
        }
    }
    // Up again once the load has stopped.
    let loaded = |s: &Snapshot| s.event(EventKey::SockSend).total_ns > 50_000_000;
    let last_loaded = snaps
        .iter()
        .rposition(loaded)
        .expect("no interval under load");
    let up = |b: &&&BudgetStatus| matches!(b.change, Some(BudgetChange::Up { .. }));
    assert!(
        budgets[last_loaded..].iter().any(|b| up(&b)),
        "no step up after the load stopped"
    );
    assert!(stderr.contains("room under it, sampling"), "{stderr}");
    let last = budgets.last().unwrap();
    assert!(last.steps_down >= 1 && last.steps_up >= 1);
}

/// `--budget` with sampling at its floor: the tier is the knob. Under the
/// load netto steps down the tiers, so that the socket calls (then every
/// event) are estimated, each estimate marked with its error; every
/// interval is in the tier the last change left; once the load has
/// stopped, the tiers come back up. Every step is on stderr.
#[test]
fn the_budget_steps_the_tier_down_under_load_and_back_up_after() {
    let (recording, stderr) = record_under_budget(TIER_BUDGET_PERCENT, 5604, 2, 8.0, 26.0, &[]);
    let snaps = &recording.snapshots;
    let budgets: Vec<&BudgetStatus> = snaps.iter().map(|s| s.budget.as_ref().unwrap()).collect();
    for (s, b) in snaps.iter().zip(&budgets) {
        eprintln!(
            "{:8} {:5} Hz  cost {:.3} %  send {:.3} s  {:?}",
            s.tier.name(),
            s.sampling.as_ref().unwrap().frequency_hz,
            s.overhead.cost_percent.unwrap(),
            s.event(EventKey::SockSend).total_ns as f64 / 1e9,
            b.change
        );
    }
    assert_eq!(snaps[0].tier, Tier::Exact);
    // Every interval is in the tier the last change left, and says what
    // that tier estimates.
    for (i, pair) in snaps.windows(2).enumerate() {
        let expected = match budgets[i].change {
            Some(BudgetChange::TierDown { to, .. } | BudgetChange::TierUp { to, .. }) => to,
            _ => pair[0].tier,
        };
        assert_eq!(pair[1].tier, expected, "interval {}", i + 1);
    }
    for s in snaps {
        for key in EventKey::ALL {
            assert_eq!(
                s.event(key).estimated,
                !s.tier.measures(key),
                "{:?} {key:?}",
                s.tier
            );
        }
    }
    let tier_down = budgets
        .iter()
        .position(|b| matches!(b.change, Some(BudgetChange::TierDown { .. })))
        .expect("no tier step down under load");
    let loaded = |s: &Snapshot| s.event(EventKey::SockSend).total_ns > 50_000_000;
    assert!(
        loaded(&snaps[tier_down]),
        "the tier stepped down without load"
    );
    assert!(
        stderr.contains(&format!(
            "netto: budget {TIER_BUDGET_PERCENT} %: over it, tier exact -> "
        )),
        "{stderr}"
    );
    let last_loaded = snaps
        .iter()
        .rposition(loaded)
        .expect("no interval under load");
    assert!(
        budgets[last_loaded..]
            .iter()
            .any(|b| matches!(b.change, Some(BudgetChange::TierUp { .. }))),
        "no tier step up after the load stopped"
    );
    assert!(stderr.contains("room under it, tier"), "{stderr}");
}

/// The budget from the first second: under the steady load from the start,
/// netto leaves `exact` after its first interval (priced, it is enough to
/// step on), by the tier (under load the exact hooks are most of its cost,
/// not the sampler), and all the way to the tier that fits at once;
/// start-up's CPU time is in the first snapshot's cost, and only there.
#[test]
fn under_load_the_budget_leaves_exact_within_5_s_by_the_tier() {
    let (recording, stderr) = record_under_budget(BUDGET_PERCENT, 5606, 99, 8.0, 6.0, &[]);
    let snaps = &recording.snapshots;
    for s in snaps {
        let b = s.budget.as_ref().unwrap();
        eprintln!(
            "{:8} cost {:6.3} % (start-up {:.3} s)  {:?}  {:?}",
            s.tier.name(),
            s.overhead.cost_percent.unwrap(),
            s.overhead.startup_cpu_ns as f64 / 1e9,
            b.change,
            b.knobs
        );
    }
    let first = &snaps[0].overhead;
    assert!(
        first.startup_cpu_ns > 0,
        "no start-up in the first snapshot"
    );
    assert!(first.process_cpu_ns >= first.startup_cpu_ns);
    assert!(snaps[1..].iter().all(|s| s.overhead.startup_cpu_ns == 0));
    assert!(first.dispatch_ns.is_some_and(|ns| ns > 0.0), "{first:?}");
    let left = snaps
        .iter()
        .position(|s| s.tier != Tier::Exact)
        .expect("never left exact under load");
    assert_eq!(left, 1, "still exact after {} s", left as f64 / 2.0);
    let first_step = snaps[0]
        .budget
        .as_ref()
        .unwrap()
        .change
        .expect("no step after the first interval");
    assert!(
        matches!(
            first_step,
            BudgetChange::TierDown {
                from: Tier::Exact,
                ..
            }
        ),
        "{first_step:?}"
    );
    let knobs = &snaps[0].budget.as_ref().unwrap().knobs;
    assert!(knobs.len() >= 4, "{knobs:?}");
    assert!(stderr.contains("over it, tier exact -> "), "{stderr}");
}

/// `--budget` with `--by` and no sampling: attribution is the knob. Under
/// the load netto goes over the budget and turns attribution off (its
/// delivery points detached, every event's time unattributed), and turns
/// it back on once the load has stopped; both in the output and on stderr.
#[test]
fn the_budget_turns_attribution_off_under_load_and_back_on_after() {
    let (snaps, stderr) = stat_under_budget(5603, 6.0, 14.0, BUDGET_PERCENT, &["--by", "process"]);
    let on = |s: &Snapshot| s.attribution.as_ref().expect("attribution").on;
    let change = |s: &Snapshot| s.budget.as_ref().expect("budget").change;
    for s in &snaps {
        eprintln!(
            "on {:5}  cost {:.3} % +-{:.3}  {:?}",
            on(s),
            s.overhead.cost_percent.unwrap_or(f64::NAN),
            s.overhead.error_percent,
            change(s)
        );
    }
    let off_at = snaps
        .iter()
        .position(|s| change(s) == Some(BudgetChange::AttributionOff))
        .expect("attribution never turned off under load");
    assert!(snaps[..=off_at].iter().all(on));
    // Off from the next interval, with every event's time unattributed.
    let off = &snaps[off_at + 1];
    let a = off.attribution.as_ref().unwrap();
    assert!(!a.on && a.groups.is_empty(), "{a:?}");
    for key in EventKey::ALL {
        assert_eq!(a.unattributed[&key], off.event(key).total_ns, "{key:?}");
    }
    let on_at = snaps[off_at..]
        .iter()
        .position(|s| change(s) == Some(BudgetChange::AttributionOn))
        .map(|i| off_at + i)
        .expect("attribution never back on after the load");
    let loaded = |s: &Snapshot| s.event(EventKey::SockSend).count > 1000;
    assert!(
        !snaps[on_at..].iter().any(loaded),
        "back on while the load ran"
    );
    assert!(snaps[off_at + 1..=on_at].iter().all(|s| !on(s)));
    assert!(snaps[on_at + 1..].iter().all(on));
    assert!(stderr.contains(&format!(
        "netto: budget {BUDGET_PERCENT} %: over it, attribution off"
    )));
    assert!(stderr.contains("attribution on again"), "{stderr}");
}

/// `netto stat --json` under [`BUDGET_PERCENT`] in 0.5 s intervals with
/// `args`, for `run_s` while [`steady_load`] runs for `load_s` on `port`:
/// its snapshots and its stderr.
fn stat_under_budget(
    port: u16,
    load_s: f64,
    run_s: f64,
    budget: f64,
    args: &[&str],
) -> (Vec<Snapshot>, String) {
    let (sink, sender) = steady_load(port, load_s);
    let budget = budget.to_string();
    let run = run_s.to_string();
    let mut all = vec![
        "stat",
        "--json",
        "--budget",
        &budget,
        "--interval",
        "0.5",
        "--duration",
        &run,
    ];
    all.extend_from_slice(args);
    let out = netto(&all);
    sender.join().unwrap();
    drop(sink);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let snaps = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a snapshot per line"))
        .collect();
    (snaps, stderr)
}

/// `--budget` with `--calibrate-every` in the `sampled` tier: every 2 s
/// one interval is exact and marked as a calibration interval, over the
/// budget under load by design; the budget does not judge it (no change,
/// not "exceeded"), and the run is back in `sampled` after it. The budget
/// leaves room for a calibration interval now and then on average (they
/// wait for it), not for one interval.
#[test]
fn the_budget_does_not_judge_a_calibration_interval() {
    let (snaps, stderr) = stat_under_budget(
        5605,
        6.0,
        6.0,
        CALIBRATED_BUDGET_PERCENT,
        &["--tier", "sampled", "--calibrate-every", "2"],
    );
    for s in &snaps {
        eprintln!(
            "{:8} {:?} cost {:.3} %  {:?}",
            s.tier.name(),
            s.calibrating,
            s.overhead.cost_percent.unwrap(),
            s.budget.as_ref().unwrap().change
        );
    }
    assert!(
        stderr.contains("calibrating: in a tier that estimates"),
        "{stderr}"
    );
    let calibrations: Vec<&Snapshot> = snaps.iter().filter(|s| s.calibrating.is_some()).collect();
    assert!(
        calibrations.len() >= 2,
        "{} calibration intervals",
        calibrations.len()
    );
    assert!(
        calibrations.iter().any(|s| s.budget.as_ref().unwrap().over),
        "no calibration interval was over the budget: nothing tested"
    );
    for s in &snaps {
        let budget = s.budget.as_ref().unwrap();
        if s.calibrating.is_some() {
            assert_eq!((s.tier, s.calibrating), (Tier::Exact, Some(Tier::Sampled)));
            // Judged, a calibration interval under load (the exact tier's
            // cost, 17-19 % here in a debug build) would count as over,
            // and at the floor two intervals over say "exceeded".
            assert_eq!(budget.change, None);
            assert!(!s.budget_exceeded());
        } else {
            assert_eq!(s.tier, Tier::Sampled);
        }
    }
}

/// `--budget` paces calibration intervals: asked for one every second, a
/// run in `sampled` under a budget that its average has no room in for an
/// interval at the exact tier's cost gets only the first (before the
/// exact hooks have a price), not one every other interval.
#[test]
fn a_calibration_waits_for_room_in_the_budget() {
    let (snaps, _) = stat_under_budget(
        5607,
        6.0,
        6.0,
        PACED_BUDGET_PERCENT,
        &["--tier", "sampled", "--calibrate-every", "1"],
    );
    let calibrating: Vec<bool> = snaps.iter().map(|s| s.calibrating.is_some()).collect();
    eprintln!("{calibrating:?}");
    assert!(snaps.len() >= 8, "{} intervals", snaps.len());
    assert_eq!(
        calibrating.iter().filter(|&&c| c).count(),
        1,
        "calibration intervals: {calibrating:?}"
    );
    let first = calibrating.iter().position(|&c| c).unwrap();
    assert!(first <= 3, "the first comes early: {calibrating:?}");
}

/// `--budget` with `--xdp-sketch` and no sampling: the sketch's probability
/// is the knob (attribution not asked for). The load's datagrams cross
/// loopback, where the sketch runs: netto goes over the budget, steps the
/// probability down to its floor and says the budget is exceeded (the
/// accounting alone is over it), then steps it back up once the load has
/// stopped. Every interval's sketch samples at the probability the last
/// change left, and its packet total stays exact throughout.
#[test]
fn the_budget_steps_the_sketch_probability_down_under_load_and_back_up_after() {
    let asked = 1.0;
    let (snaps, stderr) = stat_under_budget(
        5606,
        14.0,
        24.0,
        BUDGET_PERCENT,
        &[
            "--xdp-sketch",
            "lo",
            "--xdp-sketch-probability",
            &asked.to_string(),
        ],
    );
    let sketch = |s: &Snapshot| s.sketch.clone().expect("a sketch in every snapshot");
    let change = |s: &Snapshot| s.budget.as_ref().expect("budget").change;
    for s in &snaps {
        let k = sketch(s);
        eprintln!(
            "p {:<8} {:>8} packets {:>8} sent {:>6.1} ns/packet  cost {:.3} %  {:?}",
            k.probability,
            k.packets,
            s.event(EventKey::SockSend).count,
            k.cost.ns_per_packet,
            s.overhead.cost_percent.unwrap_or(f64::NAN),
            change(s)
        );
    }
    let near = |a: f64, b: f64| (a - b).abs() <= b * 1e-3;
    assert!(near(sketch(&snaps[0]).probability, asked));
    for (i, pair) in snaps.windows(2).enumerate() {
        let budget = pair[0].budget.as_ref().unwrap();
        assert_eq!(budget.asked_sketch_probability, Some(asked));
        let expected = match budget.change {
            Some(BudgetChange::SketchDown { to, .. } | BudgetChange::SketchUp { to, .. }) => to,
            _ => sketch(&pair[0]).probability,
        };
        let p = sketch(&pair[1]).probability;
        assert!(
            near(p, expected),
            "interval {}: p {p}, {expected} expected",
            i + 1
        );
    }
    let down = snaps
        .iter()
        .position(|s| matches!(change(s), Some(BudgetChange::SketchDown { .. })))
        .expect("the sketch's probability never stepped down under load");
    let loaded = |s: &Snapshot| s.event(EventKey::SockSend).count > 1000;
    assert!(loaded(&snaps[down]), "stepped down without load");
    let floor = snaps
        .iter()
        .map(|s| sketch(s).probability)
        .fold(f64::INFINITY, f64::min);
    assert!(near(floor, SKETCH_FLOOR), "lowest p {floor}");
    assert!(
        snaps
            .iter()
            .any(|s| change(s) == Some(BudgetChange::Exceeded)),
        "the accounting alone is over the budget: exceeded at the floor"
    );
    let last_loaded = snaps.iter().rposition(loaded).unwrap();
    assert!(
        snaps[last_loaded..]
            .iter()
            .any(|s| matches!(change(s), Some(BudgetChange::SketchUp { .. }))),
        "the probability never stepped back up after the load"
    );
    // The totals are counted, not sampled: every datagram sent while netto
    // ran crossed lo (the two are read a little apart at each interval's
    // end, and lo carries a few packets more).
    let packets: u64 = snaps.iter().map(|s| sketch(s).packets).sum();
    let sent: u64 = snaps
        .iter()
        .map(|s| s.event(EventKey::SockSend).count)
        .sum();
    assert!(
        (packets as f64 / sent as f64 - 1.0).abs() < 0.01,
        "{packets} packets for {sent} datagrams"
    );
    assert!(
        stderr.contains(&format!(
            "netto: budget {BUDGET_PERCENT} %: over it, XDP sketch probability"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("room under it, XDP sketch probability"),
        "{stderr}"
    );
}

/// A budget the loaded host keeps netto over at every frequency (the
/// accounting alone costs more), and that netto is well under once the
/// load stops, at the frequencies the budget steps down to.
const BUDGET_PERCENT: f64 = 2.0;

/// A budget the loaded host keeps the exact tier over, and that the idle
/// host's `sampled` leaves room under for a step back up (its cost plus
/// twice its error under [`netto::source::budget::ROOM`] of it): in a debug
/// build `sampled` at 99 Hz costs more idle than that share of
/// [`BUDGET_PERCENT`].
const TIER_BUDGET_PERCENT: f64 = 3.0;

/// A budget the sampled tier is under in a debug build under the steady
/// load, but with so little room in each 0.5 s interval that paying for an
/// exact interval takes more than the run's 12 of them.
const PACED_BUDGET_PERCENT: f64 = 3.0;

/// A budget the sampled tier has room under, on average, for a calibration
/// interval every 2 s at 0.5 s intervals, while one such interval (the
/// exact tier's cost under the load) is over it.
const CALIBRATED_BUDGET_PERCENT: f64 = 8.0;

/// A budget the loaded host keeps the sampled tier over at 10 kHz, where
/// every sample in network context takes a stack, and that an idle host
/// leaves room under at every frequency (an idle sample takes none).
const SAMPLING_BUDGET_PERCENT: f64 = 3.0;
