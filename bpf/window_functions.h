/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Socket windows of the `fentry` backend, included by account.bpf.c: a
 * window is the time inside the kernel's socket send/receive functions.
 * No hook on every system call, so it costs less than the tracepoint
 * backend, but it needs ftrace (fentry/fexit) and the right functions.
 *
 * The right functions differ between kernels: since upstream commit
 * 86a7e0b69bd5, sendto(2), sendmsg(2) and write(2) call the static
 * `__sock_sendmsg()` and no longer pass `sock_sendmsg()`, and some builds
 * inline `__sock_sendmsg()` entirely. So every candidate is declared here,
 * user space loads those the running kernel's BTF has, and a start-up
 * self-check proves each kind of socket call is seen before the backend is
 * trusted. Candidates may nest (sock_sendmsg -> __sock_sendmsg): the window
 * opens at the outermost entry and closes at its exit.
 *
 * The program names carry what user space needs and nothing else does:
 * `netto_send_X` / `netto_recv_X` open a window on entry to kernel function
 * X (the section says which), `netto_exit_X` closes it.
 */
#ifndef NETTO_WINDOW_FUNCTIONS_H
#define NETTO_WINDOW_FUNCTIONS_H

static __always_inline int function_enter(__u32 window)
{
	struct netto_cpu *c = this_cpu();

	if (!c)
		return 0;
	c->hook_runs[NETTO_HOOK_WINDOW]++;
	/* Socket functions called from softirq context are part of the
	 * softirq's time, not a task's window. */
	if (c->softirq || c->in_hardirq || c->task_window == NETTO_WIN_NAPI)
		return 0;
	/* A window of an earlier epoch lost its close: this call starts
	 * afresh. */
	if (c->task_window != NETTO_WIN_NONE && c->window_epoch == epochs.window_epoch) {
		c->window_depth++;
		return 0;
	}
	open_window(c, bpf_ktime_get_ns(), window);
	return 0;
}

/* Returns attached before their entries (user space attaches in that
 * order), so a call already running then ends with depth 0: ignored. */
static __always_inline int function_exit(void)
{
	struct netto_cpu *c = this_cpu();

	if (!c || c->softirq || c->in_hardirq || !c->window_depth)
		return 0;
	if (--c->window_depth == 0)
		close_window(c);
	return 0;
}

#define SOCKET_FUNCTION(kind, fn, window)                                  \
	SEC("fentry/" #fn)                                                 \
	int BPF_PROG(netto_##kind##_##fn) { return function_enter(window); } \
	SEC("fexit/" #fn)                                                  \
	int BPF_PROG(netto_exit_##fn) { return function_exit(); }

/* The send path of kernels with commit 86a7e0b69bd5. */
SOCKET_FUNCTION(send, __sock_sendmsg, NETTO_WIN_SEND)
/* Where that one is inlined (Debian's 6.12, 6.18), the callers that reach
 * it without sock_sendmsg: sendto(2), sendmsg(2)/sendmmsg(2) per message,
 * write(2)/writev(2). */
SOCKET_FUNCTION(send, __sys_sendto, NETTO_WIN_SEND)
SOCKET_FUNCTION(send, ____sys_sendmsg, NETTO_WIN_SEND)
SOCKET_FUNCTION(send, sock_write_iter, NETTO_WIN_SEND)
/* The send path before it, and kernel-internal senders after it
 * (splice_to_socket for sendfile, kernel_sendmsg). */
SOCKET_FUNCTION(send, sock_sendmsg, NETTO_WIN_SEND)
/* sendfile(2)/splice(2) to a socket before 6.5 (removed then). */
SOCKET_FUNCTION(send, kernel_sendpage, NETTO_WIN_SEND)
/* The whole of sendmmsg(2)/recvmmsg(2), between their messages too. */
SOCKET_FUNCTION(send, __sys_sendmmsg, NETTO_WIN_SEND)
SOCKET_FUNCTION(recv, sock_recvmsg, NETTO_WIN_RECV)
/* splice(2) out of a socket: TCP's tcp_splice_read does not pass
 * sock_recvmsg (other protocols reach it from here, nested). */
SOCKET_FUNCTION(recv, sock_splice_read, NETTO_WIN_RECV)
SOCKET_FUNCTION(recv, __sys_recvmmsg, NETTO_WIN_RECV)

#endif /* NETTO_WINDOW_FUNCTIONS_H */
