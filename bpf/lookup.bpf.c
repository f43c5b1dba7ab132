// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The address of one kernel symbol, asked of the kernel by name
 * (src/kernel/lookup.rs): the accounting needs the network callbacks'
 * addresses before it loads, and reading /proc/kallsyms for them means
 * formatting every symbol the kernel has, which the symbolizer does once
 * more after load. A syscall program needs no kernel BTF and no attach.
 * Returns the helper's result: 0, -ENOENT for a name the kernel lacks, or
 * -EPERM where addresses are hidden (kernel.kptr_restrict).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "netto.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("syscall")
int netto_lookup_symbol(struct netto_symbol_lookup *ctx)
{
	char name[NETTO_SYMBOL_NAME_LEN];
	__u64 address = 0;
	long err;

	/* The helper takes no pointer into the context: a copy on the stack. */
	__builtin_memcpy(name, ctx->name, sizeof(name));
	err = bpf_kallsyms_lookup_name(name, sizeof(name), 0, &address);

	ctx->address = address;
	return err;
}
