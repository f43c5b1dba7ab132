//! Samples -> [`StackCount`]s. Sampling repeats a few thousand stacks
//! millions of times, so samples are counted by their raw addresses first
//! (one hash of the stack per sample) and each distinct stack is symbolized
//! once, when the counts are taken. Raw stacks that differ only in return
//! addresses inside the same functions become the same symbolized stack
//! and are merged there. A sample that says whom its work was for (a
//! group key, with `--by`) is counted apart from the same stack for
//! another, and the key is named when the counts are taken. A sample the
//! sampler could not place (the tiers that estimate) is placed by its
//! frames then ([`placement`]).

use std::collections::{BTreeMap, HashMap};

use super::placement::{self, Place};
use crate::kernel::attribution::Key;
use crate::model::{SampleContext, StackCount};
use crate::symbols::symbolizer::{trim_stack, FastState, FrameId, Symbolizer};

/// Distinct raw stacks of one context and group, and how often each was
/// sampled.
type RawCounts = HashMap<Box<[u64]>, u64, FastState>;

/// One CPU's raw stacks, indexed by `SampleContext as usize` and last
/// those still to be placed by their frames ([`BY_FRAMES`]), then by whom
/// they were for (nearly always one or a few keys).
type ByContext = [HashMap<Option<Key>, RawCounts, FastState>; SampleContext::ALL.len() + 1];

/// The slot of stacks the sampler could not place in a context.
const BY_FRAMES: usize = SampleContext::ALL.len();

/// One context's stacks by group name, then by symbolized frames: their
/// count, and it by CPU.
type Merged = HashMap<Option<String>, HashMap<Vec<FrameId>, (u64, BTreeMap<u32, u64>), FastState>>;

/// Accumulates samples until [`take`](Folder::take) turns them into stacks.
/// Counts are kept per CPU so that a profile can be cut by CPU (pprof's
/// `cpu` label) without a second pass over the samples.
#[derive(Default)]
pub struct Folder {
    /// Indexed by CPU number, grown as CPUs show up.
    by_cpu: Vec<ByContext>,
    samples: u64,
    /// Samples the last [`take`](Folder::take) could place in no context.
    unplaced: u64,
}

impl Folder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one sample taken on `cpu` in `context` (`None`: to be placed
    /// by its frames) for `group`: `raw` as `bpf_get_stack` returned it,
    /// leaf first, zero padding allowed.
    pub fn add(
        &mut self,
        cpu: u32,
        context: Option<SampleContext>,
        group: Option<Key>,
        raw: &[u64],
    ) {
        self.add_count(cpu, context, group, raw, 1);
    }

    /// Counts `count` samples of the same stack on `cpu`.
    pub fn add_count(
        &mut self,
        cpu: u32,
        context: Option<SampleContext>,
        group: Option<Key>,
        raw: &[u64],
        count: u64,
    ) {
        let raw = trim_stack(raw);
        let cpu = cpu as usize;
        if cpu >= self.by_cpu.len() {
            self.by_cpu.resize_with(cpu + 1, ByContext::default);
        }
        let slot = context.map_or(BY_FRAMES, |c| c as usize);
        let counts = self.by_cpu[cpu][slot].entry(group).or_default();
        match counts.get_mut(raw) {
            Some(n) => *n += count,
            None => {
                counts.insert(raw.into(), count);
            }
        }
        self.samples += count;
    }

    /// Samples counted since the last [`take`](Self::take).
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Samples the last [`take`](Self::take) placed in no context: kernel
    /// stacks outside the network, taken in the tiers that place samples
    /// by their frames.
    pub fn unplaced(&self) -> u64 {
        self.unplaced
    }

    /// Distinct raw stacks counted since the last [`take`](Self::take).
    pub fn distinct_stacks(&self) -> usize {
        self.by_cpu
            .iter()
            .flatten()
            .flat_map(HashMap::values)
            .map(HashMap::len)
            .sum()
    }

    /// The counted samples as symbolized stacks, frames outermost first,
    /// one entry per context, group and distinct frame list; ordered by
    /// context, then most samples first, then frames compared from the
    /// leaf, then group. Stacks still to be placed join the context their
    /// frames name. `name` gives a key its group's name (`None`: the
    /// sample counts as for nobody), so keys of one group (under `--by
    /// cgroup`, every process in it) merge. Empties the folder.
    pub fn take(
        &mut self,
        symbolizer: &mut Symbolizer,
        mut name: impl FnMut(&Key) -> Option<String>,
    ) -> Vec<StackCount> {
        let mut merged: [Merged; SampleContext::ALL.len()] = Default::default();
        let mut timers = TimerWork::default();
        let mut frames = Vec::new();
        self.unplaced = 0;
        for (cpu, by_context) in (0u32..).zip(&mut self.by_cpu) {
            for (slot, by_group) in by_context.iter_mut().enumerate() {
                for (key, counts) in by_group.drain() {
                    let group = key.as_ref().and_then(&mut name);
                    for (raw, count) in counts {
                        symbolizer.symbolize_into(&raw, &mut frames);
                        let context = match SampleContext::ALL.get(slot) {
                            Some(&context) => context,
                            None => {
                                let names = frames.iter().rev().map(|&f| symbolizer.name(f));
                                match placement::place(names) {
                                    Some(Place::In(context)) => {
                                        if context == SampleContext::NetTimers {
                                            timers.cpu(cpu).network += count;
                                        }
                                        context
                                    }
                                    Some(Place::TimerWork { callback: true, .. }) => {
                                        timers.cpu(cpu).other += count;
                                        self.unplaced += count;
                                        continue;
                                    }
                                    Some(Place::TimerWork {
                                        callback: false, ..
                                    }) => {
                                        let work = timers.cpu(cpu);
                                        work.work += count;
                                        work.stacks.push((group.clone(), frames.clone(), count));
                                        continue;
                                    }
                                    None => {
                                        self.unplaced += count;
                                        continue;
                                    }
                                }
                            }
                        };
                        merge(&mut merged[context as usize], &group, &frames, cpu, count);
                    }
                }
            }
        }
        for (cpu, work) in (0u32..).zip(timers.by_cpu) {
            let shared = placement::share_timer_work(work.work, work.network, work.other);
            self.unplaced += work.work - shared;
            // Each stack its part of the share, rounded so that the parts
            // add up to it.
            let mut before = 0u128;
            let part =
                |seen: u128| (seen * u128::from(shared) / u128::from(work.work.max(1))) as u64;
            for (group, frames, count) in work.stacks {
                let after = before + u128::from(count);
                let taken = part(after) - part(before);
                before = after;
                if taken > 0 {
                    let net_timers = &mut merged[SampleContext::NetTimers as usize];
                    merge(net_timers, &group, &frames, cpu, taken);
                }
            }
        }
        let mut stacks = Vec::new();
        for (context, merged) in SampleContext::ALL.into_iter().zip(merged) {
            let start = stacks.len();
            for (group, by_frames) in merged {
                stacks.extend(by_frames.into_iter().map(|(frames, (count, cpus))| {
                    StackCount {
                        context,
                        frames: frames
                            .iter()
                            .map(|&f| symbolizer.name(f).to_owned())
                            .collect(),
                        count,
                        cpus,
                        group: group.clone(),
                    }
                }));
            }
            // Ties broken from the leaf: outer frames are shared by most
            // stacks, so comparing from there would walk deep every time.
            stacks[start..].sort_by(|a, b| {
                b.count
                    .cmp(&a.count)
                    .then_with(|| a.frames.iter().rev().cmp(b.frames.iter().rev()))
                    .then_with(|| a.group.cmp(&b.group))
            });
        }
        self.samples = 0;
        stacks
    }
}

/// Counts `count` samples of `frames` on `cpu` for `group` into `merged`.
fn merge(merged: &mut Merged, group: &Option<String>, frames: &[FrameId], cpu: u32, count: u64) {
    let by_frames = merged.entry(group.clone()).or_default();
    let (total, cpus) = match by_frames.get_mut(frames) {
        Some(entry) => entry,
        None => by_frames.entry(frames.to_vec()).or_default(),
    };
    *total += count;
    *cpus.entry(cpu).or_default() += count;
}

/// One interval's samples of the timer softirqs placed by their frames,
/// per CPU: their own work outside callbacks is shared out to
/// `net_timers` once every stack has been placed
/// ([`placement::share_timer_work`]).
#[derive(Default)]
struct TimerWork {
    by_cpu: Vec<CpuTimerWork>,
}

#[derive(Default)]
struct CpuTimerWork {
    /// Samples in network callbacks.
    network: u64,
    /// Samples in other callbacks.
    other: u64,
    /// Samples in the softirqs' own work, and their stacks.
    work: u64,
    stacks: Vec<(Option<String>, Vec<FrameId>, u64)>,
}

impl TimerWork {
    fn cpu(&mut self, cpu: u32) -> &mut CpuTimerWork {
        let cpu = cpu as usize;
        if cpu >= self.by_cpu.len() {
            self.by_cpu.resize_with(cpu + 1, CpuTimerWork::default);
        }
        &mut self.by_cpu[cpu]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbols::kallsyms::SymbolTable;

    const BASIC: &str = include_str!("../../tests/fixtures/kallsyms/basic.txt");

    fn symbolizer() -> Symbolizer {
        Symbolizer::new(SymbolTable::parse(BASIC).unwrap())
    }

    // Leaf first, as sampled: tcp_ack <- netif_receive_skb <- veth_poll.
    const STACK: [u64; 3] = [0xffffffff81a10010, 0xffffffff81e66620, 0xffffffff81dbcf10];
    // The same functions, other return addresses.
    const SAME_FUNCTIONS: [u64; 3] = [0xffffffff81a10020, 0xffffffff81e66640, 0xffffffff81dbcf40];
    // br_handle_frame <- veth_poll.
    const BRIDGE: [u64; 2] = [0xffffffffc0a01010, 0xffffffff81dbcf10];

    #[test]
    fn folds_identical_stacks_and_merges_same_functions() {
        let mut folder = Folder::new();
        for _ in 0..5 {
            folder.add(0, Some(SampleContext::NetRx), None, &STACK);
        }
        folder.add(
            0,
            Some(SampleContext::NetRx),
            None,
            &[STACK[0], STACK[1], STACK[2], 0, 0],
        );
        folder.add_count(3, Some(SampleContext::NetRx), None, &SAME_FUNCTIONS, 4);
        folder.add(3, Some(SampleContext::NetRx), None, &BRIDGE);
        folder.add(1, Some(SampleContext::SockRecv), None, &STACK);
        assert_eq!(folder.samples(), 12);
        assert_eq!(folder.distinct_stacks(), 4);

        let stacks = folder.take(&mut symbolizer(), |_| None);
        let tcp = vec![
            "veth_poll".to_owned(),
            "netif_receive_skb".into(),
            "tcp_ack".into(),
        ];
        let bridge = vec!["veth_poll".to_owned(), "br_handle_frame".into()];
        assert_eq!(
            stacks,
            [
                StackCount {
                    context: SampleContext::NetRx,
                    frames: tcp.clone(),
                    count: 10,
                    cpus: [(0, 6), (3, 4)].into(),
                    group: None,
                },
                StackCount {
                    context: SampleContext::NetRx,
                    frames: bridge,
                    count: 1,
                    cpus: [(3, 1)].into(),
                    group: None,
                },
                StackCount {
                    context: SampleContext::SockRecv,
                    frames: tcp,
                    count: 1,
                    cpus: [(1, 1)].into(),
                    group: None,
                },
            ]
        );
        assert_eq!(folder.samples(), 0);
        assert_eq!(folder.distinct_stacks(), 0);
        assert!(folder.take(&mut symbolizer(), |_| None).is_empty());
    }

    #[test]
    fn keys_of_one_group_merge_and_groups_stay_apart() {
        let key = |cgroup, tgid| Key {
            cgroup,
            tgid,
            netns: 4026531840,
            conn: None,
            no_conn: None,
        };
        let mut folder = Folder::new();
        // Two processes of cgroup 7, one of cgroup 9, and a sample for
        // nobody known; grouped by cgroup, 7's processes are one group.
        folder.add_count(0, Some(SampleContext::NetRx), Some(key(7, 100)), &STACK, 3);
        folder.add_count(
            1,
            Some(SampleContext::NetRx),
            Some(key(7, 101)),
            &SAME_FUNCTIONS,
            2,
        );
        folder.add_count(0, Some(SampleContext::NetRx), Some(key(9, 200)), &STACK, 4);
        folder.add(0, Some(SampleContext::NetRx), None, &STACK);
        folder.add(0, Some(SampleContext::NetRx), Some(key(11, 300)), &STACK);
        let name = |k: &Key| (k.cgroup != 11).then(|| format!("/g{}", k.cgroup));
        let stacks = folder.take(&mut symbolizer(), name);
        let got: Vec<(Option<&str>, u64)> = stacks
            .iter()
            .map(|s| (s.group.as_deref(), s.count))
            .collect();
        // A key without a name (not shown) is for nobody, with the rest.
        assert_eq!(got, [(Some("/g7"), 5), (Some("/g9"), 4), (None, 2)]);
        assert_eq!(stacks[0].cpus, [(0, 3), (1, 2)].into());
        assert!(stacks.iter().all(|s| s.frames == stacks[0].frames));
    }

    /// Kernel text of `names`, 0x100 bytes each from 0xffffffff81000000:
    /// the address 0x10 into the i-th is in `names[i]`.
    fn functions(names: &[&str]) -> Symbolizer {
        let mut table: String = (0u64..)
            .zip(names)
            .map(|(i, name)| format!("{:x} T {name}\n", 0xffffffff81000000 + i * 0x100))
            .collect();
        table += &format!(
            "{:x} T _etext\n",
            0xffffffff81000000 + names.len() as u64 * 0x100
        );
        Symbolizer::new(SymbolTable::parse(&table).unwrap())
    }

    #[test]
    fn stacks_the_sampler_could_not_place_are_placed_by_their_frames() {
        let mut symbolizer = functions(&[
            "do_idle",
            "__sys_sendto",
            "tcp_sendmsg",
            "net_rx_action",
            "tcp_v4_rcv",
        ]);
        let mut folder = Folder::new();
        // Leaf first: tcp_sendmsg <- __sys_sendto, a socket send.
        folder.add_count(1, None, None, &[0xffffffff81000210, 0xffffffff81000110], 3);
        // A softirq inline in that call: its innermost entry decides.
        let inline = [
            0xffffffff81000410,
            0xffffffff81000310,
            0xffffffff81000210,
            0xffffffff81000110,
        ];
        folder.add_count(1, None, None, &inline, 2);
        // Idle: nowhere.
        folder.add_count(0, None, None, &[0xffffffff81000010], 5);
        // A placed sample stays where the sampler put it.
        folder.add(
            0,
            Some(SampleContext::SockRecv),
            None,
            &[0xffffffff81000010],
        );
        let stacks = folder.take(&mut symbolizer, |_| None);
        let placed: Vec<(SampleContext, u64)> =
            stacks.iter().map(|s| (s.context, s.count)).collect();
        assert_eq!(
            placed,
            [
                (SampleContext::NetRx, 2),
                (SampleContext::SockSend, 3),
                (SampleContext::SockRecv, 1)
            ]
        );
        assert_eq!(stacks[1].frames, ["__sys_sendto", "tcp_sendmsg"]);
        assert_eq!(stacks[1].cpus, [(1, 3)].into());
        assert_eq!(folder.unplaced(), 5);
    }

    #[test]
    fn a_timer_softirqs_own_work_goes_to_net_timers_in_the_network_callbacks_share() {
        let mut symbolizer = functions(&[
            "hrtimer_run_softirq",
            "__hrtimer_run_queues",
            "_raw_spin_unlock_irqrestore",
            "tcp_pace_kick",
            "hrtimer_wakeup",
        ]);
        let mut folder = Folder::new();
        let (softirq, queues, unlock) =
            (0xffffffff81000010, 0xffffffff81000110, 0xffffffff81000210);
        let (pacing, wakeup) = (0xffffffff81000310, 0xffffffff81000410);
        // CPU 1: 1 pacing sample to 3 of another callback, so a quarter
        // of the 8 samples of the softirq's own work (in two stacks).
        folder.add_count(1, None, None, &[pacing, queues, softirq], 1);
        folder.add_count(1, None, None, &[wakeup, queues, softirq], 3);
        folder.add_count(1, None, None, &[unlock, queues, softirq], 5);
        folder.add_count(1, None, None, &[softirq], 3);
        // CPU 0: network callbacks only, so all of its work; and samples
        // the sampler placed itself do not count toward any share.
        folder.add_count(0, None, None, &[pacing, queues, softirq], 2);
        folder.add_count(0, None, None, &[softirq], 4);
        folder.add_count(0, Some(SampleContext::NetTimers), None, &[wakeup], 7);
        let stacks = folder.take(&mut symbolizer, |_| None);
        let on = |cpu: u32| -> u64 {
            stacks
                .iter()
                .filter(|s| s.context == SampleContext::NetTimers)
                .filter_map(|s| s.cpus.get(&cpu))
                .sum()
        };
        assert_eq!(on(1), 1 + 2);
        assert_eq!(on(0), 2 + 4 + 7);
        assert!(stacks.iter().all(|s| s.context == SampleContext::NetTimers));
        // The other callback's 3 and the 6 of the work not shared.
        assert_eq!(folder.unplaced(), 3 + 6);
        // The work keeps its frames under net_timers.
        assert!(stacks
            .iter()
            .any(|s| s.frames == ["hrtimer_run_softirq"] && s.cpus.get(&0) == Some(&4)));
    }

    #[test]
    fn contexts_index_in_declaration_order() {
        for (i, context) in SampleContext::ALL.into_iter().enumerate() {
            assert_eq!(context as usize, i);
        }
    }

    #[test]
    fn unknown_addresses_become_unknown_frames() {
        let mut folder = Folder::new();
        folder.add(
            0,
            Some(SampleContext::NetTx),
            None,
            &[0xffffffff80000000, 0xffffffff81dbcf10],
        );
        let stacks = folder.take(&mut symbolizer(), |_| None);
        assert_eq!(stacks[0].frames, ["veth_poll", "[unknown]"]);
    }
}
