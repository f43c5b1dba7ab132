//! Runs netto's integration test binaries inside stock Debian kernels
//! under qemu (TCG: these machines have no usable KVM), so that features
//! whose support depends on the kernel version are tested on the kernels
//! users run.
//!
//! Per kernel: the image package is downloaded once with `apt-get download`
//! and cached ([`kernel`]); an initramfs holds busybox, the guest init
//! (`init.sh` here), the modules for 9p and veth, and the host's `ip`,
//! `taskset` and `bpftool` with every shared library the tools and the test
//! binaries load ([`initramfs`]). The cargo target directory is shared over
//! 9p at the same absolute path, so the absolute `CARGO_BIN_EXE_*` paths
//! compiled into the test binaries hold in the guest. The guest runs one job
//! per matrix row and writes each job's output and exit status back to the
//! share ([`guest`]).

pub mod executables;
pub mod guest;
pub mod host;
pub mod initramfs;
pub mod kernel;
pub mod matrix;

use std::path::{Path, PathBuf};

/// Where the harness keeps things: everything under the cargo target
/// directory unless `NETTO_VM_CACHE` moves the kernel cache elsewhere.
pub struct Layout {
    /// netto's binary, which every job may start: its libraries go into
    /// every boot's initramfs, whichever jobs that boot runs.
    pub netto: PathBuf,
    /// Shared with the guest at the same path.
    pub target_dir: PathBuf,
    /// Downloaded kernel packages and what is extracted from them, kept
    /// across runs.
    pub cache_dir: PathBuf,
    /// This run's jobs, results and serial logs (replaced by the next run).
    pub results_dir: PathBuf,
}

impl Layout {
    /// Derived from netto's own path: `<target>/<profile>/netto`.
    pub fn from_netto(netto: &Path) -> Layout {
        let target_dir = netto
            .parent()
            .and_then(Path::parent)
            .expect("netto lives in <target>/<profile>/")
            .to_path_buf();
        let cache_dir = std::env::var_os("NETTO_VM_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| target_dir.join("vm-cache"));
        let results_dir = target_dir.join("vm-matrix");
        Layout {
            netto: netto.to_path_buf(),
            target_dir,
            cache_dir,
            results_dir,
        }
    }
}
