//! The interval loop's producer: reads the kernel's cumulative counters and
//! turns each interval into a [`Snapshot`]. It never formats anything.

pub mod attribution;
pub mod calibrate;
pub mod clock;
pub mod cost;
pub mod cpu_time;
pub mod estimate;
pub mod groups;
pub mod network_programs;
pub mod snapshot;

use std::time::{Duration, Instant};

use crate::kernel::accounting::Accounting;
use crate::kernel::attribution::Key;
use crate::kernel::dispatch::Dispatch;
use crate::kernel::KernelError;
use crate::model::Snapshot;
use attribution::Ledger;
use cost::{CostHistory, HookRuns};
use cpu_time::OwnProcesses;
use groups::resolve::Resolver;
use snapshot::{Context, Reading};

pub struct Collector<'a, 'obj> {
    accounting: &'a Accounting<'obj>,
    context: Context,
    previous: Reading,
    history: CostHistory,
    processes: OwnProcesses,
    attribution: Option<Attributing>,
    /// Start-up CPU time not yet reported: the first snapshot's.
    startup_cpu_ns: u64,
}

/// Attribution's state between intervals.
struct Attributing {
    ledger: Ledger,
    names: Resolver,
    /// Whether the kernel side runs (see [`Collector::attribution_on`]).
    on: bool,
}

/// What netto's own cost needs from outside the accounting programs.
#[derive(Debug, Default)]
pub struct Beside {
    /// Other programs' runs over the interval: the stack sampler's
    /// statistics (its runs are counted in the accounting's per-CPU
    /// records, hook `sample`), the XDP sketch's runs (one per packet) and
    /// statistics. Added to the hook of the same name.
    pub hooks: Vec<HookRuns>,
    /// How long BPF run-time statistics were on during the interval.
    pub stats_held: Duration,
}

impl<'a, 'obj> Collector<'a, 'obj> {
    /// Starts the first interval now. `bpf_stats` says whether run-time
    /// statistics are on for a part of every interval, which decides
    /// whether program costs are reported.
    pub fn start(accounting: &'a Accounting<'obj>, bpf_stats: bool) -> Result<Self, KernelError> {
        let context = Context {
            backend: accounting.backend().name().to_owned(),
            callback_names: accounting.callback_names().to_vec(),
            bpf_stats,
            dispatch: None,
        };
        let mut processes = OwnProcesses::default();
        let previous = read(accounting, &mut processes)?;
        Ok(Collector {
            accounting,
            context,
            previous,
            history: CostHistory::default(),
            processes,
            attribution: None,
            startup_cpu_ns: 0,
        })
    }

    /// Counts the CPU time this process spent before now (start-up: loading
    /// and verifying programs, reading kernel symbols) in the first
    /// interval, as `overhead.startup_cpu_ns`.
    pub fn count_startup(&mut self) {
        self.startup_cpu_ns = std::mem::take(&mut self.previous.process_cpu.measuring_ns);
    }

    /// Prices every run of netto's tracepoint programs at `dispatch` more
    /// than their statistics say (see [`crate::kernel::dispatch`]).
    pub fn price_dispatch(&mut self, dispatch: Dispatch) {
        self.context.dispatch = Some(dispatch);
    }

    /// Counts process `pid` as netto's own from now on (its CPU time so
    /// far falls into the current interval).
    pub fn own_process(&mut self, pid: u32) {
        self.processes.add(pid);
    }

    /// Ends the current interval now and returns it.
    pub fn collect(&mut self, beside: Beside) -> Result<Snapshot, KernelError> {
        // The group map before the totals: time reaches a group only after
        // its event was charged, so the groups never run ahead of the totals
        // (see collect::attribution).
        let groups = match self.attribution {
            Some(_) => Some(self.accounting.read_groups()?),
            None => None,
        };
        let mut current = read(self.accounting, &mut self.processes)?;
        current.ts =
            clock::interval_end((self.previous.at, self.previous.ts), current.at, current.ts);
        let bpf = self.context.bpf_stats.then(|| {
            let mut hooks = snapshot::hook_runs(&self.previous, &current);
            for other in beside.hooks {
                match hooks.iter_mut().find(|h| h.hook == other.hook) {
                    Some(hook) => {
                        hook.runs += other.runs;
                        hook.programs.extend(other.programs);
                    }
                    None => hooks.push(other),
                }
            }
            cost::estimate(&hooks, &mut self.history)
        });
        let mut snapshot = snapshot::build(
            &self.previous,
            &current,
            &self.context,
            bpf,
            beside.stats_held.as_secs_f64(),
        );
        // Tiers change only between intervals.
        snapshot.tier = self.accounting.tier();
        snapshot.overhead.startup_cpu_ns = std::mem::take(&mut self.startup_cpu_ns);
        self.previous = current;
        if let (Some(state), Some(groups)) = (self.attribution.as_mut(), groups) {
            snapshot.attribution = Some(state.ledger.interval(
                &groups,
                &snapshot.events,
                snapshot.interval_s,
                state.on,
                &mut state.names,
            ));
            let idle = state.ledger.idle_keys();
            let keys: Vec<_> = idle.iter().copied().map(Into::into).collect();
            let taken = self.accounting.forget_groups(&keys)?;
            state.ledger.forgotten(&idle, &taken);
        }
        Ok(snapshot)
    }

    /// Attributes every interval's time from now on, as `config` says.
    pub fn attribute(&mut self, config: attribution::Config) -> Result<(), KernelError> {
        let start = self.accounting.read_groups()?;
        let names = Resolver::new(&config.kubelet_logs);
        self.attribution = Some(Attributing {
            ledger: Ledger::new(config, &start),
            names,
            on: true,
        });
        Ok(())
    }

    /// Whether cgroups have names here (see [`Resolver::names_cgroups`]);
    /// `None` without attribution.
    pub fn names_cgroups(&self) -> Option<bool> {
        Some(self.attribution.as_ref()?.names.names_cgroups())
    }

    /// The kubelet's log directory, when it is there and cannot be read
    /// (see [`Resolver::kubelet_unreadable`]): (its path, why).
    pub fn kubelet_unreadable(&self) -> Option<(String, String)> {
        self.attribution.as_ref()?.names.kubelet_unreadable()
    }

    /// The group a stack sample's key was in over the interval just
    /// collected, by the name its attribution gives it; `None` without
    /// `--by` or for nobody known.
    pub fn group_name(&self, key: &Key) -> Option<String> {
        self.attribution.as_ref()?.ledger.name_of(key)
    }

    /// Whether the kernel side of attribution runs: snapshots say so.
    pub fn attribution_on(&mut self, on: bool) {
        if let Some(state) = self.attribution.as_mut() {
            state.on = on;
        }
    }
}

fn read(accounting: &Accounting<'_>, processes: &mut OwnProcesses) -> Result<Reading, KernelError> {
    let cpus = accounting.read_cpus()?;
    Ok(Reading {
        at: Instant::now(),
        ts: clock::unix_now(),
        cpus,
        // Read whether or not statistics are on: recursion misses are
        // counted always.
        programs: accounting.program_stats(),
        process_cpu: processes.cpu_ns(),
    })
}
