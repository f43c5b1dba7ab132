// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * NitroSketch over a Count Sketch, as an XDP monitor: counts TCP and UDP
 * flows of IPv4 and IPv6 by 5-tuple, other packets by protocol, and always
 * passes the packet on unchanged.
 *
 * One program per column count (netto_sketch_4 to netto_sketch_15, by
 * log2 of the columns), user space loads the one its geometry needs: with
 * the column count a compile-time constant, a row's column mask, sign bit
 * and stride are immediates instead of values the row loop spilled to the
 * stack and reloaded (docs/src/performance.md has the figures). Rows stay a
 * load-time constant: the verifier removes the rows the geometry does not
 * have.
 *
 * The cost model (see sketch.h for the layout): a skipped packet indexes
 * this CPU's hot line by CPU number (no map lookup, no stack), counts
 * itself and compares its count with the number of the next sampled
 * packet, before any header is read. Everything else is in sample(), a
 * separate function that only sampled packets call: it looks the CPU's
 * slot up, parses and hashes the packet once, and each sampled row takes
 * its column and sign from its own lane of the 64-bit hash and adds the
 * variate's weight; then the next variate says which packet is sampled
 * next and in which rows.
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
#define NEXTHDR_HOP 0
#define NEXTHDR_ROUTING 43
#define NEXTHDR_FRAGMENT 44
#define NEXTHDR_ICMPV6 58
#define NEXTHDR_DEST 60
/* The fragment offset in an IPv6 fragment header's frag_off. */
#define IPV6_OFFSET_MASK 0xfff8
/* Stacked VLAN tags looked through (802.1ad outer, 802.1Q inner). */
#define MAX_VLAN_TAGS 2
/* classify()'s answer for a TCP/UDP packet whose key it filled in. */
#define CLASS_FLOW SKETCH_PROTO_COUNT
/* The 64-bit words of a struct sketch_flow. */
#define KEY_WORDS (sizeof(struct sketch_flow) / sizeof(__u64))

/* Set by user space before loading, whole (the section holds nothing
 * else): the verifier then sees constants, which bound every cell index
 * without a runtime mask. */
const volatile struct sketch_config geometry SEC(".rodata.geometry") = {};

/* One hot line per CPU, indexed by CPU number: a global array, so the
 * program has its address as a constant. User space resizes it to
 * geometry.cpu_mask + 1 entries before loading (the last variable of its
 * section). */
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

/* fasthash64 of `n` whole words (no tail). Each word's step is one
 * multiply on the hash's dependency chain, which is what a sampled packet
 * waits for. */
static __always_inline __u64 fasthash(const __u64 *words, const int n)
{
	const __u64 m = 0x880355f21e6d1965ULL;
	__u64 h = SKETCH_HASH_SEED ^ (n * sizeof(__u64) * m);

#pragma unroll
	for (int i = 0; i < n; i++) {
		h ^= mix(words[i]);
		h *= m;
	}
	return mix(h);
}

/* The key's last word: ports as on the wire, protocol, family. */
static __always_inline __u32 ports(void *l4, void *data_end, __u8 proto, __u8 family,
				   __u64 key[KEY_WORDS])
{
	__u32 *p = l4;

	if ((void *)(p + 1) > data_end)
		return SKETCH_PROTO_OTHER;
	key[4] = *p | (__u64)proto << 32 | (__u64)family << 40;
	return CLASS_FLOW;
}

static __always_inline __u32 ipv4(void *l3, void *data_end, __u64 key[KEY_WORDS], __u64 *hash)
{
	struct iphdr *ip = l3;
	__u32 header;

	if ((void *)(ip + 1) > data_end || ip->version != 4)
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
	key[0] = ip->saddr;
	key[1] = 0;
	key[2] = ip->daddr;
	key[3] = 0;
	if (ports(l3 + header, data_end, ip->protocol, SKETCH_FAMILY_IPV4, key) != CLASS_FLOW)
		return SKETCH_PROTO_OTHER;
	/* An IPv4 key's words 1 and 3 are zero: its hash is over two words,
	 * both addresses in one (src/sketch/hash.rs says the same). */
	__u64 words[2] = { key[0] | key[2] << 32, key[4] };

	*hash = fasthash(words, 2);
	return CLASS_FLOW;
}

/* IPv6: through up to SKETCH_MAX_IPV6_EXTENSIONS extension headers to the
 * transport header. Offsets are counted from the IPv6 header, and every
 * header read must lie inside the payload (payload_len), not in Ethernet
 * padding after it; past the frame's end they are caught by data_end. */
static __always_inline __u32 ipv6(void *l3, void *data_end, __u64 key[KEY_WORDS], __u64 *hash)
{
	struct ipv6hdr *ip = l3;
	__u64 *addrs = (__u64 *)&ip->saddr;
	__u32 at = sizeof(*ip);
	__u32 length;
	__u8 next;

	if ((void *)(ip + 1) > data_end || ip->version != 6)
		return SKETCH_PROTO_OTHER;
	length = sizeof(*ip) + bpf_ntohs(ip->payload_len);
	next = ip->nexthdr;
#pragma unroll
	for (int i = 0; i < SKETCH_MAX_IPV6_EXTENSIONS; i++) {
		if (next == NEXTHDR_FRAGMENT) {
			struct frag_hdr *frag = l3 + at;

			if ((void *)(frag + 1) > data_end || at + sizeof(*frag) > length)
				return SKETCH_PROTO_OTHER;
			if (frag->frag_off & bpf_htons(IPV6_OFFSET_MASK))
				return SKETCH_PROTO_FRAGMENT;
			next = frag->nexthdr;
			at += sizeof(*frag);
		} else if (next == NEXTHDR_HOP || next == NEXTHDR_ROUTING || next == NEXTHDR_DEST) {
			struct ipv6_opt_hdr *opt = l3 + at;

			if ((void *)(opt + 1) > data_end || at + sizeof(*opt) > length)
				return SKETCH_PROTO_OTHER;
			next = opt->nexthdr;
			at += (opt->hdrlen + 1) * 8;
		} else {
			break;
		}
	}
	if (next != IPPROTO_TCP && next != IPPROTO_UDP)
		return next == NEXTHDR_ICMPV6 ? SKETCH_PROTO_ICMPV6 : SKETCH_PROTO_IPV6_OTHER;
	if (at + 4 > length)
		return SKETCH_PROTO_OTHER;
	/* saddr and daddr are adjacent: the key's first four words. */
	key[0] = addrs[0];
	key[1] = addrs[1];
	key[2] = addrs[2];
	key[3] = addrs[3];
	if (ports(l3 + at, data_end, next, SKETCH_FAMILY_IPV6, key) != CLASS_FLOW)
		return SKETCH_PROTO_OTHER;
	*hash = fasthash(key, KEY_WORDS);
	return CLASS_FLOW;
}

/* CLASS_FLOW with the words of the flow's struct sketch_flow in `key` and
 * their hash, or the sketch_protocol of the packet. */
static __always_inline __u32 classify(void *data, void *data_end, __u64 key[KEY_WORDS],
				      __u64 *hash)
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
		return ipv4(l3, data_end, key, hash);
	if (proto == bpf_htons(ETH_P_IPV6))
		return ipv6(l3, data_end, key, hash);
	if (proto == bpf_htons(ETH_P_ARP))
		return SKETCH_PROTO_ARP;
	return SKETCH_PROTO_OTHER;
}

/* The bucket vote of sketch.h's struct sketch_candidate. Holders are told
 * apart by their 64-bit hash: one compare instead of the 40-byte key's five;
 * the key is only written when a flow takes a bucket over. A flow has two
 * buckets (sketch.h's SKETCH_BUCKET_SHIFT_*): a newcomer takes an empty
 * one or a vote from the weaker holder, so a flow is lost only when both
 * its buckets are held by flows that keep winning their votes. */
static __always_inline void vote(struct sketch_state *s, const __u64 key[KEY_WORDS], __u64 hash)
{
	struct sketch_candidate *a =
		&s->candidates[(hash >> SKETCH_BUCKET_SHIFT_FIRST) & (SKETCH_CANDIDATES - 1)];
	struct sketch_candidate *b =
		&s->candidates[(hash >> SKETCH_BUCKET_SHIFT_SECOND) & (SKETCH_CANDIDATES - 1)];
	struct sketch_candidate *c;

	if (a->hash == hash && a->votes > 0)
		c = a;
	else if (b->hash == hash && b->votes > 0)
		c = b;
	else
		c = NULL;
	if (c) {
		if (c->votes < SKETCH_VOTES_MAX)
			c->votes++;
		return;
	}
	c = a->votes <= b->votes ? a : b;
	if (c->votes > 0) {
		c->votes--;
	} else {
		__u64 *flow = (__u64 *)&c->flow;

#pragma unroll
		for (int i = 0; i < KEY_WORDS; i++)
			flow[i] = key[i];
		c->hash = hash;
		c->votes = 1;
	}
}

/* Adds a sampled packet's weight to the cells of its sampled rows, each
 * row's column and sign from its lane of the hash; `bits` is log2 of the
 * columns, a constant in each program. */
static __always_inline void count_flow(struct sketch_state *s, __u64 hash, __u32 sampled,
				       __s64 packets, __s64 bytes, const __u32 bits)
{
	const __u32 columns = 1U << bits;
	struct sketch_cell *row_cells = s->cells;

	/* Only the geometry's rows (user space samples no others): the
	 * verifier knows rows, so it knows this mask, drops the rows past it
	 * and bounds each cell from the unrolled row number and the constant
	 * columns alone; at run time a row costs one bit test. */
	sampled &= (1U << geometry.rows) - 1;
#pragma unroll
	for (int row = 0; row < SKETCH_MAX_ROWS; row++) {
		/* (A break at the last row would keep clang from unrolling.) */
		if ((sampled >> row) & 1) {
			struct sketch_cell *cell = &row_cells[hash & (columns - 1)];
			/* 0 or -1: the sign, applied without a branch. */
			__s64 sign = -(__s64)((hash >> bits) & 1);

			cell->packets += (packets ^ sign) - sign;
			cell->bytes += (bytes ^ sign) - sign;
		}
		hash >>= bits + 1;
		row_cells += columns;
	}
}

/* The variate after the current one: from the ring while user space has
 * written ahead of the cursor, else an entry picked by a hash of the
 * reuse count, counted. */
static __always_inline struct sketch_variate next_variate(struct sketch_state *s)
{
	__u32 cursor = s->cursor;
	__u64 reused;

	if (cursor != *(volatile __u32 *)&s->limit) {
		s->cursor = cursor + 1;
		return s->ring[cursor & (SKETCH_RING - 1)];
	}
	reused = s->reused;
	s->reused = reused + 1;
	return s->ring[mix(reused) & (SKETCH_RING - 1)];
}

/*
 * The sampled packet number `n`: its sampled rows are counted, then the
 * next variate sets the number of the next sampled packet and its rows.
 * Inlined: a BPF function call and its return cost more than the
 * callee-saved registers it would keep off the skip path.
 */
static __always_inline void sample(struct sketch_hot *hot, __u64 n, __u32 cpu, void *data,
				   void *data_end, const __u32 bits)
{
	struct sketch_variate next;
	struct sketch_state *s;
	__u64 key[KEY_WORDS];
	__u32 sampled;

	s = bpf_map_lookup_elem(&sketch_slots, &cpu);
	if (!s)
		return;
	sampled = s->rows;
	if (sampled) {
		__s64 packets = s->weight;
		__s64 bytes = packets * (data_end - data);
		__u64 hash = 0;
		__u32 class = classify(data, data_end, key, &hash);

		if (class == CLASS_FLOW) {
			vote(s, key, hash);
			count_flow(s, hash, sampled, packets, bytes, bits);
		} else if (class < SKETCH_PROTO_COUNT) {
			__u32 times = __builtin_popcount(sampled);

			s->proto_packets[class] += packets * times;
			s->proto_bytes[class] += bytes * times;
		}
	}
	next = next_variate(s);
	hot->due = n + 1 + (next.gap_rows & SKETCH_GAP_MAX);
	s->rows = next.gap_rows >> SKETCH_GAP_BITS;
	s->weight = next.weight;
}

static __always_inline int run(struct xdp_md *ctx, const __u32 bits)
{
	/* The helper returns the CPU number zero-extended; taken as 64 bits
	 * it needs no extension before indexing. */
	__u64 cpu = ((__u64(*)(void))BPF_FUNC_get_smp_processor_id)();
	struct sketch_hot *hot = &sketch_hot[cpu & geometry.cpu_mask];
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 n = hot->packets + 1;

	hot->packets = n;
	hot->bytes += data_end - data;
	if (n >= hot->due)
		sample(hot, n, cpu, data, data_end, bits);
	return XDP_PASS;
}

_Static_assert(SKETCH_MIN_COLUMNS == 1 << 4 && SKETCH_MAX_COLUMNS == 1 << 15,
	       "one program below for every column count");

#define SKETCH_PROGRAM(bits)                                   \
	SEC("xdp") int netto_sketch_##bits(struct xdp_md *ctx) \
	{                                                      \
		return run(ctx, bits);                         \
	}

SKETCH_PROGRAM(4)
SKETCH_PROGRAM(5)
SKETCH_PROGRAM(6)
SKETCH_PROGRAM(7)
SKETCH_PROGRAM(8)
SKETCH_PROGRAM(9)
SKETCH_PROGRAM(10)
SKETCH_PROGRAM(11)
SKETCH_PROGRAM(12)
SKETCH_PROGRAM(13)
SKETCH_PROGRAM(14)
SKETCH_PROGRAM(15)
