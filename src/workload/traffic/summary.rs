//! What a traffic loop did, in the units netto reports.

use std::ops::AddAssign;

/// Successful syscalls and the payload bytes they moved. A `sendmmsg` or `recvmmsg`
/// counts as one call however many datagrams it carried, because netto attributes
/// CPU time per syscall.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub calls: u64,
    pub bytes: u64,
}

impl Summary {
    /// Counts one successful syscall that moved `bytes`.
    pub fn record(&mut self, bytes: u64) {
        self.calls += 1;
        self.bytes += bytes;
    }
}

impl AddAssign for Summary {
    fn add_assign(&mut self, other: Summary) {
        self.calls += other.calls;
        self.bytes += other.bytes;
    }
}
