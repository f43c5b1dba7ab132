// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * An XDP program that does nothing: the baseline the sketch benchmark compares
 * netto_sketch with, run the same way through BPF_PROG_TEST_RUN.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("xdp")
int baseline_xdp(struct xdp_md *ctx) { return XDP_PASS; }
