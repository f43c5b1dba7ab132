//! Which BPF program types run on the network path, and what each attach
//! type the kernel reports is called where netto shows it: tables, so a
//! new hook is a row.

use libbpf_rs::libbpf_sys as sys;

/// The program types that run on the network path, by the name netto
/// shows, and the hook a program of that type is on when netto cannot
/// find where it is attached (a socket filter has no query at all: it is
/// attached to sockets).
pub const NETWORK_TYPES: &[(u32, &str, &str)] = &[
    (
        sys::BPF_PROG_TYPE_SOCKET_FILTER,
        "socket_filter",
        "socket_filter",
    ),
    (sys::BPF_PROG_TYPE_SCHED_CLS, "sched_cls", "tc"),
    (sys::BPF_PROG_TYPE_SCHED_ACT, "sched_act", "tc"),
    (sys::BPF_PROG_TYPE_XDP, "xdp", "xdp"),
    (sys::BPF_PROG_TYPE_CGROUP_SKB, "cgroup_skb", "cgroup_skb"),
    (sys::BPF_PROG_TYPE_CGROUP_SOCK, "cgroup_sock", "cgroup_sock"),
    (sys::BPF_PROG_TYPE_LWT_IN, "lwt_in", "lwt_in"),
    (sys::BPF_PROG_TYPE_LWT_OUT, "lwt_out", "lwt_out"),
    (sys::BPF_PROG_TYPE_LWT_XMIT, "lwt_xmit", "lwt_xmit"),
    (sys::BPF_PROG_TYPE_SOCK_OPS, "sock_ops", "sock_ops"),
    (sys::BPF_PROG_TYPE_SK_SKB, "sk_skb", "sk_skb"),
    (sys::BPF_PROG_TYPE_SK_MSG, "sk_msg", "sk_msg"),
    (
        sys::BPF_PROG_TYPE_CGROUP_SOCK_ADDR,
        "cgroup_sock_addr",
        "cgroup_sock_addr",
    ),
    (
        sys::BPF_PROG_TYPE_SK_REUSEPORT,
        "sk_reuseport",
        "sk_reuseport",
    ),
    (
        sys::BPF_PROG_TYPE_FLOW_DISSECTOR,
        "flow_dissector",
        "flow_dissector",
    ),
    (
        sys::BPF_PROG_TYPE_CGROUP_SOCKOPT,
        "cgroup_sockopt",
        "cgroup_sockopt",
    ),
    (sys::BPF_PROG_TYPE_SK_LOOKUP, "sk_lookup", "sk_lookup"),
    (sys::BPF_PROG_TYPE_NETFILTER, "netfilter", "netfilter"),
];

/// A network program type's name and its hook when not located; `None`
/// for a type off the network path (tracing, LSM, ...).
pub fn network_type(prog_type: u32) -> Option<(&'static str, &'static str)> {
    NETWORK_TYPES
        .iter()
        .find(|(t, _, _)| *t == prog_type)
        .map(|&(_, name, hook)| (name, hook))
}

/// Attach types as the kernel reports them in links and queries, by the
/// hook netto shows (one hook per place a program runs).
pub const ATTACH_TYPES: &[(u32, &str)] = &[
    (sys::BPF_CGROUP_INET_INGRESS, "cgroup_skb_ingress"),
    (sys::BPF_CGROUP_INET_EGRESS, "cgroup_skb_egress"),
    (sys::BPF_CGROUP_INET_SOCK_CREATE, "cgroup_sock_create"),
    (sys::BPF_CGROUP_INET_SOCK_RELEASE, "cgroup_sock_release"),
    (sys::BPF_CGROUP_INET4_POST_BIND, "cgroup_post_bind4"),
    (sys::BPF_CGROUP_INET6_POST_BIND, "cgroup_post_bind6"),
    (sys::BPF_CGROUP_SOCK_OPS, "sock_ops"),
    (sys::BPF_CGROUP_INET4_BIND, "cgroup_bind4"),
    (sys::BPF_CGROUP_INET6_BIND, "cgroup_bind6"),
    (sys::BPF_CGROUP_INET4_CONNECT, "cgroup_connect4"),
    (sys::BPF_CGROUP_INET6_CONNECT, "cgroup_connect6"),
    (sys::BPF_CGROUP_UDP4_SENDMSG, "cgroup_sendmsg4"),
    (sys::BPF_CGROUP_UDP6_SENDMSG, "cgroup_sendmsg6"),
    (sys::BPF_CGROUP_UDP4_RECVMSG, "cgroup_recvmsg4"),
    (sys::BPF_CGROUP_UDP6_RECVMSG, "cgroup_recvmsg6"),
    (sys::BPF_CGROUP_INET4_GETPEERNAME, "cgroup_getpeername4"),
    (sys::BPF_CGROUP_INET6_GETPEERNAME, "cgroup_getpeername6"),
    (sys::BPF_CGROUP_INET4_GETSOCKNAME, "cgroup_getsockname4"),
    (sys::BPF_CGROUP_INET6_GETSOCKNAME, "cgroup_getsockname6"),
    (sys::BPF_CGROUP_GETSOCKOPT, "cgroup_getsockopt"),
    (sys::BPF_CGROUP_SETSOCKOPT, "cgroup_setsockopt"),
    (sys::BPF_SK_SKB_STREAM_PARSER, "sk_skb_parser"),
    (sys::BPF_SK_SKB_STREAM_VERDICT, "sk_skb_verdict"),
    (sys::BPF_SK_SKB_VERDICT, "sk_skb_verdict"),
    (sys::BPF_SK_MSG_VERDICT, "sk_msg"),
    (sys::BPF_FLOW_DISSECTOR, "flow_dissector"),
    (sys::BPF_SK_LOOKUP, "sk_lookup"),
    (sys::BPF_XDP, "xdp"),
    (sys::BPF_TCX_INGRESS, "tc_ingress"),
    (sys::BPF_TCX_EGRESS, "tc_egress"),
    (sys::BPF_NETKIT_PRIMARY, "netkit_primary"),
    (sys::BPF_NETKIT_PEER, "netkit_peer"),
    (sys::BPF_NETFILTER, "netfilter"),
];

/// The hook of an attach type; `None` for one off the network path (a
/// cgroup's device or sysctl programs, tracing).
pub fn hook_of(attach_type: u32) -> Option<&'static str> {
    ATTACH_TYPES
        .iter()
        .find(|(t, _)| *t == attach_type)
        .map(|&(_, hook)| hook)
}

/// The attach types a cgroup program of each network type can be on:
/// what a cgroup is asked about (`BPF_PROG_QUERY`) for a program of that
/// type that no link locates.
pub const CGROUP_ATTACH_TYPES: &[(&str, &[u32])] = &[
    (
        "cgroup_skb",
        &[sys::BPF_CGROUP_INET_INGRESS, sys::BPF_CGROUP_INET_EGRESS],
    ),
    (
        "cgroup_sock",
        &[
            sys::BPF_CGROUP_INET_SOCK_CREATE,
            sys::BPF_CGROUP_INET_SOCK_RELEASE,
            sys::BPF_CGROUP_INET4_POST_BIND,
            sys::BPF_CGROUP_INET6_POST_BIND,
        ],
    ),
    (
        "cgroup_sock_addr",
        &[
            sys::BPF_CGROUP_INET4_BIND,
            sys::BPF_CGROUP_INET6_BIND,
            sys::BPF_CGROUP_INET4_CONNECT,
            sys::BPF_CGROUP_INET6_CONNECT,
            sys::BPF_CGROUP_UDP4_SENDMSG,
            sys::BPF_CGROUP_UDP6_SENDMSG,
            sys::BPF_CGROUP_UDP4_RECVMSG,
            sys::BPF_CGROUP_UDP6_RECVMSG,
            sys::BPF_CGROUP_INET4_GETPEERNAME,
            sys::BPF_CGROUP_INET6_GETPEERNAME,
            sys::BPF_CGROUP_INET4_GETSOCKNAME,
            sys::BPF_CGROUP_INET6_GETSOCKNAME,
        ],
    ),
    ("sock_ops", &[sys::BPF_CGROUP_SOCK_OPS]),
    (
        "cgroup_sockopt",
        &[sys::BPF_CGROUP_GETSOCKOPT, sys::BPF_CGROUP_SETSOCKOPT],
    ),
];

/// The cgroup attach types of a network program type; empty for a type
/// not attached to cgroups.
pub fn cgroup_attach_types(prog_type: &str) -> &'static [u32] {
    CGROUP_ATTACH_TYPES
        .iter()
        .find(|(t, _)| *t == prog_type)
        .map_or(&[], |&(_, types)| types)
}

/// The tcx directions, queried on every interface.
pub const TCX: [u32; 2] = [sys::BPF_TCX_INGRESS, sys::BPF_TCX_EGRESS];

/// Netfilter hooks by number (`NF_INET_*`), for a netfilter link.
pub const NETFILTER_HOOKS: [&str; 5] = ["prerouting", "input", "forward", "output", "postrouting"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_network_type_and_attach_type_is_named_once() {
        let mut types: Vec<u32> = NETWORK_TYPES.iter().map(|r| r.0).collect();
        types.sort_unstable();
        types.dedup();
        assert_eq!(types.len(), NETWORK_TYPES.len());
        let mut attach: Vec<u32> = ATTACH_TYPES.iter().map(|r| r.0).collect();
        attach.sort_unstable();
        attach.dedup();
        assert_eq!(attach.len(), ATTACH_TYPES.len());
        assert_eq!(network_type(sys::BPF_PROG_TYPE_XDP), Some(("xdp", "xdp")));
        assert_eq!(network_type(sys::BPF_PROG_TYPE_TRACING), None);
        assert_eq!(hook_of(sys::BPF_TCX_EGRESS), Some("tc_egress"));
        assert_eq!(hook_of(sys::BPF_CGROUP_DEVICE), None);
        // Each cgroup attach type asked about is one netto names, and each
        // program type with attach types is a network type.
        for (prog_type, types) in CGROUP_ATTACH_TYPES {
            assert!(
                NETWORK_TYPES.iter().any(|r| r.1 == *prog_type),
                "{prog_type}"
            );
            assert!(types.iter().all(|&t| hook_of(t).is_some()), "{prog_type}");
        }
        assert_eq!(cgroup_attach_types("xdp"), &[] as &[u32]);
    }
}
