//! What rtnetlink says about the network programs on netto's network
//! namespace's interfaces: each interface's name and XDP programs, from
//! one dump of every link; the BPF programs of classic tc (`cls_bpf`
//! filters and `act_bpf` actions) on each interface's `clsact` or
//! `ingress` qdisc, from a dump of the qdiscs and one of the filters of
//! each direction that has one. Messages are read with
//! `netlink-packet-route`; only `act_bpf`'s program id, which that crate
//! leaves unparsed, is read here.

use std::collections::BTreeMap;
use std::io;

use netlink_packet_core::{
    DefaultNla, NetlinkHeader, NetlinkMessage, NetlinkPayload, Nla, NlasIterator, Parseable,
    NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_route::link::{LinkAttribute, LinkMessage, LinkXdp, XdpAttached};
use netlink_packet_route::tc::{
    TcAction, TcActionAttribute, TcActionOption, TcAttribute, TcFilterBpfOption,
    TcFilterMatchAllOption, TcFilterU32Option, TcHandle, TcMessage, TcOption,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

/// One interface: its name and its XDP programs by mode.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Link {
    pub name: String,
    /// (program, mode: `driver`, `generic` or `offload`).
    pub xdp: Vec<(u32, &'static str)>,
}

/// A classic tc program on an interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TcProgram {
    pub prog: u32,
    pub ifindex: u32,
    /// `tc_ingress` or `tc_egress`.
    pub hook: &'static str,
    /// `cls_bpf` (a filter) or `act_bpf` (an action of any filter).
    pub kind: &'static str,
}

/// A receive buffer as large as the kernel makes a dump's messages for a
/// reader that offers it (32 KiB), and then some.
const RECEIVE: usize = 64 * 1024;

/// An rtnetlink socket, opened once for the dumps of one look: a
/// classic tc look makes one dump per direction of each qdisc.
struct Rtnetlink {
    socket: Socket,
    sequence: u32,
    buffer: Vec<u8>,
}

impl Rtnetlink {
    fn open() -> io::Result<Rtnetlink> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        Ok(Rtnetlink {
            socket,
            sequence: 0,
            buffer: vec![0; RECEIVE],
        })
    }

    /// The replies to one dump request.
    fn dump(&mut self, request: RouteNetlinkMessage) -> io::Result<Vec<RouteNetlinkMessage>> {
        self.sequence += 1;
        let mut packet =
            NetlinkMessage::new(NetlinkHeader::default(), NetlinkPayload::from(request));
        packet.header.flags = NLM_F_DUMP | NLM_F_REQUEST;
        packet.header.sequence_number = self.sequence;
        packet.finalize();
        let mut out = vec![0; packet.buffer_len()];
        packet.serialize(&mut out);
        self.socket.send(&out, 0)?;
        let mut replies = Vec::new();
        loop {
            // MSG_TRUNC: the datagram's whole length, so a cut one is seen.
            let size = self
                .socket
                .recv(&mut &mut self.buffer[..], libc::MSG_TRUNC)?;
            if size > self.buffer.len() {
                return Err(io::Error::other("a netlink message longer than the buffer"));
            }
            if parse_replies(&self.buffer[..size], &mut replies)? {
                return Ok(replies);
            }
        }
    }
}

/// Appends the messages of one datagram to `replies`; whether the dump
/// is done. A message the crate cannot read (an attribute newer than it,
/// malformed) is left out, not the dump.
fn parse_replies(mut bytes: &[u8], replies: &mut Vec<RouteNetlinkMessage>) -> io::Result<bool> {
    const HEADER: usize = 16;
    while !bytes.is_empty() {
        let length = bytes
            .first_chunk::<4>()
            .map_or(0, |l| u32::from_ne_bytes(*l) as usize);
        if length < HEADER || length > bytes.len() {
            return Err(io::Error::other("a truncated netlink message"));
        }
        let message = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&bytes[..length]);
        match message.map(|m| m.payload) {
            Ok(NetlinkPayload::Done(_)) => return Ok(true),
            Ok(NetlinkPayload::Error(e)) => {
                return Err(e.code.map_or_else(
                    || io::Error::other("netlink error"),
                    |code| io::Error::from_raw_os_error(-code.get()),
                ))
            }
            Ok(NetlinkPayload::InnerMessage(inner)) => replies.push(inner),
            _ => {}
        }
        // Messages are 4-byte aligned within a datagram.
        bytes = bytes.get(length.div_ceil(4) * 4..).unwrap_or_default();
    }
    Ok(false)
}

/// Every interface of netto's network namespace, by index, with its XDP
/// programs: one dump, whatever the number of interfaces.
pub fn links() -> BTreeMap<u32, Link> {
    Rtnetlink::open()
        .and_then(|mut rtnetlink| {
            rtnetlink.dump(RouteNetlinkMessage::GetLink(LinkMessage::default()))
        })
        .unwrap_or_default()
        .into_iter()
        .filter_map(|reply| match reply {
            RouteNetlinkMessage::NewLink(link) => Some((link.header.index, link_of(&link))),
            _ => None,
        })
        .collect()
}

fn link_of(message: &LinkMessage) -> Link {
    let mut link = Link::default();
    for attribute in &message.attributes {
        match attribute {
            LinkAttribute::IfName(name) => link.name.clone_from(name),
            LinkAttribute::Xdp(xdp) => link.xdp = xdp_programs(xdp),
            _ => {}
        }
    }
    link
}

/// The programs of an interface's XDP attribute: one per mode attached.
fn xdp_programs(xdp: &[LinkXdp]) -> Vec<(u32, &'static str)> {
    let mut by_mode: Vec<(u32, &'static str)> = xdp
        .iter()
        .filter_map(|a| match *a {
            LinkXdp::DrvProgId(p) => Some((p, "driver")),
            LinkXdp::SkbProgId(p) => Some((p, "generic")),
            LinkXdp::HwProgId(p) => Some((p, "offload")),
            _ => None,
        })
        .filter(|&(p, _)| p != 0)
        .collect();
    if by_mode.is_empty() {
        // A kernel that gives only the one program and its mode.
        let mode = xdp.iter().find_map(|a| match a {
            LinkXdp::Attached(XdpAttached::Driver) => Some("driver"),
            LinkXdp::Attached(XdpAttached::SocketBuffer) => Some("generic"),
            LinkXdp::Attached(XdpAttached::Hardware) => Some("offload"),
            _ => None,
        });
        let prog = xdp.iter().find_map(|a| match *a {
            LinkXdp::ProgId(p) if p != 0 => Some(p),
            _ => None,
        });
        by_mode.extend(prog.zip(mode));
    }
    by_mode
}

/// The directions of a qdisc that holds classic tc filters, by its kind:
/// (the filters' parent's minor, hook).
const TC_DIRECTIONS: &[(&str, &[(u16, &str)])] = &[
    (
        "clsact",
        &[
            (TcHandle::MIN_INGRESS, "tc_ingress"),
            (TcHandle::MIN_EGRESS, "tc_egress"),
        ],
    ),
    ("ingress", &[(TcHandle::MIN_INGRESS, "tc_ingress")]),
];

/// Every classic tc BPF program on netto's network namespace's
/// interfaces: a dump of the qdiscs, then the filters of each direction
/// of each `clsact` or `ingress` qdisc found, over one socket.
pub fn tc_programs() -> Vec<TcProgram> {
    let mut out = Vec::new();
    let Ok(mut rtnetlink) = Rtnetlink::open() else {
        return out;
    };
    let Ok(qdiscs) = rtnetlink.dump(RouteNetlinkMessage::GetQueueDiscipline(TcMessage::default()))
    else {
        return out;
    };
    for reply in qdiscs {
        let RouteNetlinkMessage::NewQueueDiscipline(qdisc) = reply else {
            continue;
        };
        let Some(directions) = kind(&qdisc).and_then(|k| {
            TC_DIRECTIONS
                .iter()
                .find(|(name, _)| *name == k)
                .map(|(_, d)| *d)
        }) else {
            continue;
        };
        let ifindex = qdisc.header.index;
        for &(minor, hook) in directions {
            let mut request = TcMessage::with_index(ifindex);
            request.header.parent = TcHandle {
                major: TcHandle::CLSACT.major,
                minor,
            };
            // A dump cut short may leave replies on the socket: the look
            // ends with what it found.
            let Ok(filters) = rtnetlink.dump(RouteNetlinkMessage::GetTrafficFilter(request)) else {
                return out;
            };
            for reply in filters {
                if let RouteNetlinkMessage::NewTrafficFilter(filter) = reply {
                    out.extend(filter_programs(&filter).into_iter().map(|(prog, kind)| {
                        TcProgram {
                            prog,
                            ifindex: u32::try_from(ifindex).unwrap_or_default(),
                            hook,
                            kind,
                        }
                    }));
                }
            }
        }
    }
    out
}

fn kind(message: &TcMessage) -> Option<&str> {
    message.attributes.iter().find_map(|a| match a {
        TcAttribute::Kind(kind) => Some(kind.as_str()),
        _ => None,
    })
}

/// `TCA_BPF_ACT`: a bpf filter's actions, which the crate leaves unparsed.
const TCA_BPF_ACT: u16 = 1;
/// `TCA_ACT_BPF_ID`: an `act_bpf` action's program id.
const TCA_ACT_BPF_ID: u16 = 9;

/// The programs of one filter: a `cls_bpf` filter's own, and those of the
/// `act_bpf` actions of a filter that carries actions.
fn filter_programs(filter: &TcMessage) -> Vec<(u32, &'static str)> {
    let mut out = Vec::new();
    for attribute in &filter.attributes {
        let TcAttribute::Options(options) = attribute else {
            continue;
        };
        for option in options {
            let actions = match option {
                TcOption::Bpf(TcFilterBpfOption::ProgId(prog)) => {
                    out.push((*prog, "cls_bpf"));
                    continue;
                }
                TcOption::Bpf(TcFilterBpfOption::Other(nla)) if nla.kind() == TCA_BPF_ACT => {
                    nested_actions(nla)
                }
                TcOption::MatchAll(TcFilterMatchAllOption::Action(actions))
                | TcOption::U32(TcFilterU32Option::Action(actions)) => actions.clone(),
                _ => continue,
            };
            out.extend(
                actions
                    .iter()
                    .filter_map(action_program)
                    .map(|p| (p, "act_bpf")),
            );
        }
    }
    out
}

fn nested_actions(nla: &DefaultNla) -> Vec<TcAction> {
    let mut value = vec![0; nla.value_len()];
    nla.emit_value(&mut value);
    NlasIterator::new(&value[..])
        .filter_map(|a| TcAction::parse(&a.ok()?).ok())
        .collect()
}

/// The program of an `act_bpf` action.
fn action_program(action: &TcAction) -> Option<u32> {
    let is_bpf = action
        .attributes
        .iter()
        .any(|a| matches!(a, TcActionAttribute::Kind(k) if k == "bpf"));
    if !is_bpf {
        return None;
    }
    action.attributes.iter().find_map(|a| match a {
        TcActionAttribute::Options(options) => options.iter().find_map(|o| match o {
            TcActionOption::Other(nla) if nla.kind() == TCA_ACT_BPF_ID => u32_value(nla),
            _ => None,
        }),
        _ => None,
    })
}

fn u32_value(nla: &DefaultNla) -> Option<u32> {
    let mut value = [0u8; 4];
    (nla.value_len() == value.len()).then(|| {
        nla.emit_value(&mut value);
        u32::from_ne_bytes(value)
    })
}

#[cfg(test)]
mod tests;
