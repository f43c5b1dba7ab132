//! Which system calls open a socket window, as data: the BPF side looks the
//! syscall number up in a map filled from this table, so it carries no
//! architecture-specific numbers and a new call is one line here.

use crate::abi::netto_syscall_kind as Kind;
use crate::abi::NETTO_COMPAT_SYSCALLS;

/// (syscall number, kind, argument holding the socket fd)
type Entry = (libc::c_long, Kind, u32);

/// Native (64-bit) system calls.
const NATIVE: &[Entry] = &[
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

/// The same calls made by 32-bit programs (x86's i386 numbers, from
/// arch/x86/entry/syscalls/syscall_32.tbl; the libc crate only has the
/// native ones). 32-bit C libraries may still send and receive through the
/// multiplexed socketcall(2).
const COMPAT: &[Entry] = &[
    (369, Kind::NETTO_SYS_SEND, 0),       // sendto
    (370, Kind::NETTO_SYS_SEND, 0),       // sendmsg
    (345, Kind::NETTO_SYS_SEND, 0),       // sendmmsg
    (4, Kind::NETTO_SYS_SEND, 0),         // write
    (146, Kind::NETTO_SYS_SEND, 0),       // writev
    (187, Kind::NETTO_SYS_SEND, 0),       // sendfile
    (239, Kind::NETTO_SYS_SEND, 0),       // sendfile64
    (371, Kind::NETTO_SYS_RECV, 0),       // recvfrom
    (372, Kind::NETTO_SYS_RECV, 0),       // recvmsg
    (337, Kind::NETTO_SYS_RECV, 0),       // recvmmsg
    (417, Kind::NETTO_SYS_RECV, 0),       // recvmmsg_time64
    (3, Kind::NETTO_SYS_RECV, 0),         // read
    (145, Kind::NETTO_SYS_RECV, 0),       // readv
    (313, Kind::NETTO_SYS_SPLICE, 0),     // splice
    (102, Kind::NETTO_SYS_SOCKETCALL, 0), // socketcall
];

/// Both tables as (key in the BPF map, kind, fd argument): a compat call
/// is keyed past the native numbers, as bpf/netto.h lays the map out.
pub fn socket_syscalls() -> impl Iterator<Item = (u32, Kind, u32)> {
    let key = |offset: u32| {
        move |&(nr, kind, fd_arg): &Entry| {
            let nr = u32::try_from(nr).expect("syscall numbers are small");
            (offset + nr, kind, fd_arg)
        }
    };
    NATIVE
        .iter()
        .map(key(0))
        .chain(COMPAT.iter().map(key(NETTO_COMPAT_SYSCALLS)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::NETTO_MAX_SYSCALLS;

    #[test]
    fn every_number_fits_the_bpf_map_and_appears_once() {
        let mut seen = std::collections::HashSet::new();
        for (key, _, fd_arg) in socket_syscalls() {
            assert!(
                key < NETTO_COMPAT_SYSCALLS + NETTO_MAX_SYSCALLS,
                "syscall key {key} beyond the map"
            );
            assert!(fd_arg <= 2, "BPF reads only the first three arguments");
            assert!(seen.insert(key), "syscall key {key} listed twice");
        }
        assert!(NATIVE
            .iter()
            .chain(COMPAT)
            .all(|e| (e.0 as u32) < NETTO_MAX_SYSCALLS));
    }

    /// A 32-bit exit(2) is number 1, the native write(2): looked up in the
    /// native table it would open a send window that never closes.
    #[test]
    fn a_compat_call_is_never_read_as_the_native_call_of_its_number() {
        let kind_of = |key: u32| {
            socket_syscalls()
                .find(|&(k, _, _)| k == key)
                .map(|(_, kind, _)| kind)
        };
        assert_eq!(kind_of(libc::SYS_write as u32), Some(Kind::NETTO_SYS_SEND));
        assert_eq!(kind_of(NETTO_COMPAT_SYSCALLS + 1), None, "compat exit");
        assert_eq!(
            kind_of(NETTO_COMPAT_SYSCALLS + 4),
            Some(Kind::NETTO_SYS_SEND),
            "compat write"
        );
        assert_eq!(
            kind_of(NETTO_COMPAT_SYSCALLS + 3),
            Some(Kind::NETTO_SYS_RECV),
            "compat read"
        );
    }
}
