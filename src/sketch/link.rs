//! The XDP link: native mode where the driver has it, generic otherwise.
//! A link, unlike a netlink attachment, is owned by its fd, so the program
//! leaves the interface when netto exits or is killed.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use libbpf_rs::libbpf_sys;

use crate::model::XdpMode;

use super::error::SketchError;

/// The interface's index, or why there is none.
pub fn ifindex(iface: &str) -> Result<u32, SketchError> {
    let missing = || SketchError::NoInterface(iface.to_owned());
    let name = CString::new(iface).map_err(|_| missing())?;
    // SAFETY: `name` is a valid C string for the duration of the call.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => Err(missing()),
        index => Ok(index),
    }
}

pub struct XdpLink {
    /// The link: the program stays on the interface while it is open.
    _fd: OwnedFd,
    mode: XdpMode,
}

impl XdpLink {
    pub fn attach(prog: BorrowedFd<'_>, iface: &str, ifindex: u32) -> Result<XdpLink, SketchError> {
        let native = match create(prog, ifindex, libbpf_sys::XDP_FLAGS_DRV_MODE) {
            Ok(fd) => {
                return Ok(XdpLink {
                    _fd: fd,
                    mode: XdpMode::Native,
                })
            }
            Err(e) => e,
        };
        match create(prog, ifindex, libbpf_sys::XDP_FLAGS_SKB_MODE) {
            Ok(fd) => Ok(XdpLink {
                _fd: fd,
                mode: XdpMode::Generic,
            }),
            Err(generic) => Err(SketchError::Attach {
                iface: iface.to_owned(),
                native,
                generic,
            }),
        }
    }

    pub fn mode(&self) -> XdpMode {
        self.mode
    }
}

fn create(prog: BorrowedFd<'_>, ifindex: u32, flags: u32) -> io::Result<OwnedFd> {
    // SAFETY: zeroed options with their size set are the documented default.
    let mut opts: libbpf_sys::bpf_link_create_opts = unsafe { std::mem::zeroed() };
    opts.sz = size_of::<libbpf_sys::bpf_link_create_opts>() as _;
    opts.flags = flags;
    let target = i32::try_from(ifindex).map_err(|_| io::Error::from_raw_os_error(libc::ENODEV))?;
    // SAFETY: `prog` is an open program fd and `opts` outlives the call.
    let fd = unsafe {
        libbpf_sys::bpf_link_create(prog.as_raw_fd(), target, libbpf_sys::BPF_XDP, &opts)
    };
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(-fd));
    }
    // SAFETY: the kernel just returned this fd and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
