//! What to send, checked once, and the dispatch to the UDP or TCP sender.

use std::net::SocketAddr;

use super::{
    target, tcp_send, udp_send, Proto, SendSyscall, Summary, Syscall, TrafficError, Until,
};

/// Largest UDP payload over IPv4 (65535 minus IP and UDP headers).
const UDP_MAX_SIZE: usize = 65_507;

/// Caps TCP buffers at a size that still fits comfortably in memory.
const TCP_MAX_SIZE: usize = 16 << 20;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendConfig {
    pub proto: Proto,
    pub syscall: SendSyscall,
    pub dest: SocketAddr,
    /// Bytes per datagram (UDP) or per call (TCP).
    pub size: usize,
    /// TCP congestion control algorithm, e.g. "bbr"; `None` keeps the system default.
    pub congestion: Option<String>,
    /// The most bytes per second to send (TCP: the kernel paces to it);
    /// `None`: as fast as the path takes.
    pub max_rate: Option<u64>,
}

impl SendConfig {
    /// A config with [`SendConfig::default_size`] and the default congestion control.
    pub fn new(proto: Proto, syscall: SendSyscall, dest: SocketAddr) -> SendConfig {
        SendConfig {
            proto,
            syscall,
            dest,
            size: SendConfig::default_size(proto),
            congestion: None,
            max_rate: None,
        }
    }

    /// UDP datagrams fit a 1500-byte MTU, so every send is one unfragmented packet;
    /// TCP sends 64 KiB per call, like a bulk transfer.
    pub fn default_size(proto: Proto) -> usize {
        match proto {
            Proto::Udp => 1400,
            Proto::Tcp => 64 * 1024,
        }
    }

    /// Rejects, before any socket is made, everything that is a mistake in the request
    /// rather than a problem of the run.
    pub fn validate(&self) -> Result<(), TrafficError> {
        target::check_destination(self.dest)?;
        self.syscall.check(self.proto)?;
        let max = match self.proto {
            Proto::Udp => UDP_MAX_SIZE,
            Proto::Tcp => TCP_MAX_SIZE,
        };
        if !(1..=max).contains(&self.size) {
            return Err(TrafficError::Size {
                proto: self.proto,
                size: self.size,
                max,
            });
        }
        if self.congestion.is_some() && self.proto != Proto::Tcp {
            return Err(TrafficError::CongestionNeedsTcp);
        }
        if self.max_rate.is_some() && self.proto != Proto::Tcp {
            return Err(TrafficError::RateNeedsTcp);
        }
        Ok(())
    }
}

/// Sends as configured until `until` is reached. TCP first waits up to 2 s for the
/// receiver to accept, since it is typically started at the same moment.
pub fn send(config: &SendConfig, until: Until<'_>) -> Result<Summary, TrafficError> {
    config.validate()?;
    match config.proto {
        Proto::Udp => udp_send::send(config, until),
        Proto::Tcp => tcp_send::send(config, until),
    }
}
