/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Attribution: whom each event's time was for. Shared by the accounting
 * object, whose hooks settle socket windows and start new softirq runs, and
 * the attribution add-on (attribute.bpf.c), whose delivery points settle
 * softirq time; the add-on's copy of the group map is pointed at the
 * accounting's before load, so both declare it here, identically.
 *
 * Nothing here touches the accounting's own state: the time of every event
 * is charged exactly as without attribution, and settling only moves the
 * per-event mark (struct netto_attr_cpu in netto.h) and adds to the group
 * map. A window's time goes to the task that made the call; a softirq's
 * time, up to each delivery point, to that point's socket or device.
 */
#ifndef NETTO_ATTRIBUTION_H
#define NETTO_ATTRIBUTION_H

#include "attr_switch.h"

/* group key -> its time per event, per CPU */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, NETTO_MAX_GROUPS);
	__type(key, struct netto_group_key);
	__type(value, struct netto_group_time);
} groups SEC(".maps");

/* `key`'s entry in the group map on this CPU, created if new; none when
 * the map has no room (counted). */
static __always_inline struct netto_group_time *attr_entry(struct netto_cpu *c,
							   const struct netto_group_key *key)
{
	struct netto_group_time *t = bpf_map_lookup_elem(&groups, key);

	if (!t) {
		struct netto_group_time zero = {};

		bpf_map_update_elem(&groups, key, &zero, BPF_NOEXIST);
		t = bpf_map_lookup_elem(&groups, key);
		if (!t)
			c->attr.misses++;
	}
	return t;
}

/* Adds `ns` of event `ev` to `key`'s time on this CPU. */
static __always_inline void attr_give(struct netto_cpu *c, const struct netto_group_key *key,
				      __u32 ev, __u64 ns)
{
	struct netto_group_time *t;

	if (!ns || ev >= NETTO_NR_EVENTS)
		return;
	t = attr_entry(c, key);
	if (t)
		t->ns[ev] += ns;
}

/* The part of event `ev` no one has claimed yet starts now, empty: what
 * was open is left unattributed. Called after the accounting charged. */
static __always_inline void attr_restart(struct netto_cpu *c, __u32 ev)
{
	if (ev >= NETTO_NR_EVENTS)
		return;
	c->attr.mark_ns[ev] = c->event_ns[ev];
	c->attr.last[ev].netns = 0;
}

/* A softirq run or callback of event `ev` ends: what followed its last
 * delivery point (the rest of that packet's processing) goes to that
 * point's owner; a run without a point leaves its time unattributed. */
static __always_inline void attr_run_end(struct netto_cpu *c, __u32 ev)
{
	__u64 mark;

	if (ev >= NETTO_NR_EVENTS)
		return;
	mark = c->attr.mark_ns[ev];
	if (attribution_on && c->attr.last[ev].netns && c->event_ns[ev] > mark)
		attr_give(c, &c->attr.last[ev], ev, c->event_ns[ev] - mark);
	attr_restart(c, ev);
}

static __always_inline int window_event(__u32 window)
{
	if (window == NETTO_WIN_SEND)
		return NETTO_EV_SOCK_SEND;
	if (window == NETTO_WIN_RECV)
		return NETTO_EV_SOCK_RECV;
	return -1;
}

/* ---- called from the accounting's hooks, after they charged ------------- */

/* The event a NET_RX or NET_TX softirq run is charged to. */
static __always_inline __u32 softirq_event(unsigned int vec)
{
	if (vec == NETTO_SOFTIRQ_NET_RX)
		return NETTO_EV_NET_RX_SOFTIRQ;
	if (vec == NETTO_SOFTIRQ_NET_TX)
		return NETTO_EV_NET_TX_SOFTIRQ;
	return NETTO_NR_EVENTS;
}

static __always_inline bool same_key(const struct netto_group_key *a,
				     const struct netto_group_key *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

#pragma unroll
	for (int i = 0; i < sizeof(*a) / sizeof(__u64); i++)
		if (x[i] != y[i])
			return false;
	return true;
}

/* A softirq run begins: NET_RX or NET_TX, or one that may run network
 * callbacks. */
static __always_inline void attr_softirq_entry(struct netto_cpu *c, unsigned int vec)
{
	__u32 ev = softirq_event(vec);

	if (ev < NETTO_NR_EVENTS) {
		attr_restart(c, ev);
		return;
	}
	c->attr.timer_run.netns = 0;
	c->attr.timer_mixed = 0;
}

/* A softirq run ends (after the accounting charged it and shared out the
 * timer softirq's own time, before it forgets which run it was). */
static __always_inline void attr_softirq_exit(struct netto_cpu *c)
{
	__u32 ev;

	if (!c->softirq)
		return;
	ev = softirq_event(c->softirq - 1);
	if (ev < NETTO_NR_EVENTS) {
		attr_run_end(c, ev);
		return;
	}
	/* The network timers' share of this run's own time: for their owner
	 * if they had one, unattributed if several. */
	if (c->attr.timer_run.netns && !c->attr.timer_mixed) {
		c->attr.last[NETTO_EV_NET_TIMERS] = c->attr.timer_run;
		attr_run_end(c, NETTO_EV_NET_TIMERS);
	}
}

/* A callback ends (before the accounting forgets which). */
static __always_inline void attr_callback_exit(struct netto_cpu *c)
{
	struct netto_group_key *last = &c->attr.last[NETTO_EV_NET_TIMERS];

	if (c->callback - 1 >= NETTO_MAX_CALLBACKS)
		return;
	if (!last->netns)
		c->attr.timer_mixed = 1;
	else if (!c->attr.timer_run.netns)
		c->attr.timer_run = *last;
	else if (!same_key(last, &c->attr.timer_run))
		c->attr.timer_mixed = 1;
	attr_run_end(c, NETTO_EV_NET_TIMERS);
}

/* The running task's socket window opened, or resumed on this CPU
 * (sched_switch then restores the time its call still waits to give). */
static __always_inline void attr_window_start(struct netto_cpu *c)
{
	int ev = window_event(c->task_window);

	c->attr.call.netns = 0;
	c->attr.pending_ns = 0;
	if (ev >= 0)
		attr_restart(c, ev);
	else if (c->task_window == NETTO_WIN_NAPI)
		attr_restart(c, NETTO_EV_NET_RX_SOFTIRQ);
}

/* The running task's socket call named its socket (`key`): the time it
 * waited to give goes to it. Called by the add-on, which runs only while
 * attribution is on (its copy of the switch is not the accounting's). */
static __always_inline void attr_call_named(struct netto_cpu *c, const struct netto_group_key *key)
{
	int ev = window_event(c->task_window);

	c->attr.call = *key;
	if (ev >= 0 && c->attr.pending_ns)
		attr_give(c, key, ev, c->attr.pending_ns);
	c->attr.pending_ns = 0;
}

/* The running task's socket window closes (`closing`), or the task is
 * switched out in it: its time on this CPU since it started goes to the
 * task, or under `--by flow|port` to the socket its call named. Before the
 * call names it (a call that sleeps before its protocol's length
 * tracepoint) the time waits for the name, following the task through
 * sched_switch; a call that closes without naming one gives it to the task,
 * whose key carries no connection (unattributed there). A threaded NAPI
 * poller switched out ends its run. */
static __always_inline void attr_window_end(struct netto_cpu *c, bool closing)
{
	struct netto_group_key key = {};
	int ev = window_event(c->task_window);
	__u64 ns;

	if (c->task_window == NETTO_WIN_NAPI)
		attr_run_end(c, NETTO_EV_NET_RX_SOFTIRQ);
	if (ev < 0)
		return;
	ns = c->event_ns[ev] > c->attr.mark_ns[ev] ? c->event_ns[ev] - c->attr.mark_ns[ev] : 0;
	c->attr.mark_ns[ev] = c->event_ns[ev];
	if (!(attribution_on & NETTO_ATTR_ON))
		return;
	if (c->attr.call.netns) {
		if (ns)
			attr_give(c, &c->attr.call, ev, ns);
		return;
	}
	if (attribution_on & NETTO_ATTR_CALLS_WAIT) {
		c->attr.pending_ns += ns;
		if (!closing)
			return;
		ns = c->attr.pending_ns;
		c->attr.pending_ns = 0;
	}
	if (!ns)
		return;
	current_key(&key);
	attr_give(c, &key, ev, ns);
}

#endif /* NETTO_ATTRIBUTION_H */
