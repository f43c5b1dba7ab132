//! Which system calls open a socket window, as data: the BPF side looks the
//! syscall number up in a map filled from this table, so it carries no
//! architecture-specific numbers and a new call is one line here.

use crate::abi::netto_syscall_kind as Kind;

/// (syscall number, kind, argument holding the socket fd)
type Entry = (libc::c_long, Kind, u32);

const TABLE: &[Entry] = &[
    (libc::SYS_sendto, Kind::NETTO_SYS_SEND, 0),
    (libc::SYS_sendmsg, Kind::NETTO_SYS_SEND, 0),
    (libc::SYS_sendmmsg, Kind::NETTO_SYS_SEND, 0),
    (libc::SYS_write, Kind::NETTO_SYS_SEND, 0),
    (libc::SYS_writev, Kind::NETTO_SYS_SEND, 0),
    (libc::SYS_sendfile, Kind::NETTO_SYS_SEND, 0),
    (libc::SYS_recvfrom, Kind::NETTO_SYS_RECV, 0),
    (libc::SYS_recvmsg, Kind::NETTO_SYS_RECV, 0),
    (libc::SYS_recvmmsg, Kind::NETTO_SYS_RECV, 0),
    (libc::SYS_read, Kind::NETTO_SYS_RECV, 0),
    (libc::SYS_readv, Kind::NETTO_SYS_RECV, 0),
    (libc::SYS_splice, Kind::NETTO_SYS_SPLICE, 0),
];

/// The table as (syscall number, kind, fd argument) for the BPF map.
pub fn socket_syscalls() -> impl Iterator<Item = (u32, Kind, u32)> {
    TABLE.iter().map(|&(nr, kind, fd_arg)| {
        (
            u32::try_from(nr).expect("syscall numbers are small"),
            kind,
            fd_arg,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::NETTO_MAX_SYSCALLS;

    #[test]
    fn every_number_fits_the_bpf_map_and_appears_once() {
        let mut seen = std::collections::HashSet::new();
        for (nr, _, fd_arg) in socket_syscalls() {
            assert!(nr < NETTO_MAX_SYSCALLS, "syscall {nr} beyond the map");
            assert!(fd_arg <= 2, "BPF reads only the first three arguments");
            assert!(seen.insert(nr), "syscall {nr} listed twice");
        }
    }
}
