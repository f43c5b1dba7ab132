//! The categorization's tests, by path through the stack; the stacks
//! several of them share.

use super::Category::*;
use super::*;

mod division;
mod programs;
mod receive;
mod send_and_timers;

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
