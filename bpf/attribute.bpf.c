// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Attribution's delivery points: the places inside a softirq where the
 * kernel says whom its work is for. At each, the time of the running event
 * since the last settled point (or since the run began) goes to that
 * point's owner:
 *
 * - a socket: a packet handed to it (sock:sk_data_ready), a TCP segment
 *   processed for it (tcp:tcp_probe, also pure ACKs on the sending side),
 *   a packet transmitted or freed for it (net:net_dev_xmit, skb:consume_skb
 *   with skb->sk). Its owner is the process and cgroup that last made a
 *   socket call on it (sock:sock_send_length / sock_recv_length, kept in
 *   socket local storage), else the cgroup the kernel keeps on the socket;
 * - a device's network namespace: a packet transmitted for no socket
 *   (forwarded, bridged).
 *
 * Under `--by flow|port` (`attr_flows`) a socket's key also carries its
 * connection (protocol, addresses, ports), the socket calls name the socket
 * their window's time goes to, and their payload bytes are counted per key.
 * An unconnected UDP socket's peer comes from its packets: the one sent, and
 * the one queued to it, which also names the next receive call.
 *
 * A separate object sharing the accounting's per-CPU record and group map,
 * so attribution loads, attaches and detaches at run time without touching
 * the accounting's programs. It only reads the accounting's state and
 * writes the attribution part of it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "netto.h"
#include "cpus_map.h"
#include "attribution.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Whether keys carry the socket's connection (`--by flow|port`): set by
 * user space before load. Off, the keys are as few as the owners. */
const volatile __u32 attr_flows = 0;

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct netto_sock_owner);
} owners SEC(".maps");

/* Socket states of the kernel's mini sockets (sk_fullsock() is false):
 * they end where struct sock_common ends. */
#define NETTO_TCP_TIME_WAIT 6
#define NETTO_TCP_NEW_SYN_RECV 12
#define NETTO_AF_INET 2
#define NETTO_AF_INET6 10
#define NETTO_IPPROTO_TCP 6
#define NETTO_IPPROTO_UDP 17
#define NETTO_IPPROTO_UDPLITE 136
#define NETTO_IPPROTO_FRAGMENT 44
#define NETTO_ETH_P_IP 0x0800
#define NETTO_ETH_P_IPV6 0x86DD
/* IPv4's more-fragments flag and fragment offset (host order) */
#define NETTO_IP_FRAGMENT 0x3fff
#define NETTO_MSG_PEEK 2

/* The start of a TCP or UDP header: the ports, and TCP's data offset. */
struct netto_l4_start {
	__be16 source;
	__be16 dest;
	__u32 word1;
	__u32 word2;
	__u8 tcp_doff; /* TCP: header length in words, in the high nibble */
};

/* Fills `key`'s connection from the IPv4 or IPv6 header and the TCP or UDP
 * ports of `skb`, a packet being transmitted (its source is the local
 * end); other IP protocols get their addresses and no ports. Where the
 * packet has no connection, `key->why` says why (enum netto_no_conn).
 * Returns the payload bytes past the transport header (0 without one). */
static __always_inline __u32 packet_conn(const struct sk_buff *skb, struct netto_group_key *key)
{
	unsigned char *head = skb->head;
	__u16 nh = skb->network_header, proto = __builtin_bswap16(skb->protocol);
	struct netto_l4_start l4 = {};
	__u32 l4_off, hdr_len, data_off;

	if (nh == (__u16)~0U) {
		key->why = NETTO_NO_CONN_NOT_IP;
		return 0;
	}
	if (proto == NETTO_ETH_P_IP) {
		struct iphdr ip;

		if (bpf_probe_read_kernel(&ip, sizeof(ip), head + nh))
			return 0;
		if (__builtin_bswap16(ip.frag_off) & NETTO_IP_FRAGMENT) {
			key->why = NETTO_NO_CONN_FRAGMENT;
			return 0;
		}
		key->family = NETTO_AF_INET;
		key->proto = ip.protocol;
		key->laddr[0] = ip.saddr;
		key->raddr[0] = ip.daddr;
		l4_off = nh + ip.ihl * 4;
	} else if (proto == NETTO_ETH_P_IPV6) {
		struct ipv6hdr ip6;

		if (bpf_probe_read_kernel(&ip6, sizeof(ip6), head + nh))
			return 0;
		if (ip6.nexthdr == NETTO_IPPROTO_FRAGMENT) {
			key->why = NETTO_NO_CONN_FRAGMENT;
			return 0;
		}
		key->family = NETTO_AF_INET6;
		key->proto = ip6.nexthdr;
		__builtin_memcpy(key->laddr, &ip6.saddr, 16);
		__builtin_memcpy(key->raddr, &ip6.daddr, 16);
		l4_off = nh + sizeof(ip6);
	} else {
		key->why = NETTO_NO_CONN_NOT_IP;
		return 0;
	}
	if (key->proto == NETTO_IPPROTO_TCP)
		hdr_len = 0;
	else if (key->proto == NETTO_IPPROTO_UDP || key->proto == NETTO_IPPROTO_UDPLITE)
		hdr_len = 8;
	else
		return 0;
	if (bpf_probe_read_kernel(&l4, sizeof(l4), head + l4_off))
		return 0;
	key->lport = __builtin_bswap16(l4.source);
	key->rport = __builtin_bswap16(l4.dest);
	if (!hdr_len)
		hdr_len = (l4.tcp_doff >> 4) * 4;
	/* skb->len counts from skb->data, here the link layer's header. */
	data_off = skb->data - head;
	hdr_len += l4_off - data_off;
	return skb->len > hdr_len ? skb->len - hdr_len : 0;
}

/* `skb`'s connection as its receiver sees it: the packet's destination is
 * the local end. As packet_conn() otherwise. */
static __always_inline void packet_conn_in(const struct sk_buff *skb, struct netto_group_key *key)
{
	struct netto_group_key sent = {};

	packet_conn(skb, &sent);
	if (!sent.family)
		return;
	key->family = sent.family;
	key->proto = sent.proto;
	__builtin_memcpy(key->laddr, sent.raddr, sizeof(key->laddr));
	__builtin_memcpy(key->raddr, sent.laddr, sizeof(key->raddr));
	key->lport = sent.rport;
	key->rport = sent.lport;
}

static __always_inline bool is_udp(__u8 proto)
{
	return proto == NETTO_IPPROTO_UDP || proto == NETTO_IPPROTO_UDPLITE;
}

/* A socket's key lacks its connection's ports: an unconnected UDP
 * socket's peer, or a closed socket's local port (UDP forgets it at
 * close while its last packets are still queued). */
static __always_inline bool lacks_ports(const struct netto_group_key *key)
{
	return key->family && (!key->lport || !key->rport);
}

/* The socket's connection into `key`. A mini socket is TCP's, and has no
 * fields past struct sock_common. */
static __always_inline void flow_key(const struct sock *sk, __u8 state,
				     struct netto_group_key *key)
{
	const struct sock_common *skc = &sk->__sk_common;
	__u16 family = skc->skc_family;

	if (family == NETTO_AF_INET) {
		key->laddr[0] = skc->skc_rcv_saddr;
		key->raddr[0] = skc->skc_daddr;
	} else if (family == NETTO_AF_INET6) {
		__builtin_memcpy(key->laddr, &skc->skc_v6_rcv_saddr, 16);
		__builtin_memcpy(key->raddr, &skc->skc_v6_daddr, 16);
	} else {
		return;
	}
	key->family = family;
	key->lport = skc->skc_num;
	key->rport = __builtin_bswap16(skc->skc_dport);
	if (state == NETTO_TCP_TIME_WAIT || state == NETTO_TCP_NEW_SYN_RECV)
		key->proto = NETTO_IPPROTO_TCP;
	else
		key->proto = BPF_CORE_READ_BITFIELD(sk, sk_protocol);
}

/* The event whose time a delivery point on this CPU settles: the network
 * softirq running, a network timer callback, or a threaded NAPI poller;
 * nothing inside a socket window (that time is the calling task's) or an
 * interrupt. Follows charge() in account.bpf.c. */
static __always_inline int point_event(const struct netto_cpu *c)
{
	__u32 cb = c->callback - 1;

	if (c->in_hardirq)
		return -1;
	if (c->softirq == NETTO_SOFTIRQ_NET_RX + 1)
		return NETTO_EV_NET_RX_SOFTIRQ;
	if (c->softirq == NETTO_SOFTIRQ_NET_TX + 1)
		return NETTO_EV_NET_TX_SOFTIRQ;
	if (c->softirq)
		return cb < NETTO_MAX_CALLBACKS ? NETTO_EV_NET_TIMERS : -1;
	if (c->task_window == NETTO_WIN_NAPI)
		return NETTO_EV_NET_RX_SOFTIRQ;
	return -1;
}

/* Gives the event's open segment to `key`, the owner of the run's latest
 * point. The accounting charges the time since its last transition only at
 * its next hook, so that part is added here and the mark set past it; the
 * charge catches up. */
static __always_inline void settle(struct netto_cpu *c, int ev, const struct netto_group_key *key)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 total, mark;

	if (ev < 0 || ev >= NETTO_NR_EVENTS)
		return;
	total = c->event_ns[ev];
	if (c->since_ns && now > c->since_ns)
		total += now - c->since_ns;
	mark = c->attr.mark_ns[ev];
	if (total <= mark)
		return;
	c->attr.mark_ns[ev] = total;
	c->attr.last[ev] = *key;
	attr_give(c, key, ev, total - mark);
}

static __always_inline void sock_key(const struct sock *sk, struct netto_group_key *key)
{
	struct netto_sock_owner *owner;
	__u8 state = sk->__sk_common.skc_state;

	key->netns = sk->__sk_common.skc_net.net->ns.inum;
	if (attr_flows)
		flow_key(sk, state, key);
	if (state == NETTO_TCP_TIME_WAIT || state == NETTO_TCP_NEW_SYN_RECV)
		return;
	owner = bpf_sk_storage_get(&owners, (struct sock *)sk, 0, 0);
	if (owner) {
		key->tgid = owner->tgid;
		key->cgroup = owner->cgroup;
	} else if (bpf_core_field_exists(sk->sk_cgrp_data.cgroup)) {
		/* A helper read, not a load: clang would otherwise share the
		 * load with owner->cgroup's, which the verifier refuses for
		 * two kinds of pointer. */
		key->cgroup = BPF_CORE_READ(sk, sk_cgrp_data.cgroup, kn, id);
	}
}

/* The connection part of `from` (addresses, remote port, family) into
 * `to`, whose socket's own part (local port, protocol, owner) stays. */
static __always_inline void take_conn(struct netto_group_key *to,
				      const struct netto_group_key *from)
{
	__builtin_memcpy(to->laddr, from->laddr, sizeof(to->laddr));
	__builtin_memcpy(to->raddr, from->raddr, sizeof(to->raddr));
	to->rport = from->rport;
	to->family = from->family;
}

static __always_inline bool same_conn(const struct netto_group_key *a,
				      const struct netto_group_key *b)
{
	return a->laddr[0] == b->laddr[0] && a->laddr[1] == b->laddr[1] &&
	       a->laddr[2] == b->laddr[2] && a->laddr[3] == b->laddr[3] &&
	       a->raddr[0] == b->raddr[0] && a->raddr[1] == b->raddr[1] &&
	       a->raddr[2] == b->raddr[2] && a->raddr[3] == b->raddr[3] &&
	       a->rport == b->rport && a->family == b->family;
}

/* A packet was queued to `sk` and its reader woken. An unconnected UDP
 * socket knows no peer: under `--by flow|port` the datagram just queued at
 * the tail of its receive queue names it, and is kept on the socket (its
 * storage written only when the peer changed) for its receive calls
 * (note_call()). A datagram another CPU queued in between, or a batch
 * queued at once, is named by the last one. */
static __always_inline void name_delivery(const struct sock *sk, struct netto_group_key *key)
{
	struct netto_group_key packet = {};
	struct netto_sock_owner *owner;
	struct sk_buff *tail;

	if (!attr_flows || !lacks_ports(key) || !is_udp(key->proto) || !sk->sk_receive_queue.qlen)
		return;
	tail = sk->sk_receive_queue.prev;
	if (tail)
		packet_conn_in(tail, &packet);
	if (packet.family != key->family || packet.proto != key->proto ||
	    packet.lport != key->lport)
		return;
	take_conn(key, &packet);
	owner = bpf_sk_storage_get(&owners, (struct sock *)sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (owner && !same_conn(&owner->peer, key))
		take_conn(&owner->peer, key);
}

/* A delivery point for a socket: a transmit, a TCP probe, or (`delivered`)
 * a packet queued to it, which may name an unconnected UDP socket's peer. */
static __always_inline void at_socket(const struct sock *sk, bool delivered)
{
	struct netto_cpu *c = this_cpu();
	struct netto_group_key key = {};
	int ev;

	if (!c || !sk)
		return;
	ev = point_event(c);
	if (ev < 0)
		return;
	sock_key(sk, &key);
	if (delivered)
		name_delivery(sk, &key);
	settle(c, ev, &key);
}

/* A packet for a socket that does not know both its ports is transmitted:
 * the packet's headers name the connection (the socket's owner kept). In
 * a socket call's window (a datagram sent inline by sendto(2)), the call
 * is named by it. */
static __always_inline void at_socket_packet(const struct sock *sk, const struct sk_buff *skb)
{
	struct netto_cpu *c = this_cpu();
	struct netto_group_key key = {}, packet = {};
	bool in_call;
	int ev;

	if (!c)
		return;
	ev = point_event(c);
	in_call = c->task_window == NETTO_WIN_SEND && !c->softirq && !c->in_hardirq;
	if (ev < 0 && !in_call)
		return;
	sock_key(sk, &key);
	if (lacks_ports(&key)) {
		packet.cgroup = key.cgroup;
		packet.tgid = key.tgid;
		packet.netns = key.netns;
		packet_conn(skb, &packet);
		if (packet.family)
			key = packet;
		else if (ev < 0)
			return;
	} else if (ev < 0) {
		return;
	}
	if (ev < 0)
		attr_call_named(c, &key);
	else
		settle(c, ev, &key);
}

/* A packet transmitted for no socket: forwarded or bridged, or a local
 * one a driver orphaned before the tracepoint (loopback, veth). Under `--by
 * flow|port` its headers name its connection (netto_attr_forwarded counted
 * a forwarded one's bytes); else the device's network namespace pays. */
static __always_inline void at_device(const struct sk_buff *skb, const struct net_device *dev)
{
	struct netto_cpu *c = this_cpu();
	struct netto_group_key key = {};
	int ev;

	if (!c || !dev)
		return;
	ev = point_event(c);
	if (ev < 0)
		return;
	key.netns = dev->nd_net.net->ns.inum;
	if (attr_flows)
		packet_conn(skb, &key);
	settle(c, ev, &key);
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(netto_attr_data_ready, const struct sock *sk)
{
	at_socket(sk, true);
	return 0;
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(netto_attr_tcp_probe, struct sock *sk)
{
	at_socket(sk, false);
	return 0;
}

SEC("tp_btf/net_dev_xmit")
int BPF_PROG(netto_attr_dev_xmit, struct sk_buff *skb, int rc, struct net_device *dev)
{
	struct sock *sk = skb->sk;

	if (!sk)
		at_device(skb, dev);
	else if (attr_flows)
		at_socket_packet(sk, skb);
	else
		at_socket(sk, false);
	return 0;
}

/* `--by flow|port` only: a forwarded or bridged packet (no socket, and it
 * came in by an interface) about to be handed to its driver, which may
 * scrub both marks before net_dev_xmit: its payload bytes are counted out
 * for its connection in the device's namespace, the key net_dev_xmit then
 * gives its time to. */
SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(netto_attr_forwarded, struct sk_buff *skb, struct net_device *dev)
{
	struct netto_group_key key = {};
	struct netto_group_time *t;
	struct netto_cpu *c;
	__u32 bytes;

	if (skb->sk || !skb->skb_iif)
		return 0;
	c = this_cpu();
	if (!c)
		return 0;
	key.netns = dev->nd_net.net->ns.inum;
	bytes = packet_conn(skb, &key);
	if (!bytes)
		return 0;
	t = attr_entry(c, &key);
	if (t)
		t->bytes[NETTO_BYTES_OUT] += bytes;
	return 0;
}

SEC("tp_btf/consume_skb")
int BPF_PROG(netto_attr_consume, struct sk_buff *skb)
{
	struct sock *sk = skb->sk;

	if (sk)
		at_socket(sk, false);
	return 0;
}

/* ---- socket owners: the task of the last socket call on each socket ---- */

/* A socket call on `sk` moved `len` payload bytes (`dir`): the socket's
 * owner is now the calling task; under `--by flow|port` the call's window
 * is for this socket and its bytes are counted. */
static __always_inline void note_call(struct sock *sk, int len, int dir)
{
	struct netto_group_key key = {};
	struct netto_sock_owner *owner;
	struct netto_group_time *t;
	struct netto_cpu *c;

	if (!sk)
		return;
	owner = bpf_sk_storage_get(&owners, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!owner)
		return;
	owner->tgid = bpf_get_current_pid_tgid() >> 32;
	owner->cgroup = bpf_get_current_cgroup_id();
	if (!attr_flows)
		return;
	c = this_cpu();
	if (!c || c->softirq || c->in_hardirq)
		return;
	sock_key(sk, &key);
	/* An unconnected UDP socket's receive call is for the datagram it
	 * took: the last one delivered to it (name_delivery()) while they come
	 * one at a time; with datagrams of several peers queued, an estimate. */
	if (dir == NETTO_BYTES_IN && lacks_ports(&key) && is_udp(key.proto) &&
	    owner->peer.family == key.family)
		take_conn(&key, &owner->peer);
	/* A datagram's packet named the call already (at_socket_packet): it
	 * knows the peer this unconnected socket does not. */
	if (c->attr.call.netns && lacks_ports(&key) && c->attr.call.lport == key.lport &&
	    c->attr.call.proto == key.proto)
		key = c->attr.call;
	else if (c->task_window == NETTO_WIN_SEND || c->task_window == NETTO_WIN_RECV)
		attr_call_named(c, &key);
	if (len <= 0)
		return;
	t = attr_entry(c, &key);
	if (t)
		t->bytes[dir] += len;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(netto_attr_send_owner, struct sock *sk, int ret, int flags)
{
	note_call(sk, ret, NETTO_BYTES_OUT);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(netto_attr_recv_owner, struct sock *sk, int ret, int flags)
{
	note_call(sk, flags & NETTO_MSG_PEEK ? 0 : ret, NETTO_BYTES_IN);
	return 0;
}
