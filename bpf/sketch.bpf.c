// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * NitroSketch over a Count Sketch, as an XDP monitor: counts TCP and UDP
 * flows of IPv4 and IPv6 by 5-tuple, other packets by protocol, and always
 * passes the packet on unchanged.
 *
 * The cost model (see sketch.h for the layout): a skipped packet indexes
 * this CPU's hot line by CPU number (no map lookup, no stack), counts
 * itself and decrements the gap, before any header is read; it uses no
 * callee-saved register, so the JIT-ed skip path has no pushes and pops
 * beyond the frame. Everything else is in sample(), a separate function
 * that only sampled packets call: it looks the CPU's slot up, parses and
 * hashes the packet once, and each sampled row takes its column and sign
 * from its own lane of the 64-bit hash and adds the variate's weight.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "sketch.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define ETH_P_IP 0x0800
#define ETH_P_ARP 0x0806
#define ETH_P_8021Q 0x8100
#define ETH_P_8021AD 0x88A8
#define ETH_P_IPV6 0x86DD
#define IP_OFFSET_MASK 0x1fff
#define NEXTHDR_ICMPV6 58
/* Stacked VLAN tags looked through (802.1ad outer, 802.1Q inner). */
#define MAX_VLAN_TAGS 2
/* classify()'s answer for a TCP/UDP packet whose flow it filled in. */
#define CLASS_FLOW SKETCH_PROTO_COUNT

/* Set by user space before loading: the verifier then sees constants,
 * which bound every cell index without a runtime mask. */
const volatile struct sketch_config geometry = {};

/* One hot line per CPU, indexed by CPU number: a global array, so the
 * program has its address as a constant. User space resizes it to
 * geometry.cpus entries before loading (the last variable of its section). */
struct sketch_hot sketch_hot[1] SEC(".data.hot");

/* One slot per CPU; user space sets the real value size (state plus
 * rows x columns cells) and the number of CPUs before loading. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct sketch_state));
	__uint(max_entries, 1);
} sketch_slots SEC(".maps");

struct sketch_vlan {
	__be16 tci;
	__be16 proto;
};

/* fasthash64's mixing step. */
static __always_inline __u64 mix(__u64 h)
{
	h ^= h >> 23;
	h *= 0x2127599bf4325c37ULL;
	h ^= h >> 47;
	return h;
}

/* fasthash64 of the 40-byte flow key: five whole words, no tail. */
static __always_inline __u64 flow_hash(const struct sketch_flow *flow)
{
	const __u64 m = 0x880355f21e6d1965ULL;
	const __u64 *words = (const __u64 *)flow;
	__u64 h = SKETCH_HASH_SEED ^ (sizeof(*flow) * m);

#pragma unroll
	for (int i = 0; i < sizeof(*flow) / sizeof(__u64); i++) {
		h ^= mix(words[i]);
		h *= m;
	}
	return mix(h);
}

static __always_inline __u32 ports(void *l4, void *data_end, __u8 proto,
				   struct sketch_flow *flow)
{
	__be16 *p = l4;

	if ((void *)(p + 2) > data_end)
		return SKETCH_PROTO_OTHER;
	flow->sport = p[0];
	flow->dport = p[1];
	flow->proto = proto;
	return CLASS_FLOW;
}

static __always_inline __u32 ipv4(void *l3, void *data_end, struct sketch_flow *flow)
{
	struct iphdr *ip = l3;
	__u32 header;

	if ((void *)(ip + 1) > data_end)
		return SKETCH_PROTO_OTHER;
	if (ip->frag_off & bpf_htons(IP_OFFSET_MASK))
		return SKETCH_PROTO_FRAGMENT;
	if (ip->protocol != IPPROTO_TCP && ip->protocol != IPPROTO_UDP)
		return ip->protocol == IPPROTO_ICMP ? SKETCH_PROTO_ICMP : SKETCH_PROTO_IPV4_OTHER;
	header = ip->ihl * 4;
	if (header < sizeof(*ip))
		return SKETCH_PROTO_OTHER;
	/* The ports must lie inside the datagram, not in Ethernet padding
	 * after it; past the frame's end they are caught below. */
	if (header + 4 > bpf_ntohs(ip->tot_len))
		return SKETCH_PROTO_OTHER;
	*(__u32 *)flow->src = ip->saddr;
	*(__u32 *)flow->dst = ip->daddr;
	flow->family = SKETCH_FAMILY_IPV4;
	return ports(l3 + header, data_end, ip->protocol, flow);
}

static __always_inline __u32 ipv6(void *l3, void *data_end, struct sketch_flow *flow)
{
	struct ipv6hdr *ip = l3;

	if ((void *)(ip + 1) > data_end)
		return SKETCH_PROTO_OTHER;
	if (ip->nexthdr != IPPROTO_TCP && ip->nexthdr != IPPROTO_UDP)
		return ip->nexthdr == NEXTHDR_ICMPV6 ? SKETCH_PROTO_ICMPV6 : SKETCH_PROTO_IPV6_OTHER;
	__builtin_memcpy(flow->src, &ip->saddr, sizeof(flow->src));
	__builtin_memcpy(flow->dst, &ip->daddr, sizeof(flow->dst));
	flow->family = SKETCH_FAMILY_IPV6;
	return ports(ip + 1, data_end, ip->nexthdr, flow);
}

/* CLASS_FLOW with `flow` filled in, or the sketch_protocol of the packet. */
static __always_inline __u32 classify(void *data, void *data_end, struct sketch_flow *flow)
{
	struct ethhdr *eth = data;
	void *l3 = eth + 1;
	__be16 proto;

	if (l3 > data_end)
		return SKETCH_PROTO_OTHER;
	proto = eth->h_proto;
#pragma unroll
	for (int i = 0; i < MAX_VLAN_TAGS; i++) {
		struct sketch_vlan *vlan = l3;

		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		if ((void *)(vlan + 1) > data_end)
			return SKETCH_PROTO_OTHER;
		proto = vlan->proto;
		l3 = vlan + 1;
	}
	if (proto == bpf_htons(ETH_P_IP))
		return ipv4(l3, data_end, flow);
	if (proto == bpf_htons(ETH_P_IPV6))
		return ipv6(l3, data_end, flow);
	if (proto == bpf_htons(ETH_P_ARP))
		return SKETCH_PROTO_ARP;
	return SKETCH_PROTO_OTHER;
}

/* The bucket vote of sketch.h's struct sketch_candidate. Holders are told
 * apart by their 64-bit hash: one compare instead of the 40-byte key's five;
 * the key is only written when a flow takes a bucket over. */
static __always_inline void vote(struct sketch_state *s, const struct sketch_flow *flow,
				 __u64 hash)
{
	struct sketch_candidate *c = &s->candidates[(hash >> 32) & (SKETCH_CANDIDATES - 1)];
	__u32 votes = c->votes;

	if (c->hash == hash && votes > 0) {
		if (votes < SKETCH_VOTES_MAX)
			c->votes = votes + 1;
	} else if (votes > 0) {
		c->votes = votes - 1;
	} else {
		c->flow = *flow;
		c->hash = hash;
		c->votes = 1;
	}
}

/*
 * A packet with at least one sampled row, the first being `row`. Each
 * sampled row adds the current weight, then the next variate says how many
 * (packet, row) slots to skip and with which weight the next update counts.
 * Not inlined: its registers and stack stay off the skip path.
 */
static __noinline int sample(struct sketch_hot *hot, __u32 cpu, void *data, void *data_end,
			     __u64 row)
{
	const __u32 rows = geometry.rows;
	const __u32 columns = geometry.columns;
	const __u32 bits = geometry.column_bits;
	struct sketch_flow flow = {};
	struct sketch_state *s;
	__u64 len = data_end - data;
	__u32 weight, cursor, limit, class;
	__u64 hash = 0, reused;

	s = bpf_map_lookup_elem(&sketch_slots, &cpu);
	if (!s)
		return XDP_PASS;
	weight = s->weight;
	cursor = s->cursor;
	limit = *(volatile __u32 *)&s->limit;
	reused = s->reused;
	class = classify(data, data_end, &flow);
	if (class == CLASS_FLOW) {
		hash = flow_hash(&flow);
		vote(s, &flow, hash);
	}

#pragma unroll
	for (int i = 0; i < SKETCH_MAX_ROWS; i++) {
		struct sketch_variate next;
		__s64 packets = weight;
		__s64 bytes = weight * len;

		if (row >= rows)
			break;
		if (class == CLASS_FLOW) {
			__u64 lane = hash >> (row * (bits + 1));
			__u64 cell = (__u64)row * columns + (lane & (columns - 1));

			if ((lane >> bits) & 1) {
				packets = -packets;
				bytes = -bytes;
			}
			/* Never taken, but older verifiers (6.1) do not keep
			 * row < rows through the multiply and need it to bound
			 * the cell. */
			if (cell >= (__u64)rows * columns)
				break;
			s->cells[cell].packets += packets;
			s->cells[cell].bytes += bytes;
		} else if (class < SKETCH_PROTO_COUNT) {
			s->proto_packets[class] += packets;
			s->proto_bytes[class] += bytes;
		}
		if (cursor != limit) {
			next = s->ring[cursor & (SKETCH_RING - 1)];
			cursor++;
		} else {
			next = s->ring[mix(reused) & (SKETCH_RING - 1)];
			reused++;
		}
		row += 1 + next.skip;
		weight = next.weight;
	}
	hot->skip = row - rows;
	s->weight = weight;
	s->cursor = cursor;
	s->reused = reused;
	return XDP_PASS;
}

SEC("xdp")
int netto_sketch(struct xdp_md *ctx)
{
	__u32 cpu = bpf_get_smp_processor_id();
	const __u32 rows = geometry.rows;
	struct sketch_hot *hot;
	void *data, *data_end;
	__u32 skip;

	if (cpu >= geometry.cpus)
		return XDP_PASS;
	hot = &sketch_hot[cpu];
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	hot->packets++;
	hot->bytes += data_end - data;
	skip = hot->skip;
	if (skip >= rows) {
		hot->skip = skip - rows;
		return XDP_PASS;
	}
	return sample(hot, cpu, data, data_end, skip);
}
