/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The ABI between netto's BPF programs and its Rust side. This header is the
 * only definition: build.rs turns it into Rust with bindgen, so the two sides
 * cannot drift apart. It must stay includable both from BPF C (after
 * vmlinux.h) and on its own (bindgen), hence the plain integer typedefs.
 */
#ifndef NETTO_H
#define NETTO_H

typedef unsigned char netto_u8;
typedef unsigned short netto_u16;
typedef unsigned int netto_u32;
typedef unsigned long long netto_u64;

/* Softirq vectors in kernel order (include/linux/interrupt.h); their names
 * as /proc/softirqs prints them live on the Rust side, indexed by these. */
#define NETTO_NR_SOFTIRQS 10
#define NETTO_SOFTIRQ_NET_TX 2
#define NETTO_SOFTIRQ_NET_RX 3

/* The network events netto accounts. */
enum netto_event {
	NETTO_EV_NET_RX_SOFTIRQ = 0,
	NETTO_EV_NET_TX_SOFTIRQ = 1,
	NETTO_EV_SOCK_SEND = 2,
	NETTO_EV_SOCK_RECV = 3,
	NETTO_EV_NET_TIMERS = 4,
	NETTO_NR_EVENTS = 5,
};

/* What a task is doing, as far as accounting is concerned. Stored per task
 * (task storage) so a task switched out mid-call resumes its window. */
enum netto_task_window {
	NETTO_WIN_NONE = 0,
	NETTO_WIN_SEND = 1,
	NETTO_WIN_RECV = 2,
	/* a threaded NAPI kthread (/sys/class/net/DEV/threaded): the receive
	 * path run outside the NET_RX softirq, charged to NET_RX */
	NETTO_WIN_NAPI = 3,
};

/* A task's window while it is switched out (task storage value). */
struct netto_task_state {
	netto_u32 window;     /* enum netto_task_window */
	netto_u32 depth;      /* netto_cpu.window_depth */
	netto_u32 epoch;      /* netto_cpu.window_epoch */
	netto_u32 pad;
	netto_u64 pending_ns; /* netto_attr_cpu.pending_ns */
};

/* Per-syscall-number classification, filled by user space from a table so
 * the BPF side carries no architecture-specific syscall numbers. Native
 * calls are at their number; a 32-bit (compat) task's calls have numbers of
 * their own (its 1 is exit, the native 1 is write), so they are at
 * NETTO_COMPAT_SYSCALLS + number. */
#define NETTO_MAX_SYSCALLS 512
#define NETTO_COMPAT_SYSCALLS NETTO_MAX_SYSCALLS
enum netto_syscall_kind {
	NETTO_SYS_OTHER = 0,
	/* a socket send if the fd in `fd_arg` is a socket */
	NETTO_SYS_SEND = 1,
	/* a socket receive if the fd in `fd_arg` is a socket */
	NETTO_SYS_RECV = 2,
	/* splice(2): a send if fd_out is a socket, else a receive if fd_in is */
	NETTO_SYS_SPLICE = 3,
	/* 32-bit socketcall(2): the call in the first argument, the socket
	 * first in the argument block the second points to */
	NETTO_SYS_SOCKETCALL = 4,
};

struct netto_syscall {
	netto_u32 kind;   /* enum netto_syscall_kind */
	netto_u32 fd_arg; /* which argument (0-based) holds the socket fd */
};

/* Network timer / tasklet / BH-work callbacks are recognised by address;
 * user space resolves the names (a table on the Rust side) through kallsyms.
 * Time is kept per index. */
#define NETTO_MAX_CALLBACKS 32
/* `callback` value while a callback that is not network work runs. */
#define NETTO_CALLBACK_OTHER 0xffffu

/* ---- attribution: whom each event's time was for ------------------------ */

/*
 * Whom a part of an event's time is charged to. A field that is not known
 * is 0: the process of a socket no task was seen using, the cgroup of
 * forwarded traffic. User space groups by one field (--by), and what a
 * group leaves out of an event's total is the event's unattributed part.
 */
struct netto_group_key {
	netto_u64 cgroup; /* cgroup v2 id: the inode of the group's directory */
	netto_u32 tgid;   /* process (thread group) id, as the host sees it */
	netto_u32 netns;  /* inode of the network namespace */
	/* The connection (`--by flow|port` only, else zero): a socket's, or
	 * a forwarded packet's from its headers (source as local). IPv4 in
	 * the first word, network byte order; ports in host order; `family`
	 * AF_INET or AF_INET6, 0 where none was known, and then `why` says
	 * why where a packet told (enum netto_no_conn). */
	netto_u32 laddr[4];
	netto_u32 raddr[4];
	netto_u16 lport;
	netto_u16 rport;
	netto_u8 proto;
	netto_u8 family;
	netto_u16 why;
};

/* The attribution switch's bits (attribution_on in bpf/attr_switch.h),
 * written by user space. */
#define NETTO_ATTR_ON 1
/* `--by flow|port`: a socket window's time waits for the socket its call
 * names (netto_attr_cpu.pending_ns) rather than going to the task. */
#define NETTO_ATTR_CALLS_WAIT 2

/* Why a packet transmitted for no socket has no connection. */
enum netto_no_conn {
	NETTO_NO_CONN_UNKNOWN = 0,
	/* neither IPv4 nor IPv6 (ARP, LLDP, ...) */
	NETTO_NO_CONN_NOT_IP = 1,
	/* an IP fragment: only the first carries the ports */
	NETTO_NO_CONN_FRAGMENT = 2,
};

_Static_assert(sizeof(struct netto_group_key) % 8 == 0, "netto_group_key: compared by words");

/* Payload bytes of socket calls, per direction (`--by flow|port`). */
#define NETTO_BYTES_IN 0
#define NETTO_BYTES_OUT 1

/* One group's time per event (a per-CPU hash value; user space sums). */
struct netto_group_time {
	netto_u64 ns[NETTO_NR_EVENTS];
	netto_u64 bytes[2]; /* NETTO_BYTES_IN, NETTO_BYTES_OUT */
};

/* Distinct keys the group map holds; user space removes idle ones. */
#define NETTO_MAX_GROUPS 16384

/* The process and cgroup that last made a socket call on a socket (socket
 * local storage): softirq work for the socket is charged to them. Under
 * `--by flow|port`, an unconnected UDP socket's last datagram delivered:
 * its local address and its peer (`peer.family` 0 until one was; the
 * other fields of `peer` unused), which name the socket's receive calls. */
struct netto_sock_owner {
	netto_u64 cgroup;
	netto_u32 tgid;
	netto_u32 pad;
	struct netto_group_key peer;
};

/*
 * A CPU's attribution state. Time is charged to events as before; for each
 * event, `mark_ns` says how much of `event_ns` is settled: given to a group,
 * or left unattributed because a softirq run, callback or socket window
 * ended with nobody to claim it. The rest is the open segment, which the
 * next delivery point (a packet reaching its socket, a transmit for a
 * socket) or the window's end gives to its owner; what follows the last
 * point of a run goes to that point's owner when the run ends.
 */
struct netto_attr_cpu {
	netto_u64 mark_ns[NETTO_NR_EVENTS];
	/* The owner of the last delivery point of the running softirq run or
	 * callback, per event; netns 0: no point yet. */
	struct netto_group_key last[NETTO_NR_EVENTS];
	/* The owner of every network callback of the running timer softirq
	 * run so far (netns 0: none yet); `timer_mixed`: callbacks of several
	 * owners ran. The run's share of the softirq's own time
	 * (callback_overhead_ns) goes to a sole owner. */
	struct netto_group_key timer_run;
	/* The socket the running task's socket call named (`--by flow|port`:
	 * sock_send_length / sock_recv_length); netns 0: none yet. The
	 * window's time goes to it. */
	struct netto_group_key call;
	/* The running socket call's time before it named its socket (`--by
	 * flow|port`): it waits for the name, and follows the task while it
	 * sleeps (struct netto_task_state). */
	netto_u64 pending_ns;
	netto_u32 timer_mixed;
	netto_u32 pad;
	/* Segments the group map had no room for (full, or busy on this CPU):
	 * their time stays unattributed. */
	netto_u64 misses;
};

/*
 * Address -> callback index, read-only data user space fills before load.
 * Every resolved callback has a slot of its own: user space picks the
 * multiplier so that no two addresses share one (a perfect hash), so the
 * hot path finds a callback with one multiplication and one load, where a
 * hash map lookup costs a helper call and a hash. An address whose slot
 * holds another address is no network callback.
 */
#define NETTO_CALLBACK_SLOT_BITS 6
#define NETTO_CALLBACK_SLOTS (1u << NETTO_CALLBACK_SLOT_BITS)

struct netto_callback_slot {
	netto_u64 address; /* 0: empty */
	netto_u32 index;
	netto_u32 pad;
};

struct netto_callback_table {
	/* slot of address A: (A * multiplier) >> (64 - NETTO_CALLBACK_SLOT_BITS) */
	netto_u64 multiplier;
	struct netto_callback_slot slots[NETTO_CALLBACK_SLOTS];
};

/*
 * One name asked of the kernel by bpf/lookup.bpf.c: NUL-padded to the
 * whole buffer (the helper wants its last byte NUL), and the address it
 * found.
 */
#define NETTO_SYMBOL_NAME_LEN 64

struct netto_symbol_lookup {
	char name[NETTO_SYMBOL_NAME_LEN];
	netto_u64 address;
};

/*
 * The accounting's epochs, which user space bumps when the tier changes
 * (src/kernel/accounting.rs) with one map update of the whole struct.
 */
struct netto_tier_epochs {
	/* Whenever the socket window programs are attached or detached: a
	 * window opened in another epoch may have lost its close, so it is
	 * charged nothing (struct netto_cpu.window_epoch). */
	netto_u32 window_epoch;
	/* Whenever every hook was detached: a CPU's state from another epoch
	 * is stale, so the next hook forgets it. */
	netto_u32 state_epoch;
};

/*
 * What netto's programs run for, one counter per CPU each, so that the cost
 * of every program is known from exact run counts: BPF run-time statistics,
 * which tax every BPF program on the host, are held only for a slice of
 * each interval to measure the cost of one run (src/collect/cost.rs). A
 * hook's programs run a fixed number of times per count: a softirq run is
 * one softirq_entry and one softirq_exit, a system call one sys_enter and
 * one sys_exit, and so on.
 */
enum netto_hook {
	/* softirq_entry + softirq_exit, per softirq run */
	NETTO_HOOK_SOFTIRQ = 0,
	/* an interrupt's entry + exit (device, local timer, IPIs, irq_work) */
	NETTO_HOOK_HARDIRQ = 1,
	/* a timer, hrtimer, tasklet or work item's entry + exit */
	NETTO_HOOK_CALLBACK = 2,
	NETTO_HOOK_SCHED_SWITCH = 3,
	/* the socket window programs: sys_enter + sys_exit per system call
	 * (tracepoint backend), or fentry + fexit per socket function call */
	NETTO_HOOK_WINDOW = 4,
	/* the stack sampler, per cpu-clock event */
	NETTO_HOOK_SAMPLE = 5,
	NETTO_NR_HOOKS = 6,
};

/* Time and count of one softirq vector, side by side: a softirq hook that
 * adds to both touches one cache line, not two. */
struct netto_vector {
	netto_u64 ns;
	netto_u64 count;
};

/*
 * Everything one CPU needs, in one per-CPU array slot: the hot path does a
 * single map lookup and never writes a line another CPU writes. Fields are
 * ordered by how often hooks touch them: every hook reads and writes the
 * first 64 bytes (state and run counters); every charge lands in the
 * second (event time), so a typical hook touches two or three lines.
 *
 * Accounting is a state machine: `since_ns` is the last transition; at every
 * hook the time since then is charged according to the state (hardirq: to
 * nothing; inside a softirq: to its vector, and to NET_RX/NET_TX or to a
 * network callback; otherwise to the running task's socket window), then the
 * state changes.
 */
struct netto_cpu {
	/* ---- state ---- */
	netto_u64 since_ns;
	/* Both hold index + 1 so that the all-zero value a fresh map starts
	 * with means "none", with no initialisation step to get wrong. */
	netto_u8 softirq;     /* running vector + 1, or 0 */
	netto_u8 task_window; /* enum netto_task_window of the running task */
	/* Set between hardirq entry and exit. Hardirqs do not nest, and a
	 * hook that never runs inside one (softirq, syscall, sched_switch)
	 * clears it, so an exit missed while the programs were being
	 * attached one by one cannot leave it stuck. */
	netto_u8 in_hardirq;
	netto_u8 pad;
	netto_u16 callback;   /* running network callback index + 1,
				 NETTO_CALLBACK_OTHER, or 0 */
	/* How many hooked socket functions of the running task are open
	 * (fentry backend: they nest, e.g. sock_sendmsg -> __sock_sendmsg);
	 * the window closes when the outermost returns. */
	netto_u16 window_depth;
	/* The window epoch (struct netto_tier_epochs) the running task's
	 * window was opened in: a window from an earlier epoch was opened
	 * before the window hooks were last detached, and its close may never
	 * be seen, so it is charged nothing. */
	netto_u32 window_epoch;
	/* The state epoch the state above belongs to: state from an earlier
	 * epoch was left when every hook was detached (the sampled tier), and
	 * the first hook to run again forgets it. */
	netto_u32 state_epoch;
	/* Runs of netto's programs, by enum netto_hook, cumulative. */
	netto_u64 hook_runs[NETTO_NR_HOOKS];
	/* Runs of the sampler that interrupted the idle loop itself (the
	 * idle task on its own stack; an interrupt or softirq the idle CPU
	 * serves runs on the CPU's interrupt stack). User space leaves them
	 * out of the runs, and the kernel's idle time out of the samples due,
	 * when it counts the samples that never ran: some hypervisors hold an
	 * idle virtual CPU's timer back, and no sample is taken there. */
	netto_u64 sample_idle_runs;
	/* ---- counters, cumulative since load ---- */
	netto_u64 event_ns[NETTO_NR_EVENTS];
	/* Hardirq handler time, charged to no event; reported so the user
	 * sees what was left out. (Their count is
	 * hook_runs[NETTO_HOOK_HARDIRQ].) */
	netto_u64 hardirq_ns;
	/* The share of run_idle_ns given to net_timers (see below). */
	netto_u64 callback_overhead_ns;
	netto_u64 event_count[NETTO_NR_EVENTS];
	/* Within the current TIMER/HRTIMER/TASKLET softirq run: time in
	 * network callbacks, in other callbacks, and in neither (the expiry
	 * loop, reprogramming the timer hardware). The last is shared out at
	 * softirq exit in proportion to the first two, so the cost of running
	 * network timers counts as network work. */
	netto_u64 run_net_ns;
	netto_u64 run_other_ns;
	netto_u64 run_idle_ns;
	struct netto_vector softirq_time[NETTO_NR_SOFTIRQS];
	netto_u64 callback_ns[NETTO_MAX_CALLBACKS];
	/* Tasks switched out mid-call whose window was lost because no task
	 * storage could be had (out of memory, or the task is exiting): the
	 * rest of that call is charged to nothing. */
	netto_u64 task_storage_failures;
	/* Who the time was for (see "attribution" below). */
	struct netto_attr_cpu attr;
};

/* ---- stack sampling ---------------------------------------------------- */

/* Where a sample was taken (model::SampleContext on the Rust side). */
enum netto_sample_context {
	NETTO_CTX_NET_RX = 0,
	NETTO_CTX_NET_TX = 1,
	NETTO_CTX_SOCK_SEND = 2,
	NETTO_CTX_SOCK_RECV = 3,
	/* a network timer callback, or the timer softirq's own work around
	 * such callbacks (the time net_timers charges) */
	NETTO_CTX_NET_TIMERS = 4,
	/* a kernel stack the sampler could not place because the programs
	 * that would say are detached (the softirq and sampled tiers): user
	 * space places it by its frames, or leaves it out */
	NETTO_CTX_BY_FRAMES = 5,
};

/* Which accounting programs are attached (model::Tier on the Rust side):
 * the sampler must not trust the state of detached ones. */
enum netto_tier {
	/* every program: every event exact */
	NETTO_TIER_EXACT = 0,
	/* all but the socket window programs: socket calls are placed by
	 * their stacks */
	NETTO_TIER_SOFTIRQ = 1,
	/* none: every sample is placed by its stack */
	NETTO_TIER_SAMPLED = 2,
};

enum netto_transport {
	NETTO_TRANSPORT_MMAP = 0,
	NETTO_TRANSPORT_RINGBUF = 1,
};

#define NETTO_MAX_FRAMES 64

/* One sample: a slot of the mmap double buffer, or a ring buffer record. */
struct netto_sample {
	/* mmap transport: set last, with a full barrier, once the slot is
	 * complete; user space clears it when it has read the slot. */
	netto_u64 ready; /* 64-bit: BPF atomics on 32 bits need cpu v3 */
	netto_u32 cpu;
	netto_u32 context;  /* enum netto_sample_context */
	netto_u32 nr_frames;
	netto_u32 pad;
	/* Whom the sampled work was for, when attribution is on (netns 0:
	 * nobody): the running task in a socket call, else the owner of the
	 * softirq run's (or callback's) latest delivery point. */
	struct netto_group_key group;
	netto_u64 frames[NETTO_MAX_FRAMES]; /* leaf first */
};

/* Slots of the mmap buffer are an array of these: 8-byte aligned fields
 * stay aligned in every slot, and `ready` is a 64-bit atomic. */
_Static_assert(sizeof(struct netto_sample) % 8 == 0, "netto_sample: a multiple of 8 bytes");

/*
 * Control block of the mmap double buffer (one mmapable array element).
 * Writers (the BPF program, on any CPU) write into half `active`; user space
 * swaps halves, then waits until no writer is still inside the old half
 * before reading it: a writer announces itself in writers[half] and then
 * re-checks `active`, so either it sees the swap and leaves (to try the new
 * half), or user space sees it and waits. Both sides need a full barrier
 * between their store and their load for that (a store-buffering pattern),
 * hence fully ordered atomics on the writer's side (see sample.bpf.c).
 * Slots are handed out by reserved[half]; beyond the half's size the
 * sample is counted in `dropped`, never written. A writer clears its
 * slot's `ready` before writing it, so a flag left from an earlier round
 * never vouches for a stack being written.
 *
 * A reader that still finds a writer inside the old half after its
 * deadline does not read it: it counts the half's samples as dropped and
 * hands the half back only once its writers have left.
 */
struct netto_sample_ctl {
	netto_u32 active;
	netto_u32 slots_per_half;
	netto_u64 writers[2];
	netto_u64 reserved[2];
	netto_u64 dropped;
	netto_u64 failed;
	netto_u32 tier; /* enum netto_tier, set by user space */
	netto_u32 pad;
};

#endif /* NETTO_H */
