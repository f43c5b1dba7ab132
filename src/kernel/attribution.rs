//! Attribution's delivery points (`bpf/attribute.bpf.c`): where the kernel
//! says, inside a softirq, whom its work is for. Loaded beside the
//! accounting, sharing its per-CPU record and group map, and attached or
//! detached at run time with the accounting's switch, so attribution is a
//! knob that costs nothing while off. Each point is optional: a kernel
//! without one leaves what it would have claimed unattributed, and
//! [`POINTS`](super::tracepoints::POINTS) says what that is.

use std::mem::MaybeUninit;
use std::net::{IpAddr, SocketAddr};

use libbpf_rs::skel::{OpenSkel, Skel};
use libbpf_rs::{Btf, Link, OpenObject};

use super::accounting::Accounting;
use super::skel;
use super::skel::attribute::{AttributeSkel, AttributeSkelBuilder};
use super::tracepoints::{missing_points, Point};
use super::KernelError;
use crate::abi::{netto_group_key, netto_no_conn};

/// A group map key as Rust compares it (the group map's, and a stack
/// sample's: whom the sampled work was for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub cgroup: u64,
    pub tgid: u32,
    pub netns: u32,
    /// The connection, under `--by flow|port` where a socket or a
    /// forwarded packet's headers named one.
    pub conn: Option<Conn>,
    /// Why a forwarded packet named none (`--by flow|port`).
    pub no_conn: Option<NoConn>,
}

/// Why a packet transmitted for no socket has no connection (`enum
/// netto_no_conn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NoConn {
    /// Neither IPv4 nor IPv6.
    NotIp,
    /// An IP fragment: only the first carries the ports.
    Fragment,
}

impl NoConn {
    /// Each reason beside its code.
    const CODES: [(NoConn, netto_no_conn); 2] = [
        (NoConn::NotIp, netto_no_conn::NETTO_NO_CONN_NOT_IP),
        (NoConn::Fragment, netto_no_conn::NETTO_NO_CONN_FRAGMENT),
    ];

    fn of(why: u16) -> Option<NoConn> {
        Self::CODES
            .iter()
            .find(|(_, code)| *code as u16 == why)
            .map(|(reason, _)| *reason)
    }

    fn code(this: Option<NoConn>) -> u16 {
        Self::CODES
            .iter()
            .find(|(reason, _)| Some(*reason) == this)
            .map_or(netto_no_conn::NETTO_NO_CONN_UNKNOWN, |(_, code)| *code) as u16
    }
}

/// A socket's connection as the kernel keeps it: protocol and both ends
/// (the remote one unspecified, `0.0.0.0:0`, for an unconnected socket).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Conn {
    /// IANA protocol number (6 TCP, 17 UDP).
    pub proto: u8,
    pub local: SocketAddr,
    pub remote: SocketAddr,
}

const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;

fn address(family: u8, words: &[u32; 4], port: u16) -> SocketAddr {
    let mut bytes = [0u8; 16];
    for (chunk, word) in bytes.chunks_exact_mut(4).zip(words) {
        chunk.copy_from_slice(&word.to_ne_bytes());
    }
    let ip = if family == AF_INET {
        IpAddr::from([bytes[0], bytes[1], bytes[2], bytes[3]])
    } else {
        IpAddr::from(bytes)
    };
    SocketAddr::new(ip, port)
}

fn words(ip: IpAddr) -> [u32; 4] {
    let bytes = match ip {
        IpAddr::V4(ip) => {
            let mut b = [0; 16];
            b[..4].copy_from_slice(&ip.octets());
            b
        }
        IpAddr::V6(ip) => ip.octets(),
    };
    let mut words = [0; 4];
    for (word, chunk) in words.iter_mut().zip(bytes.chunks_exact(4)) {
        *word = u32::from_ne_bytes(chunk.try_into().expect("four bytes"));
    }
    words
}

impl From<&netto_group_key> for Key {
    fn from(k: &netto_group_key) -> Key {
        let conn = matches!(k.family, AF_INET | AF_INET6).then(|| Conn {
            proto: k.proto,
            local: address(k.family, &k.laddr, k.lport),
            remote: address(k.family, &k.raddr, k.rport),
        });
        Key {
            cgroup: k.cgroup,
            tgid: k.tgid,
            netns: k.netns,
            conn,
            no_conn: NoConn::of(k.why),
        }
    }
}

impl From<Key> for netto_group_key {
    fn from(k: Key) -> netto_group_key {
        let mut key = netto_group_key {
            cgroup: k.cgroup,
            tgid: k.tgid,
            netns: k.netns,
            why: NoConn::code(k.no_conn),
            ..netto_group_key::default()
        };
        if let Some(conn) = k.conn {
            key.proto = conn.proto;
            key.family = if conn.local.is_ipv4() {
                AF_INET
            } else {
                AF_INET6
            };
            key.laddr = words(conn.local.ip());
            key.raddr = words(conn.remote.ip());
            key.lport = conn.local.port();
            key.rport = conn.remote.port();
        }
        key
    }
}

impl Key {
    /// The key a sample carries: none when the BPF side left it empty
    /// (attribution off, or no delivery point yet; every real key has a
    /// network namespace).
    pub fn of_sample(k: &netto_group_key) -> Option<Key> {
        (k.netns != 0).then(|| Key::from(k))
    }
}

/// Programs only `--by flow|port` needs: loaded with connections alone.
const FLOWS_ONLY: [&str; 1] = ["netto_attr_forwarded"];

/// The loaded delivery points, attached while attribution is on.
pub struct Points<'obj> {
    skel: AttributeSkel<'obj>,
    links: Vec<Link>,
    missing: Vec<&'static Point>,
    /// Keys carry connections (`--by flow|port`).
    conns: bool,
}

impl<'obj> Points<'obj> {
    /// Loads the points this kernel has, sharing `accounting`'s maps, their
    /// keys carrying each socket's connection when `conns` (`--by
    /// flow|port`); attaches nothing.
    pub fn load(
        storage: &'obj mut MaybeUninit<OpenObject>,
        accounting: &Accounting<'_>,
        conns: bool,
    ) -> Result<Self, KernelError> {
        let load_err = |source| KernelError::Load {
            what: "the attribution programs",
            source,
        };
        let btf = Btf::from_vmlinux().map_err(KernelError::NoBtf)?;
        let missing = missing_points(&btf);
        let (skel, ()) = skel::load::<AttributeSkelBuilder, _, _>(storage, load_err, |open| {
            open.maps
                .cpus
                .reuse_fd(accounting.cpus_map())
                .map_err(load_err)?;
            open.maps
                .groups
                .reuse_fd(accounting.groups_map())
                .map_err(load_err)?;
            if let Some(rodata) = open.maps.rodata_data.as_deref_mut() {
                rodata.attr_flows = u32::from(conns);
            }
            for mut prog in open.open_object_mut().progs_mut() {
                let name = prog.name().to_string_lossy().into_owned();
                let absent = missing.iter().any(|point| point.program == name);
                prog.set_autoload(!absent && (conns || !FLOWS_ONLY.contains(&name.as_str())));
            }
            Ok(())
        })?;
        Ok(Points {
            skel,
            links: Vec::new(),
            missing,
            conns,
        })
    }

    /// Attaches (on) or detaches (off) every point and sets the
    /// accounting's switch to match: off, nothing runs but the marks the
    /// accounting's hooks keep.
    pub fn switch(&mut self, accounting: &Accounting<'_>, on: bool) -> Result<(), KernelError> {
        if !on {
            accounting.set_attribution(false, self.conns)?;
            self.links.clear();
            return Ok(());
        }
        if self.is_on() {
            return Ok(());
        }
        for prog in self.skel.object().progs_mut().filter(|p| p.autoload()) {
            let name = prog.name().to_string_lossy().into_owned();
            let link = prog
                .attach()
                .map_err(|source| KernelError::Attach { prog: name, source })?;
            self.links.push(link);
        }
        accounting.set_attribution(true, self.conns)
    }

    pub fn is_on(&self) -> bool {
        !self.links.is_empty()
    }

    /// The delivery points this kernel lacks: what each would have claimed
    /// stays unattributed.
    pub fn missing(&self) -> &[&'static Point] {
        &self.missing
    }
}

#[cfg(test)]
mod tests {
    use libbpf_rs::skel::SkelBuilder;

    use super::*;
    use crate::kernel::tracepoints::POINTS;

    #[test]
    fn every_point_is_a_program_of_the_object() {
        let mut storage = MaybeUninit::uninit();
        let open = AttributeSkelBuilder::default().open(&mut storage).unwrap();
        let programs: Vec<String> = open
            .open_object()
            .progs()
            .map(|p| p.name().to_string_lossy().into_owned())
            .collect();
        for point in POINTS {
            assert!(programs.iter().any(|p| p == point.program), "{point:?}");
        }
        assert_eq!(programs.len(), POINTS.len(), "a program without a row");
    }
}
