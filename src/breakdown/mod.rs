//! Where sampled time went: each symbolized stack gets exactly one
//! [`Category`], and a context's exact event time is divided between
//! categories in proportion to their samples, so the parts always add up to
//! the measured whole.
//!
//! Precedence, reading a stack from the leaf outwards:
//!
//! 1. The matching frame nearest the leaf wins, because it is the most
//!    specific stage: TCP receive under a bridge under a driver poll is
//!    `local_tcp`; conntrack under a netfilter hook under forwarding is
//!    `conntrack`.
//! 2. Except the transmit path and the socket layer (`socket_send`,
//!    `socket_recv`, `tcp_output`, `udp_output`, `ip_output`, `qdisc`,
//!    `dev_xmit`): work passes through them on behalf of an enclosing
//!    stage, so they count only when no other stage encloses them.
//!    Forwarding includes sending the packet on, bridging includes
//!    transmitting to the other port, a TCP receive includes the ACK it
//!    sends; in NET_TX or a `send` call they are the stage.
//! 3. The softirq machinery (`handle_softirqs`, `do_softirq`, ...) is a
//!    boundary: a NET_RX run inline on top of a sender's stack is not
//!    charged to the sender's frames below it.
//!
//! Frames no row matches (allocation, locks, copies inside a stage)
//! inherit the stage of their nearest matching caller. A stack nothing
//! matches, or whose leaf is in the softirq machinery itself, is
//! [`Category::Other`]. The table and the netfilter hook rule are in
//! [`categories`].

pub mod categories;
pub mod fold;
pub mod hot;
pub mod placement;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};

use crate::model::{
    Breakdown, CategoryShare, CpuTime, EventKey, SampleContext, Snapshot, StackCount,
};
use crate::symbols::kallsyms::normalize_name;
use crate::symbols::symbolizer::FastState;

/// A stage of the network stack. The names are public (JSON, TUI, web), so
/// they never change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    DriverNapi,
    Xdp,
    /// netto's own XDP sketch (`netto sketch`), by its program name: the
    /// part of NET_RX that measuring flows costs.
    XdpSketch,
    Gro,
    NetifReceive,
    Tc,
    Bridge,
    NetfilterPrerouting,
    NetfilterInput,
    NetfilterForward,
    NetfilterOutput,
    NetfilterPostrouting,
    /// Netfilter whose hook no caller identifies (netdev ingress/egress,
    /// unusual call paths).
    NetfilterOther,
    Conntrack,
    IpReceive,
    Ipv4Forward,
    Ipv6Forward,
    LocalTcp,
    LocalUdp,
    LocalIcmp,
    LocalOther,
    SocketEnqueueWakeup,
    SocketSend,
    SocketRecv,
    CopyUser,
    TcpOutput,
    UdpOutput,
    IpOutput,
    Qdisc,
    DevXmit,
    /// A paced transmit: the TCP pacing hrtimer (`tcp_pace_kick`) sending
    /// what pacing held back.
    TcpPacing,
    /// A transmit TCP small queues deferred until the device had sent
    /// earlier packets (its tasklet or BH work).
    TcpSmallQueues,
    /// TCP's retransmit, probe and loss-probe timer.
    TcpRetransmitTimer,
    /// TCP's delayed and compressed ACK timers.
    TcpAckTimer,
    /// TCP's keepalive, SYN-ACK, FIN_WAIT2, TIME_WAIT and orphan timers.
    TcpConnectionTimer,
    /// The qdisc watchdog that ends a qdisc's throttling (fq pacing).
    QdiscWatchdog,
    /// The timer softirq's own work around network callbacks: the expiry
    /// loop, reprogramming the timer hardware.
    TimerSoftirq,
    /// A BPF program that is not netto's (someone's XDP, tc or cgroup
    /// program), with the helpers it calls. The breakdown names each one
    /// ([`Stage::Program`]); this is their family, where one name is
    /// needed for all (colours, `/metrics`).
    BpfProgram,
    /// Entering BPF programs: the XDP dispatcher, trampolines and the
    /// cgroup hooks' runners, sampled outside any program they run.
    BpfDispatch,
    /// netto's own BPF programs (the accounting hooks), by name: what
    /// measuring costs inside the measured contexts.
    Netto,
    Other,
}

impl Category {
    pub const ALL: [Category; 41] = [
        Category::DriverNapi,
        Category::Xdp,
        Category::XdpSketch,
        Category::Gro,
        Category::NetifReceive,
        Category::Tc,
        Category::Bridge,
        Category::NetfilterPrerouting,
        Category::NetfilterInput,
        Category::NetfilterForward,
        Category::NetfilterOutput,
        Category::NetfilterPostrouting,
        Category::NetfilterOther,
        Category::Conntrack,
        Category::IpReceive,
        Category::Ipv4Forward,
        Category::Ipv6Forward,
        Category::LocalTcp,
        Category::LocalUdp,
        Category::LocalIcmp,
        Category::LocalOther,
        Category::SocketEnqueueWakeup,
        Category::SocketSend,
        Category::SocketRecv,
        Category::CopyUser,
        Category::TcpOutput,
        Category::UdpOutput,
        Category::IpOutput,
        Category::Qdisc,
        Category::DevXmit,
        Category::TcpPacing,
        Category::TcpSmallQueues,
        Category::TcpRetransmitTimer,
        Category::TcpAckTimer,
        Category::TcpConnectionTimer,
        Category::QdiscWatchdog,
        Category::TimerSoftirq,
        Category::BpfProgram,
        Category::BpfDispatch,
        Category::Netto,
        Category::Other,
    ];

    /// Rule 2 of the module documentation: categories that give way to an
    /// enclosing stage.
    fn defers(self) -> bool {
        matches!(
            self,
            Category::SocketSend
                | Category::SocketRecv
                | Category::TcpOutput
                | Category::UdpOutput
                | Category::IpOutput
                | Category::Qdisc
                | Category::DevXmit
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            Category::DriverNapi => "driver_napi",
            Category::Xdp => "xdp",
            Category::XdpSketch => "xdp_sketch",
            Category::Gro => "gro",
            Category::NetifReceive => "netif_receive",
            Category::Tc => "tc",
            Category::Bridge => "bridge",
            Category::NetfilterPrerouting => "netfilter_prerouting",
            Category::NetfilterInput => "netfilter_input",
            Category::NetfilterForward => "netfilter_forward",
            Category::NetfilterOutput => "netfilter_output",
            Category::NetfilterPostrouting => "netfilter_postrouting",
            Category::NetfilterOther => "netfilter_other",
            Category::Conntrack => "conntrack",
            Category::IpReceive => "ip_receive",
            Category::Ipv4Forward => "ipv4_forward",
            Category::Ipv6Forward => "ipv6_forward",
            Category::LocalTcp => "local_tcp",
            Category::LocalUdp => "local_udp",
            Category::LocalIcmp => "local_icmp",
            Category::LocalOther => "local_other",
            Category::SocketEnqueueWakeup => "socket_enqueue_wakeup",
            Category::SocketSend => "socket_send",
            Category::SocketRecv => "socket_recv",
            Category::CopyUser => "copy_user",
            Category::TcpOutput => "tcp_output",
            Category::UdpOutput => "udp_output",
            Category::IpOutput => "ip_output",
            Category::Qdisc => "qdisc",
            Category::DevXmit => "dev_xmit",
            Category::TcpPacing => "tcp_pacing",
            Category::TcpSmallQueues => "tcp_small_queues",
            Category::TcpRetransmitTimer => "tcp_retransmit_timer",
            Category::TcpAckTimer => "tcp_ack_timer",
            Category::TcpConnectionTimer => "tcp_connection_timer",
            Category::QdiscWatchdog => "qdisc_watchdog",
            Category::TimerSoftirq => "timer_softirq",
            Category::BpfProgram => "bpf_program",
            Category::BpfDispatch => "bpf_dispatch",
            Category::Netto => "netto",
            Category::Other => "other",
        }
    }
}

/// What a stack's time is charged to: a stage of the stack, or a BPF
/// program that is not netto's, by the name its frames carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage<'f> {
    Of(Category),
    Program(&'f str),
}

/// How the breakdown names a program's stage: `bpf:` and the program's
/// name, so it cannot be taken for a category of the fixed set.
pub const PROGRAM_PREFIX: &str = "bpf:";

impl Stage<'_> {
    /// The category, or [`Category::BpfProgram`] for every program.
    pub fn category(self) -> Category {
        match self {
            Stage::Of(category) => category,
            Stage::Program(_) => Category::BpfProgram,
        }
    }

    /// The public name: a category's, or `bpf:NAME` for a program.
    pub fn name(self) -> Cow<'static, str> {
        match self {
            Stage::Of(category) => Cow::Borrowed(category.name()),
            Stage::Program(name) => Cow::Owned(format!("{PROGRAM_PREFIX}{name}")),
        }
    }
}

/// The category of one stack, frames outermost first (as in
/// [`StackCount`]), with no BPF program known.
pub fn categorize(frames: &[&str]) -> Category {
    categorize_with(frames, false, categories::action).category()
}

/// [`categorize`] with the per-frame lookup supplied, so a caller
/// categorizing many stacks can remember each name's row and know the
/// BPF programs. `programs`: whether any frame may be a program; if so, a
/// stage found nearer the leaf gives way to a program frame outside it
/// (a program's helpers are its own time), but not to a boundary and not
/// to netto's own programs (what measuring costs stays netto's, inside
/// whoever's program it ran).
fn categorize_with<'a, S: AsRef<str>>(
    frames: &'a [S],
    programs: bool,
    mut action: impl FnMut(&'a str) -> Option<categories::Action>,
) -> Stage<'a> {
    let mut deferred = None;
    let mut found = None;
    for (i, frame) in frames.iter().enumerate().rev() {
        let category = match action(frame.as_ref()) {
            None => continue,
            Some(categories::Action::Is(Category::Other)) => break,
            Some(categories::Action::Program) => return Stage::Program(frame.as_ref()),
            Some(categories::Action::Is(category)) if category.defers() => {
                deferred.get_or_insert(category);
                continue;
            }
            Some(categories::Action::Is(own @ (Category::Netto | Category::XdpSketch))) => {
                return Stage::Of(found.unwrap_or(own));
            }
            Some(categories::Action::Is(category)) => category,
            Some(categories::Action::Netfilter) => categories::hook(&frames[..=i]),
        };
        if !programs {
            return Stage::Of(category);
        }
        found.get_or_insert(category);
    }
    Stage::Of(found.or(deferred).unwrap_or(Category::Other))
}

/// [`categorize`] for many stacks at once. Stacks share most of their
/// frames, so each name is looked up in the table once, not once per
/// stack; kept across intervals, it looks each name up once per run. It
/// remembers every name it has seen, at most the kernel's symbols.
#[derive(Debug, Clone, Default)]
pub struct Categorizer {
    memo: HashMap<Box<str>, Option<categories::Action>, FastState>,
    programs: ProgramNames,
}

impl Categorizer {
    /// Learns which frame names are BPF programs from a snapshot's
    /// `modules`; programs are loaded while netto runs, so callers pass
    /// each snapshot's.
    pub fn learn_programs<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        modules: impl IntoIterator<Item = (K, V)>,
    ) {
        for name in self.programs.learn(modules) {
            self.memo.remove(name.as_str());
        }
    }

    /// The stage of a stack sampled in `context` ([`in_context`]).
    pub fn stage<'f, S: AsRef<str>>(
        &mut self,
        context: SampleContext,
        frames: &'f [S],
    ) -> Stage<'f> {
        let memo = &mut self.memo;
        let programs = &self.programs;
        let stage = categorize_with(frames, !programs.is_empty(), |name| match memo.get(name) {
            Some(&action) => action,
            None => {
                let action = programs.action(name);
                memo.insert(name.into(), action);
                action
            }
        });
        match stage {
            Stage::Of(category) => Stage::Of(in_context(context, category)),
            program => program,
        }
    }

    /// The category of a stack sampled in `context`.
    pub fn categorize<S: AsRef<str>>(&mut self, context: SampleContext, frames: &[S]) -> Category {
        self.stage(context, frames).category()
    }
}

/// The names of BPF programs that are not netto's, from snapshots'
/// `modules`: frames are bare names, so only the module tells a program
/// from a kernel function.
#[derive(Debug, Clone, Default)]
pub struct ProgramNames(HashSet<Box<str>, FastState>);

/// The module the symbolizer gives JIT-compiled BPF code.
const BPF_MODULE: &str = "bpf";

impl ProgramNames {
    /// The programs among the frames of `snapshots`.
    pub fn of<'s>(snapshots: impl IntoIterator<Item = &'s Snapshot>) -> Self {
        let mut names = ProgramNames::default();
        for snapshot in snapshots {
            names.learn(&snapshot.modules);
        }
        names
    }

    /// Adds the programs among `modules`, and returns the names new.
    fn learn<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        modules: impl IntoIterator<Item = (K, V)>,
    ) -> Vec<String> {
        let mut new = Vec::new();
        for (name, module) in modules {
            let name = name.as_ref();
            // Each snapshot names every module again: the cheap tests
            // first, so a refresh that learns nothing allocates nothing.
            if module.as_ref() != BPF_MODULE || self.0.contains(name) {
                continue;
            }
            // Dispatchers and netto's own programs have rows of their own.
            let own_row = matches!(
                categories::action(name),
                Some(categories::Action::Is(
                    Category::Netto | Category::XdpSketch | Category::BpfDispatch
                ))
            );
            if !own_row {
                self.0.insert(name.into());
                new.push(name.to_owned());
            }
        }
        new
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// What `frame` means: [`categories::Action::Program`] when it is a
    /// known program (before the table: a program's name may match a
    /// pattern row, `xdp_` or `_poll`, by chance), else its row.
    pub fn action(&self, frame: &str) -> Option<categories::Action> {
        if self.0.contains(frame) {
            Some(categories::Action::Program)
        } else {
            categories::action(frame)
        }
    }
}

/// `category` of a stack sampled in `context`: a stack no row claims is
/// [`Category::Other`], except in a context whose every sample is known to
/// be one stage when no frame says more ([`categories::CONTEXT_DEFAULTS`]).
pub fn in_context(context: SampleContext, category: Category) -> Category {
    match category {
        Category::Other => categories::CONTEXT_DEFAULTS
            .iter()
            .find(|(c, _)| *c == context)
            .map_or(Category::Other, |&(_, default)| default),
        category => category,
    }
}

/// Takes out of `stacks` the samples of socket-call contexts whose stack
/// passes through the softirq loop ([`categories::SOFTIRQ_LOOP`]), and returns
/// how many there were.
///
/// A softirq run inline in a socket call is sampled as that softirq's
/// context, since netto saw it begin. So such a sample was taken in the
/// loop outside any softirq netto saw begin: mostly at its first
/// `local_irq_enable()`, where every sample that fell due while interrupts
/// were off (the hardirq before it, the hand-over) is taken. They stand for
/// interrupt time, which no event is charged with, not for the socket call
/// that happens to be open; counted, they would have the call's context
/// read well above its exact time under BBR pacing
/// (docs/src/concepts/breakdown.md, "Agreement").
pub fn leave_out_softirq_loop(stacks: &mut Vec<StackCount>) -> u64 {
    let mut left_out = 0;
    stacks.retain(|stack| {
        let in_loop = matches!(
            stack.context,
            SampleContext::SockSend | SampleContext::SockRecv
        ) && stack
            .frames
            .iter()
            .any(|frame| categories::SOFTIRQ_LOOP.contains(&normalize_name(frame)));
        if in_loop {
            left_out += stack.count;
        }
        !in_loop
    });
    left_out
}

/// One [`Breakdown`] per context that has samples, in
/// [`SampleContext::ALL`] order: the context's samples by stage (a
/// category, or a BPF program named in `modules`), most samples first,
/// each with its share of the context's exact event time from `events` (0
/// where the event is missing), and how the samples, taken at
/// `frequency_hz`, agree with that time where it was measured rather than
/// estimated.
///
/// The nanoseconds are split by largest remainder, so they add up to the
/// event's `total_ns` exactly instead of drifting by rounding.
pub fn breakdowns(
    stacks: &[StackCount],
    events: &BTreeMap<EventKey, CpuTime>,
    modules: &BTreeMap<String, String>,
    frequency_hz: u64,
) -> Vec<Breakdown> {
    let mut categorizer = Categorizer::default();
    categorizer.learn_programs(modules);
    let mut counts: BTreeMap<SampleContext, HashMap<Stage<'_>, u64>> = BTreeMap::new();
    for stack in stacks {
        let stage = categorizer.stage(stack.context, &stack.frames);
        *counts
            .entry(stack.context)
            .or_default()
            .entry(stage)
            .or_default() += stack.count;
    }
    counts
        .into_iter()
        .filter_map(|(context, by_stage)| {
            let time = events.get(&context.event());
            let total_ns = time.map_or(0, |t| t.total_ns);
            // An estimate made from these very samples agrees by
            // construction: only exact time can say how well they agree.
            let exact = time.is_some_and(|t| !t.estimated);
            let agreement_hz = if exact { frequency_hz } else { 0 };
            let parts = by_stage
                .into_iter()
                .map(|(stage, n)| (stage.name(), n))
                .collect();
            breakdown(context, parts, total_ns, agreement_hz)
        })
        .collect()
}

/// `parts`: each stage's name and samples. `agreement_hz`: the sampling
/// frequency to judge the samples' agreement with `total_ns` by, or 0
/// when that time is no measurement to agree with.
fn breakdown(
    context: SampleContext,
    mut parts: Vec<(Cow<'static, str>, u64)>,
    total_ns: u64,
    agreement_hz: u64,
) -> Option<Breakdown> {
    parts.retain(|&(_, n)| n > 0);
    let samples: u64 = parts.iter().map(|&(_, n)| n).sum();
    if samples == 0 {
        return None;
    }
    let agreement = (total_ns > 0 && agreement_hz > 0)
        .then(|| samples as f64 * 1e9 / agreement_hz as f64 / total_ns as f64);
    parts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let counts: Vec<u64> = parts.iter().map(|&(_, n)| n).collect();
    let cpu_ns = split_ns(total_ns, &counts);
    let categories = parts
        .into_iter()
        .zip(cpu_ns)
        .map(|((name, n), cpu_ns)| CategoryShare {
            category: name.into_owned(),
            samples: n,
            share: n as f64 / samples as f64,
            cpu_ns,
        })
        .collect();
    Some(Breakdown {
        context,
        samples,
        agreement,
        categories,
    })
}

/// `total_ns` divided in proportion to `counts`, in integers summing to
/// `total_ns`: floors first, then the leftover nanoseconds one each to the
/// largest fractional parts (earlier entries first on ties). The pprof
/// writer splits each stack's time the same way.
pub(crate) fn split_ns(total_ns: u64, counts: &[u64]) -> Vec<u64> {
    let samples: u128 = counts.iter().map(|&n| u128::from(n)).sum();
    let exact: Vec<(u64, u128)> = counts
        .iter()
        .map(|&n| {
            let scaled = u128::from(total_ns) * u128::from(n);
            ((scaled / samples) as u64, scaled % samples)
        })
        .collect();
    let mut split: Vec<u64> = exact.iter().map(|&(floor, _)| floor).collect();
    let leftover = total_ns - split.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by(|&a, &b| exact[b].1.cmp(&exact[a].1).then(a.cmp(&b)));
    for &i in order.iter().take(leftover as usize) {
        split[i] += 1;
    }
    split
}

#[cfg(test)]
mod tests;
