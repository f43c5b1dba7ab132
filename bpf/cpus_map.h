/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The per-CPU accounting record map, shared by the accounting and sampling
 * objects: the sampler's copy is pointed at the accounting one's fd before
 * load (libbpf map reuse), so both must declare it identically, here.
 */
#ifndef NETTO_CPUS_MAP_H
#define NETTO_CPUS_MAP_H

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct netto_cpu);
} cpus SEC(".maps");

static __always_inline struct netto_cpu *this_cpu(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&cpus, &zero);
}

#endif /* NETTO_CPUS_MAP_H */
