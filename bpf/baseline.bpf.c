// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Empty programs on the hooks netto uses: the baseline cost of running any
 * BPF program there. The overhead benchmark attaches them beside netto and
 * compares per-run costs measured in the same run.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/softirq_entry")
int BPF_PROG(baseline_softirq_entry) { return 0; }

SEC("tp_btf/softirq_exit")
int BPF_PROG(baseline_softirq_exit) { return 0; }

SEC("tp_btf/sched_switch")
int BPF_PROG(baseline_sched_switch) { return 0; }

SEC("tp_btf/sys_enter")
int BPF_PROG(baseline_sys_enter) { return 0; }

SEC("tp_btf/sys_exit")
int BPF_PROG(baseline_sys_exit) { return 0; }

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(baseline_hrtimer_entry) { return 0; }

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(baseline_hrtimer_exit) { return 0; }

SEC("tp_btf/local_timer_entry")
int BPF_PROG(baseline_timer_irq_entry) { return 0; }

SEC("tp_btf/local_timer_exit")
int BPF_PROG(baseline_timer_irq_exit) { return 0; }

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(baseline_irq_entry) { return 0; }

/* Per-system-call trace events (perf tracepoints), which only the calls
 * they name run, on the calls a socket window can be: what netto's
 * syscall hooks would cost that way, dispatch included (the overhead
 * bench's per-call table). */
SEC("tracepoint/syscalls/sys_enter_read")
int baseline_read_enter(void *ctx) { return 0; }

SEC("tracepoint/syscalls/sys_exit_read")
int baseline_read_exit(void *ctx) { return 0; }

SEC("tracepoint/syscalls/sys_enter_write")
int baseline_write_enter(void *ctx) { return 0; }

SEC("tracepoint/syscalls/sys_exit_write")
int baseline_write_exit(void *ctx) { return 0; }

/* The least an exact hook does: find its CPU's record, read the clock once
 * and store the time. Above the empty program, this is what no exact hook
 * can save; above this, what netto's own logic costs (the overhead bench's
 * per-program table sets the three side by side). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} least_since SEC(".maps");

static __always_inline int least(void)
{
	__u32 zero = 0;
	__u64 *since = bpf_map_lookup_elem(&least_since, &zero);

	if (since)
		*since = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(least_softirq_entry) { return least(); }

SEC("tp_btf/softirq_exit")
int BPF_PROG(least_softirq_exit) { return least(); }

SEC("tp_btf/sched_switch")
int BPF_PROG(least_sched_switch) { return least(); }

SEC("tp_btf/sys_enter")
int BPF_PROG(least_sys_enter) { return least(); }

SEC("tp_btf/sys_exit")
int BPF_PROG(least_sys_exit) { return least(); }

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(least_hrtimer_entry) { return least(); }

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(least_hrtimer_exit) { return least(); }

SEC("tp_btf/local_timer_entry")
int BPF_PROG(least_timer_irq_entry) { return least(); }

SEC("tp_btf/local_timer_exit")
int BPF_PROG(least_timer_irq_exit) { return least(); }

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(least_irq_entry) { return least(); }
