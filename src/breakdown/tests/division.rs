//! Dividing an event's exact time among categories by their samples.
use super::*;

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
        &BTreeMap::new(),
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
    let got = breakdowns(&stacks, &BTreeMap::new(), &BTreeMap::new(), 99);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].categories[0].cpu_ns, 0);
    assert_eq!(got[0].agreement, None, "no time to agree with");
    assert!(breakdowns(
        &[],
        &events(&[(EventKey::NetRxSoftirq, 5)]),
        &BTreeMap::new(),
        99
    )
    .is_empty());
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
