//! The events panel as numbers: either one row per event (the host's
//! totals) or one row per CPU (each event's share of that CPU). Columns are
//! data, so sorting and drawing work the same for both views.

use super::format;
use std::collections::BTreeMap;

use crate::frontends::label::printable;
use crate::frontends::rounding::{decimals_for, fixed};
use crate::model::{
    percent, Attribution, CpuTime, EventKey, Group, GroupBy, Snapshot, OTHER_GROUP,
};

/// How a column's numbers read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Percent,
    Rate,
    Nanoseconds,
}

/// A number in a cell: measured, estimated from samples (`~`, to its
/// error's precision), or not known at all (an estimate counts no runs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Exact(f64),
    /// One standard error in the same unit; 0 where none is known.
    Estimated {
        value: f64,
        error: f64,
    },
    Unknown,
}

impl Value {
    /// The figure to sort by: unknowns last.
    fn sort_key(self) -> f64 {
        match self {
            Value::Exact(value) | Value::Estimated { value, .. } => value,
            Value::Unknown => f64::NEG_INFINITY,
        }
    }
}

impl Unit {
    pub fn format(self, value: Value) -> String {
        match value {
            Value::Exact(value) => self.exact(value),
            Value::Unknown => "-".to_owned(),
            Value::Estimated { value, error } => {
                let text = match (self, decimals_for(error)) {
                    // No finer than an exact share would read.
                    (Unit::Percent, Some(decimals)) => {
                        let usual = if value != 0.0 && value.abs() < 1.0 {
                            2
                        } else {
                            1
                        };
                        format!("{}%", fixed(value, decimals.min(usual)))
                    }
                    _ => self.exact(value),
                };
                format!("~{text}")
            }
        }
    }

    fn exact(self, value: f64) -> String {
        match self {
            Unit::Percent => format::percent(value),
            Unit::Rate => format::quantity(value),
            Unit::Nanoseconds => format::duration_ns(value),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub title: &'static str,
    pub unit: Unit,
    /// Whether `o` sorts by it: not where another column always gives
    /// the same order.
    pub sortable: bool,
}

/// The totals view's columns after the event name. `% 1 CPU` is `% host`
/// times the CPU count, so sorting by it again would change nothing.
pub const TOTAL_COLUMNS: [Column; 4] = [
    Column {
        title: "% host",
        unit: Unit::Percent,
        sortable: true,
    },
    Column {
        title: "% 1 CPU",
        unit: Unit::Percent,
        sortable: false,
    },
    Column {
        title: "calls/s",
        unit: Unit::Rate,
        sortable: true,
    },
    Column {
        title: "per call",
        unit: Unit::Nanoseconds,
        sortable: true,
    },
];

/// The per-CPU view's column titles, one per event in [`EventKey::ALL`]
/// order: short, so five fit next to each other in 80 columns.
const PER_CPU_TITLES: [&str; EventKey::ALL.len()] = ["net_rx", "net_tx", "send", "recv", "timers"];

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub label: String,
    pub values: Vec<Value>,
}

/// What the events panel shows: a label column, then `columns`.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub label_title: &'static str,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

impl Grid {
    /// Number of ways to sort: by label (natural order) and by each
    /// sortable column.
    pub fn sort_keys(&self) -> usize {
        self.columns.iter().filter(|c| c.sortable).count() + 1
    }

    /// The column sort key `key` sorts by: none for 0 (the natural
    /// order), else the `key`-th sortable column.
    pub fn sort_column(&self, key: usize) -> Option<usize> {
        let nth = key.checked_sub(1)?;
        self.columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.sortable)
            .nth(nth)
            .map(|(i, _)| i)
    }
}

/// `ns` of `time` as a share of `span_ns`, marked as `time` is: an
/// estimate's error scaled alike.
fn share(time: &CpuTime, ns: u64, span_s: f64) -> Value {
    let value = percent(ns, span_s);
    if time.estimated {
        let error = time.error_ns.map_or(0.0, |e| percent(e, span_s));
        Value::Estimated { value, error }
    } else {
        Value::Exact(value)
    }
}

/// Every event's totals over the snapshot's interval.
pub fn totals(snapshot: &Snapshot) -> Grid {
    let interval = snapshot.interval_s;
    let host = interval * snapshot.cpus.max(1) as f64;
    let rows = EventKey::ALL
        .iter()
        .map(|&key| {
            let time = snapshot.event(key);
            // An estimate counts no runs: its rate and time per call are
            // not known, rather than zero.
            let (per_s, per_call) = if time.estimated {
                (Value::Unknown, Value::Unknown)
            } else {
                let per_s = if interval > 0.0 {
                    time.count as f64 / interval
                } else {
                    0.0
                };
                let per_call = if time.count > 0 {
                    time.total_ns as f64 / time.count as f64
                } else {
                    0.0
                };
                (Value::Exact(per_s), Value::Exact(per_call))
            };
            // An estimate is marked, as everywhere: `~` before its name.
            let mark = if time.estimated { "~" } else { "" };
            Row {
                label: format!("{mark}{}", key.name()),
                values: vec![
                    share(time, time.total_ns, host),
                    share(time, time.total_ns, interval),
                    per_s,
                    per_call,
                ],
            }
        })
        .collect();
    Grid {
        label_title: "event",
        columns: TOTAL_COLUMNS.to_vec(),
        rows,
    }
}

/// Each CPU's share of its own time taken by every event.
pub fn per_cpu(snapshot: &Snapshot) -> Grid {
    let interval = snapshot.interval_s;
    let rows = (0..snapshot.cpus)
        .map(|cpu| Row {
            label: format!("cpu{cpu}"),
            values: EventKey::ALL
                .iter()
                .map(|&key| {
                    // A CPU's part of an estimate is no more precise than
                    // the whole, whose error bounds it.
                    let time = snapshot.event(key);
                    let ns = time.per_cpu_ns.get(cpu).copied();
                    share(time, ns.unwrap_or(0), interval)
                })
                .collect(),
        })
        .collect();
    Grid {
        label_title: "cpu",
        columns: PER_CPU_TITLES
            .iter()
            .map(|&title| Column {
                title,
                unit: Unit::Percent,
                sortable: true,
            })
            .collect(),
        rows,
    }
}

/// The who-pays panel's columns after the group, most telling first (a
/// narrow panel shows the first ones that fit): the group's whole network
/// time, then each event, all as % of one CPU.
const GROUP_COLUMNS: [(&str, Option<EventKey>); 6] = [
    ("total", None),
    ("net_rx", Some(EventKey::NetRxSoftirq)),
    ("send", Some(EventKey::SockSend)),
    ("recv", Some(EventKey::SockRecv)),
    ("timers", Some(EventKey::NetTimers)),
    ("net_tx", Some(EventKey::NetTxSoftirq)),
];

/// The column after `total` under `--by flow|port`: what the group's
/// network time cost per KiB of its payload.
const PER_KIB: Column = Column {
    title: "ns/KiB",
    unit: Unit::Nanoseconds,
    sortable: true,
};

/// One row per group of an attribution, as % of one CPU (and under `--by
/// flow|port` its cost per KiB, second); `unattributed` is not a group and
/// stays out (the panel shows it below the sorted rows). The label column
/// is headed with what the groups are (`process`, `cgroup`, `flow`, ...).
pub fn groups(attribution: &Attribution, interval_s: f64) -> Grid {
    let traffic = attribution.by.keys_conns();
    let rows = attribution
        .groups
        .iter()
        .map(|group| {
            let per_kib = traffic.then(|| group.traffic.and_then(|t| t.ns_per_kib));
            group_row(
                group_label(attribution.by, group),
                &group.events,
                per_kib,
                interval_s,
            )
        })
        .collect();
    let mut columns: Vec<Column> = GROUP_COLUMNS
        .iter()
        .map(|&(title, _)| Column {
            title,
            unit: Unit::Percent,
            sortable: true,
        })
        .collect();
    if traffic {
        columns.insert(1, PER_KIB);
    }
    Grid {
        label_title: attribution.by.name(),
        columns,
        rows,
    }
}

/// A group's label as the panel shows it: a process's command with its
/// pid, since two processes may run the same command; a cgroup's or a
/// namespace's short name alone (their ids are long paths and inodes); a
/// flow or a port by its name, with its label (namespace, service) after.
fn group_label(by: GroupBy, group: &Group) -> String {
    let label = printable(&group.label);
    if by.keys_conns() {
        let name = printable(&group.name);
        return if group.label.is_empty() || group.label == group.name {
            name.into_owned()
        } else {
            format!("{name} ({label})")
        };
    }
    if by == GroupBy::Process && group.name != OTHER_GROUP && group.name != group.label {
        format!("{label} {}", printable(&group.name))
    } else {
        label.into_owned()
    }
}

/// A row of the who-pays panel: `events` as its columns, and after the
/// total the cost per KiB where the panel has that column (`per_kib` some:
/// unknown inside it for a row without bytes).
pub fn group_row(
    label: String,
    events: &BTreeMap<EventKey, u64>,
    per_kib: Option<Option<u64>>,
    interval_s: f64,
) -> Row {
    let mut values: Vec<Value> = GROUP_COLUMNS
        .iter()
        .map(|(_, event)| {
            let ns = match event {
                Some(key) => events.get(key).copied().unwrap_or(0),
                None => events.values().sum(),
            };
            Value::Exact(percent(ns, interval_s))
        })
        .collect();
    if let Some(per_kib) = per_kib {
        let value = per_kib.map_or(Value::Unknown, |ns| Value::Exact(ns as f64));
        values.insert(1, value);
    }
    Row { label, values }
}

/// Sorts rows by sort key `key`: 0 keeps the natural order (events as
/// listed, CPUs by number), `k` sorts by the `k`-th sortable column
/// ([`Grid::sort_column`]), largest first, unknowns last.
pub fn sort(grid: &mut Grid, key: usize) {
    if let Some(column) = grid.sort_column(key) {
        grid.rows.sort_by(|a, b| {
            b.values[column]
                .sort_key()
                .total_cmp(&a.values[column].sort_key())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> Snapshot {
        let mut s = Snapshot::empty("tracepoint", 2);
        s.interval_s = 2.0;
        let rx = s.events.get_mut(&EventKey::NetRxSoftirq).unwrap();
        rx.total_ns = 400_000_000;
        rx.per_cpu_ns = vec![100_000_000, 300_000_000];
        rx.count = 4000;
        let send = s.events.get_mut(&EventKey::SockSend).unwrap();
        send.total_ns = 600_000_000;
        send.per_cpu_ns = vec![600_000_000, 0];
        send.count = 10;
        s
    }

    #[test]
    fn totals_as_host_and_one_cpu_shares() {
        let grid = totals(&snapshot());
        assert_eq!(grid.rows.len(), EventKey::ALL.len());
        assert_eq!(grid.rows[0].label, "net_rx_softirq");
        // 0.4 s of 2 CPUs x 2 s; of one CPU's 2 s; 4000 runs in 2 s of 100 µs.
        assert_eq!(grid.rows[0].values, exact(&[10.0, 20.0, 2000.0, 100_000.0]));
        assert_eq!(grid.rows[4].values, exact(&[0.0, 0.0, 0.0, 0.0]));
    }

    fn exact(values: &[f64]) -> Vec<Value> {
        values.iter().map(|&v| Value::Exact(v)).collect()
    }

    #[test]
    fn estimates_are_marked_and_what_they_cannot_know_is_unknown() {
        let mut s = snapshot();
        let send = s.events.get_mut(&EventKey::SockSend).unwrap();
        send.estimated = true;
        send.error_ns = Some(152_600_000);
        send.count = 0;
        let grid = totals(&s);
        let row = &grid.rows[2];
        assert_eq!(row.label, "~sock_send");
        // 600 ms +- 152.6 ms of 2 s: 30 +- 7.63 % of one CPU.
        let texts: Vec<String> = row
            .values
            .iter()
            .zip(&grid.columns)
            .map(|(&v, c)| c.unit.format(v))
            .collect();
        assert_eq!(texts, ["~15%", "~30%", "-", "-"]);
        // Per CPU too, to the whole's precision.
        let grid = per_cpu(&s);
        let cpu0: Vec<String> = grid.rows[0]
            .values
            .iter()
            .map(|&v| Unit::Percent.format(v))
            .collect();
        assert_eq!(cpu0, ["5.0%", "0.0%", "~30%", "0.0%", "0.0%"]);
        // Sorting puts what is not known last.
        let mut grid = totals(&s);
        sort(&mut grid, 2);
        assert_eq!(grid.rows[0].label, "net_rx_softirq", "by calls/s");
        assert_eq!(grid.rows[4].label, "~sock_send");
    }

    #[test]
    fn a_column_that_sorts_as_another_is_no_sort_key() {
        let grid = totals(&snapshot());
        // Natural order, % host, calls/s, per call: not % 1 CPU again.
        assert_eq!(grid.sort_keys(), 4);
        let titles: Vec<&str> = (1..grid.sort_keys())
            .map(|key| grid.columns[grid.sort_column(key).unwrap()].title)
            .collect();
        assert_eq!(titles, ["% host", "calls/s", "per call"]);
        assert_eq!(grid.sort_column(0), None);
    }

    #[test]
    fn per_cpu_rows_and_sorting() {
        let mut grid = per_cpu(&snapshot());
        assert_eq!(grid.rows[1].label, "cpu1");
        assert_eq!(grid.rows[1].values, exact(&[15.0, 0.0, 0.0, 0.0, 0.0]));
        assert_eq!(grid.sort_keys(), 6);
        sort(&mut grid, 3);
        assert_eq!(grid.rows[0].label, "cpu0", "send: cpu0 first");
        sort(&mut grid, 1);
        assert_eq!(grid.rows[0].label, "cpu1", "net_rx: cpu1 first");
    }

    #[test]
    fn groups_as_shares_of_one_cpu() {
        let events = |rx: u64, send: u64| {
            let mut e = Attribution::zero_events();
            e.insert(EventKey::NetRxSoftirq, rx);
            e.insert(EventKey::SockSend, send);
            e
        };
        let group = |label: &str, rx, send| crate::model::Group {
            name: label.to_owned(),
            label: label.to_owned(),
            events: events(rx, send),
            traffic: None,
        };
        let a = Attribution {
            by: crate::model::GroupBy::Process,
            on: true,
            groups: vec![
                group("a", 100_000_000, 0),
                group("b", 20_000_000, 300_000_000),
            ],
            unattributed: events(1, 1),
            unattributed_why: BTreeMap::new(),
        };
        let mut grid = groups(&a, 2.0);
        assert_eq!(grid.label_title, "process", "headed with what a group is");
        assert_eq!(grid.rows.len(), 2, "unattributed is not a group");
        // 100 ms of 2 s; total, net_rx, send, recv, timers, net_tx.
        assert_eq!(grid.rows[0].values, exact(&[5.0, 5.0, 0.0, 0.0, 0.0, 0.0]));
        assert_eq!(grid.rows[1].values[..3], exact(&[16.0, 1.0, 15.0]));
        sort(&mut grid, 1);
        assert_eq!(grid.rows[0].label, "b", "by total");
        sort(&mut grid, 2);
        assert_eq!(grid.rows[0].label, "a", "by net_rx");
    }

    #[test]
    fn a_process_reads_with_its_pid_and_a_cgroup_without_its_path() {
        let group = |name: &str, label: &str| Group {
            name: name.to_owned(),
            label: label.to_owned(),
            events: Attribution::zero_events(),
            traffic: None,
        };
        let mut a = Attribution {
            by: GroupBy::Process,
            on: true,
            groups: vec![group("4242", "iperf3"), group(OTHER_GROUP, OTHER_GROUP)],
            unattributed: Attribution::zero_events(),
            unattributed_why: BTreeMap::new(),
        };
        let labels = |a: &Attribution| -> Vec<String> {
            groups(a, 1.0).rows.into_iter().map(|r| r.label).collect()
        };
        assert_eq!(labels(&a), ["iperf3 4242", "other"]);
        a.by = GroupBy::Cgroup;
        a.groups = vec![group("/system.slice/web.service", "web.service")];
        assert_eq!(labels(&a), ["web.service"]);
        assert_eq!(groups(&a, 1.0).label_title, "cgroup");
    }

    #[test]
    fn flows_sort_by_their_cost_per_kib() {
        let flow = |name: &str, ns: u64, bytes: u64| {
            let mut events = Attribution::zero_events();
            events.insert(EventKey::NetRxSoftirq, ns);
            crate::model::Group {
                name: name.to_owned(),
                label: String::new(),
                events,
                traffic: Some(crate::model::Traffic::new(ns, bytes, 0)),
            }
        };
        let a = Attribution {
            by: crate::model::GroupBy::Flow,
            on: true,
            groups: vec![
                flow("bulk", 300_000_000, 3 << 30),
                flow("chatty", 100_000_000, 1 << 20),
            ],
            unattributed: Attribution::zero_events(),
            unattributed_why: BTreeMap::new(),
        };
        let mut grid = groups(&a, 1.0);
        assert_eq!(grid.columns[1].title, "ns/KiB");
        assert_eq!(grid.rows[1].values[1], Value::Exact(97_656.0));
        sort(&mut grid, 1);
        assert_eq!(grid.rows[0].label, "bulk", "by total");
        sort(&mut grid, 2);
        assert_eq!(grid.rows[0].label, "chatty", "by ns/KiB");
    }

    #[test]
    fn sorting_totals_by_share() {
        let mut grid = totals(&snapshot());
        sort(&mut grid, 1);
        let labels: Vec<&str> = grid.rows.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels[..2], ["sock_send", "net_rx_softirq"]);
        sort(&mut grid, 0);
        assert_eq!(
            grid.rows[0].label, "sock_send",
            "key 0 leaves the order as it is"
        );
    }
}
