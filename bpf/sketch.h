/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The ABI of the XDP NitroSketch (sketch.bpf.c) and its control plane
 * (src/sketch/): one definition, bindgen-ed into Rust by build.rs.
 *
 * Layout: what every packet touches (struct sketch_hot) is one cache line
 * per CPU in a global array the program indexes by CPU number, without a
 * map lookup. The rest is one slot per CPU in an mmap-able array map,
 * looked up only by sampled packets: a struct sketch_state followed by
 * rows x columns struct sketch_cell. Slots are whole cache lines and the
 * maps' values start page-aligned, so no cache line is shared between CPUs.
 *
 * NitroSketch samples (packet, row) slots: each row of each packet is
 * updated with probability p. User space draws that process ahead, as a
 * sequence of sampled packets (struct sketch_variate: how many packets
 * pass before the next one with a sampled row, and which of its rows are
 * sampled), and writes it into the slot's ring; the program compares its
 * packet count with the number of the next sampled packet, so a skipped
 * packet costs an increment and a compare and no header parsing.
 */
#ifndef NETTO_SKETCH_H
#define NETTO_SKETCH_H

/* Plain integer typedefs: includable from BPF C and on its own (bindgen). */
typedef unsigned char sketch_u8;
typedef unsigned short sketch_u16;
typedef unsigned int sketch_u32;
typedef unsigned long long sketch_u64;
typedef long long sketch_s64;

/* Most rows; every row takes log2(columns) + 1 bits of the one 64-bit hash. */
#define SKETCH_MAX_ROWS 8
#define SKETCH_MIN_COLUMNS 16
#define SKETCH_MAX_COLUMNS 32768
/* Bits of the flow hash available for row indices and signs. */
#define SKETCH_HASH_BITS 64

/* Variates per CPU slot; a power of two. User space tops the ring up
 * behind the program's cursor every interval, so it holds an interval's
 * sampled packets up to this many per CPU without reusing a gap. */
#define SKETCH_RING 16384
/* Top-K candidate buckets per CPU slot; a power of two. */
#define SKETCH_CANDIDATES 256
/* Where a flow's two buckets start in its hash: log2(SKETCH_CANDIDATES)
 * bits from each, in the high half (the rows' lanes start at bit 0). */
#define SKETCH_BUCKET_SHIFT_FIRST 32
#define SKETCH_BUCKET_SHIFT_SECOND 40
_Static_assert(SKETCH_CANDIDATES <= 1 << (SKETCH_BUCKET_SHIFT_SECOND - SKETCH_BUCKET_SHIFT_FIRST),
	       "a flow's two buckets come from disjoint bits of its hash");
/* Votes a bucket's flow can bank: how long a flow that stopped keeps its
 * bucket against newcomers (in sampled packets of that bucket). */
#define SKETCH_VOTES_MAX 16

/*
 * Counters are fixed point: one packet (or byte) is SKETCH_WEIGHT_ONE. An
 * update adds the weight of the variate that chose it, SKETCH_WEIGHT_ONE/p,
 * so estimates come out scaled by 1/p and stay exact when p changes.
 */
#define SKETCH_WEIGHT_ONE 1024

#define SKETCH_HASH_SEED 0x6e6574746f736b65ULL /* "nettoske" */

#define SKETCH_FAMILY_IPV4 4
#define SKETCH_FAMILY_IPV6 6

/* IPv6 extension headers (hop-by-hop, routing, fragment, destination
 * options) looked through before the transport header; a longer chain is
 * ipv6_other. */
#define SKETCH_MAX_IPV6_EXTENSIONS 4

/* Packets the sketch does not count by flow, by what they are. */
enum sketch_protocol {
	SKETCH_PROTO_ARP,
	SKETCH_PROTO_ICMP,
	SKETCH_PROTO_ICMPV6,
	/* IPv4 and IPv6 fragments after the first: they carry no ports. */
	SKETCH_PROTO_FRAGMENT,
	SKETCH_PROTO_IPV4_OTHER,
	SKETCH_PROTO_IPV6_OTHER,
	/* Other ethertypes and truncated headers. */
	SKETCH_PROTO_OTHER,
	SKETCH_PROTO_COUNT,
};

/* Read-only data, fixed when the program is loaded. The column count is
 * not here: it is the program's (one program per column count). */
struct sketch_config {
	sketch_u32 rows;
	/* Entries of the hot array minus one: they are a power of two at
	 * least the possible CPUs, so a mask bounds the CPU number. */
	sketch_u32 cpu_mask;
};

/*
 * A TCP or UDP flow: five little-endian 64-bit words, all hashed for IPv6;
 * IPv4 addresses fill the first 4 bytes of src/dst, the rest is zero, and
 * an IPv4 key is hashed as two words (both addresses, then the last word).
 * Ports are in network byte order, as on the wire.
 */
struct sketch_flow {
	sketch_u8 src[16];
	sketch_u8 dst[16];
	sketch_u16 sport;
	sketch_u16 dport;
	sketch_u8 proto;
	sketch_u8 family;
	sketch_u8 _pad[2];
};

/* A variate's gap is its low SKETCH_GAP_BITS bits, its rows the rest. */
#define SKETCH_GAP_BITS 24
#define SKETCH_GAP_MAX ((1U << SKETCH_GAP_BITS) - 1)

/*
 * The next sampled packet. 8 bytes, so user space rewrites one with a
 * single store and the program never sees half of each of two.
 */
struct sketch_variate {
	/* The packets passed before it (up to SKETCH_GAP_MAX), and which of
	 * its rows are updated: row r is bit SKETCH_GAP_BITS + r. A variate
	 * with no row passes that packet too: a longer gap goes on in the
	 * next variate. */
	sketch_u32 gap_rows;
	/* SKETCH_WEIGHT_ONE / p of the p the variate was drawn with. */
	sketch_u32 weight;
};

/*
 * A bucket of flows sharing hash bits, held by a majority vote. Each flow
 * has two buckets: a sampled packet of a holder adds a vote to its bucket;
 * one of another flow takes a vote from the weaker holder of its two, or
 * takes that bucket over once it is empty. Heavy flows hold their buckets,
 * and two flows sharing one bucket both keep one.
 */
struct sketch_candidate {
	struct sketch_flow flow;
	/* The flow's hash: what a vote compares. */
	sketch_u64 hash;
	sketch_u32 votes;
	sketch_u32 _pad;
};

struct sketch_cell {
	sketch_s64 packets;
	sketch_s64 bytes;
};

/* One CPU's per-packet state: a skipped packet touches nothing else. */
struct sketch_hot {
	/* Every packet and byte, exactly. */
	sketch_u64 packets;
	sketch_u64 bytes;
	/* What `packets` is at the next sampled packet. */
	sketch_u64 due;
} __attribute__((aligned(64)));

struct sketch_state {
	/* The next sampled packet's rows (a variate's gap_rows without the
	 * gap) and their weight. */
	sketch_u32 rows;
	sketch_u32 weight;
	/* Ring entries taken, ever (wrapping): entry n is ring[n % SKETCH_RING]. */
	sketch_u32 cursor;
	/* Ring entries user space has written, ever (wrapping), at most
	 * SKETCH_RING ahead of cursor. The ring is dry when cursor == limit:
	 * the program then reuses an entry picked by a hash of `reused` (not
	 * the ring's order, so the sampling does not turn periodic) and
	 * counts it. */
	sketch_u32 limit;
	sketch_u64 reused;
	/* Weighted counts of sampled rows of packets not counted by flow;
	 * divided by rows they estimate packets and bytes. */
	sketch_s64 proto_packets[SKETCH_PROTO_COUNT];
	sketch_s64 proto_bytes[SKETCH_PROTO_COUNT];
	/* Written by user space, read by the program. */
	struct sketch_variate ring[SKETCH_RING] __attribute__((aligned(64)));
	/* Written by the program on sampled TCP/UDP packets. */
	struct sketch_candidate candidates[SKETCH_CANDIDATES] __attribute__((aligned(64)));
	struct sketch_cell cells[] __attribute__((aligned(64)));
};

#endif
