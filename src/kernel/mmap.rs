//! BPF array maps created with `BPF_F_MMAPABLE`, mapped into netto: the
//! sampler's buffer and control block, the sketch's per-CPU state. Reading
//! and writing them costs no system call, and user space can change one
//! field while a program updates the one beside it.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::{self, NonNull};

/// A shared, read-write mapping of an mmap-able map's values; unmapped on
/// drop. Everything in it may change under netto's feet (BPF programs
/// write it), so callers read and write it through raw pointers only.
pub struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

impl Mapping {
    /// Maps the first `bytes` of the map's values (whole pages of them).
    pub fn new(map: BorrowedFd<'_>, bytes: usize) -> io::Result<Mapping> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|&page| page > 0)
            .ok_or_else(|| io::Error::other("sysconf(_SC_PAGESIZE) gave no page size"))?;
        let len = bytes.div_ceil(page) * page;
        // SAFETY: maps a BPF map fd; the kernel checks the length against
        // the map's size and fails otherwise, which is checked below.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                map.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(base.cast()).ok_or_else(|| io::Error::other("null mapping"))?;
        Ok(Mapping { base, len })
    }

    /// The start of the mapping, as a pointer to `T`.
    pub fn as_ptr<T>(&self) -> *mut T {
        self.base.as_ptr().cast()
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped; nothing borrows the
        // mapping past its owner.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}
