//! Names of connections (`--by flow`) and services (`--by port`): a
//! connection as `LOCAL:PORT -> REMOTE:PORT PROTO` (IPv6 in brackets, `*`
//! for the peer of an unconnected socket), a service as `PORT/PROTO in` or
//! `out` and labelled with its name in /etc/services where it has one.

use std::collections::HashMap;
use std::net::SocketAddr;

use crate::collect::attribution::Service;
use crate::kernel::attribution::Conn;

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
}
