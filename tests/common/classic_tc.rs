//! Classic tc filters for the tests and benches of the host's network
//! programs: a `clsact` qdisc on an interface and `cls_bpf` filters (direct
//! action) on it, through libbpf's tc API, by netlink: no link, not tcx,
//! so netto finds them only by dumping the interface's filters. The qdisc
//! and every filter on it are removed when dropped (and with the
//! interface).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use libbpf_rs::libbpf_sys as sys;

pub struct ClassicTc {
    hook: sys::bpf_tc_hook,
}

impl ClassicTc {
    /// A `clsact` qdisc on interface `ifindex` (one already there is
    /// taken).
    pub fn on(ifindex: u32) -> io::Result<ClassicTc> {
        let mut hook = sys::bpf_tc_hook {
            sz: std::mem::size_of::<sys::bpf_tc_hook>() as _,
            ifindex: ifindex as i32,
            attach_point: sys::BPF_TC_INGRESS | sys::BPF_TC_EGRESS,
            ..Default::default()
        };
        // SAFETY: hook is a valid bpf_tc_hook with its size set.
        let made = unsafe { sys::bpf_tc_hook_create(&mut hook) };
        if made != 0 && made != -libc::EEXIST {
            return Err(io::Error::other(format!("clsact qdisc: {made}")));
        }
        Ok(ClassicTc { hook })
    }

    /// A filter of `prog` in `direction` (`BPF_TC_INGRESS` or
    /// `BPF_TC_EGRESS`).
    pub fn filter(&self, direction: u32, prog: BorrowedFd<'_>) -> io::Result<()> {
        let one = sys::bpf_tc_hook {
            attach_point: direction,
            ..self.hook
        };
        let mut opts = sys::bpf_tc_opts {
            sz: std::mem::size_of::<sys::bpf_tc_opts>() as _,
            prog_fd: prog.as_raw_fd(),
            ..Default::default()
        };
        // SAFETY: both structs are valid with their sizes set.
        let ret = unsafe { sys::bpf_tc_attach(&one, &mut opts) };
        if ret != 0 {
            return Err(io::Error::other(format!(
                "cls_bpf filter, direction {direction}: {ret}"
            )));
        }
        Ok(())
    }
}

impl Drop for ClassicTc {
    fn drop(&mut self) {
        // SAFETY: the hook made in `on`; destroying both directions deletes
        // the clsact qdisc and every filter on it.
        unsafe { sys::bpf_tc_hook_destroy(&mut self.hook) };
    }
}
