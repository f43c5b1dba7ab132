//! Which protocol and which syscall a traffic loop drives.

use std::fmt;

use super::TrafficError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Proto {
    Udp,
    Tcp,
}

impl fmt::Display for Proto {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Proto::Udp => "udp",
            Proto::Tcp => "tcp",
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SendSyscall {
    Sendto,
    Sendmsg,
    Sendmmsg,
    Write,
    Writev,
    Sendfile,
    /// splice(2) from a pipe into the socket
    Splice,
}

/// What both syscall enums share: a name, the protocols each works with, and
/// the error for a combination that does not work.
pub trait Syscall: Copy + 'static {
    const ALL: &'static [Self];

    fn name(self) -> &'static str;

    fn supports(self, proto: Proto) -> bool;

    fn check(self, proto: Proto) -> Result<(), TrafficError> {
        if self.supports(proto) {
            return Ok(());
        }
        Err(self.unsupported(proto))
    }

    /// The error for using this syscall with `proto`, listing the ones that work.
    fn unsupported(self, proto: Proto) -> TrafficError {
        let supported = Self::ALL.iter().filter(|s| s.supports(proto));
        let names: Vec<&str> = supported.map(|s| s.name()).collect();
        TrafficError::unsupported(proto, self.name(), &names)
    }
}

impl Syscall for SendSyscall {
    const ALL: &'static [SendSyscall] = &[
        SendSyscall::Sendto,
        SendSyscall::Sendmsg,
        SendSyscall::Sendmmsg,
        SendSyscall::Write,
        SendSyscall::Writev,
        SendSyscall::Sendfile,
        SendSyscall::Splice,
    ];

    fn name(self) -> &'static str {
        match self {
            SendSyscall::Sendto => "sendto",
            SendSyscall::Sendmsg => "sendmsg",
            SendSyscall::Sendmmsg => "sendmmsg",
            SendSyscall::Write => "write",
            SendSyscall::Writev => "writev",
            SendSyscall::Sendfile => "sendfile",
            SendSyscall::Splice => "splice",
        }
    }

    /// sendmmsg only makes sense for datagrams; sendfile and splice are offered for
    /// TCP only, where they are the zero-copy paths real servers and proxies use.
    fn supports(self, proto: Proto) -> bool {
        match self {
            SendSyscall::Sendmmsg => proto == Proto::Udp,
            SendSyscall::Sendfile | SendSyscall::Splice => proto == Proto::Tcp,
            _ => true,
        }
    }
}

impl fmt::Display for SendSyscall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RecvSyscall {
    Recvfrom,
    Recvmsg,
    Recvmmsg,
    Read,
    Readv,
    /// splice(2) from the socket into a pipe
    Splice,
}

impl Syscall for RecvSyscall {
    const ALL: &'static [RecvSyscall] = &[
        RecvSyscall::Recvfrom,
        RecvSyscall::Recvmsg,
        RecvSyscall::Recvmmsg,
        RecvSyscall::Read,
        RecvSyscall::Readv,
        RecvSyscall::Splice,
    ];

    fn name(self) -> &'static str {
        match self {
            RecvSyscall::Recvfrom => "recvfrom",
            RecvSyscall::Recvmsg => "recvmsg",
            RecvSyscall::Recvmmsg => "recvmmsg",
            RecvSyscall::Read => "read",
            RecvSyscall::Readv => "readv",
            RecvSyscall::Splice => "splice",
        }
    }

    /// recvmmsg batches datagrams; on a byte stream it would only be a slower
    /// recvmsg. splice out of a socket is the proxies' path, so TCP's.
    fn supports(self, proto: Proto) -> bool {
        match self {
            RecvSyscall::Recvmmsg => proto == Proto::Udp,
            RecvSyscall::Splice => proto == Proto::Tcp,
            _ => true,
        }
    }
}

impl fmt::Display for RecvSyscall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
