//! The interval loop's producer: reads the kernel's cumulative counters and
//! turns each interval into a [`Snapshot`]. It never formats anything.

pub mod process;
pub mod snapshot;

use std::time::{Instant, SystemTime};

use crate::kernel::accounting::Accounting;
use crate::kernel::KernelError;
use crate::model::Snapshot;
use snapshot::{Context, Reading};

pub struct Collector<'a, 'obj> {
    accounting: &'a Accounting<'obj>,
    context: Context,
    previous: Reading,
}

impl<'a, 'obj> Collector<'a, 'obj> {
    /// Starts the first interval now. `bpf_stats` says whether run-time
    /// statistics are on, which decides whether program costs are reported.
    pub fn start(accounting: &'a Accounting<'obj>, bpf_stats: bool) -> Result<Self, KernelError> {
        let context = Context {
            backend: accounting.backend().name().to_owned(),
            callback_names: accounting.callback_names().to_vec(),
            bpf_stats,
        };
        let previous = read(accounting)?;
        Ok(Collector {
            accounting,
            context,
            previous,
        })
    }

    /// Ends the current interval now and returns it.
    pub fn collect(&mut self) -> Result<Snapshot, KernelError> {
        let current = read(self.accounting)?;
        let snapshot = snapshot::build(&self.previous, &current, &self.context);
        self.previous = current;
        Ok(snapshot)
    }
}

fn read(accounting: &Accounting<'_>) -> Result<Reading, KernelError> {
    let cpus = accounting.read_cpus()?;
    Ok(Reading {
        at: Instant::now(),
        wall: SystemTime::now(),
        cpus,
        // Read whether or not statistics are on: recursion misses are
        // counted always.
        programs: accounting.program_stats(),
        process_cpu_ns: u64::try_from(process::cpu_time().as_nanos()).unwrap_or(u64::MAX),
    })
}
