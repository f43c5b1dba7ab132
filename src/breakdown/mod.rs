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

use std::collections::{BTreeMap, HashMap};

use crate::model::{Breakdown, CategoryShare, CpuTime, EventKey, SampleContext, StackCount};
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
    /// netto's own BPF programs (the accounting hooks), by name: what
    /// measuring costs inside the measured contexts.
    Netto,
    Other,
}

impl Category {
    pub const ALL: [Category; 39] = [
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
            Category::Netto => "netto",
            Category::Other => "other",
        }
    }
}

/// The category of one stack, frames outermost first (as in
/// [`StackCount`]).
pub fn categorize(frames: &[&str]) -> Category {
    categorize_with(frames, categories::action)
}

/// [`categorize`] with the per-frame lookup supplied, so a caller
/// categorizing many stacks can remember each name's row.
fn categorize_with<'a, S: AsRef<str>>(
    frames: &'a [S],
    mut action: impl FnMut(&'a str) -> Option<categories::Action>,
) -> Category {
    let mut deferred = None;
    for (i, frame) in frames.iter().enumerate().rev() {
        match action(frame.as_ref()) {
            None => {}
            Some(categories::Action::Is(Category::Other)) => break,
            Some(categories::Action::Is(category)) if category.defers() => {
                deferred.get_or_insert(category);
            }
            Some(categories::Action::Is(category)) => return category,
            Some(categories::Action::Netfilter) => return categories::hook(&frames[..=i]),
        }
    }
    deferred.unwrap_or(Category::Other)
}

/// [`categorize`] for many stacks at once. Stacks share most of their
/// frames, so each name is looked up in the table once, not once per
/// stack; kept across intervals, it looks each name up once per run. It
/// remembers every name it has seen, at most the kernel's symbols.
#[derive(Debug, Clone, Default)]
pub struct Categorizer {
    memo: HashMap<Box<str>, Option<categories::Action>, FastState>,
}

impl Categorizer {
    /// The category of a stack sampled in `context` ([`in_context`]).
    pub fn categorize<S: AsRef<str>>(&mut self, context: SampleContext, frames: &[S]) -> Category {
        let memo = &mut self.memo;
        let category = categorize_with(frames, |name| match memo.get(name) {
            Some(&action) => action,
            None => {
                let action = categories::action(name);
                memo.insert(name.into(), action);
                action
            }
        });
        in_context(context, category)
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
/// [`SampleContext::ALL`] order: the context's samples by category, most
/// samples first, each with its share of the context's exact event time
/// from `events` (0 where the event is missing), and how the samples,
/// taken at `frequency_hz`, agree with that time where it was measured
/// rather than estimated.
///
/// The nanoseconds are split by largest remainder, so they add up to the
/// event's `total_ns` exactly instead of drifting by rounding.
pub fn breakdowns(
    stacks: &[StackCount],
    events: &BTreeMap<EventKey, CpuTime>,
    frequency_hz: u64,
) -> Vec<Breakdown> {
    let mut categorizer = Categorizer::default();
    let mut counts = [[0u64; Category::ALL.len()]; SampleContext::ALL.len()];
    for stack in stacks {
        let category = categorizer.categorize(stack.context, &stack.frames);
        counts[stack.context as usize][category as usize] += stack.count;
    }
    SampleContext::ALL
        .into_iter()
        .zip(counts)
        .filter_map(|(context, by_category)| {
            let time = events.get(&context.event());
            let total_ns = time.map_or(0, |t| t.total_ns);
            // An estimate made from these very samples agrees by
            // construction: only exact time can say how well they agree.
            let exact = time.is_some_and(|t| !t.estimated);
            let agreement_hz = if exact { frequency_hz } else { 0 };
            breakdown(context, &by_category, total_ns, agreement_hz)
        })
        .collect()
}

/// `agreement_hz`: the sampling frequency to judge the samples' agreement
/// with `total_ns` by, or 0 when that time is no measurement to agree with.
fn breakdown(
    context: SampleContext,
    by_category: &[u64],
    total_ns: u64,
    agreement_hz: u64,
) -> Option<Breakdown> {
    let samples: u64 = by_category.iter().sum();
    if samples == 0 {
        return None;
    }
    let agreement = (total_ns > 0 && agreement_hz > 0)
        .then(|| samples as f64 * 1e9 / agreement_hz as f64 / total_ns as f64);
    let mut parts: Vec<(Category, u64)> = Category::ALL
        .into_iter()
        .zip(by_category.iter().copied())
        .filter(|&(_, n)| n > 0)
        .collect();
    parts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.name().cmp(b.0.name())));
    let counts: Vec<u64> = parts.iter().map(|&(_, n)| n).collect();
    let cpu_ns = split_ns(total_ns, &counts);
    let categories = parts
        .iter()
        .zip(cpu_ns)
        .map(|(&(category, n), cpu_ns)| CategoryShare {
            category: category.name().to_owned(),
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
