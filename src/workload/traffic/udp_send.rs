//! The UDP sender.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsFd;

use nix::sys::socket::SockaddrStorage;

use super::drive::{drive, is_transient};
use super::sendcall::{self, SendBatch};
use super::Syscall;
use super::{Proto, SendConfig, SendSyscall, Summary, TrafficError, Until, IO_TIMEOUT, MMSG_BATCH};

/// sendto, sendmsg and sendmmsg name the destination on every call, as an
/// unconnected datagram client does; write and writev need a connected socket.
pub(super) fn send(config: &SendConfig, until: Until<'_>) -> Result<Summary, TrafficError> {
    let dest = config.dest;
    let local: SocketAddr = match dest {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(local).map_err(TrafficError::io("binding a UDP socket"))?;
    socket
        .set_write_timeout(Some(IO_TIMEOUT))
        .map_err(TrafficError::io("setting the UDP send timeout"))?;
    if matches!(config.syscall, SendSyscall::Write | SendSyscall::Writev) {
        socket
            .connect(dest)
            .map_err(TrafficError::io(format!("connecting UDP to {dest}")))?;
    }
    let fd = socket.as_fd();
    let payload = vec![0xa5; config.size];
    let raw_dest = SockaddrStorage::from(dest);
    let mut summary = Summary::default();
    let sent = match config.syscall {
        SendSyscall::Sendto => drive(until, &mut summary, udp_transient, || {
            sendcall::sendto(fd, &payload, Some(&raw_dest)).map(Some)
        }),
        SendSyscall::Sendmsg => drive(until, &mut summary, udp_transient, || {
            sendcall::sendmsg(fd, &payload, Some(&raw_dest)).map(Some)
        }),
        SendSyscall::Sendmmsg => {
            let mut batch = SendBatch::new(payload.clone(), raw_dest, MMSG_BATCH);
            drive(until, &mut summary, udp_transient, || {
                batch.send(fd).map(Some)
            })
        }
        SendSyscall::Write => drive(until, &mut summary, udp_transient, || {
            sendcall::write(fd, &payload).map(Some)
        }),
        SendSyscall::Writev => drive(until, &mut summary, udp_transient, || {
            sendcall::writev(fd, &payload).map(Some)
        }),
        SendSyscall::Sendfile | SendSyscall::Splice => {
            return Err(config.syscall.unsupported(Proto::Udp))
        }
    };
    sent.map_err(TrafficError::io(format!(
        "udp {} to {dest}",
        config.syscall
    )))?;
    Ok(summary)
}

/// An ICMP "port unreachable" from a receiver that is not up yet surfaces as
/// ECONNREFUSED on the next send; the datagrams after it may well arrive.
fn udp_transient(e: &io::Error) -> bool {
    is_transient(e) || e.kind() == io::ErrorKind::ConnectionRefused
}
