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
//! nowhere. How close the estimates come is on the manual's performance
//! page (docs/src/performance.md).
//!
//! A timer softirq's stack is placed as the exact accounting charges its
//! time: in a network callback it is `net_timers`; in another callback it
//! is nothing; in the softirq's own work around its callbacks (the expiry
//! loop, reprogramming the timer hardware) it is [`Place::TimerWork`],
//! which the caller shares out like the accounting does, in proportion to
//! the network callbacks' samples ([`share_timer_work`]).

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

/// The softirqs whose callbacks the accounting follows (all but NET_RX and
/// NET_TX, which are events of their own), by the function each runs as.
/// A BH workqueue's items run from the tasklet softirqs.
const TIMER_SOFTIRQS: &[&str] = &[
    "run_timer_softirq",
    "hrtimer_run_softirq",
    "tasklet_action",
    "tasklet_hi_action",
];

/// The functions that call a timer softirq's callbacks: the frame a stack
/// has just inside one of these is a callback, unless it is one of
/// [`DISPATCH_HELPERS`].
const DISPATCHERS: &[&str] = &[
    "__hrtimer_run_queues",
    "__run_hrtimer",
    "call_timer_fn",
    "tasklet_action_common",
    "process_one_work",
];

/// What the dispatchers call around a callback, not as one: the timer
/// base's lock (a sample due while it holds interrupts off is taken where
/// it lets them on again), the timer queue's upkeep, and the BPF programs
/// on the dispatchers' own tracepoints (`hrtimer_expire_entry/exit` and
/// `timer_expire_entry/exit`, run through `bpf_trace_run1`/`2`, or the
/// tracepoint's iterator where it is no static call): netto's own hooks
/// in the exact and softirq tiers, anyone's in any tier. Taken for
/// callbacks, they put the samples in them in other callbacks, never in
/// `net_timers` (docs/src/performance.md has the figures).
const DISPATCH_HELPERS: &[&str] = &[
    "bpf_trace_run1",
    "bpf_trace_run2",
    "__traceiter_hrtimer_expire_entry",
    "__traceiter_hrtimer_expire_exit",
    "__traceiter_timer_expire_entry",
    "__traceiter_timer_expire_exit",
    "_raw_spin_lock",
    "_raw_spin_unlock",
    "_raw_spin_lock_irq",
    "_raw_spin_unlock_irq",
    "_raw_spin_lock_irqsave",
    "_raw_spin_unlock_irqrestore",
    "__remove_hrtimer",
    "enqueue_hrtimer",
    "timerqueue_add",
    "timerqueue_del",
    "timerqueue_iterate_next",
    "rb_erase",
    "rb_next",
    "rb_insert_color",
    "detach_if_pending",
];

/// Calls compiled as jumps, which leave no frame of their caller: (callee,
/// the frame a stack shows above it, the function that made the call).
/// `hrtimer_run_softirq` ends by releasing the timer base's lock, where
/// interrupts come back on, so every sample due in the expiry loop's
/// interrupt-off time lands there with `handle_softirqs` as its caller
/// (under BBR pacing, most of the samples the exact tier placed in
/// `net_timers`). Another softirq ending the same way would be taken for
/// the hrtimer one.
const TAIL_CALLS: &[(&str, &str, &str)] = &[(
    "_raw_spin_unlock_irqrestore",
    "handle_softirqs",
    "hrtimer_run_softirq",
)];

/// Where a stack was taken, as its frames tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// In this context.
    In(SampleContext),
    /// In the timer softirq `TIMER_SOFTIRQS[softirq]`, outside any
    /// network callback: in another callback, or (`callback` false) in the
    /// softirq's own work around its callbacks.
    TimerWork { softirq: usize, callback: bool },
}

/// Where a stack given innermost frame first was taken, or `None` when no
/// frame names a context (idle, other system calls, other softirqs).
pub fn place<'f>(innermost_first: impl IntoIterator<Item = &'f str>) -> Option<Place> {
    // The frame just inside the last one seen, and whether a dispatcher
    // called a callback on the way out so far.
    let mut inner: Option<&str> = None;
    let mut callback = false;
    for frame in innermost_first {
        let name = normalize_name(frame);
        if let Some(&(_, context)) = ENTRY_POINTS.iter().find(|(entry, _)| *entry == name) {
            return Some(Place::In(context));
        }
        if NETWORK_CALLBACKS.iter().any(|(cb, _)| *cb == name) {
            return Some(Place::In(SampleContext::NetTimers));
        }
        let tail_called = TAIL_CALLS
            .iter()
            .find(|&&(callee, caller, _)| caller == name && inner == Some(callee))
            .map(|&(_, _, function)| function);
        if let Some(softirq) = TIMER_SOFTIRQS
            .iter()
            .position(|&s| s == name || Some(s) == tail_called)
        {
            return Some(Place::TimerWork { softirq, callback });
        }
        if DISPATCHERS.contains(&name) {
            callback |= inner.is_some_and(|callee| !DISPATCH_HELPERS.contains(&callee));
        }
        inner = Some(name);
    }
    None
}

/// How many of `work` samples of a timer softirq's own work on a CPU the
/// network's share is, given the samples of its network callbacks and of
/// its other callbacks on that CPU: the accounting gives `net_timers` each
/// run's work outside callbacks in proportion to its network callbacks'
/// time, and this does the same over an interval. With no callback
/// sampled, none.
pub fn share_timer_work(work: u64, network: u64, other: u64) -> u64 {
    let callbacks = network + other;
    if callbacks == 0 {
        return 0;
    }
    ((u128::from(work) * u128::from(network) + u128::from(callbacks) / 2) / u128::from(callbacks))
        as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `frames` outermost first, as stacks are written.
    fn placed(frames: &[&str]) -> Option<Place> {
        place(frames.iter().rev().copied())
    }

    fn in_(context: SampleContext) -> Option<Place> {
        Some(Place::In(context))
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
        assert_eq!(placed(&send), in_(SampleContext::NetRx));
        assert_eq!(placed(&send[..4]), in_(SampleContext::SockSend));
        let read = [
            "ksys_read",
            "vfs_read",
            "sock_read_iter.cold",
            "tcp_recvmsg",
        ];
        assert_eq!(placed(&read), in_(SampleContext::SockRecv));
        let pacing = [
            "handle_softirqs",
            "hrtimer_run_softirq",
            "__hrtimer_run_queues",
            "tcp_pace_kick",
            "tcp_tsq_handler",
        ];
        assert_eq!(placed(&pacing), in_(SampleContext::NetTimers));
        assert_eq!(
            placed(&["run_ksoftirqd", "handle_softirqs", "net_tx_action"]),
            in_(SampleContext::NetTx)
        );
    }

    #[test]
    fn stacks_outside_the_network_are_placed_nowhere() {
        assert_eq!(placed(&["do_idle", "default_idle"]), None);
        assert_eq!(placed(&["ksys_read", "vfs_read", "pipe_read"]), None);
        assert_eq!(placed(&["handle_softirqs", "rcu_core"]), None);
        assert_eq!(placed(&[]), None);
        // A dispatcher with no timer softirq around it: a kworker's item.
        assert_eq!(
            placed(&[
                "kthread",
                "worker_thread",
                "process_one_work",
                "vmstat_update"
            ]),
            None
        );
    }

    #[test]
    fn a_timer_softirq_outside_network_callbacks_is_its_work_or_another_callback() {
        let hrtimer = [
            "handle_softirqs",
            "hrtimer_run_softirq",
            "__hrtimer_run_queues",
        ];
        let with = |frames: &[&str]| -> Vec<String> {
            hrtimer
                .iter()
                .chain(frames)
                .map(|f| f.to_string())
                .collect()
        };
        let placed_with = |frames: &[&str]| {
            let stack = with(frames);
            place(stack.iter().rev().map(String::as_str))
        };
        let work = Some(Place::TimerWork {
            softirq: 1,
            callback: false,
        });
        // Where the expiry loop lets interrupts on again, in the loop, or
        // in the softirq itself (reprogramming the timer hardware).
        assert_eq!(placed_with(&["_raw_spin_unlock_irqrestore"]), work);
        assert_eq!(placed_with(&[]), work);
        assert_eq!(placed(&hrtimer[..2]), work);
        // The lock released as the softirq's last call, a jump.
        let tail = [
            "do_softirq",
            "handle_softirqs",
            "_raw_spin_unlock_irqrestore",
        ];
        assert_eq!(placed(&tail), work);
        // Not every release under the softirq loop is that one.
        assert_eq!(
            placed(&["do_softirq", "handle_softirqs", "_raw_spin_unlock"]),
            None
        );
        assert_eq!(placed(&["do_softirq", "handle_softirqs"]), None);
        // Another callback, however deep.
        assert_eq!(
            placed_with(&[
                "hrtimer_wakeup",
                "try_to_wake_up",
                "_raw_spin_unlock_irqrestore"
            ]),
            Some(Place::TimerWork {
                softirq: 1,
                callback: true
            })
        );
        // A BPF program on the dispatcher's own tracepoint, here netto's
        // hook and its clock read, is the softirq's work.
        assert_eq!(
            placed_with(&[
                "bpf_trace_run2",
                "netto_hrtimer_entry",
                "ktime_get_mono_fast_ns",
                "read_tsc"
            ]),
            work
        );
        assert_eq!(placed_with(&["bpf_trace_run1"]), work);
        // A network callback under the same machinery.
        assert_eq!(
            placed_with(&["tcp_pace_kick.cold", "tcp_write_xmit"]),
            in_(SampleContext::NetTimers)
        );
        // A timer_list callback and a BH workqueue's item.
        assert_eq!(
            placed(&[
                "handle_softirqs",
                "run_timer_softirq",
                "__run_timers",
                "call_timer_fn",
                "process_timeout"
            ]),
            Some(Place::TimerWork {
                softirq: 0,
                callback: true
            })
        );
        assert_eq!(
            placed(&[
                "handle_softirqs",
                "tasklet_action",
                "workqueue_softirq_action",
                "bh_worker",
                "process_one_work",
                "tcp_tsq_workfn"
            ]),
            in_(SampleContext::NetTimers)
        );
    }

    #[test]
    fn the_timer_work_is_shared_in_proportion_to_the_network_callbacks() {
        assert_eq!(share_timer_work(30, 1, 2), 10);
        assert_eq!(share_timer_work(30, 3, 0), 30);
        assert_eq!(share_timer_work(30, 0, 5), 0);
        // No callback sampled: nothing to share by.
        assert_eq!(share_timer_work(30, 0, 0), 0);
        // Rounded to the nearest sample, never past the whole.
        assert_eq!(share_timer_work(2, 1, 2), 1);
        assert_eq!(share_timer_work(u64::MAX, u64::MAX, 0), u64::MAX);
    }
}
