//! Test networks of several namespaces joined by veth pairs, built with
//! `ip` and removed on drop (deleting a namespace deletes its veth ends).
//! Addresses come from 198.18.0.0/15, the benchmarking range.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use netto::workload::undo::{self, Registered};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Runs `ip ARGS`, panicking with its stderr on failure (test set-up).
pub fn ip(args: &str) {
    run("ip", args);
}

pub fn run(program: &str, args: &str) {
    let out = Command::new(program)
        .args(args.split_whitespace())
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Which of namespace `namespace` and link `link` (a host-side veth end)
/// still exist, in that order: what a program that made them left behind
/// after its exit.
pub fn still_there(namespace: &str, link: &str) -> Vec<String> {
    let namespaces = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let mut left: Vec<String> = String::from_utf8_lossy(&namespaces.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name == namespace)
        .map(str::to_owned)
        .collect();
    let shown = Command::new("ip")
        .args(["link", "show", "dev", link])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    if shown.status.success() {
        left.push(link.to_owned());
    }
    left
}

/// Namespaces created for one test, all deleted on drop, or on a signal
/// ([`super::undo_on_signals`]).
pub struct Topology {
    prefix: String,
    namespaces: Vec<String>,
    links: u32,
    /// Forgotten once `drop` has deleted the namespaces.
    undos: Vec<Registered>,
}

impl Topology {
    pub fn new(tag: &str) -> Topology {
        super::undo_on_signals();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Topology {
            prefix: format!("nt{tag}{}x{n}", std::process::id() % 100_000),
            namespaces: Vec::new(),
            links: 0,
            undos: Vec::new(),
        }
    }

    /// Creates namespace `name` (returned with the topology's prefix), with
    /// loopback up.
    pub fn namespace(&mut self, name: &str) -> String {
        let ns = format!("{}{name}", self.prefix);
        ip(&format!("netns add {ns}"));
        self.namespaces.push(ns.clone());
        let name = ns.clone();
        self.undos.push(undo::register(move || {
            let _ = Command::new("ip").args(["netns", "del", &name]).status();
        }));
        ip(&format!("-n {ns} link set lo up"));
        ns
    }

    /// A veth pair between two namespaces; returns the interface names
    /// (in `a`, in `b`), both up.
    pub fn link(&mut self, a: &str, b: &str) -> (String, String) {
        self.links += 1;
        let ia = format!("v{}a{}", self.links, std::process::id() % 100_000);
        let ib = format!("v{}b{}", self.links, std::process::id() % 100_000);
        ip(&format!(
            "link add {ia} netns {a} type veth peer name {ib} netns {b}"
        ));
        ip(&format!("-n {a} link set {ia} up"));
        ip(&format!("-n {b} link set {ib} up"));
        (ia, ib)
    }

    pub fn addr(&self, ns: &str, ifname: &str, cidr: &str) {
        ip(&format!("-n {ns} addr add {cidr} dev {ifname}"));
    }

    /// Namespaces `a` and `b` on two /24s (`198.18.{net}.0` and
    /// `198.18.{net + 1}.0`, hosts .1) joined by a forwarding router `r`
    /// (.254 on both); returns (a, b, r).
    pub fn routed(&mut self, net: u8) -> (String, String, String) {
        let a = self.namespace("a");
        let b = self.namespace("b");
        let r = self.namespace("r");
        let (ia, ra) = self.link(&a, &r);
        let (ib, rb) = self.link(&b, &r);
        let next = net + 1;
        self.addr(&a, &ia, &format!("198.18.{net}.1/24"));
        self.addr(&r, &ra, &format!("198.18.{net}.254/24"));
        self.addr(&b, &ib, &format!("198.18.{next}.1/24"));
        self.addr(&r, &rb, &format!("198.18.{next}.254/24"));
        ip(&format!("-n {a} route add default via 198.18.{net}.254"));
        ip(&format!("-n {b} route add default via 198.18.{next}.254"));
        run(
            "ip",
            &format!("netns exec {r} sysctl -qw net.ipv4.ip_forward=1"),
        );
        (a, b, r)
    }

    /// Namespaces `a{i}` and `b{i}` on `198.18.{net}.0/24` (.1 and .2),
    /// the egress of `a{i}` shaped to `rate` (see [`Topology::shaped_link`]);
    /// returns (a, b, b's address).
    pub fn shaped_pair(&mut self, i: u8, net: u8, rate: &str) -> (String, String, String) {
        let a = self.namespace(&format!("a{i}"));
        let b = self.namespace(&format!("b{i}"));
        let ip = self.shaped_link(&a, &b, net, rate);
        (a, b, ip)
    }

    /// A veth pair from `a` (`198.18.{net}.1/24`) to `b` (`.2`), the
    /// egress of `a`'s end shaped to `rate` (tbf, with room for everything
    /// TCP's small queues let it queue, so it paces rather than drops);
    /// returns b's address.
    pub fn shaped_link(&mut self, a: &str, b: &str, net: u8, rate: &str) -> String {
        let (ia, ib) = self.link(a, b);
        self.addr(a, &ia, &format!("198.18.{net}.1/24"));
        self.addr(b, &ib, &format!("198.18.{net}.2/24"));
        run(
            "tc",
            &format!("-n {a} qdisc add dev {ia} root tbf rate {rate} burst 256kb limit 32mb"),
        );
        format!("198.18.{net}.2")
    }

    /// `ip netns exec NS program`.
    pub fn exec(&self, ns: &str, program: &str) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", ns, program]);
        command
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for ns in &self.namespaces {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}
