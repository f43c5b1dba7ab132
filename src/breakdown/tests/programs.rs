//! BPF programs that are not netto's: each a stage of its own, known by
//! the module its frames carry.
use super::*;

/// An XDP program's stack in veth's receive loop: `leaf` on top of the
/// program `xdp_fw`.
fn xdp(leaf: &[&'static str]) -> Vec<&'static str> {
    with(
        &[
            "net_rx_action",
            "__napi_poll",
            "veth_poll",
            "veth_xdp_rcv",
            "veth_xdp_rcv_one",
            "bpf_prog_run_xdp",
            "bpf_dispatcher_xdp_func",
        ],
        leaf,
    )
}

fn modules(programs: &[&str]) -> BTreeMap<String, String> {
    programs
        .iter()
        .map(|&p| (p.to_owned(), "bpf".to_owned()))
        .chain([("veth_poll".to_owned(), "veth".to_owned())])
        .collect()
}

fn stage_of(frames: &[&'static str], programs: &[&str]) -> String {
    let mut categorizer = Categorizer::default();
    categorizer.learn_programs(&modules(programs));
    categorizer
        .stage(SampleContext::NetRx, frames)
        .name()
        .into_owned()
}

#[test]
fn a_program_and_the_helpers_it_calls_are_its_stage() {
    assert_eq!(stage_of(&xdp(&["xdp_fw"]), &["xdp_fw"]), "bpf:xdp_fw");
    // A helper whose callee has a row of its own is still the program's
    // time: what the program asked for.
    let helper = xdp(&["xdp_fw", "bpf_xdp_fib_lookup", "tcp_v4_rcv", "memcpy"]);
    assert_eq!(stage_of(&helper, &["xdp_fw"]), "bpf:xdp_fw");
    // The nearest program to the leaf: one a program ran (freplace,
    // a program calling another).
    let nested = xdp(&["xdp_fw", "bpf_trampoline_6442", "xdp_inner"]);
    assert_eq!(stage_of(&nested, &["xdp_fw", "xdp_inner"]), "bpf:xdp_inner");
}

#[test]
fn entering_a_program_is_dispatch_and_unknown_programs_keep_their_callers_stage() {
    assert_eq!(stage_of(&xdp(&[]), &["xdp_fw"]), "bpf_dispatch");
    // Without modules (a recording from before netto kept them) the
    // program is a frame like any other: its caller's stage, or what its
    // name happens to match.
    let plain = with(&["net_rx_action", "do_xdp_generic"], &["fw"]);
    assert_eq!(stage_of(&plain, &[]), "xdp");
    assert_eq!(stage_of(&xdp(&["fw_poll"]), &[]), "driver_napi");
    assert_eq!(stage_of(&xdp(&["fw_poll"]), &["fw_poll"]), "bpf:fw_poll");
    let runner = [
        "ip_finish_output",
        "__cgroup_bpf_run_filter_skb",
        "bpf_prog_run_array_cg",
    ];
    assert_eq!(stage_of(&runner, &["cg_egress"]), "bpf_dispatch");
}

#[test]
fn netto_inside_a_program_and_a_softirq_on_top_of_one_are_not_the_programs() {
    let own = xdp(&["xdp_fw", "bpf_map_update_elem", "netto_softirq_exit"]);
    assert_eq!(stage_of(&own, &["xdp_fw", "netto_softirq_exit"]), "netto");
    // A tc egress program whose redirect ran NET_RX inline: the softirq's
    // work is its own stage, not the program's.
    let inline = [
        "__dev_queue_xmit",
        "sch_handle_egress",
        "tc_egress_fw",
        "bpf_redirect",
        "__local_bh_enable_ip",
        "do_softirq",
        "net_rx_action",
        "__napi_poll",
        "process_backlog",
        "__netif_receive_skb_one_core",
        "ip_rcv",
        "ip_local_deliver_finish",
        "tcp_v4_rcv",
    ];
    assert_eq!(stage_of(&inline, &["tc_egress_fw"]), "local_tcp");
    assert_eq!(
        stage_of(&inline[..4], &["tc_egress_fw"]),
        "bpf:tc_egress_fw"
    );
}

#[test]
fn the_breakdown_names_each_program_and_still_adds_up() {
    let mut stacks = vec![
        StackCount::of(SampleContext::NetRx, &xdp(&["xdp_fw"]), 3),
        StackCount::of(SampleContext::NetRx, &xdp(&["xdp_lb", "memcpy"]), 1),
        StackCount::of(SampleContext::NetRx, &xdp(&[]), 1),
    ];
    stacks.push(StackCount::of(
        SampleContext::NetRx,
        &["net_rx_action", "__napi_poll", "tcp_v4_rcv"],
        5,
    ));
    let events = BTreeMap::from([(
        EventKey::NetRxSoftirq,
        CpuTime {
            total_ns: 1_000_001,
            per_cpu_ns: vec![1_000_001],
            count: 1,
            ..CpuTime::default()
        },
    )]);
    let got = breakdowns(&stacks, &events, &modules(&["xdp_fw", "xdp_lb"]), 99);
    let parts: Vec<(&str, u64)> = got[0]
        .categories
        .iter()
        .map(|c| (c.category.as_str(), c.samples))
        .collect();
    assert_eq!(
        parts,
        [
            ("local_tcp", 5),
            ("bpf:xdp_fw", 3),
            ("bpf:xdp_lb", 1),
            ("bpf_dispatch", 1)
        ]
    );
    let ns: u64 = got[0].categories.iter().map(|c| c.cpu_ns).sum();
    assert_eq!(ns, 1_000_001);
}
