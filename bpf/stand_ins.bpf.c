// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Programs that stand in for someone else's data plane in the tests of
 * `kernel::network_programs`: an XDP program, a tc program and a
 * cgroup_skb program, each passing every packet after a fixed amount of
 * work, so that a run costs enough for its ns per run to be told apart
 * from the harness that times it. Here rather than under tests/ because
 * build.rs compiles every BPF source under bpf/ against the committed vmlinux.h
 * with the same flags as netto's own.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Iterations of the work loop: what a run costs. */
const volatile __u32 work = 200;

static __always_inline __u64 busy(__u64 seed)
{
	__u64 x = seed;
	for (__u32 i = 0; i < work && i < 4096; i++) {
		x = x * 6364136223846793005ULL + i;
		barrier_var(x);
	}
	return x;
}

/* Where the work's result goes, so that the loop is not optimized away. */
__u64 sink = 0;

SEC("xdp")
int stand_in_xdp(struct xdp_md *ctx)
{
	sink = busy(ctx->ingress_ifindex);
	return XDP_PASS;
}

SEC("tc")
int stand_in_tc(struct __sk_buff *skb)
{
	sink = busy(skb->len);
	return 0; /* TC_ACT_OK */
}

SEC("cgroup_skb/egress")
int stand_in_cgroup(struct __sk_buff *skb)
{
	sink = busy(skb->len);
	return 1; /* let it through */
}
