//! The interval's [`Attribution`] from two readings of the group map: BPF
//! keeps each (cgroup, process, network namespace) key's cumulative time
//! per event; this takes the interval's part, groups it by one `--by`
//! field, keeps the heaviest groups, folds the rest into `other`, and
//! leaves in `unattributed` whatever of each event's total no group
//! claimed. Pure (naming goes through [`Namer`]), so it is tested without
//! BPF.
//!
//! Groups and `unattributed` add up to each event's total by construction:
//! `unattributed` is the remainder. It is never negative either: the group
//! map is read just before the per-CPU totals, and time is given to a
//! group only after it was charged to its event, so over the run the
//! groups never exceed the totals; within one interval they can, by a
//! socket window that was open at the previous reading and settled since
//! (its time counted in the previous interval's total, given to its group
//! in this one). Such an excess is shown in the next interval instead
//! (`carry`), so no interval gives groups more than its events had.

use std::collections::{BTreeMap, HashMap};

use super::snapshot::EVENT_IDS;
use crate::abi::{netto_group_key, netto_group_time, NETTO_MAX_GROUPS};
use crate::kernel::attribution::Key;
use crate::model::{Attribution, CpuTime, EventKey, Group, GroupBy, OTHER_GROUP};

const EVENTS: usize = EVENT_IDS.len();

/// A group under one `--by`, as the kernel identifies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GroupId {
    /// A cgroup v2 id (the inode of its directory).
    Cgroup(u64),
    Process(u32),
    /// A network namespace's inode number.
    Netns(u32),
}

impl GroupId {
    /// The group `key` belongs to under `by`; none when the kernel did not
    /// know that field (a socket no process was seen using, the cgroup of
    /// forwarded traffic): that time is unattributed under `by`.
    pub fn of(key: &Key, by: GroupBy) -> Option<GroupId> {
        let id = match by {
            GroupBy::Cgroup => GroupId::Cgroup(key.cgroup),
            GroupBy::Process => GroupId::Process(key.tgid),
            GroupBy::Netns => GroupId::Netns(key.netns),
        };
        let known = match id {
            GroupId::Cgroup(id) => id != 0,
            GroupId::Process(id) | GroupId::Netns(id) => id != 0,
        };
        known.then_some(id)
    }
}

/// Gives groups their `name` and `label` (reads /proc and the cgroup
/// tree; a fake in tests).
pub trait Namer {
    /// (name, label) of each id, in order.
    fn names(&mut self, ids: &[GroupId]) -> Vec<(String, String)>;
}

/// How a run attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub by: GroupBy,
    /// Groups shown; the rest are folded into `other`.
    pub max_groups: usize,
    /// The kubelet's log root (`--kubelet-logs`), whose entries name the
    /// pods and containers of cgroups.
    pub kubelet_logs: std::path::PathBuf,
}

/// Default `--max-groups`: a screenful, and few enough label values for
/// Prometheus.
pub const DEFAULT_MAX_GROUPS: usize = 20;

/// How fast a group's weight (which decides whether it is among the
/// heaviest) forgets: halved every this many seconds of measured time. Long
/// enough that the groups shown do not change with every interval (each
/// change is a new Prometheus series), short enough that a group that
/// became busy shows within seconds.
const WEIGHT_HALF_LIFE_S: f64 = 10.0;

/// Below this weight (ns) a group is dropped from the ranking.
const MIN_WEIGHT: f64 = 1.0;

/// A key whose time has not grown for this long is removed from the
/// kernel's map when it is over half full.
const IDLE_S: f64 = 60.0;

/// What one key had at the previous reading.
#[derive(Debug, Clone, Copy)]
struct Seen {
    ns: [u64; EVENTS],
    /// Measured time (the ledger's clock) when it last grew.
    grew_at: f64,
}

/// The attribution state carried from one interval to the next.
#[derive(Debug)]
pub struct Ledger {
    config: Config,
    previous: HashMap<Key, Seen>,
    /// Time groups earned but were not shown yet (see the module doc).
    carry: HashMap<GroupId, [u64; EVENTS]>,
    weights: HashMap<GroupId, f64>,
    /// Measured seconds since the start.
    clock_s: f64,
    /// The groups of the last interval by name, and whether it had an
    /// `other`: what the interval's stack samples are named by.
    named: HashMap<GroupId, String>,
    other: bool,
}

impl Ledger {
    /// Starts from the kernel's map as it is now: only time from here on
    /// counts.
    pub fn new(config: Config, start: &[(netto_group_key, netto_group_time)]) -> Ledger {
        let mut ledger = Ledger {
            config,
            previous: HashMap::new(),
            carry: HashMap::new(),
            weights: HashMap::new(),
            clock_s: 0.0,
            named: HashMap::new(),
            other: false,
        };
        ledger.deltas(start);
        ledger
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The interval's attribution: `reading` is the group map read just
    /// before the per-CPU totals that gave `events`; `on` whether
    /// attribution ran.
    pub fn interval(
        &mut self,
        reading: &[(netto_group_key, netto_group_time)],
        events: &BTreeMap<EventKey, CpuTime>,
        interval_s: f64,
        on: bool,
        namer: &mut impl Namer,
    ) -> Attribution {
        self.clock_s += interval_s.max(0.0);
        let deltas = self.deltas(reading);
        let mut totals = [0; EVENTS];
        for (key, id) in EVENT_IDS {
            totals[id as usize] = events.get(&key).map_or(0, |t| t.total_ns);
        }
        if !on {
            self.carry.clear();
            self.named.clear();
            self.other = false;
            return Attribution {
                by: self.config.by,
                on,
                groups: Vec::new(),
                unattributed: by_event(totals),
            };
        }

        let mut earned = std::mem::take(&mut self.carry);
        for (key, ns) in deltas {
            if let Some(id) = GroupId::of(&key, self.config.by) {
                let into = earned.entry(id).or_insert([0; EVENTS]);
                for (total, ns) in into.iter_mut().zip(ns) {
                    *total += ns;
                }
            }
        }
        let (shown, unattributed) = self.within(earned, totals);
        self.weigh(&shown, interval_s);
        let groups = self.fold(&shown, namer);
        Attribution {
            by: self.config.by,
            on,
            groups,
            unattributed: by_event(unattributed),
        }
    }

    /// The name of the group `key` was in over the last interval, as its
    /// attribution says it: a group shown, else [`OTHER_GROUP`] when the
    /// interval had one; `None` for a key no group of the interval holds
    /// (its field unknown under `--by`, or attribution off), like time no
    /// group claimed.
    pub fn name_of(&self, key: &Key) -> Option<String> {
        let id = GroupId::of(key, self.config.by)?;
        match self.named.get(&id) {
            Some(name) => Some(name.clone()),
            None => self.other.then(|| OTHER_GROUP.to_owned()),
        }
    }

    /// Keys the kernel's map can do without: when it is over half full,
    /// those whose time has not grown for `IDLE_S`. The caller removes
    /// them from the map; a key that comes back starts from zero, which
    /// `Ledger::deltas` takes as all new.
    pub fn idle_keys(&self) -> Vec<Key> {
        if self.previous.len() <= NETTO_MAX_GROUPS as usize / 2 {
            return Vec::new();
        }
        self.previous
            .iter()
            .filter(|(_, seen)| self.clock_s - seen.grew_at >= IDLE_S)
            .map(|(key, _)| *key)
            .collect()
    }

    /// Each key's time since the previous reading; remembers this one.
    fn deltas(
        &mut self,
        reading: &[(netto_group_key, netto_group_time)],
    ) -> Vec<(Key, [u64; EVENTS])> {
        let mut next = HashMap::with_capacity(reading.len());
        let mut deltas = Vec::with_capacity(reading.len());
        for (key, time) in reading {
            let key = Key::from(key);
            let before = self.previous.get(&key);
            let mut delta = [0; EVENTS];
            for (i, d) in delta.iter_mut().enumerate() {
                let was = before.map_or(0, |seen| seen.ns[i]);
                // Smaller than before: removed and created again since.
                *d = if time.ns[i] >= was {
                    time.ns[i] - was
                } else {
                    time.ns[i]
                };
            }
            let grew = delta.iter().any(|&d| d > 0);
            let grew_at = match before {
                Some(seen) if !grew => seen.grew_at,
                _ => self.clock_s,
            };
            next.insert(
                key,
                Seen {
                    ns: time.ns,
                    grew_at,
                },
            );
            if grew {
                deltas.push((key, delta));
            }
        }
        self.previous = next;
        deltas
    }

    /// What each group is shown with, within each event's total, and the
    /// remainder; what did not fit is carried.
    fn within(
        &mut self,
        earned: HashMap<GroupId, [u64; EVENTS]>,
        totals: [u64; EVENTS],
    ) -> (BTreeMap<GroupId, [u64; EVENTS]>, [u64; EVENTS]) {
        let mut shown: BTreeMap<GroupId, [u64; EVENTS]> = earned.into_iter().collect();
        let mut unattributed = [0; EVENTS];
        for event in 0..EVENTS {
            let claimed: u64 = shown.values().map(|ns| ns[event]).sum();
            if claimed <= totals[event] {
                unattributed[event] = totals[event] - claimed;
                continue;
            }
            let parts: Vec<u64> = shown.values().map(|ns| ns[event]).collect();
            for ((id, ns), part) in shown.iter_mut().zip(share_out(&parts, totals[event])) {
                let over = ns[event] - part;
                if over > 0 {
                    self.carry.entry(*id).or_insert([0; EVENTS])[event] = over;
                }
                ns[event] = part;
            }
        }
        shown.retain(|_, ns| ns.iter().any(|&n| n > 0));
        (shown, unattributed)
    }

    fn weigh(&mut self, shown: &BTreeMap<GroupId, [u64; EVENTS]>, interval_s: f64) {
        let decay = 0.5f64.powf(interval_s.max(0.0) / WEIGHT_HALF_LIFE_S);
        for weight in self.weights.values_mut() {
            *weight *= decay;
        }
        for (id, ns) in shown {
            *self.weights.entry(*id).or_default() += ns.iter().sum::<u64>() as f64;
        }
        self.weights.retain(|_, w| *w >= MIN_WEIGHT);
    }

    /// The heaviest groups by weight (even without time this interval, so
    /// the groups shown stay put), then `other` for the time of the rest.
    fn fold(
        &mut self,
        shown: &BTreeMap<GroupId, [u64; EVENTS]>,
        namer: &mut impl Namer,
    ) -> Vec<Group> {
        let mut ranked: Vec<(GroupId, f64)> =
            self.weights.iter().map(|(id, w)| (*id, *w)).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(self.config.max_groups);
        let kept: Vec<GroupId> = ranked.into_iter().map(|(id, _)| id).collect();
        let names = namer.names(&kept);
        self.named = kept
            .iter()
            .zip(&names)
            .map(|(id, (name, _))| (*id, name.clone()))
            .collect();
        let mut groups: Vec<Group> = kept
            .iter()
            .zip(names)
            .map(|(id, (name, label))| Group {
                name,
                label,
                events: by_event(shown.get(id).copied().unwrap_or([0; EVENTS])),
            })
            .collect();
        let mut other = [0; EVENTS];
        let mut folded = 0;
        for (_, ns) in shown.iter().filter(|(id, _)| !kept.contains(id)) {
            folded += 1;
            for (total, n) in other.iter_mut().zip(ns) {
                *total += n;
            }
        }
        self.other = folded > 0;
        if folded > 0 {
            groups.push(Group {
                name: OTHER_GROUP.to_owned(),
                label: format!("{folded} more"),
                events: by_event(other),
            });
        }
        groups
    }
}

/// Splits `total` among `parts` in proportion to them, the largest
/// remainders rounding up, so the shares add up to `total` exactly.
fn share_out(parts: &[u64], total: u64) -> Vec<u64> {
    let sum: u128 = parts.iter().map(|&p| u128::from(p)).sum();
    if sum == 0 {
        return vec![0; parts.len()];
    }
    let exact: Vec<(u64, u128)> = parts
        .iter()
        .map(|&p| {
            let scaled = u128::from(p) * u128::from(total);
            ((scaled / sum) as u64, scaled % sum)
        })
        .collect();
    let mut shares: Vec<u64> = exact.iter().map(|(q, _)| *q).collect();
    let mut left = total - shares.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|&a, &b| exact[b].1.cmp(&exact[a].1).then(a.cmp(&b)));
    for i in order {
        if left == 0 {
            break;
        }
        shares[i] += 1;
        left -= 1;
    }
    shares
}

fn by_event(ns: [u64; EVENTS]) -> BTreeMap<EventKey, u64> {
    EVENT_IDS
        .iter()
        .map(|&(key, id)| (key, ns[id as usize]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::netto_event;
    use proptest::prelude::*;

    /// Names every group by its id.
    struct ById;

    impl Namer for ById {
        fn names(&mut self, ids: &[GroupId]) -> Vec<(String, String)> {
            ids.iter()
                .map(|id| (format!("{id:?}"), "label".to_owned()))
                .collect()
        }
    }

    const RX: usize = netto_event::NETTO_EV_NET_RX_SOFTIRQ as usize;
    const SEND: usize = netto_event::NETTO_EV_SOCK_SEND as usize;

    fn key(cgroup: u64, tgid: u32, netns: u32) -> netto_group_key {
        netto_group_key {
            cgroup,
            tgid,
            netns,
        }
    }

    fn time(pairs: &[(usize, u64)]) -> netto_group_time {
        let mut t = netto_group_time::default();
        for &(event, ns) in pairs {
            t.ns[event] = ns;
        }
        t
    }

    fn events(pairs: &[(EventKey, u64)]) -> BTreeMap<EventKey, CpuTime> {
        EventKey::ALL
            .iter()
            .map(|&k| {
                let ns = pairs.iter().find(|(e, _)| *e == k).map_or(0, |p| p.1);
                (
                    k,
                    CpuTime {
                        total_ns: ns,
                        per_cpu_ns: vec![ns],
                        count: 0,
                        ..CpuTime::default()
                    },
                )
            })
            .collect()
    }

    fn ledger(by: GroupBy, max_groups: usize) -> Ledger {
        let kubelet_logs = crate::collect::groups::kubelet::DEFAULT_ROOT.into();
        Ledger::new(
            Config {
                by,
                max_groups,
                kubelet_logs,
            },
            &[],
        )
    }

    /// Every event's groups and unattributed add up to its total.
    fn assert_adds_up(a: &Attribution, totals: &BTreeMap<EventKey, CpuTime>) {
        for (key, t) in totals {
            let groups: u64 = a.groups.iter().map(|g| g.events[key]).sum();
            assert_eq!(groups + a.unattributed[key], t.total_ns, "{key:?} in {a:?}");
        }
    }

    #[test]
    fn groups_by_one_field_and_the_rest_is_unattributed() {
        let mut ledger = ledger(GroupBy::Cgroup, 20);
        let reading = [
            (key(10, 100, 1), time(&[(RX, 300), (SEND, 50)])),
            (key(10, 101, 1), time(&[(RX, 100)])),
            (key(20, 200, 2), time(&[(RX, 200)])),
            // Forwarded: no cgroup, so unattributed under --by cgroup.
            (key(0, 0, 3), time(&[(RX, 150)])),
        ];
        let totals = events(&[(EventKey::NetRxSoftirq, 1000), (EventKey::SockSend, 50)]);
        let a = ledger.interval(&reading, &totals, 1.0, true, &mut ById);
        assert_adds_up(&a, &totals);
        assert_eq!(a.by, GroupBy::Cgroup);
        let names: Vec<&str> = a.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["Cgroup(10)", "Cgroup(20)"], "heaviest first");
        assert_eq!(a.groups[0].events[&EventKey::NetRxSoftirq], 400);
        assert_eq!(a.groups[0].events[&EventKey::SockSend], 50);
        assert_eq!(a.unattributed[&EventKey::NetRxSoftirq], 1000 - 600);
        assert_eq!(a.unattributed[&EventKey::SockSend], 0);

        // The same map under --by netns: the forwarded part has an owner.
        let mut ledger = self::ledger(GroupBy::Netns, 20);
        let a = ledger.interval(&reading, &totals, 1.0, true, &mut ById);
        assert_adds_up(&a, &totals);
        assert_eq!(a.unattributed[&EventKey::NetRxSoftirq], 1000 - 750);
    }

    #[test]
    fn only_the_interval_counts() {
        let start = [(key(10, 1, 1), time(&[(RX, 5000)]))];
        let mut ledger = Ledger::new(
            Config {
                by: GroupBy::Process,
                max_groups: 20,
                kubelet_logs: crate::collect::groups::kubelet::DEFAULT_ROOT.into(),
            },
            &start,
        );
        let reading = [
            (key(10, 1, 1), time(&[(RX, 5300)])),
            // Removed (idle) and created again: all of it is new.
            (key(10, 2, 1), time(&[(RX, 40)])),
        ];
        let totals = events(&[(EventKey::NetRxSoftirq, 400)]);
        let a = ledger.interval(&reading, &totals, 1.0, true, &mut ById);
        let rx: Vec<u64> = a
            .groups
            .iter()
            .map(|g| g.events[&EventKey::NetRxSoftirq])
            .collect();
        assert_eq!(rx, [300, 40]);
        assert_eq!(a.unattributed[&EventKey::NetRxSoftirq], 60);
    }

    #[test]
    fn more_than_the_total_is_shown_in_the_next_interval() {
        let mut ledger = ledger(GroupBy::Process, 20);
        // A window open at the previous reading was settled since: its
        // group got 900 of which only 600 were charged in this interval.
        let first = [
            (key(1, 7, 1), time(&[(SEND, 600)])),
            (key(1, 8, 1), time(&[(SEND, 300)])),
        ];
        let totals = events(&[(EventKey::SockSend, 600)]);
        let a = ledger.interval(&first, &totals, 1.0, true, &mut ById);
        assert_adds_up(&a, &totals);
        assert_eq!(a.unattributed[&EventKey::SockSend], 0);
        let shown: Vec<u64> = a
            .groups
            .iter()
            .map(|g| g.events[&EventKey::SockSend])
            .collect();
        assert_eq!(shown, [400, 200], "in proportion");
        // Next interval: 500 more charged, 200 more given; the 300 carried
        // fit now.
        let second = [
            (key(1, 7, 1), time(&[(SEND, 800)])),
            (key(1, 8, 1), time(&[(SEND, 300)])),
        ];
        let totals = events(&[(EventKey::SockSend, 500)]);
        let a = ledger.interval(&second, &totals, 1.0, true, &mut ById);
        assert_adds_up(&a, &totals);
        let shown: Vec<u64> = a
            .groups
            .iter()
            .map(|g| g.events[&EventKey::SockSend])
            .collect();
        assert_eq!(shown, [400, 100]);
        assert_eq!(a.unattributed[&EventKey::SockSend], 0);
    }

    #[test]
    fn the_lightest_groups_are_folded_into_other() {
        let mut ledger = ledger(GroupBy::Process, 2);
        let reading = [
            (key(1, 1, 1), time(&[(RX, 100)])),
            (key(1, 2, 1), time(&[(RX, 300)])),
            (key(1, 3, 1), time(&[(RX, 200)])),
            (key(1, 4, 1), time(&[(RX, 50)])),
        ];
        let totals = events(&[(EventKey::NetRxSoftirq, 700)]);
        let a = ledger.interval(&reading, &totals, 1.0, true, &mut ById);
        assert_adds_up(&a, &totals);
        let names: Vec<&str> = a.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["Process(2)", "Process(3)", OTHER_GROUP]);
        assert_eq!(a.groups[2].events[&EventKey::NetRxSoftirq], 150);
        assert_eq!(a.groups[2].label, "2 more");
        // Samples are named as the interval's groups are.
        let name = |k| ledger.name_of(&Key::from(&k));
        assert_eq!(name(key(9, 2, 9)).as_deref(), Some("Process(2)"));
        assert_eq!(name(key(1, 4, 1)).as_deref(), Some(OTHER_GROUP));
        assert_eq!(name(key(1, 0, 1)), None, "no process known");
        // A quiet interval: the heaviest stay shown, at zero; nothing to fold.
        let a = ledger.interval(&reading, &events(&[]), 1.0, true, &mut ById);
        let names: Vec<&str> = a.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["Process(2)", "Process(3)"]);
        assert!(a.groups.iter().all(|g| g.total_ns() == 0));
        assert_eq!(ledger.name_of(&Key::from(&key(1, 4, 1))), None);
        // Off: nobody.
        ledger.interval(&reading, &events(&[]), 1.0, false, &mut ById);
        assert_eq!(ledger.name_of(&Key::from(&key(1, 2, 1))), None);
    }

    #[test]
    fn off_means_no_groups_and_all_unattributed() {
        let mut ledger = ledger(GroupBy::Cgroup, 20);
        let reading = [(key(1, 1, 1), time(&[(RX, 100)]))];
        let totals = events(&[(EventKey::NetRxSoftirq, 700)]);
        let a = ledger.interval(&reading, &totals, 1.0, false, &mut ById);
        assert!(!a.on && a.groups.is_empty());
        assert_eq!(a.unattributed[&EventKey::NetRxSoftirq], 700);
        assert_adds_up(&a, &totals);
    }

    #[test]
    fn idle_keys_only_when_the_map_fills() {
        let many: Vec<_> = (0..=NETTO_MAX_GROUPS / 2)
            .map(|i| (key(1, i + 1, 1), time(&[(RX, 1)])))
            .collect();
        let mut ledger = ledger(GroupBy::Process, 20);
        ledger.interval(&many[..10], &events(&[]), 1.0, true, &mut ById);
        ledger.interval(&many[..10], &events(&[]), IDLE_S, true, &mut ById);
        assert!(ledger.idle_keys().is_empty(), "the map is far from full");
        ledger.interval(&many, &events(&[]), 1.0, true, &mut ById);
        ledger.interval(&many, &events(&[]), IDLE_S, true, &mut ById);
        assert_eq!(ledger.idle_keys().len(), many.len());
    }

    #[test]
    fn shares_add_up_to_the_total() {
        assert_eq!(share_out(&[1, 1, 1], 2), [1, 1, 0]);
        assert_eq!(share_out(&[600, 300], 600), [400, 200]);
        assert_eq!(share_out(&[0, 0], 5), [0, 0]);
        assert_eq!(
            share_out(&[u64::MAX, u64::MAX], u64::MAX)
                .iter()
                .map(|&s| u128::from(s))
                .sum::<u128>(),
            u128::from(u64::MAX)
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Whatever the readings (groups growing by anything, the totals
        /// smaller or larger than what they claim), every interval adds up
        /// exactly, and groups never get more than they earned.
        #[test]
        fn every_interval_adds_up(
            steps in proptest::collection::vec(
                (proptest::collection::vec((0u64..4, 0u32..4, 0u64..2_000), 0..6), 0u64..5_000),
                1..8,
            ),
            max_groups in 1usize..4,
        ) {
            let mut ledger = ledger(GroupBy::Cgroup, max_groups);
            let mut cumulative: BTreeMap<(u64, u32), u64> = BTreeMap::new();
            let (mut earned, mut shown) = (0u64, 0u64);
            for (growth, total) in steps {
                for (cgroup, tgid, ns) in growth {
                    *cumulative.entry((cgroup, tgid)).or_default() += ns;
                    if cgroup != 0 {
                        earned += ns;
                    }
                }
                let reading: Vec<_> = cumulative
                    .iter()
                    .map(|(&(cgroup, tgid), &ns)| (key(cgroup, tgid, 1), time(&[(RX, ns)])))
                    .collect();
                let totals = events(&[(EventKey::NetRxSoftirq, total)]);
                let a = ledger.interval(&reading, &totals, 1.0, true, &mut ById);
                let groups: u64 = a.groups.iter().map(|g| g.events[&EventKey::NetRxSoftirq]).sum();
                prop_assert_eq!(groups + a.unattributed[&EventKey::NetRxSoftirq], total);
                prop_assert!(a.groups.len() <= max_groups + 1);
                shown += groups;
                prop_assert!(shown <= earned);
            }
        }
    }
}
