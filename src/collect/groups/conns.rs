//! Names of connections (`--by flow`) and services (`--by port`): a
//! connection as `LOCAL:PORT -> REMOTE:PORT PROTO` (IPv6 in brackets, `*`
//! for the peer of an unconnected socket), a service as `PORT/PROTO in` or
//! `out` and labelled with its name in /etc/services where it has one.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

use crate::collect::attribution::Service;
use crate::kernel::attribution::Conn;
use crate::model::{Attribution, GroupBy, SketchSnapshot};

/// IANA protocol numbers with their names (as /etc/services and
/// /etc/protocols spell them), and whether their connections have ports.
const PROTOCOLS: [(u8, &str, bool); 5] = [
    (1, "icmp", false),
    (6, "tcp", true),
    (17, "udp", true),
    (58, "icmpv6", false),
    (136, "udplite", true),
];

/// The protocol's name as /etc/services spells it.
pub fn proto_name(proto: u8) -> String {
    PROTOCOLS
        .iter()
        .find(|(number, _, _)| *number == proto)
        .map_or_else(
            || format!("proto{proto}"),
            |(_, name, _)| (*name).to_owned(),
        )
}

/// One end: `*` where unknown; the address alone (IPv6 in brackets) for a
/// protocol without ports.
fn end(addr: &SocketAddr, ports: bool) -> String {
    match (addr.ip().is_unspecified() && addr.port() == 0, ports, addr) {
        (true, _, _) => "*".to_owned(),
        (false, true, _) => addr.to_string(),
        (false, false, SocketAddr::V4(v4)) => v4.ip().to_string(),
        (false, false, SocketAddr::V6(v6)) => format!("[{}]", v6.ip()),
    }
}

/// `LOCAL:PORT -> REMOTE:PORT PROTO` (`LOCAL -> REMOTE PROTO` for a
/// protocol without ports).
pub fn flow_name(conn: &Conn) -> String {
    let ports = PROTOCOLS
        .iter()
        .find(|(number, _, _)| *number == conn.proto)
        .is_none_or(|(_, _, ports)| *ports);
    format!(
        "{} -> {} {}",
        end(&conn.local, ports),
        end(&conn.remote, ports),
        proto_name(conn.proto)
    )
}

/// Names, on each of the sketch's heavy hitters, the `--by flow` groups of
/// the interval that are its connection: a packet from SRC to DST arrives
/// at a socket whose flow is `DST -> SRC`, and leaves a sender on this host
/// (or is forwarded) as `SRC -> DST`. Under any other `--by`, or off,
/// nothing is joined.
pub fn join_heavy_hitters(sketch: &mut SketchSnapshot, attribution: &Attribution) {
    for estimate in &mut sketch.top {
        estimate.flows.clear();
        if attribution.by != GroupBy::Flow || !attribution.on {
            continue;
        }
        let t = &estimate.flow;
        let (Ok(src), Ok(dst)) = (t.src.parse::<IpAddr>(), t.dst.parse::<IpAddr>()) else {
            continue;
        };
        let Some(proto) = proto_number(&t.proto) else {
            continue;
        };
        let (src, dst) = (SocketAddr::new(src, t.sport), SocketAddr::new(dst, t.dport));
        for (local, remote) in [(dst, src), (src, dst)] {
            let name = flow_name(&Conn {
                proto,
                local,
                remote,
            });
            if attribution.groups.iter().any(|g| g.name == name) {
                estimate.flows.push(name);
            }
        }
    }
}

/// The IANA number of a protocol named as /etc/services spells it.
fn proto_number(name: &str) -> Option<u8> {
    PROTOCOLS
        .iter()
        .find(|(_, known, _)| *known == name)
        .map(|(number, _, _)| *number)
}

/// `PORT/PROTO in|out`.
pub fn port_name(service: &Service) -> String {
    let direction = if service.inbound { "in" } else { "out" };
    format!("{}/{} {direction}", service.port, proto_name(service.proto))
}

/// Service names by `port/proto`, as /etc/services lists them.
#[derive(Debug, Default)]
pub struct Services {
    names: HashMap<String, String>,
}

impl Services {
    /// This host's /etc/services; none where it cannot be read.
    pub fn of_host() -> Services {
        Services::parse(&std::fs::read_to_string("/etc/services").unwrap_or_default())
    }

    /// Lines of `name port/proto [aliases] [# comment]`; the first name a
    /// port has wins, as getservbyport(3) answers.
    pub fn parse(text: &str) -> Services {
        let mut names = HashMap::new();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or_default();
            let mut fields = line.split_whitespace();
            if let (Some(name), Some(port)) = (fields.next(), fields.next()) {
                names
                    .entry(port.to_owned())
                    .or_insert_with(|| name.to_owned());
            }
        }
        Services { names }
    }

    /// The service's name, empty where it has none.
    pub fn name(&self, service: &Service) -> String {
        let key = format!("{}/{}", service.port, proto_name(service.proto));
        self.names.get(&key).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(local: &str, remote: &str, proto: u8) -> Conn {
        Conn {
            proto,
            local: local.parse().unwrap(),
            remote: remote.parse().unwrap(),
        }
    }

    #[test]
    fn flows_are_named_as_people_write_them() {
        let c = conn("10.0.0.1:40000", "10.0.0.2:5201", 6);
        assert_eq!(flow_name(&c), "10.0.0.1:40000 -> 10.0.0.2:5201 tcp");
        let c = conn("[fd00::1]:53", "[::]:0", 17);
        assert_eq!(flow_name(&c), "[fd00::1]:53 -> * udp");
        let c = conn("10.0.0.1:0", "10.0.0.2:0", 1);
        assert_eq!(flow_name(&c), "10.0.0.1 -> 10.0.0.2 icmp");
        let c = conn("[fe80::1]:0", "[ff02::2]:0", 58);
        assert_eq!(flow_name(&c), "[fe80::1] -> [ff02::2] icmpv6");
    }

    #[test]
    fn the_service_is_the_end_outside_the_ephemeral_range() {
        let out = Service::of(&conn("10.0.0.1:40000", "10.0.0.2:443", 6));
        assert_eq!(port_name(&out), "443/tcp out");
        let served = Service::of(&conn("10.0.0.2:5201", "10.0.0.1:40000", 6));
        assert_eq!(port_name(&served), "5201/tcp in");
        let unconnected = Service::of(&conn("0.0.0.0:53", "0.0.0.0:0", 17));
        assert_eq!(port_name(&unconnected), "53/udp in");
        // Both ends outside the range (iperf3's 5201 to a fixed port): the
        // lower port is the service's.
        let both = Service::of(&conn("10.0.0.1:6000", "10.0.0.2:5201", 6));
        assert_eq!(port_name(&both), "5201/tcp out");
    }

    #[test]
    fn service_names_come_from_the_services_file() {
        let services = Services::parse(
            "# comment\nhttps\t443/tcp\t# http over TLS\nhttps 443/udp\nalt 443/tcp\n\nbad\n",
        );
        let https = Service::of(&conn("10.0.0.1:40000", "10.0.0.2:443", 6));
        assert_eq!(services.name(&https), "https");
        let unknown = Service::of(&conn("10.0.0.1:40000", "10.0.0.2:5201", 6));
        assert_eq!(services.name(&unknown), "");
    }

    fn sketch_of(src: &str, dst: &str, sport: u16, dport: u16) -> SketchSnapshot {
        use crate::model::{FiveTuple, FlowEstimate, PacketUnit, SketchCost, XdpMode};
        SketchSnapshot {
            ts: 1.0,
            interval_s: 1.0,
            iface: "veth0".into(),
            mode: XdpMode::Generic,
            probability: 1.0,
            rows: 4,
            columns: 1024,
            packet_unit: PacketUnit::GroAggregate,
            packets: 10,
            bytes: 1000,
            gaps_reused: 0,
            top: vec![FlowEstimate {
                flow: FiveTuple {
                    src: src.into(),
                    dst: dst.into(),
                    sport,
                    dport,
                    proto: "udp".into(),
                },
                packets: 10,
                bytes: 1000,
                share: 1.0,
                flows: vec!["stale".into()],
            }],
            other_protocols: Default::default(),
            cost: SketchCost::default(),
        }
    }

    fn attribution(by: GroupBy, names: &[&str]) -> Attribution {
        use crate::model::Group;
        Attribution {
            by,
            on: true,
            groups: names
                .iter()
                .enumerate()
                .map(|(i, name)| Group {
                    name: (*name).into(),
                    label: String::new(),
                    events: Attribution::zero_events()
                        .into_keys()
                        .map(|k| (k, 100 * (i as u64 + 1)))
                        .collect(),
                    traffic: None,
                })
                .collect(),
            unattributed: Attribution::zero_events(),
            unattributed_why: Default::default(),
        }
    }

    #[test]
    fn heavy_hitters_join_both_ends_of_their_connection() {
        let mut sketch = sketch_of("fd00::1", "fd00::2", 40000, 53);
        let by_flow = attribution(
            GroupBy::Flow,
            &[
                "[fd00::2]:53 -> [fd00::1]:40000 udp",
                "10.0.0.1:1 -> 10.0.0.2:2 udp",
                "[fd00::1]:40000 -> [fd00::2]:53 udp",
            ],
        );
        join_heavy_hitters(&mut sketch, &by_flow);
        let joined = &sketch.top[0];
        assert_eq!(
            joined.flows,
            [
                "[fd00::2]:53 -> [fd00::1]:40000 udp",
                "[fd00::1]:40000 -> [fd00::2]:53 udp"
            ]
        );
        let events = crate::model::EventKey::ALL.len() as u64;
        assert_eq!(
            joined.network_ns(Some(&by_flow)),
            Some((100 + 300) * events)
        );
        assert_eq!(joined.network_ns(None), None);
    }

    #[test]
    fn heavy_hitters_join_nothing_but_flows() {
        let mut sketch = sketch_of("10.0.0.1", "10.0.0.2", 40000, 53);
        let name = "10.0.0.2:53 -> 10.0.0.1:40000 udp";
        join_heavy_hitters(&mut sketch, &attribution(GroupBy::Port, &[name]));
        assert!(sketch.top[0].flows.is_empty(), "not under --by port");
        let mut off = attribution(GroupBy::Flow, &[name]);
        off.on = false;
        join_heavy_hitters(&mut sketch, &off);
        assert!(
            sketch.top[0].flows.is_empty(),
            "not while attribution is off"
        );
        // A connection folded into `other` is not named that interval.
        join_heavy_hitters(&mut sketch, &attribution(GroupBy::Flow, &["other"]));
        assert!(sketch.top[0].flows.is_empty());
        assert_eq!(sketch.top[0].network_ns(Some(&off)), None);
    }
}
