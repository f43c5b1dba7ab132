use netlink_packet_core::{DoneMessage, Emitable};
use netlink_packet_route::tc::TcFilterMatchAllOption;

use super::*;

/// One datagram as the kernel sends a dump: `messages`, then `Done`.
fn datagram(messages: Vec<RouteNetlinkMessage>) -> Vec<u8> {
    let payloads = messages
        .into_iter()
        .map(NetlinkPayload::InnerMessage)
        .chain([NetlinkPayload::Done(DoneMessage::default())]);
    let mut bytes = Vec::new();
    for payload in payloads {
        let mut message = NetlinkMessage::new(NetlinkHeader::default(), payload);
        message.finalize();
        let mut one = vec![0; message.buffer_len()];
        message.serialize(&mut one);
        one.resize(one.len().div_ceil(4) * 4, 0);
        bytes.extend(one);
    }
    bytes
}

fn parsed(messages: Vec<RouteNetlinkMessage>) -> Vec<RouteNetlinkMessage> {
    let mut replies = Vec::new();
    let done = parse_replies(&datagram(messages), &mut replies).unwrap();
    assert!(done);
    replies
}

fn link(index: u32, name: &str, xdp: Vec<LinkXdp>) -> RouteNetlinkMessage {
    let mut message = LinkMessage::default();
    message.header.index = index;
    message.attributes = vec![
        LinkAttribute::IfName(name.to_owned()),
        LinkAttribute::Xdp(xdp),
    ];
    RouteNetlinkMessage::NewLink(message)
}

#[test]
fn every_links_name_and_xdp_programs_come_from_one_dump() {
    let replies = parsed(vec![
        link(1, "lo", vec![LinkXdp::Attached(XdpAttached::None)]),
        link(
            7,
            "veth-a",
            vec![
                LinkXdp::Attached(XdpAttached::Multiple),
                LinkXdp::DrvProgId(41),
                LinkXdp::SkbProgId(42),
            ],
        ),
        // A kernel that names the one program and its mode only.
        link(
            9,
            "eth0",
            vec![
                LinkXdp::Attached(XdpAttached::SocketBuffer),
                LinkXdp::ProgId(43),
            ],
        ),
    ]);
    let links: Vec<(u32, Link)> = replies
        .iter()
        .filter_map(|r| match r {
            RouteNetlinkMessage::NewLink(l) => Some((l.header.index, link_of(l))),
            _ => None,
        })
        .collect();
    assert_eq!(
        links,
        [
            (
                1,
                Link {
                    name: "lo".into(),
                    xdp: vec![]
                }
            ),
            (
                7,
                Link {
                    name: "veth-a".into(),
                    xdp: vec![(41, "driver"), (42, "generic")]
                }
            ),
            (
                9,
                Link {
                    name: "eth0".into(),
                    xdp: vec![(43, "generic")]
                }
            ),
        ]
    );
}

fn action(kind: &str, prog: u32) -> TcAction {
    let mut action = TcAction::default();
    action.tab = 1;
    action.attributes = vec![
        TcActionAttribute::Kind(kind.to_owned()),
        TcActionAttribute::Options(vec![TcActionOption::Other(DefaultNla::new(
            TCA_ACT_BPF_ID,
            prog.to_ne_bytes().to_vec(),
        ))]),
    ];
    action
}

fn filter(kind: &str, options: Vec<TcOption>) -> RouteNetlinkMessage {
    let mut message = TcMessage::with_index(7);
    message.attributes = vec![
        TcAttribute::Kind(kind.to_owned()),
        TcAttribute::Options(options),
    ];
    RouteNetlinkMessage::NewTrafficFilter(message)
}

#[test]
fn a_bpf_filters_program_and_bpf_actions_of_any_filter_are_read() {
    let actions = vec![action("bpf", 51), action("gact", 99)];
    let mut nested = vec![0; actions.as_slice().buffer_len()];
    actions.as_slice().emit(&mut nested);
    let replies = parsed(vec![
        filter(
            "bpf",
            vec![
                TcOption::Bpf(TcFilterBpfOption::ProgName("stand_in_tc".into())),
                TcOption::Bpf(TcFilterBpfOption::ProgId(50)),
                TcOption::Bpf(TcFilterBpfOption::Other(DefaultNla::new(
                    TCA_BPF_ACT,
                    nested,
                ))),
            ],
        ),
        filter(
            "matchall",
            vec![TcOption::MatchAll(TcFilterMatchAllOption::Action(vec![
                action("bpf", 52),
            ]))],
        ),
        // The chain's own message, and a filter of no program.
        filter("bpf", vec![]),
        filter("u32", vec![]),
    ]);
    let programs: Vec<(u32, &str)> = replies
        .iter()
        .flat_map(|r| match r {
            RouteNetlinkMessage::NewTrafficFilter(f) => filter_programs(f),
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(
        programs,
        [(50, "cls_bpf"), (51, "act_bpf"), (52, "act_bpf")]
    );
}

#[test]
fn a_dump_split_over_datagrams_goes_on_and_an_error_is_one() {
    let whole = datagram(vec![link(
        1,
        "lo",
        vec![LinkXdp::Attached(XdpAttached::None)],
    )]);
    // The first message alone: not done yet.
    let first = u32::from_ne_bytes(whole[..4].try_into().unwrap()) as usize;
    let mut replies = Vec::new();
    assert!(!parse_replies(&whole[..first], &mut replies).unwrap());
    assert!(parse_replies(&whole[first..], &mut replies).unwrap());
    assert_eq!(replies.len(), 1);
    assert!(parse_replies(&whole[..first - 1], &mut Vec::new()).is_err());
}

#[test]
fn a_message_the_crate_cannot_read_is_left_out_not_the_dump() {
    // An empty IFLA_XDP, which the crate refuses, beside a good link.
    let mut bytes = datagram(vec![link(2, "bad", vec![]), link(3, "good", vec![])]);
    let mut replies = Vec::new();
    assert!(parse_replies(&bytes, &mut replies).unwrap());
    assert_eq!(replies.len(), 0, "both carry the empty attribute");
    bytes = datagram(vec![
        link(2, "bad", vec![]),
        link(3, "good", vec![LinkXdp::Attached(XdpAttached::None)]),
    ]);
    assert!(parse_replies(&bytes, &mut replies).unwrap());
    assert_eq!(replies.len(), 1);
}

/// A dump of each kind the kernel sends, for the property below.
fn each_kind() -> Vec<u8> {
    let actions = vec![action("bpf", 51)];
    let mut nested = vec![0; actions.as_slice().buffer_len()];
    actions.as_slice().emit(&mut nested);
    datagram(vec![
        link(7, "veth-a", vec![LinkXdp::DrvProgId(41)]),
        filter(
            "bpf",
            vec![
                TcOption::Bpf(TcFilterBpfOption::ProgId(50)),
                TcOption::Bpf(TcFilterBpfOption::Other(DefaultNla::new(
                    TCA_BPF_ACT,
                    nested,
                ))),
            ],
        ),
    ])
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]

    /// Whatever the kernel's bytes (any of them changed, or cut short),
    /// reading them ends in replies or an error, never a panic.
    #[test]
    fn any_bytes_are_read_or_refused(
        changes in proptest::collection::vec((0usize..4096, proptest::prelude::any::<u8>()), 0..8),
        cut in 0usize..4096,
    ) {
        let mut bytes = each_kind();
        for (at, value) in changes {
            let at = at % bytes.len();
            bytes[at] = value;
        }
        bytes.truncate(cut.max(1).min(bytes.len()));
        let mut replies = Vec::new();
        if parse_replies(&bytes, &mut replies).is_ok() {
            for reply in &replies {
                match reply {
                    RouteNetlinkMessage::NewLink(l) => drop(link_of(l)),
                    RouteNetlinkMessage::NewTrafficFilter(f) => drop(filter_programs(f)),
                    _ => {}
                }
            }
        }
    }
}
