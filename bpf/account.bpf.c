// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Exact accounting of the kernel's network entry points. One object for
 * both backends: the softirq, hardirq, callback and sched_switch hooks are
 * common; the socket windows come either from syscall tracepoints
 * (window_syscalls.h, the `tracepoint` backend, which works where ftrace
 * refuses function hooks) or from fentry/fexit on the kernel's socket
 * functions (window_functions.h, the `fentry` backend). User space loads
 * only the programs of the backend it chose.
 *
 * Every hook first charges the time since the CPU's last transition to what
 * the CPU was doing (see struct netto_cpu in netto.h), then records the new
 * state. Charging at every transition, rather than timing each event on its
 * own, is what makes nesting come out right: a softirq inside a socket call
 * stops the call's clock, a hardirq stops everyone's, and a task switched
 * out takes its socket window with it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "netto.h"
#include "cpus_map.h"
#include "attribution.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The socket window of each task, so that it survives being switched out
 * and follows the task to another CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct netto_task_state);
} task_windows SEC(".maps");

/* callback function address -> index into netto_cpu.callback_ns (see
 * struct netto_callback_table), filled by user space before load, whole:
 * the section holds nothing else */
const volatile struct netto_callback_table callback_table SEC(".rodata.callbacks") = {};

/* Bumped by user space when the tier changes (kernel/accounting.rs), in a
 * section of their own that it writes with a map update, like
 * attribution_on (see struct netto_tier_epochs). */
struct netto_tier_epochs epochs SEC(".data.tier");

/* What the CPU was doing is unknown since `now`: the hooks were detached. */
static __always_inline void forget_state(struct netto_cpu *c, __u64 now)
{
	c->since_ns = now;
	c->softirq = 0;
	c->task_window = NETTO_WIN_NONE;
	c->in_hardirq = 0;
	c->callback = 0;
	c->window_depth = 0;
	c->run_net_ns = 0;
	c->run_other_ns = 0;
	c->run_idle_ns = 0;
	c->state_epoch = epochs.state_epoch;
}

/*
 * A hook reads the clock before it charges, and interrupts are on in most
 * hooks (softirq_entry/exit run with them enabled): an interrupt's own hooks
 * can charge a later time in between. The time up to there is charged
 * already, so an earlier `now` charges nothing and the clock never moves
 * back. (Without this the difference wraps to nearly 2^64: harmless in the
 * wrapping counters, but not in the products of the timer shares.)
 */
static __always_inline void charge(struct netto_cpu *c, __u64 now)
{
	__u64 delta = 0;
	__u32 vec = c->softirq - 1;
	__u32 cb = c->callback - 1;

	if (c->state_epoch != epochs.state_epoch) {
		forget_state(c, now);
		return;
	}
	if (now <= c->since_ns)
		return;
	if (c->since_ns)
		delta = now - c->since_ns;
	c->since_ns = now;
	if (c->in_hardirq) {
		c->hardirq_ns += delta;
		return;
	}
	if (vec < NETTO_NR_SOFTIRQS) {
		c->softirq_time[vec].ns += delta;
		if (vec == NETTO_SOFTIRQ_NET_RX) {
			c->event_ns[NETTO_EV_NET_RX_SOFTIRQ] += delta;
		} else if (vec == NETTO_SOFTIRQ_NET_TX) {
			c->event_ns[NETTO_EV_NET_TX_SOFTIRQ] += delta;
		} else if (cb < NETTO_MAX_CALLBACKS) {
			c->event_ns[NETTO_EV_NET_TIMERS] += delta;
			c->callback_ns[cb] += delta;
			c->run_net_ns += delta;
		} else if (c->callback) {
			c->run_other_ns += delta;
		} else {
			c->run_idle_ns += delta;
		}
		return;
	}
	if (c->task_window == NETTO_WIN_NAPI)
		c->event_ns[NETTO_EV_NET_RX_SOFTIRQ] += delta;
	else if (c->window_epoch != epochs.window_epoch)
		return;
	else if (c->task_window == NETTO_WIN_SEND)
		c->event_ns[NETTO_EV_SOCK_SEND] += delta;
	else if (c->task_window == NETTO_WIN_RECV)
		c->event_ns[NETTO_EV_SOCK_RECV] += delta;
}

/* ---- softirqs ---------------------------------------------------------- */

SEC("tp_btf/softirq_entry")
int BPF_PROG(netto_softirq_entry, unsigned int vec)
{
	struct netto_cpu *c = this_cpu();

	if (!c || vec >= NETTO_NR_SOFTIRQS)
		return 0;
	c->hook_runs[NETTO_HOOK_SOFTIRQ]++;
	charge(c, bpf_ktime_get_ns());
	c->in_hardirq = 0;
	c->softirq = vec + 1;
	c->callback = 0;
	c->run_net_ns = 0;
	c->run_other_ns = 0;
	c->run_idle_ns = 0;
	c->softirq_time[vec].count++;
	attr_softirq_entry(c, vec);
	if (vec == NETTO_SOFTIRQ_NET_RX)
		c->event_count[NETTO_EV_NET_RX_SOFTIRQ]++;
	else if (vec == NETTO_SOFTIRQ_NET_TX)
		c->event_count[NETTO_EV_NET_TX_SOFTIRQ]++;
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(netto_softirq_exit, unsigned int vec)
{
	struct netto_cpu *c = this_cpu();
	__u64 callbacks_ns, share;

	if (!c)
		return 0;
	charge(c, bpf_ktime_get_ns());
	callbacks_ns = c->run_net_ns + c->run_other_ns;
	if (c->run_net_ns && c->softirq == vec + 1) {
		share = c->run_idle_ns * c->run_net_ns / callbacks_ns;
		c->event_ns[NETTO_EV_NET_TIMERS] += share;
		c->callback_overhead_ns += share;
	}
	attr_softirq_exit(c);
	c->in_hardirq = 0;
	c->softirq = 0;
	c->callback = 0;
	return 0;
}

/* ---- hardirqs: time inside them is charged to nothing ------------------- */

static __always_inline int hardirq_enter(void)
{
	struct netto_cpu *c = this_cpu();

	if (!c)
		return 0;
	c->hook_runs[NETTO_HOOK_HARDIRQ]++;
	charge(c, bpf_ktime_get_ns());
	c->in_hardirq = 1;
	return 0;
}

static __always_inline int hardirq_exit(void)
{
	struct netto_cpu *c = this_cpu();

	if (!c)
		return 0;
	charge(c, bpf_ktime_get_ns());
	c->in_hardirq = 0;
	return 0;
}

/* Device interrupts, on every architecture. */
SEC("tp_btf/irq_handler_entry")
int BPF_PROG(netto_irq_entry) { return hardirq_enter(); }
SEC("tp_btf/irq_handler_exit")
int BPF_PROG(netto_irq_exit) { return hardirq_exit(); }

/* x86 system vectors that do not pass irq_handler_*: the local timer (the
 * most frequent interrupt of all), IPIs and irq_work. Optional: the loader
 * leaves out whichever the running kernel lacks. */
SEC("tp_btf/local_timer_entry")
int BPF_PROG(netto_timer_irq_entry) { return hardirq_enter(); }
SEC("tp_btf/local_timer_exit")
int BPF_PROG(netto_timer_irq_exit) { return hardirq_exit(); }
SEC("tp_btf/reschedule_entry")
int BPF_PROG(netto_resched_ipi_entry) { return hardirq_enter(); }
SEC("tp_btf/reschedule_exit")
int BPF_PROG(netto_resched_ipi_exit) { return hardirq_exit(); }
SEC("tp_btf/call_function_entry")
int BPF_PROG(netto_call_ipi_entry) { return hardirq_enter(); }
SEC("tp_btf/call_function_exit")
int BPF_PROG(netto_call_ipi_exit) { return hardirq_exit(); }
SEC("tp_btf/call_function_single_entry")
int BPF_PROG(netto_call1_ipi_entry) { return hardirq_enter(); }
SEC("tp_btf/call_function_single_exit")
int BPF_PROG(netto_call1_ipi_exit) { return hardirq_exit(); }
SEC("tp_btf/irq_work_entry")
int BPF_PROG(netto_irq_work_entry) { return hardirq_enter(); }
SEC("tp_btf/irq_work_exit")
int BPF_PROG(netto_irq_work_exit) { return hardirq_exit(); }

/* ---- network callbacks run from the TIMER / HRTIMER / TASKLET softirqs --- */

/* The callback's address is read by the caller only after in_softirq()
 * said it matters: most timers expire in hardirq or outside any softirq
 * netto follows, and those should cost as little as possible. */
static __always_inline struct netto_cpu *in_timer_softirq(void)
{
	struct netto_cpu *c = this_cpu();
	__u32 vec;

	if (!c)
		return NULL;
	c->hook_runs[NETTO_HOOK_CALLBACK]++;
	if (c->in_hardirq || !c->softirq)
		return NULL;
	/* NET_RX / NET_TX time is already an event of its own. */
	vec = c->softirq - 1;
	if (vec == NETTO_SOFTIRQ_NET_RX || vec == NETTO_SOFTIRQ_NET_TX)
		return NULL;
	return c;
}

static __always_inline int callback_enter(struct netto_cpu *c, __u64 fn)
{
	__u32 slot = (fn * callback_table.multiplier) >> (64 - NETTO_CALLBACK_SLOT_BITS);
	const volatile struct netto_callback_slot *s =
		&callback_table.slots[slot & (NETTO_CALLBACK_SLOTS - 1)];
	__u32 idx = s->index;

	charge(c, bpf_ktime_get_ns());
	if (fn && s->address == fn && idx < NETTO_MAX_CALLBACKS) {
		c->callback = idx + 1;
		c->event_count[NETTO_EV_NET_TIMERS]++;
		attr_restart(c, NETTO_EV_NET_TIMERS);
	} else {
		c->callback = NETTO_CALLBACK_OTHER;
	}
	return 0;
}

static __always_inline int callback_exit(void)
{
	struct netto_cpu *c = this_cpu();

	if (!c || !c->callback || c->in_hardirq)
		return 0;
	charge(c, bpf_ktime_get_ns());
	attr_callback_exit(c);
	c->callback = 0;
	return 0;
}

SEC("tp_btf/timer_expire_entry")
int BPF_PROG(netto_timer_entry, struct timer_list *timer)
{
	struct netto_cpu *c = in_timer_softirq();

	return c ? callback_enter(c, (__u64)timer->function) : 0;
}

SEC("tp_btf/timer_expire_exit")
int BPF_PROG(netto_timer_exit) { return callback_exit(); }

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(netto_hrtimer_entry, struct hrtimer *timer)
{
	struct netto_cpu *c = in_timer_softirq();

	return c ? callback_enter(c, (__u64)timer->function) : 0;
}

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(netto_hrtimer_exit) { return callback_exit(); }

/* Optional: the tasklet tracepoints are younger than the rest. */
SEC("tp_btf/tasklet_entry")
int BPF_PROG(netto_tasklet_entry, struct tasklet_struct *t, void *func)
{
	struct netto_cpu *c = in_timer_softirq();

	return c ? callback_enter(c, (__u64)func) : 0;
}

SEC("tp_btf/tasklet_exit")
int BPF_PROG(netto_tasklet_exit) { return callback_exit(); }

/* BH workqueues run from the TASKLET/HI softirqs (TCP small queues moved to
 * one); work items run in process context are ignored. */
SEC("tp_btf/workqueue_execute_start")
int BPF_PROG(netto_work_start, struct work_struct *work)
{
	struct netto_cpu *c = in_timer_softirq();

	return c ? callback_enter(c, (__u64)work->func) : 0;
}

SEC("tp_btf/workqueue_execute_end")
int BPF_PROG(netto_work_end) { return callback_exit(); }

/* ---- tasks: socket windows and context switches ------------------------ */

/*
 * The running task's window lives in its CPU's record (task_window and
 * window_depth); task storage holds it only while the task is switched out
 * mid-call. So the window hooks never touch task storage, and sched_switch
 * moves the window out of the CPU record for `prev` and back in for `next`.
 */

/* Start-up self-check: windows opened by thread `check_tid`, by kind, so
 * user space can tell which of its own socket calls the backend saw. */
__u32 check_tid;
__u64 check_windows[NETTO_WIN_RECV + 1];

static __always_inline void open_window(struct netto_cpu *c, __u64 now, __u32 window)
{
	charge(c, now);
	c->in_hardirq = 0;
	c->task_window = window;
	c->window_depth = 1;
	c->window_epoch = epochs.window_epoch;
	attr_window_start(c);
	c->event_count[window == NETTO_WIN_SEND ? NETTO_EV_SOCK_SEND : NETTO_EV_SOCK_RECV]++;
	if (check_tid && (__u32)bpf_get_current_pid_tgid() == check_tid && window <= NETTO_WIN_RECV)
		check_windows[window]++;
}

static __always_inline void close_window(struct netto_cpu *c)
{
	charge(c, bpf_ktime_get_ns());
	attr_window_end(c, true);
	c->in_hardirq = 0;
	c->task_window = NETTO_WIN_NONE;
	c->window_depth = 0;
}

#define NETTO_PF_KTHREAD 0x00200000

/* A threaded NAPI poller: a kernel thread that napi_kthread_create() named
 * "napi/<device>-<id>". It polls with bottom halves off, so no NET_RX
 * softirq is entered, yet its whole time is the receive path (softirqs it
 * runs when it turns them back on are charged to their own vectors). */
static __always_inline bool is_napi_thread(struct task_struct *t)
{
	return (t->flags & NETTO_PF_KTHREAD) && t->comm[0] == 'n' && t->comm[1] == 'a' &&
	       t->comm[2] == 'p' && t->comm[3] == 'i' && t->comm[4] == '/';
}

SEC("tp_btf/sched_switch")
int BPF_PROG(netto_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct netto_cpu *c = this_cpu();
	struct netto_task_state *saved;
	__u64 pending = 0;

	if (!c)
		return 0;
	c->hook_runs[NETTO_HOOK_SCHED_SWITCH]++;
	charge(c, bpf_ktime_get_ns());
	attr_window_end(c, false);
	c->in_hardirq = 0;
	/* A NAPI thread's window is known from the thread itself: not saved. */
	if (c->task_window != NETTO_WIN_NONE && c->task_window != NETTO_WIN_NAPI) {
		saved = bpf_task_storage_get(&task_windows, prev, 0,
					     BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (saved) {
			saved->window = c->task_window;
			saved->depth = c->window_depth;
			saved->epoch = c->window_epoch;
			saved->pending_ns = c->attr.pending_ns;
		} else {
			c->task_storage_failures++;
		}
	}
	/* A task that no BPF program ever gave task storage (most tasks:
	 * netto creates it only for a task switched out mid-call) has no
	 * saved window; one load tells, where the lookup is a helper call. */
	saved = next->bpf_storage ? bpf_task_storage_get(&task_windows, next, 0, 0) : NULL;
	if (saved && saved->window != NETTO_WIN_NONE && saved->epoch == epochs.window_epoch) {
		c->task_window = saved->window;
		c->window_depth = saved->depth;
		c->window_epoch = saved->epoch;
		pending = saved->pending_ns;
		saved->window = NETTO_WIN_NONE;
		saved->depth = 0;
		saved->pending_ns = 0;
	} else if (is_napi_thread(next)) {
		c->task_window = NETTO_WIN_NAPI;
		c->window_depth = 0;
	} else {
		c->task_window = NETTO_WIN_NONE;
		c->window_depth = 0;
	}
	attr_window_start(c);
	c->attr.pending_ns = pending;
	return 0;
}

#include "window_syscalls.h"
#include "window_functions.h"
