//! A snapshot with known numbers for the UI's tests: every figure the
//! panels show can be worked out by hand from here.

use super::app::{App, TopSettings};
use crate::breakdown::breakdowns;
use crate::breakdown::hot::tcp_receive;
use crate::collect::snapshot::TIMER_SOFTIRQ_OVERHEAD;
use crate::frontends::flame::Weight;
use crate::model::{
    AttachPoint, Attribution, BudgetStatus, CostBasis, EventKey, FiveTuple, FlowEstimate, Group,
    GroupBy, KnobCost, KnobName, NetworkProgram, NetworkPrograms, PriceBasis, ProgramCost,
    SampleContext, SamplingStats, SketchCost, SketchSnapshot, Snapshot, SoftirqVector, StackCount,
    XdpMode,
};
use crate::source::notes::Note;
use crate::source::{Origin, SourceInfo};

/// Two CPUs over one second. net_rx_softirq: 250 ms (12.5% of the host,
/// 25% of one CPU) in 5000 runs of 50 µs, on CPU 1 only; its 60 samples
/// split 40 local_tcp (_raw_spin_lock 30, tcp_v4_do_rcv 10) and 20
/// driver_napi. net_timers' 5 ms: 4 ms timer_softirq_overhead, 1 ms
/// tcp_pace_kick. Softirq vectors: NET_RX 250 ms, NET_TX 30 ms, HRTIMER
/// 5 ms, TIMER 2 ms, RCU 1 ms; hardirq 12 ms. netto: 4 ms user space,
/// 2 ms BPF; 3 samples dropped.
pub fn snapshot() -> Snapshot {
    let mut s = Snapshot::empty("tracepoint", 2);
    s.ts = 1_700_000_000.0;
    s.interval_s = 1.0;
    let times = [
        (EventKey::NetRxSoftirq, [0, 250_000_000], 5000),
        (EventKey::NetTxSoftirq, [20_000_000, 10_000_000], 300),
        (EventKey::SockSend, [100_000_000, 0], 1000),
        (EventKey::SockRecv, [0, 46_000_000], 920),
        (EventKey::NetTimers, [5_000_000, 0], 50),
    ];
    for (key, per_cpu, count) in times {
        let time = s.events.get_mut(&key).unwrap();
        time.per_cpu_ns = per_cpu.to_vec();
        time.total_ns = per_cpu.iter().sum();
        time.count = count;
    }
    s.net_timer_callbacks = [
        (TIMER_SOFTIRQ_OVERHEAD.to_owned(), 4_000_000),
        ("tcp_pace_kick".to_owned(), 1_000_000),
    ]
    .into();
    for (vector, ns) in [
        (SoftirqVector::NetRx, 250_000_000),
        (SoftirqVector::NetTx, 30_000_000),
        (SoftirqVector::Hrtimer, 5_000_000),
        (SoftirqVector::Timer, 2_000_000),
        (SoftirqVector::Rcu, 1_000_000),
    ] {
        let time = s.softirq.get_mut(&vector).unwrap();
        time.total_ns = ns;
        time.per_cpu_ns = vec![0, ns];
    }
    s.hardirq.total_ns = 12_000_000;
    s.hardirq.per_cpu_ns = vec![6_000_000, 6_000_000];
    s.overhead.process_cpu_ns = 4_000_000;
    s.overhead.bpf_stats = true;
    s.overhead.bpf_run_time_ns = 2_000_000;
    s.overhead.cost_percent = Some(0.6);
    s.overhead.estimated = true;
    s.overhead.error_percent = 0.03;
    s.overhead.programs = vec![ProgramCost {
        name: "netto_softirq_entry".into(),
        hook: "softirq".into(),
        run_count: 10_000,
        run_time_ns: 2_000_000,
    }];
    s.sampling = Some(SamplingStats {
        frequency_hz: 499,
        transport: "mmap".into(),
        samples: 75,
        dropped: 3,
        failed_stacks: 0,
        softirq_loop: 0,
        unplaced: 0,
        buffer_bytes: 65536,
    });
    s.stacks = vec![
        tcp_receive(&["_raw_spin_lock"], 30),
        tcp_receive(&["tcp_v4_do_rcv"], 10),
        StackCount::of(
            SampleContext::NetRx,
            &["net_rx_action", "__napi_poll", "veth_poll"],
            20,
        ),
        StackCount::of(
            SampleContext::SockSend,
            &["tcp_sendmsg", "tcp_sendmsg_locked"],
            15,
        ),
    ];
    s.breakdown = breakdowns(&s.stacks, &s.events, &s.modules, 499);
    s
}

/// [`snapshot`] attributed by cgroup: a docker container with 150 ms of
/// NET_RX's 250 ms and all 100 ms of sock_send, a
/// login session with 50 ms of NET_RX and the 46 ms of sock_recv; the other
/// 50 ms of NET_RX, NET_TX's 30 ms and the timers' 5 ms unattributed.
pub fn attributed() -> Snapshot {
    let events = |pairs: &[(EventKey, u64)]| {
        let mut events = Attribution::zero_events();
        events.extend(pairs.iter().copied());
        events
    };
    let mut s = snapshot();
    s.attribution = Some(Attribution {
        by: GroupBy::Cgroup,
        on: true,
        groups: vec![
            Group {
                name: "/system.slice/docker-3f2a1b4c5d6e7f80.scope".into(),
                label: "docker 3f2a1b4c5d6e".into(),
                events: events(&[
                    (EventKey::NetRxSoftirq, 150_000_000),
                    (EventKey::SockSend, 100_000_000),
                ]),
                traffic: None,
            },
            Group {
                name: "/user.slice/user-1000.slice/session-3.scope".into(),
                label: "session-3.scope".into(),
                events: events(&[
                    (EventKey::NetRxSoftirq, 50_000_000),
                    (EventKey::SockRecv, 46_000_000),
                ]),
                traffic: None,
            },
        ],
        unattributed: events(&[
            (EventKey::NetRxSoftirq, 50_000_000),
            (EventKey::NetTxSoftirq, 30_000_000),
            (EventKey::NetTimers, 5_000_000),
        ]),
        unattributed_why: std::collections::BTreeMap::new(),
    });
    s
}

/// [`snapshot`] as `serve` delivers it in `softirq` under a 1 % budget:
/// 0.6 % split 0.45 measuring and 0.15 serving; the exact hooks measured
/// at 0.25 %, the socket window hooks (off) predicted at 1.4 %, the sampler
/// 0.05 % and the measuring process 0.15 %.
pub fn served() -> Snapshot {
    let mut s = snapshot();
    s.overhead.measuring_percent = Some(0.45);
    s.overhead.serving_percent = Some(0.15);
    let knob = |knob, cost_percent, basis| KnobCost {
        knob,
        cost_percent,
        basis,
    };
    s.budget = Some(BudgetStatus {
        over: false,
        at_floor: false,
        steps_down: 1,
        knobs: vec![
            knob(KnobName::Process, 0.15, CostBasis::Measured),
            knob(KnobName::SocketWindow, 1.4, CostBasis::Predicted),
            knob(KnobName::ExactHooks, 0.25, CostBasis::Measured),
            knob(KnobName::Sampler, 0.05, CostBasis::Measured),
        ],
        ..BudgetStatus::over_at_floor(1.0)
    });
    s
}

/// An XDP sketch on veth-a over 2 s: 50 000 packets (25k/s) and 125 MB
/// (500.0 Mbit/s); one heavy TCP flow with 40 000 packets and 100 MB (80%
/// of the bytes); 40 ns per packet, 0.10% of one CPU.
/// Two programs of the host's data plane and netto's sketch, over the
/// fixture snapshot's interval.
pub fn network_programs() -> NetworkPrograms {
    let program =
        |id: u32, name: &str, hook: &str, iface: &str, runs: u64, ns: u64| NetworkProgram {
            id,
            name: name.into(),
            tag: "0011223344556677".into(),
            prog_type: "xdp".into(),
            hook: hook.into(),
            attach: vec![AttachPoint {
                hook: hook.into(),
                iface: Some(iface.into()),
                mode: None,
                cgroup_id: None,
                link: true,
            }],
            runs,
            run_time_ns: ns,
            ns_per_run: Some(ns as f64 / runs as f64),
            event: Some(EventKey::NetRxSoftirq),
            share_percent: Some(12.5),
            ..NetworkProgram::default()
        };
    NetworkPrograms {
        basis: Some(PriceBasis::WholeInterval),
        stats_held_s: 2.0,
        programs: vec![
            program(41, "xdp_fw", "xdp", "eth0", 200_000, 30_000_000),
            program(42, "tc_lb", "tc_ingress", "veth-a", 100_000, 8_000_000),
            NetworkProgram {
                own: true,
                ..program(43, "netto_sketch_4", "xdp", "veth-a", 50_000, 2_000_000)
            },
        ],
        not_attached: 0,
    }
}

pub fn sketch() -> SketchSnapshot {
    SketchSnapshot {
        ts: 1_700_000_000.0,
        interval_s: 2.0,
        iface: "veth-a".into(),
        mode: XdpMode::Native,
        probability: 0.125,
        rows: 4,
        columns: 2048,
        packet_unit: Default::default(),
        gaps_reused: 0,
        packets: 50_000,
        bytes: 125_000_000,
        top: vec![
            FlowEstimate {
                flow: FiveTuple {
                    src: "198.18.0.1".into(),
                    dst: "198.18.0.2".into(),
                    sport: 40000,
                    dport: 5201,
                    proto: "tcp".into(),
                },
                packets: 40_000,
                bytes: 100_000_000,
                share: 0.8,
                flows: Vec::new(),
            },
            FlowEstimate {
                flow: FiveTuple {
                    src: "198.18.0.3".into(),
                    dst: "198.18.0.2".into(),
                    sport: 53000,
                    dport: 53,
                    proto: "udp".into(),
                },
                packets: 9_000,
                bytes: 20_000_000,
                share: 0.16,
                flows: Vec::new(),
            },
        ],
        other_protocols: Default::default(),
        cost: SketchCost {
            run_count: 50_000,
            run_time_ns: 2_000_000,
            ns_per_packet: 40.0,
            cpu_percent: 0.1,
        },
    }
}

pub fn info(origin: Origin) -> SourceInfo {
    SourceInfo {
        host: "testhost".into(),
        kernel: "6.18.0-test".into(),
        backend: "tracepoint".into(),
        frequency_hz: Some(499),
        origin,
        notes: vec![Note::Demo {
            description: "demo traffic: fixture".into(),
        }],
    }
}

pub fn settings() -> TopSettings {
    TopSettings {
        history_s: 300.0,
        flame_s: 30.0,
        flame_weight: Weight::default(),
        speed: 1.0,
    }
}

/// A live app that has shown [`snapshot`], its start-up notes read (the
/// status line shows the key hints).
pub fn app() -> App {
    app_showing(snapshot())
}

/// A live app that has shown `snapshot`, its start-up notes read.
pub fn app_showing(snapshot: Snapshot) -> App {
    let mut app = App::new(info(Origin::Live), settings());
    app.push(snapshot);
    app.status = None;
    app
}

#[test]
fn the_attributed_fixture_adds_up() {
    let s = attributed();
    let a = s.attribution.as_ref().unwrap();
    for key in EventKey::ALL {
        let groups: u64 = a.groups.iter().map(|g| g.events[&key]).sum();
        assert_eq!(
            groups + a.unattributed[&key],
            s.event(key).total_ns,
            "{key:?}"
        );
    }
}

#[test]
fn the_fixture_is_what_its_documentation_says() {
    let s = snapshot();
    let rx = &s.breakdown[0];
    assert_eq!((rx.context, rx.samples), (SampleContext::NetRx, 60));
    let parts: Vec<(&str, u64)> = rx
        .categories
        .iter()
        .map(|c| (c.category.as_str(), c.samples))
        .collect();
    assert_eq!(parts, [("local_tcp", 40), ("driver_napi", 20)]);
    assert_eq!(s.breakdown[1].categories[0].category, "tcp_output");
}
