// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Empty programs on the raw tracepoints every system call runs, as netto's
 * window hooks are: timing a burst of system calls with and without them
 * attached prices entering a BPF program there (src/kernel/dispatch.rs), which run-time statistics
 * do not count. A plain raw tracepoint rather than tp_btf: it needs no
 * kernel BTF, so loading it costs next to nothing at start-up, and the
 * kernel enters both kinds the same way.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("raw_tracepoint/sys_enter")
int dispatch_sys_enter(void *ctx) { return 0; }

SEC("raw_tracepoint/sys_exit")
int dispatch_sys_exit(void *ctx) { return 0; }
