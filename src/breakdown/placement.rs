//! Which network context a kernel stack was taken in, read from its frames:
//! for the tiers that detach the accounting programs the sampler would
//! otherwise ask (bpf/sample.bpf.c, `NETTO_CTX_BY_FRAMES`).
//!
//! The innermost frame that names a context decides, so a softirq run
//! inline in a socket call (under `__local_bh_enable_ip`) is that softirq's
//! time, as the exact accounting charges it. The rows are the entry points
//! the exact accounting's windows begin at, as far as a stack shows them:
//! a socket call is recognised from its system call or the socket layer's
//! entry, not from the syscall number and fd the exact hooks check, so a
//! sample taken in a read(2) of a socket before `sock_read_iter` is placed
//! nowhere. The README's "Tiers" section gives how close the estimates come.

use crate::kernel::callbacks::NETWORK_CALLBACKS;
use crate::model::SampleContext;
use crate::symbols::kallsyms::normalize_name;

/// Function -> the context a stack through it was taken in.
const ENTRY_POINTS: &[(&str, SampleContext)] = &[
    // Softirqs, and the NAPI thread that polls instead of NET_RX.
    ("net_rx_action", SampleContext::NetRx),
    ("napi_threaded_poll", SampleContext::NetRx),
    ("net_tx_action", SampleContext::NetTx),
    // Socket sends: the system calls, then the socket layer's entries
    // that write(2), writev(2), splice(2) and sendfile(2) reach.
    ("__sys_sendto", SampleContext::SockSend),
    ("__sys_sendmsg", SampleContext::SockSend),
    ("__sys_sendmmsg", SampleContext::SockSend),
    ("sock_sendmsg", SampleContext::SockSend),
    ("sock_write_iter", SampleContext::SockSend),
    ("splice_to_socket", SampleContext::SockSend),
    ("sock_sendpage", SampleContext::SockSend),
    // Socket receives, likewise.
    ("__sys_recvfrom", SampleContext::SockRecv),
    ("__sys_recvmsg", SampleContext::SockRecv),
    ("__sys_recvmmsg", SampleContext::SockRecv),
    ("do_recvmmsg", SampleContext::SockRecv),
    ("sock_recvmsg", SampleContext::SockRecv),
    ("sock_read_iter", SampleContext::SockRecv),
    ("sock_splice_read", SampleContext::SockRecv),
];

/// The context of a stack given innermost frame first, or `None` when no
/// frame names one (idle, other system calls, other softirqs).
pub fn place<'f>(innermost_first: impl IntoIterator<Item = &'f str>) -> Option<SampleContext> {
    innermost_first.into_iter().find_map(|frame| {
        let name = normalize_name(frame);
        ENTRY_POINTS
            .iter()
            .find(|(entry, _)| *entry == name)
            .map(|&(_, context)| context)
            .or_else(|| {
                NETWORK_CALLBACKS
                    .iter()
                    .any(|(callback, _)| *callback == name)
                    .then_some(SampleContext::NetTimers)
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `frames` outermost first, as stacks are written.
    fn placed(frames: &[&str]) -> Option<SampleContext> {
        place(frames.iter().rev().copied())
    }

    #[test]
    fn the_innermost_entry_point_decides() {
        let send = [
            "entry_SYSCALL_64",
            "__x64_sys_sendto",
            "__sys_sendto",
            "tcp_sendmsg",
            "__dev_queue_xmit",
            "__local_bh_enable_ip",
            "do_softirq",
            "handle_softirqs",
            "net_rx_action",
            "__napi_poll",
            "tcp_v4_rcv",
        ];
        assert_eq!(placed(&send), Some(SampleContext::NetRx));
        assert_eq!(placed(&send[..4]), Some(SampleContext::SockSend));
        let read = [
            "ksys_read",
            "vfs_read",
            "sock_read_iter.cold",
            "tcp_recvmsg",
        ];
        assert_eq!(placed(&read), Some(SampleContext::SockRecv));
        let pacing = [
            "handle_softirqs",
            "hrtimer_run_softirq",
            "__hrtimer_run_queues",
            "tcp_pace_kick",
            "tcp_tsq_handler",
        ];
        assert_eq!(placed(&pacing), Some(SampleContext::NetTimers));
        assert_eq!(
            placed(&["run_ksoftirqd", "handle_softirqs", "net_tx_action"]),
            Some(SampleContext::NetTx)
        );
    }

    #[test]
    fn stacks_outside_the_network_are_placed_nowhere() {
        assert_eq!(placed(&["do_idle", "default_idle"]), None);
        assert_eq!(placed(&["ksys_read", "vfs_read", "pipe_read"]), None);
        assert_eq!(placed(&["handle_softirqs", "rcu_core"]), None);
        assert_eq!(placed(&[]), None);
    }
}
