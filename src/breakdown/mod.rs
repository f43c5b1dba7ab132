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
mod tests {
    use super::Category::*;
    use super::*;

    fn with(outer: &[&'static str], inner: &[&'static str]) -> Vec<&'static str> {
        outer.iter().chain(inner).copied().collect()
    }

    /// NET_RX run inline by a sender's `local_bh_enable`, as veth does.
    const VETH_SOFTIRQ: &[&str] = &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_sendto",
        "__sys_sendto",
        "tcp_sendmsg",
        "tcp_sendmsg_locked",
        "__tcp_push_pending_frames",
        "tcp_write_xmit",
        "__tcp_transmit_skb",
        "__ip_queue_xmit",
        "ip_finish_output2",
        "__dev_queue_xmit",
        "__local_bh_enable_ip",
        "do_softirq.part.0",
        "__do_softirq",
        "handle_softirqs",
        "net_rx_action",
        "__napi_poll",
        "process_backlog",
        "__netif_receive_skb",
        "__netif_receive_skb_one_core",
    ];
    const IPV4_LOCAL: &[&str] = &[
        "ip_rcv",
        "ip_rcv_finish",
        "ip_local_deliver",
        "ip_local_deliver_finish",
        "ip_protocol_deliver_rcu",
    ];

    #[test]
    fn local_tcp_delivery_over_veth() {
        let rx = with(VETH_SOFTIRQ, IPV4_LOCAL);
        let tcp = with(
            &rx,
            &["tcp_v4_rcv", "__inet_lookup_established", "inet_ehashfn"],
        );
        assert_eq!(categorize(&tcp), LocalTcp);
        let ack = with(
            &rx,
            &[
                "tcp_v4_rcv",
                "tcp_v4_do_rcv",
                "tcp_rcv_established",
                "tcp_ack.isra.0",
                "tcp_clean_rtx_queue.constprop.0",
                "kfree_skb_reason",
            ],
        );
        assert_eq!(categorize(&ack), LocalTcp);
        let wakeup = with(
            &rx,
            &[
                "tcp_v4_rcv",
                "tcp_v4_do_rcv",
                "tcp_rcv_established",
                "tcp_data_queue",
                "tcp_data_ready",
                "sock_def_readable",
                "__wake_up_sync_key",
                "__wake_up_common",
                "ep_autoremove_wake_function",
                "try_to_wake_up",
                "_raw_spin_unlock_irqrestore",
            ],
        );
        assert_eq!(categorize(&wakeup), SocketEnqueueWakeup);
        let ack = with(
            &rx,
            &[
                "tcp_v4_rcv",
                "tcp_v4_do_rcv",
                "tcp_rcv_established",
                "__tcp_send_ack",
                "__tcp_transmit_skb",
                "__ip_queue_xmit",
                "ip_local_out",
                "ip_output",
                "ip_finish_output2",
                "__dev_queue_xmit",
                "dev_hard_start_xmit",
                "veth_xmit",
            ],
        );
        assert_eq!(categorize(&ack), LocalTcp, "the ACK a receive sends");
        assert_eq!(
            categorize(&with(VETH_SOFTIRQ, &["ip_rcv", "ip_rcv_core"])),
            IpReceive
        );
        assert_eq!(
            categorize(&with(
                VETH_SOFTIRQ,
                &["ip_rcv", "ip_rcv_finish", "ip_local_deliver"]
            )),
            LocalOther
        );
        assert_eq!(categorize(&VETH_SOFTIRQ[..19]), DriverNapi);
        assert_eq!(categorize(VETH_SOFTIRQ), NetifReceive);
        // The sender's own part of the stack, when the leaf is there; the
        // softirq loop itself belongs to neither side.
        assert_eq!(categorize(&VETH_SOFTIRQ[..16]), Other);
        assert_eq!(categorize(&VETH_SOFTIRQ[..8]), TcpOutput);
        assert_eq!(categorize(&VETH_SOFTIRQ[..12]), DevXmit);
    }

    #[test]
    fn udp_and_icmp_delivery() {
        let rx = with(VETH_SOFTIRQ, IPV4_LOCAL);
        assert_eq!(
            categorize(&with(
                &rx,
                &[
                    "udp_rcv",
                    "__udp4_lib_rcv",
                    "__udp4_lib_lookup",
                    "udp4_lib_lookup2"
                ]
            )),
            LocalUdp
        );
        assert_eq!(
            categorize(&with(
                &rx,
                &[
                    "udp_rcv",
                    "__udp4_lib_rcv",
                    "udp_unicast_rcv_skb",
                    "udp_queue_rcv_one_skb",
                    "__udp_queue_rcv_skb",
                    "__udp_enqueue_schedule_skb",
                    "_raw_spin_lock"
                ]
            )),
            SocketEnqueueWakeup
        );
        assert_eq!(
            categorize(&with(
                &rx,
                &[
                    "icmp_rcv",
                    "icmp_echo",
                    "icmp_reply",
                    "ip_push_pending_frames",
                    "ip_send_skb",
                    "ip_local_out",
                    "ip_output"
                ]
            )),
            LocalIcmp,
            "sending the echo reply is part of answering it"
        );
        assert_eq!(
            categorize(&with(&rx, &["icmp_rcv", "icmp_echo"])),
            LocalIcmp
        );
        let v6 = with(
            VETH_SOFTIRQ,
            &[
                "ipv6_rcv",
                "ip6_rcv_finish",
                "ip6_input",
                "ip6_input_finish",
                "ip6_protocol_deliver_rcu",
            ],
        );
        assert_eq!(
            categorize(&with(&v6, &["udpv6_rcv", "__udp6_lib_rcv"])),
            LocalUdp
        );
        assert_eq!(categorize(&with(&v6, &["tcp_v6_rcv"])), LocalTcp);
        assert_eq!(
            categorize(&with(&v6, &["icmpv6_rcv", "icmpv6_echo_reply"])),
            LocalIcmp
        );
    }

    /// veth (namespace A) -> br0 -> veth (namespace B).
    const BRIDGED: &[&str] = &[
        "ret_from_fork_asm",
        "ret_from_fork",
        "kthread",
        "smpboot_thread_fn",
        "run_ksoftirqd",
        "handle_softirqs",
        "net_rx_action",
        "__napi_poll",
        "process_backlog",
        "__netif_receive_skb",
        "__netif_receive_skb_one_core",
        "__netif_receive_skb_core.constprop.0",
        "br_handle_frame",
        "br_handle_frame_finish",
    ];

    #[test]
    fn bridge_between_two_namespaces() {
        assert_eq!(categorize(&with(BRIDGED, &["br_fdb_find_rcu"])), Bridge);
        let forward = with(
            BRIDGED,
            &[
                "br_forward",
                "__br_forward",
                "br_forward_finish",
                "br_dev_queue_push_xmit",
            ],
        );
        assert_eq!(categorize(&forward), Bridge);
        let xmit = with(
            &forward,
            &[
                "__dev_queue_xmit",
                "dev_hard_start_xmit",
                "veth_xmit",
                "veth_forward_skb",
                "__netif_rx",
                "netif_rx_internal",
                "enqueue_to_backlog",
                "_raw_spin_lock",
            ],
        );
        assert_eq!(categorize(&xmit), Bridge, "transmit to the other port");
        assert_eq!(categorize(&BRIDGED[..12]), NetifReceive);
        // Up to the bridge's own address: local delivery wins.
        let up = with(
            BRIDGED,
            &[
                "br_pass_frame_up",
                "br_netif_receive_skb",
                "netif_receive_skb",
                "__netif_receive_skb",
                "__netif_receive_skb_one_core",
                "ip_rcv",
                "ip_rcv_finish",
                "ip_local_deliver",
                "ip_local_deliver_finish",
                "ip_protocol_deliver_rcu",
                "tcp_v4_rcv",
            ],
        );
        assert_eq!(categorize(&up), LocalTcp);
    }

    #[test]
    fn bridge_netfilter_takes_the_bridge_hook() {
        let pre = with(
            &BRIDGED[..13],
            &[
                "nf_hook_slow",
                "br_nf_pre_routing",
                "nf_hook_slow",
                "nft_do_chain_inet",
                "nft_do_chain",
                "nft_meta_get_eval",
            ],
        );
        assert_eq!(categorize(&pre), NetfilterPrerouting);
        let fwd = with(
            BRIDGED,
            &[
                "br_forward",
                "__br_forward",
                "nf_hook_slow",
                "br_nf_forward_ip",
                "nf_hook_slow",
                "nft_do_chain",
            ],
        );
        assert_eq!(categorize(&fwd), NetfilterForward);
    }

    /// A router: received on one interface, forwarded out of another.
    const ROUTED: &[&str] = &[
        "net_rx_action",
        "__napi_poll",
        "virtnet_poll",
        "virtnet_receive",
        "receive_buf",
        "napi_gro_receive",
        "gro_normal_one",
        "gro_normal_list",
        "netif_receive_skb_list_internal",
        "__netif_receive_skb_list_core",
        "ip_list_rcv",
        "ip_sublist_rcv",
        "ip_list_rcv_finish.constprop.0",
        "ip_sublist_rcv_finish",
    ];

    #[test]
    fn router_forwarding() {
        assert_eq!(
            categorize(&with(
                ROUTED,
                &["ip_forward", "skb_cow", "pskb_expand_head"]
            )),
            Ipv4Forward
        );
        assert_eq!(
            categorize(&with(ROUTED, &["ip_forward", "ip_forward_finish"])),
            Ipv4Forward
        );
        let route = &[
            "__netif_receive_skb_one_core",
            "ip_rcv",
            "ip_rcv_finish",
            "ip_rcv_finish_core.constprop.0",
            "ip_route_input_noref",
            "ip_route_input_slow",
            "fib_table_lookup",
        ];
        assert_eq!(categorize(route), IpReceive);
        let out = with(
            ROUTED,
            &[
                "ip_forward",
                "ip_forward_finish",
                "ip_output",
                "ip_finish_output",
                "__ip_finish_output",
                "ip_finish_output2",
                "neigh_hh_output",
            ],
        );
        assert_eq!(categorize(&out), Ipv4Forward, "sending the packet on");
        let xmit = with(
            &out,
            &["__dev_queue_xmit", "dev_hard_start_xmit", "veth_xmit"],
        );
        assert_eq!(categorize(&xmit), Ipv4Forward);
        let postrouting = with(&out[..out.len() - 4], &["nf_hook_slow", "nft_do_chain"]);
        assert_eq!(categorize(&postrouting), NetfilterPostrouting);
        let v6 = &[
            "__netif_receive_skb_one_core",
            "ipv6_rcv",
            "ip6_rcv_finish",
            "ip6_forward",
            "ip6_dst_mtu_maybe_forward",
        ];
        assert_eq!(categorize(v6), Ipv6Forward);
        let v6_route = &[
            "ipv6_rcv",
            "ip6_rcv_finish",
            "ip6_route_input",
            "ip6_route_input_lookup",
            "fib6_table_lookup",
        ];
        assert_eq!(categorize(v6_route), IpReceive);
    }

    #[test]
    fn conntrack_and_netfilter_by_hook() {
        let rcv = with(VETH_SOFTIRQ, &["ip_rcv"]);
        let ct = with(
            &rcv,
            &[
                "nf_hook_slow",
                "ipv4_conntrack_in",
                "nf_conntrack_in",
                "__nf_conntrack_find_get",
            ],
        );
        assert_eq!(categorize(&ct), Conntrack);
        let pre = with(
            &rcv,
            &[
                "nf_hook_slow",
                "nft_do_chain_ipv4",
                "nft_do_chain",
                "nft_immediate_eval",
            ],
        );
        assert_eq!(categorize(&pre), NetfilterPrerouting);
        let input = with(
            &rcv,
            &[
                "ip_rcv_finish",
                "ip_local_deliver",
                "nf_hook_slow",
                "nft_do_chain_ipv4",
                "nft_do_chain",
            ],
        );
        assert_eq!(categorize(&input), NetfilterInput);
        let forward = with(
            &rcv,
            &[
                "ip_rcv_finish",
                "ip_forward",
                "nf_hook_slow",
                "nft_do_chain",
            ],
        );
        assert_eq!(categorize(&forward), NetfilterForward);
        let send = &[
            "tcp_sendmsg_locked",
            "tcp_write_xmit",
            "__tcp_transmit_skb",
            "__ip_queue_xmit",
            "__ip_local_out",
            "nf_hook_slow",
            "nft_do_chain",
        ];
        assert_eq!(categorize(send), NetfilterOutput);
        let nat = &[
            "__ip_queue_xmit",
            "ip_local_out",
            "ip_output",
            "nf_hook_slow",
            "nf_nat_ipv4_out",
            "nf_nat_inet_fn",
            "nf_nat_packet",
        ];
        assert_eq!(categorize(nat), NetfilterPostrouting);
        let confirm = &[
            "__ip_queue_xmit",
            "ip_local_out",
            "ip_output",
            "nf_hook_slow",
            "ipv4_confirm",
            "__nf_conntrack_confirm",
        ];
        assert_eq!(categorize(confirm), Conntrack);
        // The ingress hook of a softirq run inline under `ip_output` is not
        // POSTROUTING: the walk stops at the receive path.
        let ingress = &[
            "ip_output",
            "ip_finish_output2",
            "__dev_queue_xmit",
            "__local_bh_enable_ip",
            "do_softirq",
            "net_rx_action",
            "__napi_poll",
            "process_backlog",
            "__netif_receive_skb_core.constprop.0",
            "nf_hook_slow",
            "nft_do_chain",
        ];
        assert_eq!(categorize(ingress), NetfilterOther);
        assert_eq!(categorize(&["nf_hook_slow"]), NetfilterOther);
        let v6 = &["ipv6_rcv", "nf_hook_slow", "nft_do_chain"];
        assert_eq!(categorize(v6), NetfilterPrerouting);
        let v6_in = &[
            "ip6_rcv_finish",
            "ip6_input",
            "nf_hook_slow",
            "nft_do_chain",
        ];
        assert_eq!(categorize(v6_in), NetfilterInput);
        let v6_out = &["inet6_csk_xmit", "ip6_xmit", "nf_hook_slow", "nft_do_chain"];
        assert_eq!(categorize(v6_out), NetfilterOutput);
    }

    #[test]
    fn gro() {
        let gro = &[
            "net_rx_action",
            "__napi_poll",
            "virtnet_poll",
            "virtnet_receive",
            "receive_buf",
            "napi_gro_receive",
            "dev_gro_receive",
            "inet_gro_receive",
            "tcp4_gro_receive",
            "tcp_gro_receive",
            "skb_gro_receive",
        ];
        assert_eq!(categorize(gro), Gro);
        let veth = &[
            "net_rx_action",
            "__napi_poll",
            "veth_poll",
            "veth_xdp_rcv",
            "napi_gro_receive",
            "dev_gro_receive",
            "__memcmp",
        ];
        assert_eq!(categorize(veth), Gro);
        let flushed = with(
            ROUTED,
            &[
                "ip_local_deliver",
                "ip_local_deliver_finish",
                "ip_protocol_deliver_rcu",
                "tcp_v4_rcv",
            ],
        );
        assert_eq!(categorize(&flushed), LocalTcp);
        assert_eq!(
            categorize(&[
                "net_rx_action",
                "__napi_poll",
                "virtnet_poll",
                "virtnet_receive",
                "receive_buf",
                "page_to_skb"
            ]),
            DriverNapi
        );
    }

    #[test]
    fn xdp_generic_and_native() {
        let generic = &[
            "net_rx_action",
            "__napi_poll",
            "process_backlog",
            "__netif_receive_skb",
            "__netif_receive_skb_one_core",
            "__netif_receive_skb_core.constprop.0",
            "do_xdp_generic",
            "bpf_prog_run_generic_xdp",
            "xdp_pass_prog",
        ];
        assert_eq!(categorize(generic), Xdp);
        let veth = &[
            "net_rx_action",
            "__napi_poll",
            "veth_poll",
            "veth_xdp_rcv",
            "veth_xdp_rcv_skb",
            "xdp_drop_prog",
        ];
        assert_eq!(categorize(veth), Xdp);
        let redirect = &[
            "veth_poll",
            "veth_xdp_rcv",
            "veth_xdp_rcv_skb",
            "my_redirect_prog",
            "bpf_xdp_redirect_map",
            "__xdp_do_redirect_frame",
        ];
        assert_eq!(categorize(redirect), Xdp);
        let no_program = &[
            "net_rx_action",
            "__napi_poll",
            "veth_poll",
            "veth_xdp_rcv",
            "__ptr_ring_consume",
        ];
        assert_eq!(categorize(no_program), DriverNapi);
        let sketch = &[
            "veth_poll",
            "veth_xdp_rcv",
            "veth_xdp_rcv_skb",
            "netto_sketch_11",
        ];
        assert_eq!(categorize(sketch), XdpSketch);
        let sketch_generic = &[
            "do_xdp_generic",
            "bpf_prog_run_generic_xdp",
            "netto_sketch_8",
        ];
        assert_eq!(categorize(sketch_generic), XdpSketch);
    }

    #[test]
    fn transmit_and_socket_calls() {
        let tx = &[
            "handle_softirqs",
            "net_tx_action",
            "__qdisc_run",
            "sch_direct_xmit",
            "dev_hard_start_xmit",
            "start_xmit",
            "xmit_skb",
        ];
        assert_eq!(categorize(tx), DevXmit);
        assert_eq!(
            categorize(&["net_tx_action", "__qdisc_run", "pfifo_fast_dequeue"]),
            Qdisc
        );
        assert_eq!(
            categorize(&[
                "__dev_queue_xmit",
                "sch_handle_egress",
                "tcf_classify",
                "cls_bpf_classify",
                "egress_prog"
            ]),
            Tc
        );
        let recv = &[
            "entry_SYSCALL_64_after_hwframe",
            "do_syscall_64",
            "__x64_sys_recvfrom",
            "__sys_recvfrom",
            "sock_recvmsg",
            "inet_recvmsg",
            "tcp_recvmsg",
            "tcp_recvmsg_locked",
            "skb_copy_datagram_iter",
            "__skb_datagram_iter",
            "_copy_to_iter",
            "rep_movs_alternative",
        ];
        assert_eq!(categorize(recv), CopyUser);
        assert_eq!(categorize(&recv[..8]), SocketRecv);
        assert_eq!(
            categorize(&with(
                &recv[..8],
                &[
                    "release_sock",
                    "__release_sock",
                    "tcp_v4_do_rcv",
                    "tcp_rcv_established"
                ]
            )),
            LocalTcp
        );
        let udp = &[
            "__x64_sys_sendto",
            "__sys_sendto",
            "udp_sendmsg",
            "udp_send_skb",
            "ip_send_skb",
            "ip_local_out",
            "ip_output",
            "ip_finish_output2",
            "__dev_queue_xmit",
            "validate_xmit_skb",
        ];
        assert_eq!(categorize(udp), DevXmit);
        assert_eq!(categorize(&udp[..4]), UdpOutput);
        assert_eq!(
            categorize(&["__x64_sys_sendmsg", "__sys_sendmsg", "___sys_sendmsg"]),
            SocketSend
        );
        assert_eq!(
            categorize(&["__x64_sys_write", "ksys_write", "vfs_write"]),
            SocketSend
        );
    }

    /// BBR pacing through veth, as sampled in `net_timers` on 6.18.
    const PACING: &[&str] = &[
        "asm_sysvec_apic_timer_interrupt",
        "sysvec_apic_timer_interrupt",
        "__irq_exit_rcu",
        "handle_softirqs",
        "hrtimer_run_softirq",
        "__hrtimer_run_queues",
        "tcp_pace_kick",
        "tcp_tsq_handler",
        "tcp_write_xmit",
        "__tcp_transmit_skb",
        "__ip_queue_xmit",
        "ip_finish_output2",
        "__dev_queue_xmit",
        "dev_hard_start_xmit",
        "veth_xmit",
    ];

    #[test]
    fn network_timers_by_what_they_do() {
        let mut categorizer = Categorizer::default();
        let mut timers = |frames: &[&str]| categorizer.categorize(SampleContext::NetTimers, frames);
        assert_eq!(
            timers(PACING),
            TcpPacing,
            "the paced transmit, device included"
        );
        assert_eq!(timers(&PACING[..7]), TcpPacing);
        assert_eq!(timers(&PACING[..6]), TimerSoftirq, "the expiry loop");
        assert_eq!(
            timers(&[
                "handle_softirqs",
                "hrtimer_run_softirq",
                "hrtimer_update_softirq_timer",
                "tick_program_event",
                "lapic_next_deadline"
            ]),
            TimerSoftirq,
            "reprogramming the timer hardware"
        );
        // The end of hrtimer_run_softirq, called as a tail call: no frame
        // of it is left, the context says it.
        let tail = ["handle_softirqs", "_raw_spin_unlock_irqrestore"];
        assert_eq!(timers(&tail), TimerSoftirq);
        assert_eq!(categorize(&tail), Other);
        let timer_list = |callback: &'static str, inner: &[&'static str]| {
            with(
                &[
                    "handle_softirqs",
                    "run_timer_softirq",
                    "__run_timers",
                    "call_timer_fn",
                    callback,
                ],
                inner,
            )
        };
        let rto = timer_list(
            "tcp_write_timer",
            &[
                "tcp_write_timer_handler",
                "tcp_retransmit_timer",
                "tcp_retransmit_skb",
            ],
        );
        assert_eq!(timers(&rto), TcpRetransmitTimer);
        let delack = timer_list(
            "tcp_delack_timer",
            &[
                "tcp_delack_timer_handler",
                "__tcp_send_ack",
                "__tcp_transmit_skb",
            ],
        );
        assert_eq!(timers(&delack), TcpAckTimer);
        assert_eq!(
            timers(&timer_list("tcp_keepalive_timer", &["tcp_set_state"])),
            TcpConnectionTimer
        );
        let tsq = [
            "handle_softirqs",
            "workqueue_softirq_action",
            "bh_worker",
            "process_one_work",
            "tcp_tsq_workfn",
            "tcp_tsq_handler",
            "tcp_write_xmit",
        ];
        assert_eq!(timers(&tsq), TcpSmallQueues);
        assert_eq!(
            timers(&[
                "hrtimer_run_softirq",
                "__hrtimer_run_queues",
                "qdisc_watchdog",
                "__netif_schedule"
            ]),
            QdiscWatchdog
        );
        // A deferred retransmit run by the socket's owner is the timer's
        // work, in a send call too.
        let owner = [
            "__sys_sendto",
            "tcp_sendmsg",
            "release_sock",
            "tcp_release_cb",
            "tcp_write_timer_handler",
            "tcp_retransmit_timer",
        ];
        assert_eq!(categorize(&owner), TcpRetransmitTimer);
    }

    #[test]
    fn nettos_own_programs_are_netto() {
        let exit = with(
            VETH_SOFTIRQ,
            &[
                "bpf_trace_run1",
                "netto_softirq_exit",
                "ktime_get_mono_fast_ns",
                "read_tsc",
            ],
        );
        assert_eq!(categorize(&exit), Netto);
        assert_eq!(
            categorize(&["do_syscall_64", "bpf_trace_run2", "netto_sys_enter"]),
            Netto
        );
        // The sketch is measured apart.
        assert_eq!(
            categorize(&["veth_xdp_rcv_skb", "netto_sketch_15"]),
            XdpSketch
        );
    }

    #[test]
    fn socket_call_samples_in_the_softirq_loop_are_left_out() {
        let top_of_loop = [
            "entry_SYSCALL_64_after_hwframe",
            "do_syscall_64",
            "ksys_read",
            "sock_read_iter",
            "tcp_recvmsg_locked",
            "asm_sysvec_apic_timer_interrupt",
            "sysvec_apic_timer_interrupt",
            "__irq_exit_rcu",
            "handle_softirqs",
        ];
        let older_kernel = ["__sys_sendto", "irq_exit_rcu", "__do_softirq.part.0"];
        let mut stacks = vec![
            StackCount::of(SampleContext::SockRecv, &top_of_loop, 5),
            StackCount::of(SampleContext::SockRecv, &top_of_loop[..5], 7),
            StackCount::of(SampleContext::SockSend, &older_kernel, 2),
            // Softirq and timer samples are in the loop by nature.
            StackCount::of(SampleContext::NetRx, VETH_SOFTIRQ, 3),
            StackCount::of(SampleContext::NetTimers, PACING, 4),
        ];
        assert_eq!(leave_out_softirq_loop(&mut stacks), 7);
        let kept: Vec<(SampleContext, u64)> = stacks.iter().map(|s| (s.context, s.count)).collect();
        assert_eq!(
            kept,
            [
                (SampleContext::SockRecv, 7),
                (SampleContext::NetRx, 3),
                (SampleContext::NetTimers, 4)
            ]
        );
    }

    #[test]
    fn nothing_known_is_other() {
        assert_eq!(categorize(&[]), Other);
        assert_eq!(categorize(&["[unknown]", "[unknown]"]), Other);
        assert_eq!(
            categorize(&["do_idle", "cpuidle_enter", "[unknown]"]),
            Other
        );
    }

    #[test]
    fn names_are_stable_and_distinct() {
        let names: std::collections::HashSet<_> = Category::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names.len(), Category::ALL.len());
        for (i, c) in Category::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i, "ALL is in declaration order");
            assert!(c
                .name()
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_digit()));
        }
    }

    fn events(ns: &[(EventKey, u64)]) -> BTreeMap<EventKey, CpuTime> {
        ns.iter()
            .map(|&(key, total_ns)| {
                (
                    key,
                    CpuTime {
                        total_ns,
                        per_cpu_ns: vec![total_ns],
                        count: 1,
                        ..CpuTime::default()
                    },
                )
            })
            .collect()
    }

    #[test]
    fn breakdown_divides_the_exact_time() {
        let stacks = [
            StackCount::of(SampleContext::NetRx, &["net_rx_action", "tcp_v4_rcv"], 2),
            StackCount::of(
                SampleContext::NetRx,
                &["net_rx_action", "tcp_v6_rcv", "memcpy"],
                1,
            ),
            StackCount::of(
                SampleContext::NetRx,
                &["net_rx_action", "napi_gro_receive"],
                1,
            ),
            StackCount::of(SampleContext::NetRx, &["[unknown]"], 2),
            StackCount::of(SampleContext::SockRecv, &["tcp_recvmsg"], 5),
        ];
        // 1 MHz: a sample stands for 1000 ns.
        let got = breakdowns(
            &stacks,
            &events(&[(EventKey::NetRxSoftirq, 1_000), (EventKey::SockRecv, 7)]),
            1_000_000,
        );
        assert_eq!(got.len(), 2);
        let rx = &got[0];
        assert_eq!((rx.context, rx.samples), (SampleContext::NetRx, 6));
        assert_eq!(rx.agreement, Some(6.0));
        let names: Vec<&str> = rx.categories.iter().map(|c| c.category.as_str()).collect();
        // Most samples first; ties by name.
        assert_eq!(names, ["local_tcp", "other", "gro"]);
        let samples: Vec<u64> = rx.categories.iter().map(|c| c.samples).collect();
        assert_eq!(samples, [3, 2, 1]);
        assert_eq!(rx.categories.iter().map(|c| c.cpu_ns).sum::<u64>(), 1_000);
        assert_eq!(
            rx.categories.iter().map(|c| c.cpu_ns).collect::<Vec<_>>(),
            [500, 333, 167]
        );
        assert!((rx.categories.iter().map(|c| c.share).sum::<f64>() - 1.0).abs() < 1e-12);
        let recv = &got[1];
        assert_eq!(recv.context, SampleContext::SockRecv);
        assert_eq!(recv.categories.len(), 1);
        assert_eq!(
            (recv.categories[0].share, recv.categories[0].cpu_ns),
            (1.0, 7)
        );
    }

    #[test]
    fn breakdown_without_event_time_or_samples() {
        let stacks = [StackCount::of(SampleContext::NetTx, &["net_tx_action"], 3)];
        let got = breakdowns(&stacks, &BTreeMap::new(), 99);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].categories[0].cpu_ns, 0);
        assert_eq!(got[0].agreement, None, "no time to agree with");
        assert!(breakdowns(&[], &events(&[(EventKey::NetRxSoftirq, 5)]), 99).is_empty());
    }

    #[test]
    fn split_adds_up_exactly() {
        for (total, counts) in [
            (1_000u64, vec![1u64, 1, 1]),
            (7, vec![3, 3, 3]),
            (u64::MAX, vec![u64::MAX, 1, 7]),
            (0, vec![1, 2]),
            (999_999_937, vec![17, 1, 1, 1, 5, 90_210]),
        ] {
            let split = split_ns(total, &counts);
            assert_eq!(
                split.iter().map(|&n| u128::from(n)).sum::<u128>(),
                u128::from(total)
            );
        }
        assert_eq!(split_ns(7, &[3, 3, 3]), [3, 2, 2]);
    }
}
