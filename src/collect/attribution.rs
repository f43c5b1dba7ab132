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
use crate::kernel::attribution::{Conn, Key, NoConn};
use crate::model::{
    Attribution, CpuTime, EventKey, Group, GroupBy, Traffic, Unattributed, OTHER_GROUP,
};

const EVENTS: usize = EVENT_IDS.len();
/// A key's numbers: its time per event, then its payload bytes in and out
/// (`--by flow|port`).
const SLOTS: usize = EVENTS + 2;
const BYTES_IN: usize = EVENTS;
const BYTES_OUT: usize = EVENTS + 1;

/// A group under one `--by`, as the kernel identifies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GroupId {
    /// A cgroup v2 id (the inode of its directory).
    Cgroup(u64),
    Process(u32),
    /// A network namespace's inode number.
    Netns(u32),
    Flow {
        netns: u32,
        conn: Conn,
    },
    Port(Service),
}

/// A connection's service: its well-known port and protocol, and whether
/// this host is the one serving it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Service {
    pub port: u16,
    pub proto: u8,
    pub inbound: bool,
}

/// Linux's default `net.ipv4.ip_local_port_range`: the ports a connect()
/// without bind() gets, so the other end's is the service's.
const EPHEMERAL: std::ops::RangeInclusive<u16> = 32768..=60999;

impl Service {
    /// The service of `conn`: the local port of an unconnected socket, of a
    /// listening one and of one accepted from it (inbound), the remote port
    /// of an outgoing one. Which end is the service's is told by the
    /// ephemeral range: the end outside it; where both or neither are, the
    /// lower port.
    pub fn of(conn: &Conn) -> Service {
        let local = conn.local.port();
        let remote = conn.remote.port();
        let inbound = remote == 0
            || match (EPHEMERAL.contains(&local), EPHEMERAL.contains(&remote)) {
                (false, true) => true,
                (true, false) => false,
                _ => local <= remote,
            };
        Service {
            port: if inbound { local } else { remote },
            proto: conn.proto,
            inbound,
        }
    }
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
            GroupBy::Flow => GroupId::Flow {
                netns: key.netns,
                conn: key.conn?,
            },
            GroupBy::Port => GroupId::Port(Service::of(&key.conn?)),
        };
        let known = match id {
            GroupId::Cgroup(id) => id != 0,
            GroupId::Process(id) | GroupId::Netns(id) => id != 0,
            GroupId::Flow { .. } | GroupId::Port(_) => true,
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

/// When the kernel's map is over half full, a key whose time has not
/// grown for this long is removed from it; so are as many more of the keys
/// that did not grow in the last interval, least recently grown first, as
/// bring it back to half. Short connections thus make room for the next
/// ones within an interval, and a quiet but open connection keeps its key
/// while the map has room.
const IDLE_S: f64 = 60.0;

/// A key's reading as the ledger keeps it: time per event, then bytes.
fn slots(time: &netto_group_time) -> [u64; SLOTS] {
    let mut now = [0; SLOTS];
    now[..EVENTS].copy_from_slice(&time.ns);
    now[BYTES_IN] = time.bytes[crate::abi::NETTO_BYTES_IN as usize];
    now[BYTES_OUT] = time.bytes[crate::abi::NETTO_BYTES_OUT as usize];
    now
}

/// What a key gained from `before` to `now`; all of `now` for a new key.
fn growth(before: Option<&Seen>, now: [u64; SLOTS]) -> [u64; SLOTS] {
    let mut delta = [0; SLOTS];
    for (i, d) in delta.iter_mut().enumerate() {
        let was = before.map_or(0, |seen| seen.ns[i]);
        // Smaller than before: removed and created again since.
        *d = if now[i] >= was { now[i] - was } else { now[i] };
    }
    delta
}

/// What one key had at the previous reading.
#[derive(Debug, Clone, Copy)]
struct Seen {
    ns: [u64; SLOTS],
    /// Measured time (the ledger's clock) when it last grew.
    grew_at: f64,
}

/// The attribution state carried from one interval to the next.
#[derive(Debug)]
pub struct Ledger {
    config: Config,
    previous: HashMap<Key, Seen>,
    /// Time groups earned but were not shown yet (see the module doc).
    carry: HashMap<GroupId, [u64; SLOTS]>,
    weights: HashMap<GroupId, f64>,
    /// Measured seconds since the start.
    clock_s: f64,
    /// The groups of the last interval by name, and whether it had an
    /// `other`: what the interval's stack samples are named by.
    named: HashMap<GroupId, String>,
    other: bool,
    /// What keys removed from the kernel's map gained between their last
    /// reading and their removal: the next interval's.
    late: Vec<(Key, [u64; SLOTS])>,
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
            late: Vec::new(),
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
        let mut deltas = self.deltas(reading);
        deltas.append(&mut self.late);
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
                unattributed: events_only(totals),
                unattributed_why: BTreeMap::new(),
            };
        }

        let mut earned = std::mem::take(&mut self.carry);
        let mut unclaimed: BTreeMap<Option<NoConn>, [u64; EVENTS]> = BTreeMap::new();
        for (key, ns) in deltas {
            let Some(id) = GroupId::of(&key, self.config.by) else {
                let into = unclaimed.entry(key.no_conn).or_insert([0; EVENTS]);
                for (total, ns) in into.iter_mut().zip(ns) {
                    *total += ns;
                }
                continue;
            };
            let into = earned.entry(id).or_insert([0; SLOTS]);
            for (total, ns) in into.iter_mut().zip(ns) {
                *total += ns;
            }
        }
        let (shown, unattributed) = self.within(earned, totals);
        self.weigh(&shown, interval_s);
        let groups = self.fold(&shown, namer);
        let unattributed_why = if self.config.by.keys_conns() {
            why_unattributed(&unclaimed, unattributed)
        } else {
            BTreeMap::new()
        };
        Attribution {
            by: self.config.by,
            on,
            groups,
            unattributed: events_only(unattributed),
            unattributed_why,
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

    /// Keys the kernel's map can do without (see `IDLE_S`). The caller
    /// removes them from the map and hands what they held then to
    /// [`Ledger::forgotten`].
    pub fn idle_keys(&self) -> Vec<Key> {
        let half = NETTO_MAX_GROUPS as usize / 2;
        if self.previous.len() <= half {
            return Vec::new();
        }
        let mut idle: Vec<(f64, Key)> = self
            .previous
            .iter()
            .filter(|(_, seen)| seen.grew_at < self.clock_s)
            .map(|(key, seen)| (seen.grew_at, *key))
            .collect();
        idle.sort_by(|a, b| a.0.total_cmp(&b.0));
        let long_idle = idle
            .iter()
            .take_while(|(grew_at, _)| self.clock_s - grew_at >= IDLE_S)
            .count();
        idle.truncate(long_idle.max(self.previous.len() - half));
        idle.into_iter().map(|(_, key)| key).collect()
    }

    /// `removed` are gone from the kernel's map; `taken` is what those
    /// still there held as they went. What they gained since their last
    /// reading counts in the next interval, and a key that comes back
    /// starts from zero.
    pub fn forgotten(&mut self, removed: &[Key], taken: &[(netto_group_key, netto_group_time)]) {
        for (key, time) in taken {
            let key = Key::from(key);
            let growth = growth(self.previous.get(&key), slots(time));
            if growth.iter().any(|&d| d > 0) {
                self.late.push((key, growth));
            }
        }
        for key in removed {
            self.previous.remove(key);
        }
    }

    /// Each key's time since the previous reading; remembers this one.
    fn deltas(
        &mut self,
        reading: &[(netto_group_key, netto_group_time)],
    ) -> Vec<(Key, [u64; SLOTS])> {
        let mut next = HashMap::with_capacity(reading.len());
        let mut deltas = Vec::with_capacity(reading.len());
        for (key, time) in reading {
            let key = Key::from(key);
            let before = self.previous.get(&key);
            let now = slots(time);
            let delta = growth(before, now);
            let grew = delta.iter().any(|&d| d > 0);
            let grew_at = match before {
                Some(seen) if !grew => seen.grew_at,
                _ => self.clock_s,
            };
            next.insert(key, Seen { ns: now, grew_at });
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
        earned: HashMap<GroupId, [u64; SLOTS]>,
        totals: [u64; EVENTS],
    ) -> (BTreeMap<GroupId, [u64; SLOTS]>, [u64; EVENTS]) {
        let mut shown: BTreeMap<GroupId, [u64; SLOTS]> = earned.into_iter().collect();
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
                    self.carry.entry(*id).or_insert([0; SLOTS])[event] = over;
                }
                ns[event] = part;
            }
        }
        shown.retain(|_, ns| ns.iter().any(|&n| n > 0));
        (shown, unattributed)
    }

    fn weigh(&mut self, shown: &BTreeMap<GroupId, [u64; SLOTS]>, interval_s: f64) {
        let decay = 0.5f64.powf(interval_s.max(0.0) / WEIGHT_HALF_LIFE_S);
        for weight in self.weights.values_mut() {
            *weight *= decay;
        }
        for (id, ns) in shown {
            *self.weights.entry(*id).or_default() += ns[..EVENTS].iter().sum::<u64>() as f64;
        }
        self.weights.retain(|_, w| *w >= MIN_WEIGHT);
    }

    /// The heaviest groups by weight (even without time this interval, so
    /// the groups shown stay put), then `other` for the time of the rest.
    fn fold(
        &mut self,
        shown: &BTreeMap<GroupId, [u64; SLOTS]>,
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
            .map(|(id, (name, label))| {
                self.group(name, label, shown.get(id).copied().unwrap_or([0; SLOTS]))
            })
            .collect();
        let mut other = [0; SLOTS];
        let mut folded = 0;
        for (_, ns) in shown.iter().filter(|(id, _)| !kept.contains(id)) {
            folded += 1;
            for (total, n) in other.iter_mut().zip(ns) {
                *total += n;
            }
        }
        self.other = folded > 0;
        if folded > 0 {
            groups.push(self.group(OTHER_GROUP.to_owned(), format!("{folded} more"), other));
        }
        groups
    }

    fn group(&self, name: String, label: String, ns: [u64; SLOTS]) -> Group {
        let events = by_event(ns);
        let traffic = self.config.by.keys_conns().then(|| {
            let total = events.values().sum();
            Traffic::new(total, ns[BYTES_IN], ns[BYTES_OUT])
        });
        Group {
            name,
            label,
            events,
            traffic,
        }
    }
}

/// Under `--by flow|port`, why each event's `unattributed` time has no
/// connection: keys without one say which (a forwarded packet's headers
/// why, a task's key in a socket call that named no socket, else no
/// socket), within the event's unattributed time; the rest no point
/// claimed. The reasons add up to the unattributed time.
fn why_unattributed(
    unclaimed: &BTreeMap<Option<NoConn>, [u64; EVENTS]>,
    unattributed: [u64; EVENTS],
) -> BTreeMap<Unattributed, u64> {
    let mut why: BTreeMap<Unattributed, u64> = [
        Unattributed::SocketNotNamed,
        Unattributed::NoSocket,
        Unattributed::NotIp,
        Unattributed::Fragment,
        Unattributed::NoPoint,
    ]
    .into_iter()
    .map(|reason| (reason, 0))
    .collect();
    for (key, id) in EVENT_IDS {
        let i = id as usize;
        let socket_call = matches!(key, EventKey::SockSend | EventKey::SockRecv);
        let mut left = unattributed[i];
        for (no_conn, ns) in unclaimed {
            let reason = match no_conn {
                Some(NoConn::NotIp) => Unattributed::NotIp,
                Some(NoConn::Fragment) => Unattributed::Fragment,
                None if socket_call => Unattributed::SocketNotNamed,
                None => Unattributed::NoSocket,
            };
            let known = ns[i].min(left);
            *why.entry(reason).or_default() += known;
            left -= known;
        }
        *why.entry(Unattributed::NoPoint).or_default() += left;
    }
    why
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

fn events_only(ns: [u64; EVENTS]) -> BTreeMap<EventKey, u64> {
    let mut all = [0; SLOTS];
    all[..EVENTS].copy_from_slice(&ns);
    by_event(all)
}

fn by_event(ns: [u64; SLOTS]) -> BTreeMap<EventKey, u64> {
    EVENT_IDS
        .iter()
        .map(|&(key, id)| (key, ns[id as usize]))
        .collect()
}

#[cfg(test)]
mod tests;
