//! Bound sockets shared by receivers and discard servers.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;

use super::{sockopt, Proto, TrafficError, IO_TIMEOUT};

/// A UDP socket or TCP listener whose blocking calls (accept included) time out after
/// [`IO_TIMEOUT`], so the loops serving it notice their end condition.
pub(crate) enum Bound {
    Udp(UdpSocket),
    Tcp(TcpListener),
}

impl Bound {
    pub(crate) fn new(proto: Proto, addr: SocketAddr) -> Result<Bound, TrafficError> {
        let action = || format!("binding {proto} {addr}");
        let bound = match proto {
            Proto::Udp => {
                let socket = UdpSocket::bind(addr).map_err(TrafficError::io(action()))?;
                socket
                    .set_read_timeout(Some(IO_TIMEOUT))
                    .map_err(TrafficError::io(action()))?;
                Bound::Udp(socket)
            }
            Proto::Tcp => Bound::Tcp(listen(addr)?),
        };
        Ok(bound)
    }

    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        match self {
            Bound::Udp(socket) => socket.local_addr(),
            Bound::Tcp(listener) => listener.local_addr(),
        }
    }
}

/// A TCP listener on `addr` whose accept times out after [`IO_TIMEOUT`].
pub(crate) fn listen(addr: SocketAddr) -> Result<TcpListener, TrafficError> {
    let action = || format!("binding tcp {addr}");
    let listener = TcpListener::bind(addr).map_err(TrafficError::io(action()))?;
    sockopt::set_receive_timeout(listener.as_fd(), IO_TIMEOUT)
        .map_err(TrafficError::io(action()))?;
    Ok(listener)
}

/// Waits up to [`IO_TIMEOUT`] for a connection; `None` if none came, or if one was
/// aborted by its client before it could be accepted.
pub(crate) fn accept(listener: &TcpListener) -> io::Result<Option<TcpStream>> {
    match listener.accept() {
        Ok((stream, _)) => {
            stream.set_read_timeout(Some(IO_TIMEOUT))?;
            Ok(Some(stream))
        }
        Err(e) if super::drive::is_transient(&e) => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => Ok(None),
        Err(e) => Err(e),
    }
}
