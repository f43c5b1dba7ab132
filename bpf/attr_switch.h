/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * What the stack sampler shares with attribution: the switch, and the
 * running task as a group key. The sampler's copy of the switch's map is
 * pointed at the accounting's before load (like the per-CPU record map,
 * cpus_map.h), so both objects read one switch; apart from the group map
 * and the settling in attribution.h, which the sampler does not need.
 */
#ifndef NETTO_ATTR_SWITCH_H
#define NETTO_ATTR_SWITCH_H

/* Whether settled time is given to groups (user space turns it on with the
 * add-on's links), and how (NETTO_ATTR_* bits). Marks move either way, so
 * turning it on mid-run gives nobody time from before. A section of its
 * own: user space writes it with a map update, without owning the
 * skeleton's mapped data. */
__u32 attribution_on SEC(".data.attr");

/* The running task as a group key (at sched_switch the running task is
 * still `prev`). */
static __always_inline void current_key(struct netto_group_key *key)
{
	struct task_struct *task = bpf_get_current_task_btf();

	key->cgroup = bpf_get_current_cgroup_id();
	key->tgid = bpf_get_current_pid_tgid() >> 32;
	key->netns = task->nsproxy ? task->nsproxy->net_ns->ns.inum : 0;
}

#endif /* NETTO_ATTR_SWITCH_H */
