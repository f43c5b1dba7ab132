//! Ethernet frames built from a flow, for the tests and the benchmark that
//! feed the program through BPF_PROG_TEST_RUN and the reference alike.

use std::net::IpAddr;

const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
const ETH_P_8021Q: u16 = 0x8100;
const IPV4_HEADER: usize = 20;
const IPV6_HEADER: usize = 40;
const L4_HEADER: usize = 8;
const MAC_HEADER: usize = 14;

/// A frame of `len` bytes (at least the headers) carrying `proto` (any IP
/// protocol number; ports are written for every protocol) between the two
/// addresses, optionally behind one 802.1Q tag.
pub fn frame(
    src: IpAddr,
    dst: IpAddr,
    sport: u16,
    dport: u16,
    proto: u8,
    vlan: bool,
    len: usize,
) -> Vec<u8> {
    let mut f = vec![0u8; MAC_HEADER];
    f[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x02]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x01]);
    if vlan {
        f[12..14].copy_from_slice(&ETH_P_8021Q.to_be_bytes());
        f.extend_from_slice(&[0x00, 0x07]);
        f.extend_from_slice(&[0, 0]);
    }
    let ethertype_at = f.len() - 2;
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            f[ethertype_at..].copy_from_slice(&ETH_P_IP.to_be_bytes());
            let total = len.saturating_sub(f.len()).max(IPV4_HEADER + L4_HEADER);
            let mut ip = [0u8; IPV4_HEADER];
            ip[0] = 0x45;
            ip[2..4].copy_from_slice(&u16::try_from(total).unwrap_or(u16::MAX).to_be_bytes());
            ip[8] = 64;
            ip[9] = proto;
            ip[12..16].copy_from_slice(&s.octets());
            ip[16..20].copy_from_slice(&d.octets());
            f.extend_from_slice(&ip);
        }
        (s, d) => {
            f[ethertype_at..].copy_from_slice(&ETH_P_IPV6.to_be_bytes());
            let payload = len.saturating_sub(f.len() + IPV6_HEADER).max(L4_HEADER);
            let mut ip = [0u8; IPV6_HEADER];
            ip[0] = 0x60;
            ip[4..6].copy_from_slice(&u16::try_from(payload).unwrap_or(u16::MAX).to_be_bytes());
            ip[6] = proto;
            ip[7] = 64;
            ip[8..24].copy_from_slice(&v6(s));
            ip[24..40].copy_from_slice(&v6(d));
            f.extend_from_slice(&ip);
        }
    }
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&[0; L4_HEADER - 4]);
    f.resize(f.len().max(len), 0);
    f
}

fn v6(addr: IpAddr) -> [u8; 16] {
    match addr {
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
        IpAddr::V6(a) => a.octets(),
    }
}

/// Marks an IPv4 frame made by [`frame`] as a later fragment (offset 8).
pub fn make_later_fragment(frame: &mut [u8]) {
    frame[MAC_HEADER + 6..MAC_HEADER + 8].copy_from_slice(&1u16.to_be_bytes());
}

/// Sets the IPv4 total length of an untagged frame made by [`frame`].
pub fn set_ipv4_total_length(frame: &mut [u8], total: u16) {
    frame[MAC_HEADER + 2..MAC_HEADER + 4].copy_from_slice(&total.to_be_bytes());
}

/// An untagged IPv4 frame like [`frame`]'s with `words` 32-bit words of
/// options (NOPs) after the fixed header, so its header is 20 + 4 x words
/// bytes; `words` is at most 10.
pub fn ipv4_with_options(
    src: IpAddr,
    dst: IpAddr,
    sport: u16,
    dport: u16,
    proto: u8,
    words: u8,
    len: usize,
) -> Vec<u8> {
    let options = usize::from(words) * 4;
    let mut f = frame(
        src,
        dst,
        sport,
        dport,
        proto,
        false,
        len.saturating_sub(options),
    );
    let at = MAC_HEADER + IPV4_HEADER;
    f.splice(at..at, std::iter::repeat_n(1u8, options));
    f[MAC_HEADER] = 0x45 + words;
    let total = u16::from_be_bytes([f[MAC_HEADER + 2], f[MAC_HEADER + 3]]);
    set_ipv4_total_length(&mut f, total + options as u16);
    f
}

/// Sets the IP version nibble of an untagged frame made by [`frame`].
pub fn set_ip_version(frame: &mut [u8], version: u8) {
    frame[MAC_HEADER] = version << 4 | (frame[MAC_HEADER] & 0x0f);
}

/// Sets the IPv6 payload length of an untagged frame made by [`frame`].
pub fn set_ipv6_payload_length(frame: &mut [u8], length: u16) {
    frame[MAC_HEADER + 4..MAC_HEADER + 6].copy_from_slice(&length.to_be_bytes());
}

/// An IPv6 extension header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extension {
    /// Hop-by-hop (0), routing (43) or destination options (60), of
    /// `units` x 8 bytes (at least 1).
    Options { kind: u8, units: u8 },
    /// A fragment header: the offset in 8-byte units, and whether more
    /// fragments follow.
    Fragment { offset: u16, more: bool },
}

/// An untagged IPv6 frame like [`frame`]'s with `extensions` between the
/// fixed header and the transport header, its payload length counting
/// them.
pub fn ipv6_with_extensions(
    src: IpAddr,
    dst: IpAddr,
    sport: u16,
    dport: u16,
    proto: u8,
    extensions: &[Extension],
    len: usize,
) -> Vec<u8> {
    let mut f = frame(src, dst, sport, dport, proto, false, len);
    let mut chain = Vec::new();
    let mut kinds: Vec<u8> = extensions
        .iter()
        .map(|e| match *e {
            Extension::Options { kind, .. } => kind,
            Extension::Fragment { .. } => 44,
        })
        .collect();
    kinds.push(proto);
    for (extension, &next) in extensions.iter().zip(&kinds[1..]) {
        match *extension {
            Extension::Options { units, .. } => {
                let mut header = vec![1u8; usize::from(units.max(1)) * 8];
                header[0] = next;
                header[1] = units.max(1) - 1;
                chain.extend_from_slice(&header);
            }
            Extension::Fragment { offset, more } => {
                let field = offset << 3 | u16::from(more);
                chain.extend_from_slice(&[next, 0]);
                chain.extend_from_slice(&field.to_be_bytes());
                chain.extend_from_slice(&[0, 0, 0, 1]);
            }
        }
    }
    let at = MAC_HEADER + IPV6_HEADER;
    f[MAC_HEADER + 6] = kinds[0];
    f.splice(at..at, chain.iter().copied());
    let payload = u16::from_be_bytes([f[MAC_HEADER + 4], f[MAC_HEADER + 5]]);
    set_ipv6_payload_length(&mut f, payload + chain.len() as u16);
    f
}

/// An ARP request frame.
pub fn arp() -> Vec<u8> {
    let mut f = vec![0u8; 42];
    f[0..6].copy_from_slice(&[0xff; 6]);
    f[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    f
}

#[cfg(test)]
mod tests {
    use super::super::flow::{classify, Class, FlowKey};
    use super::*;
    use crate::abi::sketch::sketch_protocol::*;

    #[test]
    fn frames_classify_as_built() {
        let (s, d): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        for vlan in [false, true] {
            let f = frame(s, d, 1000, 80, 6, vlan, 64);
            assert_eq!(f.len(), 64);
            assert_eq!(classify(&f), Class::Flow(FlowKey::new(s, d, 1000, 80, 6)));
        }
        let (s6, d6): (IpAddr, IpAddr) = ("fd00::1".parse().unwrap(), "fd00::2".parse().unwrap());
        assert_eq!(
            classify(&frame(s6, d6, 5, 6, 17, false, 100)),
            Class::Flow(FlowKey::new(s6, d6, 5, 6, 17))
        );
        assert_eq!(
            classify(&frame(s, d, 0, 0, 1, false, 64)),
            Class::Protocol(SKETCH_PROTO_ICMP)
        );
        assert_eq!(
            classify(&frame(s6, d6, 0, 0, 58, false, 64)),
            Class::Protocol(SKETCH_PROTO_ICMPV6)
        );
        assert_eq!(
            classify(&frame(s, d, 0, 0, 47, false, 64)),
            Class::Protocol(SKETCH_PROTO_IPV4_OTHER)
        );
        let mut fragment = frame(s, d, 1, 2, 17, false, 64);
        make_later_fragment(&mut fragment);
        assert_eq!(classify(&fragment), Class::Protocol(SKETCH_PROTO_FRAGMENT));
        assert_eq!(classify(&arp()), Class::Protocol(SKETCH_PROTO_ARP));
    }

    /// IPv6 as the program reads it: through extension headers, later
    /// fragments apart, ports only inside the payload, version checked.
    #[test]
    fn ipv6_extensions_fragments_payload_length_and_versions() {
        use Extension::*;
        let (s, d): (IpAddr, IpAddr) = ("fd00::1".parse().unwrap(), "fd00::2".parse().unwrap());
        let key = Class::Flow(FlowKey::new(s, d, 1000, 80, 6));
        let with = |extensions: &[Extension], proto| {
            classify(&ipv6_with_extensions(
                s, d, 1000, 80, proto, extensions, 120,
            ))
        };
        let hop = Options { kind: 0, units: 1 };
        let routing = Options { kind: 43, units: 3 };
        let dest = Options { kind: 60, units: 2 };
        let first = Fragment {
            offset: 0,
            more: true,
        };
        let later = Fragment {
            offset: 185,
            more: false,
        };
        assert_eq!(with(&[], 6), key);
        assert_eq!(with(&[hop], 6), key);
        assert_eq!(with(&[hop, dest, routing], 6), key);
        assert_eq!(
            with(&[hop, routing, first], 6),
            key,
            "a first fragment has ports"
        );
        assert_eq!(with(&[hop, dest, routing, first], 6), key);
        assert_eq!(with(&[later], 6), Class::Protocol(SKETCH_PROTO_FRAGMENT));
        assert_eq!(
            with(&[hop, later], 17),
            Class::Protocol(SKETCH_PROTO_FRAGMENT)
        );
        assert_eq!(with(&[hop], 58), Class::Protocol(SKETCH_PROTO_ICMPV6));
        assert_eq!(
            with(&[hop, dest, routing, dest, first], 6),
            Class::Protocol(SKETCH_PROTO_IPV6_OTHER),
            "more extension headers than the program looks through"
        );
        assert_eq!(
            with(&[Options { kind: 51, units: 1 }], 6),
            Class::Protocol(SKETCH_PROTO_IPV6_OTHER),
            "an authentication header is not looked through"
        );
        // Ports only inside the payload: a minimum-size frame's padding is
        // not read as ports.
        let mut padded = frame(s, d, 1000, 80, 6, false, 100);
        set_ipv6_payload_length(&mut padded, 4);
        assert_eq!(
            classify(&padded),
            key,
            "ports end exactly at the payload's end"
        );
        set_ipv6_payload_length(&mut padded, 3);
        assert_eq!(classify(&padded), Class::Protocol(SKETCH_PROTO_OTHER));
        set_ipv6_payload_length(&mut padded, 0);
        assert_eq!(classify(&padded), Class::Protocol(SKETCH_PROTO_OTHER));
        let mut hop_in_padding = ipv6_with_extensions(s, d, 1000, 80, 6, &[hop], 120);
        set_ipv6_payload_length(&mut hop_in_padding, 1);
        assert_eq!(
            classify(&hop_in_padding),
            Class::Protocol(SKETCH_PROTO_OTHER)
        );
        let mut fragment_in_padding = ipv6_with_extensions(s, d, 1000, 80, 6, &[later], 120);
        set_ipv6_payload_length(&mut fragment_in_padding, 7);
        assert_eq!(
            classify(&fragment_in_padding),
            Class::Protocol(SKETCH_PROTO_OTHER)
        );
        // Versions: an IPv4 ethertype must carry version 4, IPv6 6.
        let (s4, d4): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        for (src, dst, version) in [(s4, d4, 6), (s4, d4, 0), (s, d, 4), (s, d, 15)] {
            let mut f = frame(src, dst, 1, 2, 17, false, 100);
            set_ip_version(&mut f, version);
            assert_eq!(
                classify(&f),
                Class::Protocol(SKETCH_PROTO_OTHER),
                "{src} v{version}"
            );
        }
    }

    #[test]
    fn total_length_options_and_truncation() {
        let (s, d): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let key = Class::Flow(FlowKey::new(s, d, 1000, 80, 17));
        let mut padded = frame(s, d, 1000, 80, 17, false, 60);
        set_ipv4_total_length(&mut padded, 24);
        assert_eq!(
            classify(&padded),
            key,
            "ports end exactly at the total length"
        );
        set_ipv4_total_length(&mut padded, 23);
        assert_eq!(
            classify(&padded),
            Class::Protocol(SKETCH_PROTO_OTHER),
            "ports in the padding"
        );
        let long = frame(s, d, 1000, 80, 17, false, 600);
        assert_eq!(classify(&long[..38]), key, "cut after the ports");
        assert_eq!(
            classify(&long[..37]),
            Class::Protocol(SKETCH_PROTO_OTHER),
            "cut in the ports"
        );
        for words in 1..=10 {
            let f = ipv4_with_options(s, d, 1000, 80, 17, words, 120);
            assert_eq!(f.len(), 120);
            assert_eq!(classify(&f), key, "{words} words of options");
        }
    }
}
