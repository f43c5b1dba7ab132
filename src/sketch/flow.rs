//! Flow keys and packet classification on the user-space side: the key
//! bytes the program hashes, turned into addresses for people, and the
//! program's parser again for the reference implementation.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::abi::sketch::{self as abi, sketch_flow, sketch_protocol};
use crate::model::FiveTuple;

pub const KEY_BYTES: usize = size_of::<sketch_flow>();

/// The 40 bytes of a `struct sketch_flow`, as hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FlowKey(pub [u8; KEY_BYTES]);

const SRC: usize = std::mem::offset_of!(sketch_flow, src);
const DST: usize = std::mem::offset_of!(sketch_flow, dst);
const SPORT: usize = std::mem::offset_of!(sketch_flow, sport);
const DPORT: usize = std::mem::offset_of!(sketch_flow, dport);
const PROTO: usize = std::mem::offset_of!(sketch_flow, proto);
const FAMILY: usize = std::mem::offset_of!(sketch_flow, family);

const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;
const IPPROTO_ICMP: u8 = 1;
const IPPROTO_ICMPV6: u8 = 58;

impl FlowKey {
    pub fn from_abi(flow: &sketch_flow) -> FlowKey {
        let mut key = [0u8; KEY_BYTES];
        key.copy_from_slice(crate::abi::bytes_of(flow));
        FlowKey(key)
    }

    /// The key of a flow between two addresses of one family.
    pub fn new(src: IpAddr, dst: IpAddr, sport: u16, dport: u16, proto: u8) -> FlowKey {
        let mut key = [0u8; KEY_BYTES];
        let family = match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                key[SRC..SRC + 4].copy_from_slice(&s.octets());
                key[DST..DST + 4].copy_from_slice(&d.octets());
                abi::SKETCH_FAMILY_IPV4
            }
            (s, d) => {
                key[SRC..SRC + 16].copy_from_slice(&to_v6(s).octets());
                key[DST..DST + 16].copy_from_slice(&to_v6(d).octets());
                abi::SKETCH_FAMILY_IPV6
            }
        };
        key[SPORT..SPORT + 2].copy_from_slice(&sport.to_be_bytes());
        key[DPORT..DPORT + 2].copy_from_slice(&dport.to_be_bytes());
        key[PROTO] = proto;
        key[FAMILY] = family as u8;
        FlowKey(key)
    }

    /// Whether the bytes are a key the program writes: a candidate read
    /// while the program was writing it can be torn.
    pub fn is_plausible(&self) -> bool {
        let family = u32::from(self.0[FAMILY]);
        matches!(self.0[PROTO], IPPROTO_TCP | IPPROTO_UDP)
            && (family == abi::SKETCH_FAMILY_IPV4 || family == abi::SKETCH_FAMILY_IPV6)
    }

    /// SKETCH_FAMILY_IPV4 or SKETCH_FAMILY_IPV6.
    pub fn family(&self) -> u32 {
        u32::from(self.0[FAMILY])
    }

    fn addr(&self, at: usize) -> IpAddr {
        let bytes: [u8; 16] = self.0[at..at + 16].try_into().expect("16 bytes");
        if self.family() == abi::SKETCH_FAMILY_IPV4 {
            IpAddr::V4(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]))
        } else {
            IpAddr::V6(Ipv6Addr::from(bytes))
        }
    }

    fn port(&self, at: usize) -> u16 {
        u16::from_be_bytes([self.0[at], self.0[at + 1]])
    }

    pub fn to_flow(&self) -> FiveTuple {
        FiveTuple {
            src: self.addr(SRC).to_string(),
            dst: self.addr(DST).to_string(),
            sport: self.port(SPORT),
            dport: self.port(DPORT),
            proto: match self.0[PROTO] {
                IPPROTO_TCP => "tcp".to_owned(),
                IPPROTO_UDP => "udp".to_owned(),
                other => other.to_string(),
            },
        }
    }
}

fn to_v6(addr: IpAddr) -> Ipv6Addr {
    match addr {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => a,
    }
}

/// What the program makes of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Flow(FlowKey),
    Protocol(sketch_protocol),
}

/// The public name of a protocol class (JSON keys of `other_protocols`).
pub fn protocol_name(protocol: sketch_protocol) -> &'static str {
    match protocol {
        sketch_protocol::SKETCH_PROTO_ARP => "arp",
        sketch_protocol::SKETCH_PROTO_ICMP => "icmp",
        sketch_protocol::SKETCH_PROTO_ICMPV6 => "icmpv6",
        sketch_protocol::SKETCH_PROTO_FRAGMENT => "fragment",
        sketch_protocol::SKETCH_PROTO_IPV4_OTHER => "ipv4_other",
        sketch_protocol::SKETCH_PROTO_IPV6_OTHER => "ipv6_other",
        sketch_protocol::SKETCH_PROTO_OTHER | sketch_protocol::SKETCH_PROTO_COUNT => "other",
    }
}

/// The protocol classes in ABI order.
pub const PROTOCOLS: [sketch_protocol; sketch_protocol::SKETCH_PROTO_COUNT as usize] = [
    sketch_protocol::SKETCH_PROTO_ARP,
    sketch_protocol::SKETCH_PROTO_ICMP,
    sketch_protocol::SKETCH_PROTO_ICMPV6,
    sketch_protocol::SKETCH_PROTO_FRAGMENT,
    sketch_protocol::SKETCH_PROTO_IPV4_OTHER,
    sketch_protocol::SKETCH_PROTO_IPV6_OTHER,
    sketch_protocol::SKETCH_PROTO_OTHER,
];

const ETH_HEADER: usize = 14;
const VLAN_HEADER: usize = 4;
const MAX_VLAN_TAGS: usize = 2;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_ARP: u16 = 0x0806;
const ETH_P_8021Q: u16 = 0x8100;
const ETH_P_8021AD: u16 = 0x88a8;
const ETH_P_IPV6: u16 = 0x86dd;
const IPV4_HEADER: usize = 20;
const IPV6_HEADER: usize = 40;
const IP_OFFSET_MASK: u16 = 0x1fff;
const NEXTHDR_HOP: u8 = 0;
const NEXTHDR_ROUTING: u8 = 43;
const NEXTHDR_FRAGMENT: u8 = 44;
const NEXTHDR_DEST: u8 = 60;
const IPV6_OFFSET_MASK: u16 = 0xfff8;
const FRAGMENT_HEADER: usize = 8;
const OPTIONS_HEADER: usize = 2;

fn be16(packet: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(packet.get(at..at + 2)?.try_into().ok()?))
}

/// The program's `classify`, in Rust: the same headers looked through and
/// the same answer for truncated ones.
pub fn classify(packet: &[u8]) -> Class {
    use sketch_protocol::*;
    let other = Class::Protocol(SKETCH_PROTO_OTHER);
    let Some(mut ethertype) = be16(packet, ETH_HEADER - 2) else {
        return other;
    };
    let mut l3 = ETH_HEADER;
    for _ in 0..MAX_VLAN_TAGS {
        if ethertype != ETH_P_8021Q && ethertype != ETH_P_8021AD {
            break;
        }
        let Some(inner) = be16(packet, l3 + 2) else {
            return other;
        };
        ethertype = inner;
        l3 += VLAN_HEADER;
    }
    let class = match ethertype {
        ETH_P_IP => ipv4(packet, l3),
        ETH_P_IPV6 => ipv6(packet, l3),
        ETH_P_ARP => Some(Class::Protocol(SKETCH_PROTO_ARP)),
        _ => None,
    };
    class.unwrap_or(other)
}

fn ipv4(packet: &[u8], l3: usize) -> Option<Class> {
    use sketch_protocol::*;
    let header = packet.get(l3..l3 + IPV4_HEADER)?;
    if header[0] >> 4 != 4 {
        return None;
    }
    if be16(header, 6)? & IP_OFFSET_MASK != 0 {
        return Some(Class::Protocol(SKETCH_PROTO_FRAGMENT));
    }
    let proto = header[9];
    match proto {
        IPPROTO_TCP | IPPROTO_UDP => {}
        IPPROTO_ICMP => return Some(Class::Protocol(SKETCH_PROTO_ICMP)),
        _ => return Some(Class::Protocol(SKETCH_PROTO_IPV4_OTHER)),
    }
    let length = usize::from(header[0] & 0x0f) * 4;
    if length < IPV4_HEADER {
        return None;
    }
    // The ports must lie inside the datagram (total length), not in the
    // Ethernet padding after it; past the frame's end `flow` catches them.
    if length + 4 > usize::from(be16(header, 2)?) {
        return None;
    }
    let src = <[u8; 4]>::try_from(&header[12..16]).ok()?.into();
    let dst = <[u8; 4]>::try_from(&header[16..20]).ok()?.into();
    flow(packet, l3 + length, src, dst, proto)
}

/// Through up to `SKETCH_MAX_IPV6_EXTENSIONS` extension headers, each
/// inside the payload (`payload_len`), as the program does.
fn ipv6(packet: &[u8], l3: usize) -> Option<Class> {
    use sketch_protocol::*;
    let header = packet.get(l3..l3 + IPV6_HEADER)?;
    if header[0] >> 4 != 6 {
        return None;
    }
    let length = IPV6_HEADER + usize::from(be16(header, 4)?);
    let mut next = header[6];
    let mut at = IPV6_HEADER;
    for _ in 0..abi::SKETCH_MAX_IPV6_EXTENSIONS {
        match next {
            NEXTHDR_FRAGMENT => {
                let fragment = packet.get(l3 + at..l3 + at + FRAGMENT_HEADER)?;
                if at + FRAGMENT_HEADER > length {
                    return None;
                }
                if be16(fragment, 2)? & IPV6_OFFSET_MASK != 0 {
                    return Some(Class::Protocol(SKETCH_PROTO_FRAGMENT));
                }
                next = fragment[0];
                at += FRAGMENT_HEADER;
            }
            NEXTHDR_HOP | NEXTHDR_ROUTING | NEXTHDR_DEST => {
                let options = packet.get(l3 + at..l3 + at + OPTIONS_HEADER)?;
                if at + OPTIONS_HEADER > length {
                    return None;
                }
                next = options[0];
                at += (usize::from(options[1]) + 1) * 8;
            }
            _ => break,
        }
    }
    match next {
        IPPROTO_TCP | IPPROTO_UDP => {}
        IPPROTO_ICMPV6 => return Some(Class::Protocol(SKETCH_PROTO_ICMPV6)),
        _ => return Some(Class::Protocol(SKETCH_PROTO_IPV6_OTHER)),
    }
    if at + 4 > length {
        return None;
    }
    let addresses = (
        <[u8; 16]>::try_from(&header[8..24]).ok()?.into(),
        <[u8; 16]>::try_from(&header[24..40]).ok()?.into(),
    );
    flow(packet, l3 + at, addresses.0, addresses.1, next)
}

fn flow(packet: &[u8], l4: usize, src: IpAddr, dst: IpAddr, proto: u8) -> Option<Class> {
    let sport = be16(packet, l4)?;
    let dport = be16(packet, l4 + 2)?;
    Some(Class::Flow(FlowKey::new(src, dst, sport, dport, proto)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_to_readable_flows() {
        let key = FlowKey::new(
            "198.18.0.1".parse().unwrap(),
            "198.18.0.2".parse().unwrap(),
            40000,
            5201,
            IPPROTO_TCP,
        );
        assert!(key.is_plausible());
        let flow = key.to_flow();
        assert_eq!(
            (flow.src.as_str(), flow.dst.as_str(), flow.sport, flow.dport),
            ("198.18.0.1", "198.18.0.2", 40000, 5201)
        );
        assert_eq!(flow.proto, "tcp");
        let v6 = FlowKey::new(
            "fd00::1".parse().unwrap(),
            "fd00::2".parse().unwrap(),
            1,
            2,
            IPPROTO_UDP,
        );
        assert_eq!(v6.to_flow().src, "fd00::1");
        assert!(!FlowKey([0; KEY_BYTES]).is_plausible());
    }

    #[test]
    fn truncated_and_non_ip_packets_are_other() {
        use sketch_protocol::*;
        assert_eq!(classify(&[0; 10]), Class::Protocol(SKETCH_PROTO_OTHER));
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&ETH_P_ARP.to_be_bytes());
        assert_eq!(classify(&arp), Class::Protocol(SKETCH_PROTO_ARP));
        let mut short_ip = vec![0u8; 20];
        short_ip[12..14].copy_from_slice(&ETH_P_IP.to_be_bytes());
        assert_eq!(classify(&short_ip), Class::Protocol(SKETCH_PROTO_OTHER));
    }
}
