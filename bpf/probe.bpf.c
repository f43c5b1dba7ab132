// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Capability probes for `netto check` and backend selection: loading and
 * attaching these tells whether the kernel allows function hooks at all
 * (ftrace may be locked down even where BTF is present).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("fentry/sock_recvmsg")
int BPF_PROG(netto_probe_fentry) { return 0; }

SEC("fexit/sock_recvmsg")
int BPF_PROG(netto_probe_fexit) { return 0; }
