//! The categorization table: which kernel function marks which stage of
//! the network stack. Data, not code, so adding a driver or a kernel
//! version's renamed function is one row.
//!
//! Which of a stack's matching frames decides is the breakdown module's
//! precedence rule (see [`super`]); this table says what one frame means:
//!
//! 1. An exact row beats every pattern row; pattern rows are tried in table
//!    order, so narrow patterns (`br_nf_`) precede broad ones (`br_`).
//! 2. An [`Action::Netfilter`] frame takes its hook from [`HOOKS`]: the
//!    nearest frame at or outside it that runs a netfilter hook inline
//!    (`ip_rcv` runs PREROUTING, `ip_local_deliver` INPUT, `ip_forward`
//!    FORWARD, `__ip_local_out` OUTPUT, `ip_output` POSTROUTING, and the
//!    bridge's own hooks alike). The walk passes frames no row matches and
//!    other netfilter frames, but stops at a frame of any other stage: a
//!    hook below `__netif_receive_skb_core` is the netdev ingress hook even
//!    when a softirq ran inline under `ip_output`, so it is
//!    `netfilter_other`, not POSTROUTING.
//! 3. Rows mapping to `other` are boundaries (the softirq machinery).
//!
//! Functions not listed inherit the stage of the nearest listed caller:
//! allocation, copies inside a stage, locks, checksums, NAT inside a hook.
//! BPF programs appear under their own name, which no row can know: the
//! categorizer learns which names are programs from a snapshot's
//! `modules` (module `bpf`), and each is a stage of its own
//! ([`super::Stage::Program`]). netto's own programs are the exception,
//! known by name (`netto_`, `netto_sketch_`). `lookup.rs` indexes the
//! tables and looks frames up in them.

mod lookup;

use super::Category::{self, *};
use crate::model::SampleContext;
pub use lookup::{action, hook, is_skid};

/// How a row recognises a function name.
#[derive(Debug, Clone, Copy)]
pub enum Pattern {
    Exact(&'static str),
    Prefix(&'static str),
    Suffix(&'static str),
    Contains(&'static str),
}

impl Pattern {
    pub fn matches(self, name: &str) -> bool {
        match self {
            Pattern::Exact(p) => name == p,
            Pattern::Prefix(p) => name.starts_with(p),
            Pattern::Suffix(p) => name.ends_with(p),
            Pattern::Contains(p) => name.contains(p),
        }
    }

    #[cfg(test)]
    fn text(self) -> &'static str {
        match self {
            Pattern::Exact(p) | Pattern::Prefix(p) | Pattern::Suffix(p) | Pattern::Contains(p) => p,
        }
    }
}

/// What a matching frame means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Is(Category),
    /// Netfilter machinery; the hook comes from the callers (rule 2).
    Netfilter,
    /// A BPF program that is not netto's: no row names it; the
    /// categorizer knows it from the snapshot's modules.
    Program,
}

use Action::{Is, Netfilter};
use Pattern::{Contains, Exact, Prefix, Suffix};

/// Pattern -> stage. Exact names first, grouped by stage; then patterns,
/// narrow before broad.
#[rustfmt::skip]
pub static RULES: &[(Pattern, Action)] = &[
    // Driver and NAPI polling.
    (Exact("net_rx_action"), Is(DriverNapi)),
    (Exact("__napi_poll"), Is(DriverNapi)),
    (Exact("napi_poll"), Is(DriverNapi)),
    (Exact("napi_threaded_poll_loop"), Is(DriverNapi)),
    (Exact("process_backlog"), Is(DriverNapi)),
    (Exact("napi_complete_done"), Is(DriverNapi)),
    (Exact("napi_busy_loop"), Is(DriverNapi)),
    (Exact("__napi_busy_loop"), Is(DriverNapi)),
    (Exact("veth_poll"), Is(DriverNapi)),
    // veth's receive loop, run with and without an XDP program.
    (Exact("veth_xdp_rcv"), Is(DriverNapi)),
    (Exact("virtnet_poll"), Is(DriverNapi)),
    (Exact("virtnet_receive"), Is(DriverNapi)),
    // XDP: generic (skb) and native runners, redirect.
    (Exact("do_xdp_generic"), Is(Xdp)),
    (Exact("netif_receive_generic_xdp"), Is(Xdp)),
    (Exact("bpf_prog_run_generic_xdp"), Is(Xdp)),
    (Exact("bpf_prog_run_xdp"), Is(Xdp)),
    (Exact("generic_xdp_tx"), Is(Xdp)),
    (Exact("veth_xdp_rcv_skb"), Is(Xdp)),
    (Exact("veth_xdp_rcv_one"), Is(Xdp)),
    (Exact("virtnet_xdp_handler"), Is(Xdp)),
    // netto's XDP sketch, named as the symbolizer names BPF programs: one
    // program per column count, netto_sketch_4 to netto_sketch_15
    // (sketch::program::PROGRAM).
    (Prefix("netto_sketch_"), Is(XdpSketch)),
    // Entering BPF programs: the XDP dispatcher (its kernel stub and its
    // image), trampolines (fentry, fexit, freplace) and the runners of
    // cgroup programs. A program they enter is its own stage, nearer the
    // leaf; the programs themselves are known by their module, not here
    // (`super::Categorizer::learn_programs`).
    (Prefix("bpf_dispatcher_"), Is(BpfDispatch)),
    (Prefix("bpf_trampoline_"), Is(BpfDispatch)),
    (Prefix("__cgroup_bpf_run_filter_"), Is(BpfDispatch)),
    // GRO.
    (Exact("napi_gro_receive"), Is(Gro)),
    (Exact("dev_gro_receive"), Is(Gro)),
    (Exact("napi_skb_finish"), Is(Gro)),
    (Exact("skb_gro_receive"), Is(Gro)),
    // Core receive: packet type dispatch, taps, RPS.
    (Exact("__netif_receive_skb"), Is(NetifReceive)),
    (Exact("__netif_receive_skb_core"), Is(NetifReceive)),
    (Exact("__netif_receive_skb_one_core"), Is(NetifReceive)),
    (Exact("__netif_receive_skb_list_core"), Is(NetifReceive)),
    (Exact("netif_receive_skb"), Is(NetifReceive)),
    (Exact("netif_receive_skb_core"), Is(NetifReceive)),
    (Exact("netif_receive_skb_list_internal"), Is(NetifReceive)),
    (Exact("netif_receive_skb_list"), Is(NetifReceive)),
    // tc ingress/egress and tcx.
    (Exact("sch_handle_ingress"), Is(Tc)),
    (Exact("sch_handle_egress"), Is(Tc)),
    (Exact("tc_run"), Is(Tc)),
    (Exact("cls_bpf_classify"), Is(Tc)),
    // Netfilter hook machinery and rule evaluation.
    (Exact("nf_hook_slow"), Netfilter),
    (Exact("nf_hook_slow_list"), Netfilter),
    (Exact("nf_hook"), Netfilter),
    (Exact("ipt_do_table"), Netfilter),
    (Exact("ip6t_do_table"), Netfilter),
    (Exact("ebt_do_table"), Netfilter),
    (Exact("arpt_do_table"), Netfilter),
    // Connection tracking.
    (Exact("nf_confirm"), Is(Conntrack)),
    (Exact("ipv4_confirm"), Is(Conntrack)),
    (Exact("ipv6_confirm"), Is(Conntrack)),
    // IP receive: header checks and the route lookup that decides between
    // forwarding and local delivery.
    (Exact("ip_rcv"), Is(IpReceive)),
    (Exact("ip_rcv_core"), Is(IpReceive)),
    (Exact("ip_rcv_finish"), Is(IpReceive)),
    (Exact("ip_rcv_finish_core"), Is(IpReceive)),
    (Exact("ip_list_rcv"), Is(IpReceive)),
    (Exact("ip_list_rcv_finish"), Is(IpReceive)),
    (Exact("ip_sublist_rcv"), Is(IpReceive)),
    (Exact("ip_sublist_rcv_finish"), Is(IpReceive)),
    (Exact("ip_route_use_hint"), Is(IpReceive)),
    (Exact("ip_mkroute_input"), Is(IpReceive)),
    (Exact("ipv6_rcv"), Is(IpReceive)),
    (Exact("ip6_rcv_core"), Is(IpReceive)),
    (Exact("ip6_rcv_finish"), Is(IpReceive)),
    (Exact("ip6_rcv_finish_core"), Is(IpReceive)),
    (Exact("ipv6_list_rcv"), Is(IpReceive)),
    (Exact("ip6_list_rcv_finish"), Is(IpReceive)),
    (Exact("ip6_sublist_rcv"), Is(IpReceive)),
    // Forwarding.
    (Exact("ip_forward"), Is(Ipv4Forward)),
    (Exact("ip_forward_finish"), Is(Ipv4Forward)),
    (Exact("ip_forward_options"), Is(Ipv4Forward)),
    (Exact("ip6_forward"), Is(Ipv6Forward)),
    (Exact("ip6_forward_finish"), Is(Ipv6Forward)),
    // Local delivery, by protocol.
    (Exact("tcp_v4_rcv"), Is(LocalTcp)),
    (Exact("tcp_v6_rcv"), Is(LocalTcp)),
    (Exact("tcp_v4_do_rcv"), Is(LocalTcp)),
    (Exact("tcp_v6_do_rcv"), Is(LocalTcp)),
    (Exact("tcp_v4_early_demux"), Is(LocalTcp)),
    (Exact("tcp_v6_early_demux"), Is(LocalTcp)),
    (Exact("tcp_rcv_established"), Is(LocalTcp)),
    (Exact("tcp_rcv_state_process"), Is(LocalTcp)),
    (Exact("tcp_add_backlog"), Is(LocalTcp)),
    (Exact("tcp_filter"), Is(LocalTcp)),
    (Exact("tcp_ack"), Is(LocalTcp)),
    (Exact("tcp_validate_incoming"), Is(LocalTcp)),
    (Exact("tcp_event_data_recv"), Is(LocalTcp)),
    (Exact("tcp_urg"), Is(LocalTcp)),
    (Exact("udp_rcv"), Is(LocalUdp)),
    (Exact("udp_unicast_rcv_skb"), Is(LocalUdp)),
    (Exact("udp_queue_rcv_skb"), Is(LocalUdp)),
    (Exact("udp_queue_rcv_one_skb"), Is(LocalUdp)),
    (Exact("udp_v4_early_demux"), Is(LocalUdp)),
    (Exact("udpv6_rcv"), Is(LocalUdp)),
    (Exact("udp6_unicast_rcv_skb"), Is(LocalUdp)),
    (Exact("udpv6_queue_rcv_skb"), Is(LocalUdp)),
    (Exact("udpv6_queue_rcv_one_skb"), Is(LocalUdp)),
    (Exact("udp_v6_early_demux"), Is(LocalUdp)),
    (Exact("icmp_rcv"), Is(LocalIcmp)),
    (Exact("icmp_echo"), Is(LocalIcmp)),
    (Exact("icmp_reply"), Is(LocalIcmp)),
    (Exact("icmpv6_rcv"), Is(LocalIcmp)),
    (Exact("icmpv6_echo_reply"), Is(LocalIcmp)),
    (Exact("ping_rcv"), Is(LocalIcmp)),
    (Exact("ip_local_deliver"), Is(LocalOther)),
    (Exact("ip_local_deliver_finish"), Is(LocalOther)),
    (Exact("ip_protocol_deliver_rcu"), Is(LocalOther)),
    (Exact("ip6_input"), Is(LocalOther)),
    (Exact("ip6_input_finish"), Is(LocalOther)),
    (Exact("ip6_protocol_deliver_rcu"), Is(LocalOther)),
    (Exact("raw_local_deliver"), Is(LocalOther)),
    (Exact("raw_rcv"), Is(LocalOther)),
    (Exact("igmp_rcv"), Is(LocalOther)),
    // Queueing to the socket and waking its reader.
    (Exact("tcp_data_queue"), Is(SocketEnqueueWakeup)),
    (Exact("tcp_queue_rcv"), Is(SocketEnqueueWakeup)),
    (Exact("tcp_ofo_queue"), Is(SocketEnqueueWakeup)),
    (Exact("tcp_data_ready"), Is(SocketEnqueueWakeup)),
    (Exact("sk_data_ready"), Is(SocketEnqueueWakeup)),
    (Exact("sock_def_readable"), Is(SocketEnqueueWakeup)),
    (Exact("sk_wake_async"), Is(SocketEnqueueWakeup)),
    (Exact("ep_poll_callback"), Is(SocketEnqueueWakeup)),
    (Exact("skb_queue_tail"), Is(SocketEnqueueWakeup)),
    (Exact("__udp_enqueue_schedule_skb"), Is(SocketEnqueueWakeup)),
    (Exact("__udp_queue_rcv_skb"), Is(SocketEnqueueWakeup)),
    (Exact("__udpv6_queue_rcv_skb"), Is(SocketEnqueueWakeup)),
    (Exact("sock_queue_rcv_skb_reason"), Is(SocketEnqueueWakeup)),
    (Exact("__sock_queue_rcv_skb"), Is(SocketEnqueueWakeup)),
    // Socket layer, system call side.
    (Exact("sock_sendmsg"), Is(SocketSend)),
    (Exact("__sock_sendmsg"), Is(SocketSend)),
    (Exact("sock_sendmsg_nosec"), Is(SocketSend)),
    (Exact("____sys_sendmsg"), Is(SocketSend)),
    (Exact("___sys_sendmsg"), Is(SocketSend)),
    (Exact("__sys_sendmsg"), Is(SocketSend)),
    (Exact("__sys_sendmmsg"), Is(SocketSend)),
    (Exact("__sys_sendto"), Is(SocketSend)),
    (Exact("inet_sendmsg"), Is(SocketSend)),
    (Exact("inet6_sendmsg"), Is(SocketSend)),
    (Exact("sock_write_iter"), Is(SocketSend)),
    (Exact("ksys_write"), Is(SocketSend)),
    (Exact("vfs_write"), Is(SocketSend)),
    (Exact("do_sendfile"), Is(SocketSend)),
    (Exact("sock_recvmsg"), Is(SocketRecv)),
    (Exact("sock_recvmsg_nosec"), Is(SocketRecv)),
    (Exact("____sys_recvmsg"), Is(SocketRecv)),
    (Exact("___sys_recvmsg"), Is(SocketRecv)),
    (Exact("__sys_recvmsg"), Is(SocketRecv)),
    (Exact("do_recvmmsg"), Is(SocketRecv)),
    (Exact("__sys_recvmmsg"), Is(SocketRecv)),
    (Exact("__sys_recvfrom"), Is(SocketRecv)),
    (Exact("inet_recvmsg"), Is(SocketRecv)),
    (Exact("inet6_recvmsg"), Is(SocketRecv)),
    (Exact("sock_read_iter"), Is(SocketRecv)),
    (Exact("ksys_read"), Is(SocketRecv)),
    (Exact("vfs_read"), Is(SocketRecv)),
    (Exact("tcp_recvmsg"), Is(SocketRecv)),
    (Exact("tcp_recvmsg_locked"), Is(SocketRecv)),
    (Exact("tcp_cleanup_rbuf"), Is(SocketRecv)),
    (Exact("tcp_rcv_space_adjust"), Is(SocketRecv)),
    (Exact("udp_recvmsg"), Is(SocketRecv)),
    (Exact("udpv6_recvmsg"), Is(SocketRecv)),
    (Exact("__skb_recv_udp"), Is(SocketRecv)),
    (Exact("skb_recv_datagram"), Is(SocketRecv)),
    (Exact("__skb_recv_datagram"), Is(SocketRecv)),
    (Exact("__skb_try_recv_datagram"), Is(SocketRecv)),
    // Copies between user memory and packets.
    (Exact("_copy_to_iter"), Is(CopyUser)),
    (Exact("_copy_from_iter"), Is(CopyUser)),
    (Exact("_copy_from_iter_full"), Is(CopyUser)),
    (Exact("_copy_from_iter_nocache"), Is(CopyUser)),
    (Exact("copy_page_to_iter"), Is(CopyUser)),
    (Exact("copy_page_from_iter"), Is(CopyUser)),
    (Exact("skb_copy_datagram_iter"), Is(CopyUser)),
    (Exact("__skb_datagram_iter"), Is(CopyUser)),
    (Exact("simple_copy_to_iter"), Is(CopyUser)),
    (Exact("skb_copy_datagram_from_iter"), Is(CopyUser)),
    (Exact("skb_do_copy_data_nocache"), Is(CopyUser)),
    (Exact("csum_and_copy_from_iter_full"), Is(CopyUser)),
    (Exact("rep_movs_alternative"), Is(CopyUser)),
    (Exact("copy_user_generic_string"), Is(CopyUser)),
    (Exact("copy_user_enhanced_fast_string"), Is(CopyUser)),
    (Exact("__arch_copy_to_user"), Is(CopyUser)),
    (Exact("__arch_copy_from_user"), Is(CopyUser)),
    // TCP and UDP transmit.
    (Exact("tcp_sendmsg"), Is(TcpOutput)),
    (Exact("tcp_sendmsg_locked"), Is(TcpOutput)),
    (Exact("tcp_push"), Is(TcpOutput)),
    (Exact("tcp_push_one"), Is(TcpOutput)),
    (Exact("__tcp_push_pending_frames"), Is(TcpOutput)),
    (Exact("tcp_write_xmit"), Is(TcpOutput)),
    (Exact("__tcp_transmit_skb"), Is(TcpOutput)),
    (Exact("tcp_transmit_skb"), Is(TcpOutput)),
    (Exact("tcp_stream_alloc_skb"), Is(TcpOutput)),
    (Exact("tcp_data_snd_check"), Is(TcpOutput)),
    (Exact("tcp_send_ack"), Is(TcpOutput)),
    (Exact("__tcp_send_ack"), Is(TcpOutput)),
    (Exact("tcp_send_delayed_ack"), Is(TcpOutput)),
    (Exact("tcp_send_fin"), Is(TcpOutput)),
    (Exact("tcp_xmit_retransmit_queue"), Is(TcpOutput)),
    (Exact("tcp_retransmit_skb"), Is(TcpOutput)),
    (Exact("__tcp_retransmit_skb"), Is(TcpOutput)),
    (Exact("tcp_v4_send_check"), Is(TcpOutput)),
    (Exact("udp_sendmsg"), Is(UdpOutput)),
    (Exact("udpv6_sendmsg"), Is(UdpOutput)),
    (Exact("udp_send_skb"), Is(UdpOutput)),
    (Exact("udp_v6_send_skb"), Is(UdpOutput)),
    (Exact("udp_push_pending_frames"), Is(UdpOutput)),
    // IP output: routing, fragmentation, neighbour resolution.
    (Exact("ip_queue_xmit"), Is(IpOutput)),
    (Exact("__ip_queue_xmit"), Is(IpOutput)),
    (Exact("ip_local_out"), Is(IpOutput)),
    (Exact("__ip_local_out"), Is(IpOutput)),
    (Exact("ip_output"), Is(IpOutput)),
    (Exact("ip_finish_output"), Is(IpOutput)),
    (Exact("__ip_finish_output"), Is(IpOutput)),
    (Exact("ip_finish_output2"), Is(IpOutput)),
    (Exact("ip_send_skb"), Is(IpOutput)),
    (Exact("ip_push_pending_frames"), Is(IpOutput)),
    (Exact("ip_make_skb"), Is(IpOutput)),
    (Exact("__ip_make_skb"), Is(IpOutput)),
    (Exact("ip_append_data"), Is(IpOutput)),
    (Exact("__ip_append_data"), Is(IpOutput)),
    (Exact("ip_build_and_send_pkt"), Is(IpOutput)),
    (Exact("ip_do_fragment"), Is(IpOutput)),
    (Exact("ip6_xmit"), Is(IpOutput)),
    (Exact("ip6_output"), Is(IpOutput)),
    (Exact("ip6_finish_output"), Is(IpOutput)),
    (Exact("__ip6_finish_output"), Is(IpOutput)),
    (Exact("ip6_finish_output2"), Is(IpOutput)),
    (Exact("ip6_local_out"), Is(IpOutput)),
    (Exact("__ip6_local_out"), Is(IpOutput)),
    (Exact("ip6_send_skb"), Is(IpOutput)),
    (Exact("ip6_make_skb"), Is(IpOutput)),
    (Exact("ip6_append_data"), Is(IpOutput)),
    (Exact("neigh_resolve_output"), Is(IpOutput)),
    (Exact("neigh_direct_output"), Is(IpOutput)),
    // Queueing disciplines.
    (Exact("__dev_xmit_skb"), Is(Qdisc)),
    (Exact("__qdisc_run"), Is(Qdisc)),
    (Exact("qdisc_run"), Is(Qdisc)),
    (Exact("sch_direct_xmit"), Is(Qdisc)),
    // Device transmit: core, drivers, completions.
    (Exact("dev_queue_xmit"), Is(DevXmit)),
    (Exact("__dev_queue_xmit"), Is(DevXmit)),
    (Exact("dev_hard_start_xmit"), Is(DevXmit)),
    (Exact("xmit_one"), Is(DevXmit)),
    (Exact("validate_xmit_skb"), Is(DevXmit)),
    (Exact("validate_xmit_skb_list"), Is(DevXmit)),
    (Exact("netdev_core_pick_tx"), Is(DevXmit)),
    (Exact("netdev_pick_tx"), Is(DevXmit)),
    (Exact("net_tx_action"), Is(DevXmit)),
    (Exact("start_xmit"), Is(DevXmit)),
    (Exact("free_old_xmit"), Is(DevXmit)),
    (Exact("veth_forward_skb"), Is(DevXmit)),
    // Network timer callbacks (src/kernel/callbacks.rs) and the handlers
    // they run, which TCP also runs at release_sock() when the timer found
    // the socket owned: the work is the timer's either way.
    (Exact("tcp_pace_kick"), Is(TcpPacing)),
    (Exact("tcp_tsq_workfn"), Is(TcpSmallQueues)),
    (Exact("tcp_tasklet_func"), Is(TcpSmallQueues)),
    (Exact("tcp_write_timer"), Is(TcpRetransmitTimer)),
    (Exact("tcp_write_timer_handler"), Is(TcpRetransmitTimer)),
    (Exact("tcp_retransmit_timer"), Is(TcpRetransmitTimer)),
    (Exact("tcp_probe_timer"), Is(TcpRetransmitTimer)),
    (Exact("tcp_delack_timer"), Is(TcpAckTimer)),
    (Exact("tcp_delack_timer_handler"), Is(TcpAckTimer)),
    (Exact("tcp_compressed_ack_kick"), Is(TcpAckTimer)),
    (Exact("tcp_keepalive_timer"), Is(TcpConnectionTimer)),
    (Exact("reqsk_timer_handler"), Is(TcpConnectionTimer)),
    (Exact("tw_timer_handler"), Is(TcpConnectionTimer)),
    (Exact("tcp_orphan_update"), Is(TcpConnectionTimer)),
    (Exact("qdisc_watchdog"), Is(QdiscWatchdog)),
    (Exact("napi_watchdog"), Is(DriverNapi)),
    (Exact("ip_expire"), Is(IpReceive)),
    (Exact("ip6_frag_expire"), Is(IpReceive)),
    (Exact("neigh_timer_handler"), Is(IpOutput)),
    // The timer softirqs' own loops, around the callbacks.
    (Exact("hrtimer_run_softirq"), Is(TimerSoftirq)),
    (Exact("__hrtimer_run_queues"), Is(TimerSoftirq)),
    (Exact("__run_hrtimer"), Is(TimerSoftirq)),
    (Exact("hrtimer_update_softirq_timer"), Is(TimerSoftirq)),
    (Exact("run_timer_softirq"), Is(TimerSoftirq)),
    (Exact("run_timer_base"), Is(TimerSoftirq)),
    (Exact("__run_timers"), Is(TimerSoftirq)),
    (Exact("expire_timers"), Is(TimerSoftirq)),
    (Exact("call_timer_fn"), Is(TimerSoftirq)),
    (Exact("tasklet_action"), Is(TimerSoftirq)),
    (Exact("tasklet_hi_action"), Is(TimerSoftirq)),
    (Exact("tasklet_action_common"), Is(TimerSoftirq)),
    (Exact("workqueue_softirq_action"), Is(TimerSoftirq)),
    (Exact("bh_worker"), Is(TimerSoftirq)),
    // Softirq machinery: its own time is no stage's, and it separates a
    // sender's stack from the softirq run inline on top of it.
    (Exact("handle_softirqs"), Is(Other)),
    (Exact("__do_softirq"), Is(Other)),
    (Exact("do_softirq"), Is(Other)),
    (Exact("run_ksoftirqd"), Is(Other)),
    (Exact("__local_bh_enable_ip"), Is(Other)),
    (Exact("irq_exit_rcu"), Is(Other)),
    (Exact("__irq_exit_rcu"), Is(Other)),

    // Patterns, narrow before broad.
    // netto's own accounting programs, named as the symbolizer names BPF
    // programs (`netto_softirq_exit`, ...); the sketch's row is above.
    (Prefix("netto_"), Is(Netto)),
    (Prefix("__x64_sys_send"), Is(SocketSend)),
    (Prefix("__arm64_sys_send"), Is(SocketSend)),
    (Prefix("__x64_sys_write"), Is(SocketSend)),
    (Prefix("__arm64_sys_write"), Is(SocketSend)),
    (Prefix("__x64_sys_recv"), Is(SocketRecv)),
    (Prefix("__arm64_sys_recv"), Is(SocketRecv)),
    (Prefix("__x64_sys_read"), Is(SocketRecv)),
    (Prefix("__arm64_sys_read"), Is(SocketRecv)),
    (Prefix("nf_conntrack_"), Is(Conntrack)),
    (Prefix("__nf_conntrack_"), Is(Conntrack)),
    (Prefix("nf_ct_"), Is(Conntrack)),
    (Prefix("__nf_ct_"), Is(Conntrack)),
    (Prefix("ipv4_conntrack_"), Is(Conntrack)),
    (Prefix("ipv6_conntrack_"), Is(Conntrack)),
    (Prefix("br_nf_"), Netfilter),
    (Prefix("nf_"), Netfilter),
    (Prefix("nft_"), Netfilter),
    (Prefix("iptable_"), Netfilter),
    (Prefix("ip6table_"), Netfilter),
    (Prefix("ebt_"), Netfilter),
    (Prefix("xt_"), Netfilter),
    (Prefix("br_"), Is(Bridge)),
    (Prefix("__br_"), Is(Bridge)),
    (Prefix("nbp_"), Is(Bridge)),
    (Prefix("tcf_"), Is(Tc)),
    (Prefix("tcx_"), Is(Tc)),
    (Prefix("xdp_"), Is(Xdp)),
    (Prefix("__xdp_"), Is(Xdp)),
    (Prefix("dev_map_"), Is(Xdp)),
    (Prefix("cpu_map_"), Is(Xdp)),
    // Native XDP in drivers: `i40e_run_xdp`, `receive_small_xdp`, ...
    (Suffix("_xdp"), Is(Xdp)),
    (Prefix("gro_"), Is(Gro)),
    (Contains("_gro_"), Is(Gro)),
    (Prefix("__netif_receive_skb"), Is(NetifReceive)),
    (Prefix("ip_route_input"), Is(IpReceive)),
    (Prefix("ip6_route_input"), Is(IpReceive)),
    (Prefix("ip_route_output"), Is(IpOutput)),
    (Prefix("ip6_route_output"), Is(IpOutput)),
    (Prefix("__udp4_lib_"), Is(LocalUdp)),
    (Prefix("__udp6_lib_"), Is(LocalUdp)),
    (Prefix("__wake_up"), Is(SocketEnqueueWakeup)),
    (Prefix("qdisc_"), Is(Qdisc)),
    (Prefix("__qdisc_"), Is(Qdisc)),
    (Prefix("sch_"), Is(Qdisc)),
    (Prefix("pfifo_"), Is(Qdisc)),
    (Prefix("fq_"), Is(Qdisc)),
    (Prefix("htb_"), Is(Qdisc)),
    (Prefix("cake_"), Is(Qdisc)),
    (Prefix("tbf_"), Is(Qdisc)),
    (Prefix("netem_"), Is(Qdisc)),
    // Driver transmit: `veth_xmit`, `mlx5e_xmit`, `e1000_xmit_frame`, ...
    (Suffix("_xmit"), Is(DevXmit)),
    (Suffix("_xmit_frame"), Is(DevXmit)),
    // Driver NAPI poll functions: `mlx5e_napi_poll`, `ixgbe_poll`, ...
    (Suffix("_poll"), Is(DriverNapi)),
];

/// Functions that run a netfilter hook inline (`NF_HOOK`), and which hook:
/// IPv4, IPv6 and the bridge's own hooks (`NFPROTO_BRIDGE`), folded onto
/// the five inet hook names. Rule 2 of the module documentation.
#[rustfmt::skip]
pub static HOOKS: &[(&str, Category)] = &[
    ("ip_rcv", NetfilterPrerouting),
    ("ip_list_rcv", NetfilterPrerouting),
    ("ip_sublist_rcv", NetfilterPrerouting),
    ("ipv6_rcv", NetfilterPrerouting),
    ("ipv6_list_rcv", NetfilterPrerouting),
    ("ip6_sublist_rcv", NetfilterPrerouting),
    ("br_handle_frame", NetfilterPrerouting),
    ("br_nf_pre_routing", NetfilterPrerouting),
    ("ip_local_deliver", NetfilterInput),
    ("ip6_input", NetfilterInput),
    ("br_pass_frame_up", NetfilterInput),
    ("ip_forward", NetfilterForward),
    ("ip6_forward", NetfilterForward),
    ("br_forward", NetfilterForward),
    ("__br_forward", NetfilterForward),
    ("br_nf_forward", NetfilterForward),
    ("br_nf_forward_ip", NetfilterForward),
    ("br_nf_forward_arp", NetfilterForward),
    ("ip_local_out", NetfilterOutput),
    ("__ip_local_out", NetfilterOutput),
    ("ip6_local_out", NetfilterOutput),
    ("__ip6_local_out", NetfilterOutput),
    ("ip6_xmit", NetfilterOutput),
    ("ip_output", NetfilterPostrouting),
    ("ip_finish_output", NetfilterPostrouting),
    ("ip6_output", NetfilterPostrouting),
    ("ip6_finish_output", NetfilterPostrouting),
    ("br_forward_finish", NetfilterPostrouting),
    ("br_nf_post_routing", NetfilterPostrouting),
];

/// Contexts whose every sample is known to be one stage when no frame says
/// more: a `net_timers` sample is taken in a recognised network callback
/// (whose frame, or a frame it calls, names its stage) or in the timer
/// softirq around one, whose frames a tail call may leave out of the
/// stack (`handle_softirqs;_raw_spin_unlock_irqrestore` is the end of
/// `hrtimer_run_softirq`).
pub static CONTEXT_DEFAULTS: &[(SampleContext, Category)] =
    &[(SampleContext::NetTimers, TimerSoftirq)];

/// The softirq loop itself (older kernels: `__do_softirq`; since 6.8
/// `handle_softirqs`, with `__do_softirq` around it). A sample in it that
/// netto took in a task's socket call was taken outside any softirq netto
/// saw begin: see [`super::leave_out_softirq_loop`].
pub static SOFTIRQ_LOOP: &[&str] = &["handle_softirqs", "__do_softirq"];

/// Functions where the kernel turns interrupts back on. netto samples on
/// the cpu-clock event, whose timer interrupt waits while interrupts are
/// off: a sample that fell due in a critical section is taken at the
/// first instruction after it, in one of these. Such a function at the
/// leaf is skid: its time is mostly its callers' work under the lock (or
/// the interrupts that waited), not its own. Front ends mark these frames
/// (`skid`) rather than moving their samples: where the time really went
/// the stack does not say.
#[rustfmt::skip]
pub static SKID: &[Pattern] = &[
    // Unlocks that restore or enable interrupts.
    Exact("_raw_spin_unlock_irqrestore"),
    Exact("_raw_spin_unlock_irq"),
    Exact("_raw_read_unlock_irqrestore"),
    Exact("_raw_read_unlock_irq"),
    Exact("_raw_write_unlock_irqrestore"),
    Exact("_raw_write_unlock_irq"),
    // The softirq loop enables interrupts before running the handlers.
    Exact("handle_softirqs"),
    Exact("__do_softirq"),
    // A context switch ends with interrupts enabled again.
    Exact("finish_task_switch"),
];

#[cfg(test)]
mod tests;
