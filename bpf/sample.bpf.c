// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Stack sampler: a cpu-clock perf event per CPU runs this program; it keeps
 * a kernel stack only when the CPU was in network context (NET_RX/NET_TX
 * softirq, a network timer callback, or a task inside a socket call), as
 * the accounting programs record it in the shared per-CPU map. In the
 * tiers that detach some of those programs, what they would have said is
 * left to user space, which reads it from the stack's frames. Two
 * transports, chosen at load time: an mmapable array used as a double
 * buffer (read by user space without a syscall per sample) and the BPF
 * ring buffer, kept to compare the two. With attribution on, each sample
 * also says whom its work was for.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "netto.h"
#include "cpus_map.h"
#include "attr_switch.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by user space before load; the verifier prunes the other transport. */
const volatile __u32 transport = NETTO_TRANSPORT_MMAP;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct netto_sample_ctl);
} sample_ctl SEC(".maps");

/* Both halves of the double buffer: slots [0, n) and [n, 2n). User space
 * sets max_entries to 2n before load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct netto_sample);
} samples SEC(".maps");

/* User space sets the size before load. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} sample_ring SEC(".maps");

/* Per CPU and softirq vector: the network callbacks' share (1/1024ths) of
 * the callback time in the last run of that vector a sample saw, for a
 * sample taken before the run's first callback. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NETTO_NR_SOFTIRQS);
	__type(key, __u32);
	__type(value, __u32);
} timer_net_share SEC(".maps");

#define SHARE_ONE 1024

/*
 * A sample in a softirq other than NET_RX/NET_TX: inside a recognised
 * network callback it is net_timers; inside another callback it is not.
 * Outside any callback (the expiry loop, reprogramming the timer hardware)
 * the accounting gives net_timers the network callbacks' share of that
 * time (bpf/netto.h), so such a sample is kept with that probability: the
 * share of the run so far, or of the vector's last run before the run's
 * first callback.
 */
static __always_inline int timer_context(struct netto_cpu *c, __u32 vec)
{
	__u32 cb = c->callback - 1;
	__u64 net = c->run_net_ns, all = c->run_net_ns + c->run_other_ns;
	__u32 *share = bpf_map_lookup_elem(&timer_net_share, &vec);

	if (cb < NETTO_MAX_CALLBACKS)
		return NETTO_CTX_NET_TIMERS;
	if (c->callback || !share)
		return -1;
	if (all)
		*share = net * SHARE_ONE / all;
	return bpf_get_prandom_u32() % SHARE_ONE < *share ? NETTO_CTX_NET_TIMERS : -1;
}

/* Whether the sample interrupted the kernel: its instruction pointer is a
 * kernel address, in the upper half on the 64-bit architectures netto
 * builds for. A sample of user space has no kernel stack to place. */
static __always_inline bool in_kernel(struct bpf_perf_event_data *ctx)
{
	return (long)PT_REGS_IP(&ctx->regs) < 0;
}

/* THREAD_SIZE on x86-64 and arm64 (without KASAN, whose stacks are
 * twice as large): an interrupt stack allocated next to the idle task's
 * begins at least a guard page beyond it. */
#define IDLE_STACK_BOUND (16 << 10)

/* Whether the sample interrupted the idle loop itself (netto.h,
 * sample_idle_runs): the idle task (pid 0), on its own stack. */
static __always_inline bool in_idle_loop(struct bpf_perf_event_data *ctx)
{
	unsigned long stack;

	if (bpf_get_current_pid_tgid() != 0)
		return false;
	stack = (unsigned long)bpf_get_current_task_btf()->stack;
	return PT_REGS_SP(&ctx->regs) - stack < IDLE_STACK_BOUND;
}

/*
 * Where the sample was taken, from what the accounting programs recorded
 * in the CPU's record, as far as the tier in force keeps them attached;
 * beyond that a kernel sample is kept for user space to place by its
 * frames (NETTO_CTX_BY_FRAMES). -1: not kept.
 */
static __always_inline int sample_context(struct bpf_perf_event_data *ctx, struct netto_cpu *c,
					  __u32 tier)
{
	__u32 vec = c->softirq - 1;

	if (tier == NETTO_TIER_SAMPLED)
		return in_kernel(ctx) ? NETTO_CTX_BY_FRAMES : -1;
	if (vec == NETTO_SOFTIRQ_NET_RX)
		return NETTO_CTX_NET_RX;
	if (vec == NETTO_SOFTIRQ_NET_TX)
		return NETTO_CTX_NET_TX;
	if (vec < NETTO_NR_SOFTIRQS)
		return timer_context(c, vec);
	if (c->task_window == NETTO_WIN_NAPI)
		return NETTO_CTX_NET_RX;
	if (tier == NETTO_TIER_SOFTIRQ)
		return in_kernel(ctx) ? NETTO_CTX_BY_FRAMES : -1;
	if (c->task_window == NETTO_WIN_SEND)
		return NETTO_CTX_SOCK_SEND;
	if (c->task_window == NETTO_WIN_RECV)
		return NETTO_CTX_SOCK_RECV;
	return -1;
}

/*
 * Whom a sample's work was for (attribution on): in a socket call, the
 * calling task, exactly as its window's time is given; in a softirq run,
 * callback or threaded NAPI poll, the owner of the run's latest delivery
 * point, and none before its first (the time such a sample stands for is
 * settled at that point, to the owner of the packet it was working on,
 * which may not be the latest one's). The timer softirq's own work around
 * network callbacks is its callbacks' owner when they had one, as
 * attr_softirq_exit gives that time.
 */
static __always_inline void sample_group(struct netto_cpu *c, int context,
					 struct netto_group_key *key)
{
	__u32 cb = c->callback - 1;

	if (context == NETTO_CTX_SOCK_SEND || context == NETTO_CTX_SOCK_RECV) {
		current_key(key);
		return;
	}
	if (context == NETTO_CTX_NET_RX)
		*key = c->attr.last[NETTO_EV_NET_RX_SOFTIRQ];
	else if (context == NETTO_CTX_NET_TX)
		*key = c->attr.last[NETTO_EV_NET_TX_SOFTIRQ];
	else if (cb < NETTO_MAX_CALLBACKS)
		*key = c->attr.last[NETTO_EV_NET_TIMERS];
	else if (!c->attr.timer_mixed)
		*key = c->attr.timer_run;
}

static __always_inline int fill(struct bpf_perf_event_data *ctx, struct netto_sample *s,
				int context, const struct netto_group_key *group,
				struct netto_sample_ctl *ctl)
{
	long n = bpf_get_stack(ctx, s->frames, sizeof(s->frames), 0);

	if (n <= 0) {
		__sync_fetch_and_add(&ctl->failed, 1);
		return -1;
	}
	s->nr_frames = n / sizeof(s->frames[0]);
	s->cpu = bpf_get_smp_processor_id();
	s->context = context;
	s->group = *group;
	return 0;
}

static __always_inline void to_ring(struct bpf_perf_event_data *ctx, int context,
				    const struct netto_group_key *group,
				    struct netto_sample_ctl *ctl)
{
	struct netto_sample *s = bpf_ringbuf_reserve(&sample_ring, sizeof(*s), 0);

	if (!s) {
		__sync_fetch_and_add(&ctl->dropped, 1);
		return;
	}
	if (fill(ctx, s, context, group, ctl))
		bpf_ringbuf_discard(s, 0);
	else
		bpf_ringbuf_submit(s, 0);
}

/*
 * The double buffer's protocol counters are changed only with BPF atomics
 * whose result is used. clang emits an add whose result is unused as
 * BPF_ADD without BPF_FETCH, which the JITs turn into a plain atomic add
 * with no ordering (arm64 `stadd`, riscv `amoadd.d` without .aqrl); with
 * BPF_FETCH they are fully ordered (arm64 `ldaddal`, riscv `amoadd.d.aqrl`,
 * x86 `lock xadd`), like the kernel's atomic64_fetch_add(). The announce
 * below must not be reordered with the load of `active` that follows it,
 * nor the leave with the slot writes before it: barrier_var() makes the
 * result a use clang cannot drop.
 */
static __always_inline __u64 ordered_add(__u64 *counter, __s64 value)
{
	__u64 before = __sync_fetch_and_add(counter, value);

	barrier_var(before);
	return before;
}

/* Tries at entering the active half. A writer that loses the race to a
 * swap finds the other half active on its next try, and the reader swaps
 * once per drain: two tries would do, the rest are margin. */
#define ENTER_TRIES 4

/*
 * Announces a writer in the active half and confirms it is still the
 * active one (see the protocol in netto.h): the half, or -1 when the
 * reader swapped halves under every try. A swap between the announce and
 * the check costs no sample: the writer leaves and tries the new half.
 */
static __always_inline int enter_active_half(struct netto_sample_ctl *ctl)
{
#pragma unroll
	for (int try = 0; try < ENTER_TRIES; try++) {
		__u32 half = ctl->active & 1;

		ordered_add(&ctl->writers[half], 1);
		if ((ctl->active & 1) == half)
			return half;
		ordered_add(&ctl->writers[half], -1);
	}
	return -1;
}

static __always_inline void to_mmap(struct bpf_perf_event_data *ctx, int context,
				    const struct netto_group_key *group,
				    struct netto_sample_ctl *ctl)
{
	int entered = enter_active_half(ctl);
	struct netto_sample *s;
	__u32 half, key;
	__u64 idx;

	if (entered < 0) {
		__sync_fetch_and_add(&ctl->dropped, 1);
		return;
	}
	half = entered;
	idx = ordered_add(&ctl->reserved[half], 1);
	if (idx >= ctl->slots_per_half) {
		__sync_fetch_and_add(&ctl->dropped, 1);
		goto out;
	}
	key = half * ctl->slots_per_half + idx;
	s = bpf_map_lookup_elem(&samples, &key);
	if (!s)
		goto out;
	/* A reused slot may still say ready from an earlier round (its reader
	 * gave up on the half, see netto.h): clear it, fully ordered, before
	 * the first byte of the new stack is written. */
	__sync_lock_test_and_set(&s->ready, 0);
	if (fill(ctx, s, context, group, ctl))
		s->nr_frames = 0;
	/* Full barrier: the slot's content is visible before `ready`. */
	__sync_lock_test_and_set(&s->ready, 1);
out:
	ordered_add(&ctl->writers[half], -1);
}

SEC("perf_event")
int netto_sample(struct bpf_perf_event_data *ctx)
{
	struct netto_sample_ctl *ctl;
	struct netto_cpu *c = this_cpu();
	struct netto_group_key group = {};
	__u32 zero = 0;
	int context;

	if (!c)
		return 0;
	c->hook_runs[NETTO_HOOK_SAMPLE]++;
	if (in_idle_loop(ctx))
		c->sample_idle_runs++;
	ctl = bpf_map_lookup_elem(&sample_ctl, &zero);
	if (!ctl)
		return 0;
	context = sample_context(ctx, c, ctl->tier);
	if (context < 0)
		return 0;
	/* Attribution runs in the exact tier only: every context is known. */
	if (attribution_on)
		sample_group(c, context, &group);
	if (transport == NETTO_TRANSPORT_RINGBUF)
		to_ring(ctx, context, &group, ctl);
	else
		to_mmap(ctx, context, &group, ctl);
	return 0;
}
