//! Known, repeatable traffic for netto's demo and for `netto-loadgen`.
//!
//! Each sender and receiver drives exactly one syscall, chosen by the caller, so
//! netto's per-syscall accounting can be checked against a workload whose syscalls
//! are known. Everything uses blocking sockets with short timeouts and stops at an
//! [`Until`], and returns a [`Summary`] of what it did.

mod affinity;
mod bind;
mod churn;
mod discard;
mod drive;
pub mod each_call;
mod error;
mod file_read;
mod kind;
mod pipe;
mod receiver;
mod recvcall;
mod scratch;
mod send;
mod sendcall;
mod sockopt;
mod summary;
mod target;
mod tcp_send;
mod udp_send;
mod until;

pub use affinity::pin_current_thread;
pub use churn::{churn, ChurnConfig, Closer};
pub use discard::Discard;
pub use error::TrafficError;
pub use file_read::read_file;
pub use kind::{Proto, RecvSyscall, SendSyscall, Syscall};
pub use receiver::Receiver;
pub use send::{send, SendConfig};
pub use summary::Summary;
pub use until::Until;

use std::time::Duration;

/// How long one blocking socket call may wait. It bounds how late a loop notices its
/// [`Until`], since a blocked call cannot look at the clock or the stop flag.
pub const IO_TIMEOUT: Duration = Duration::from_millis(200);

/// Datagrams per sendmmsg or recvmmsg call: enough to show the batching saving,
/// small enough to fit the default socket buffers.
const MMSG_BATCH: usize = 32;
