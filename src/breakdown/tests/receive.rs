//! Receive paths: local delivery, bridges, routers, netfilter, GRO, XDP.
use super::*;

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
