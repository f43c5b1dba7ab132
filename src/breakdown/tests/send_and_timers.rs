//! Transmit and socket calls, network timers, netto's own programs, and
//! what no rule names.
use super::*;

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
