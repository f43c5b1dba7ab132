//! Why a traffic loop could not run.

use std::io;
use std::net::SocketAddr;

use super::Proto;

/// Each message is one line and names the fix, because front ends print it as is.
#[derive(Debug, thiserror::Error)]
pub enum TrafficError {
    #[error("{syscall} is not available for {proto}: use one of {supported}")]
    Unsupported {
        proto: Proto,
        syscall: &'static str,
        supported: String,
    },
    #[error("refusing to send to {0}: test traffic may only go to loopback or to 198.18.0.0/15 (netto's own namespaces)")]
    Destination(SocketAddr),
    #[error("message size {size} is out of range for {proto}: use 1 to {max} bytes")]
    Size {
        proto: Proto,
        size: usize,
        max: usize,
    },
    #[error("congestion control only applies to TCP")]
    CongestionNeedsTcp,
    #[error("a rate only applies to TCP (the kernel paces TCP to it)")]
    RateNeedsTcp,
    #[error("a sender thread panicked")]
    SenderPanicked,
    #[error("a rate of 0 would never send: give at least 1")]
    ZeroRate,
    #[error("the kernel refused a pacing rate ({0})")]
    Rate(io::Error),
    #[error("the kernel refused TCP congestion control {name:?} ({cause}): pick one from /proc/sys/net/ipv4/tcp_available_congestion_control or load its module (`modprobe tcp_{name}`)")]
    Congestion { name: String, cause: io::Error },
    #[error("cannot connect to {addr} within 2 s ({cause}): start a receiver or discard server there first")]
    Connect { addr: SocketAddr, cause: io::Error },
    #[error("{action} failed: {cause}")]
    Io { action: String, cause: io::Error },
}

impl TrafficError {
    pub(crate) fn unsupported(
        proto: Proto,
        syscall: &'static str,
        supported: &[&str],
    ) -> TrafficError {
        TrafficError::Unsupported {
            proto,
            syscall,
            supported: supported.join(", "),
        }
    }

    /// Lets front ends tell a bad request (exit code 2) from a failed run.
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            TrafficError::Unsupported { .. }
                | TrafficError::Destination(_)
                | TrafficError::Size { .. }
                | TrafficError::CongestionNeedsTcp
                | TrafficError::RateNeedsTcp
                | TrafficError::ZeroRate
                | TrafficError::Congestion { .. }
        )
    }

    pub(crate) fn io(action: impl Into<String>) -> impl FnOnce(io::Error) -> TrafficError {
        let action = action.into();
        move |cause| TrafficError::Io { action, cause }
    }
}
