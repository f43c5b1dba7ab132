/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Socket windows of the `tracepoint` backend, included by account.bpf.c: a
 * window is a whole system call whose number the syscall table classifies
 * as a send or a receive, and whose file descriptor is really a socket.
 */
#ifndef NETTO_WINDOW_SYSCALLS_H
#define NETTO_WINDOW_SYSCALLS_H

#define S_IFMT 00170000
#define S_IFSOCK 0140000

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NETTO_COMPAT_SYSCALLS + NETTO_MAX_SYSCALLS);
	__type(key, __u32);
	__type(value, struct netto_syscall);
} syscalls SEC(".maps");

/* The kernel's socket_file_ops, which every socket's file has and no other
 * file: learnt from the first socket seen (kallsyms lists no data symbols
 * on most kernels), then one load tells a socket where the inode's mode
 * takes two, through a line of memory more. */
__u64 socket_fops;

/* A socket's file as sock_alloc_file() makes it: an S_IFSOCK inode, and the
 * socket in private_data pointing back at the file. (An O_PATH descriptor
 * of a socket's inode has the mode but other file operations: it must not
 * teach socket_fops.) */
static __always_inline bool learn_socket_fops(struct file *file)
{
	struct socket *sock;

	if ((BPF_CORE_READ(file, f_inode, i_mode) & S_IFMT) != S_IFSOCK)
		return false;
	sock = BPF_CORE_READ(file, private_data);
	if (!sock || BPF_CORE_READ(sock, file) != file)
		return false;
	socket_fops = (__u64)BPF_CORE_READ(file, f_op);
	return true;
}

/*
 * Whether descriptor `fd` of `task` is a socket. Read through the fd table
 * rather than trusting the syscall: write(2) on a pipe or read(2) of a file
 * must not count. Direct loads through the BTF task pointer where the
 * verifier allows them: they are far cheaper than probe-read helpers, and
 * this runs on every read and write on the host.
 *
 * The fd table's slot and the file are no BTF pointers (the slot array is a
 * pointer to pointers). With `direct` (Linux 6.2+, bpf_rdonly_cast()) they
 * are read with direct loads too; before, with probe-read helper calls. The
 * loader picks the program of each kind (netto_sys_enter_direct or
 * netto_sys_enter) the kernel can run.
 */
static __always_inline bool fd_is_socket(struct task_struct *task, long fd, bool direct)
{
	struct fdtable *fdt = task->files->fdt;
	struct file *file = NULL;
	__u64 fops = socket_fops;

	if (fd < 0 || !fdt || fd >= fdt->max_fds)
		return false;
	if (direct)
		/* A slot is a struct file pointer: read as the first pointer
		 * of a type every kernel's BTF has. */
		file = (struct file *)bpf_core_cast(&fdt->fd[fd], struct callback_head)->next;
	else if (bpf_probe_read_kernel(&file, sizeof(file), &fdt->fd[fd]))
		return false;
	if (!file)
		return false;
	if (!fops)
		return learn_socket_fops(file);
	if (direct)
		return (__u64)bpf_core_cast(file, struct file)->f_op == fops;
	return (__u64)BPF_CORE_READ(file, f_op) == fops;
}

/* x86's TS_COMPAT: the task is in a 32-bit system call (in_ia32_syscall()),
 * whose number and arguments follow the i386 convention. */
#define NETTO_TS_COMPAT 0x0002

static __always_inline bool in_compat_syscall(struct task_struct *task)
{
	return task->thread_info.status & NETTO_TS_COMPAT;
}

static __always_inline long syscall_arg(struct pt_regs *regs, bool compat, __u32 n)
{
	switch (n) {
	case 0:
		return compat ? (int)regs->bx : PT_REGS_PARM1_SYSCALL(regs);
	case 1:
		return compat ? (int)regs->cx : PT_REGS_PARM2_SYSCALL(regs);
	case 2:
		return compat ? (int)regs->dx : PT_REGS_PARM3_SYSCALL(regs);
	default:
		return -1;
	}
}

/* socketcall(2)'s call numbers (linux/net.h), the same on every
 * architecture that has the call. */
enum {
	SOCKETCALL_SEND = 9,
	SOCKETCALL_RECV = 10,
	SOCKETCALL_SENDTO = 11,
	SOCKETCALL_RECVFROM = 12,
	SOCKETCALL_SENDMSG = 16,
	SOCKETCALL_RECVMSG = 17,
	SOCKETCALL_RECVMMSG = 19,
	SOCKETCALL_SENDMMSG = 20,
};

/* The window of a 32-bit socketcall(2): its socket is the first 32-bit word
 * of the user-space argument block. */
static __always_inline __u32 socketcall_window(struct task_struct *task, struct pt_regs *regs,
						  bool direct)
{
	__u32 block = regs->cx;
	__u32 window;
	int fd;

	switch ((__u32)regs->bx) {
	case SOCKETCALL_SEND:
	case SOCKETCALL_SENDTO:
	case SOCKETCALL_SENDMSG:
	case SOCKETCALL_SENDMMSG:
		window = NETTO_WIN_SEND;
		break;
	case SOCKETCALL_RECV:
	case SOCKETCALL_RECVFROM:
	case SOCKETCALL_RECVMSG:
	case SOCKETCALL_RECVMMSG:
		window = NETTO_WIN_RECV;
		break;
	default:
		return NETTO_WIN_NONE;
	}
	if (bpf_probe_read_user(&fd, sizeof(fd), (void *)(unsigned long)block))
		return NETTO_WIN_NONE;
	return fd_is_socket(task, fd, direct) ? window : NETTO_WIN_NONE;
}

static __always_inline __u32 socket_window(struct task_struct *task, struct pt_regs *regs,
					   bool compat, const struct netto_syscall *sc, bool direct)
{
	switch (sc->kind) {
	case NETTO_SYS_SEND:
		return fd_is_socket(task, syscall_arg(regs, compat, sc->fd_arg), direct)
			       ? NETTO_WIN_SEND
			       : NETTO_WIN_NONE;
	case NETTO_SYS_RECV:
		return fd_is_socket(task, syscall_arg(regs, compat, sc->fd_arg), direct)
			       ? NETTO_WIN_RECV
			       : NETTO_WIN_NONE;
	case NETTO_SYS_SPLICE:
		if (fd_is_socket(task, syscall_arg(regs, compat, 2), direct))
			return NETTO_WIN_SEND;
		return fd_is_socket(task, syscall_arg(regs, compat, 0), direct) ? NETTO_WIN_RECV
										: NETTO_WIN_NONE;
	case NETTO_SYS_SOCKETCALL:
		return compat ? socketcall_window(task, regs, direct) : NETTO_WIN_NONE;
	default:
		return NETTO_WIN_NONE;
	}
}

static __always_inline int sys_enter(struct pt_regs *regs, long id, bool direct)
{
	struct task_struct *task;
	struct netto_syscall *sc;
	struct netto_cpu *c;
	__u32 nr = id;
	__u32 window;
	bool compat;

	if (id < 0 || nr >= NETTO_MAX_SYSCALLS)
		return 0;
	task = bpf_get_current_task_btf();
	compat = in_compat_syscall(task);
	if (compat)
		nr += NETTO_COMPAT_SYSCALLS;
	sc = bpf_map_lookup_elem(&syscalls, &nr);
	if (!sc || sc->kind == NETTO_SYS_OTHER)
		return 0;
	/* The clock after the fd check: a read or write of a file or a pipe
	 * reads no clock, and netto's own check is not charged to the
	 * socket call. */
	window = socket_window(task, regs, compat, sc, direct);
	c = this_cpu();
	if (window == NETTO_WIN_NONE || !c)
		return 0;
	open_window(c, bpf_ktime_get_ns(), window);
	return 0;
}

/* One of these two is loaded: the direct one where the kernel has
 * bpf_rdonly_cast() (see fd_is_socket()). */
SEC("tp_btf/sys_enter")
int BPF_PROG(netto_sys_enter, struct pt_regs *regs, long id)
{
	return sys_enter(regs, id, false);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(netto_sys_enter_direct, struct pt_regs *regs, long id)
{
	return sys_enter(regs, id, true);
}

/* Counts the system call for both programs (NETTO_HOOK_WINDOW): every
 * system call runs both, and this one touches the CPU's record anyway. */
SEC("tp_btf/sys_exit")
int BPF_PROG(netto_sys_exit)
{
	struct netto_cpu *c = this_cpu();

	if (!c)
		return 0;
	c->hook_runs[NETTO_HOOK_WINDOW]++;
	if (c->task_window == NETTO_WIN_NONE)
		return 0;
	close_window(c);
	return 0;
}

#endif /* NETTO_WINDOW_SYSCALLS_H */
