//! What finding and pricing the host's BPF programs on the network path
//! costs netto per interval: the CPU time of one interval's discovery,
//! the reads around the statistics' slice and the pricing, with the host
//! as it is and with 50 more programs attached (25 cgroup_skb programs on
//! a test cgroup, 13 by link and 12 with `BPF_PROG_ATTACH`; 12 tcx
//! programs, 12 classic tc filters and one XDP program on a test veth; 25
//! more XDP programs loaded and attached nowhere), alternating round by
//! round. Root; `NETTO_BENCH_TABLE=1` publishes the table.

#[path = "../tests/common/classic_tc.rs"]
mod classic_tc;
#[path = "table/mod.rs"]
mod table;

use std::collections::BTreeMap;
use std::fs;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use classic_tc::ClassicTc;
use libbpf_rs::libbpf_sys as sys;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, OpenObject};
use netto::collect::network_programs::ProgramWatch;
use netto::kernel::cgroup::v2_hierarchy;
use netto::kernel::skel::stand_ins::{StandInsSkel, StandInsSkelBuilder};
use netto::workload::netns::VethPair;
use table::{load_average, Table};

const SETS: usize = 25;
const ROUNDS: usize = 5;
const CYCLES: usize = 40;

/// One interval's work for the watch, in this thread's CPU ns.
fn interval_cost(watch: &mut ProgramWatch) -> u64 {
    let start = thread_cpu_ns();
    watch.before_slice();
    watch.after_slice(Duration::from_millis(100));
    let programs = watch.price(1.0, &BTreeMap::new(), false);
    std::hint::black_box(programs);
    thread_cpu_ns() - start
}

fn thread_cpu_ns() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .expect("thread CPU clock");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

/// The stand-ins loaded and attached; detached and unloaded on drop.
struct Attached<'obj> {
    _links: Vec<Link>,
    _tcx: Vec<OwnedFd>,
    /// (program fd, cgroup fd) of each attach without a link.
    legacy: Vec<(i32, i32)>,
    /// The clsact qdisc of the classic filters, if made.
    clsact: Option<ClassicTc>,
    _skels: Vec<StandInsSkel<'obj>>,
}

impl Drop for Attached<'_> {
    fn drop(&mut self) {
        for &(prog, cgroup) in &self.legacy {
            // SAFETY: plain syscall wrapper; both fds are open until the
            // skeletons and the cgroup's file are dropped, after this.
            unsafe { sys::bpf_prog_detach2(prog, cgroup, sys::BPF_CGROUP_INET_EGRESS) };
        }
    }
}

fn attach<'obj>(
    storage: &'obj mut [MaybeUninit<OpenObject>],
    cgroup: &fs::File,
    ifindex: u32,
) -> Result<(Attached<'obj>, usize)> {
    let mut links = Vec::new();
    let mut tcx = Vec::new();
    let mut attached = Attached {
        _links: Vec::new(),
        _tcx: Vec::new(),
        legacy: Vec::new(),
        clsact: None,
        _skels: Vec::new(),
    };
    for (i, slot) in storage.iter_mut().enumerate() {
        let skel = StandInsSkelBuilder::default().open(slot)?.load()?;
        let cgroup_prog = skel.progs.stand_in_cgroup.as_fd().as_raw_fd();
        if i % 2 == 0 {
            links.push(
                skel.progs
                    .stand_in_cgroup
                    .attach_cgroup(cgroup.as_raw_fd())?,
            );
        } else {
            // SAFETY: plain syscall wrapper on two open fds.
            let ret = unsafe {
                sys::bpf_prog_attach(
                    cgroup_prog,
                    cgroup.as_raw_fd(),
                    sys::BPF_CGROUP_INET_EGRESS,
                    sys::BPF_F_ALLOW_MULTI,
                )
            };
            if ret != 0 {
                bail!("BPF_PROG_ATTACH: {}", std::io::Error::last_os_error());
            }
            attached.legacy.push((cgroup_prog, cgroup.as_raw_fd()));
        }
        if i == 0 {
            links.push(skel.progs.stand_in_xdp.attach_xdp(ifindex as i32)?);
        } else if i % 2 == 0 {
            let clsact = match attached.clsact.take() {
                Some(clsact) => clsact,
                None => ClassicTc::on(ifindex)?,
            };
            clsact.filter(sys::BPF_TC_INGRESS, skel.progs.stand_in_tc.as_fd())?;
            attached.clsact = Some(clsact);
        } else {
            let fd = skel.progs.stand_in_tc.as_fd().as_raw_fd();
            // SAFETY: plain syscall wrapper; no options.
            let link = unsafe {
                sys::bpf_link_create(fd, ifindex as i32, sys::BPF_TCX_INGRESS, std::ptr::null())
            };
            if link < 0 {
                bail!("tcx link: {}", std::io::Error::last_os_error());
            }
            // SAFETY: the kernel just handed us this fd and nothing else owns it.
            tcx.push(unsafe { OwnedFd::from_raw_fd(link) });
        }
        attached._skels.push(skel);
    }
    let count = links.len() + tcx.len() + attached.legacy.len() + (SETS - 1) / 2;
    attached._links = links;
    attached._tcx = tcx;
    Ok((attached, count))
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("the network programs benchmark loads BPF programs: run it as root");
    }
    let load_before = load_average();
    let pair = VethPair::create("nprogb").context("making a veth pair")?;
    let ifindex = nix::net::if_::if_nametoindex(pair.host_ifname())?;
    let dir = v2_hierarchy()
        .context("a cgroup v2 hierarchy")?
        .join(format!("netto-nprogb-{}", std::process::id()));
    fs::create_dir(&dir)?;
    let result = (|| -> Result<_> {
        let cgroup = fs::File::open(&dir)?;
        let mut watch = ProgramWatch::new([]);
        let (mut without, mut with) = (Vec::new(), Vec::new());
        let mut counted = (0, 0);
        for _ in 0..ROUNDS {
            without.extend((0..CYCLES).map(|_| interval_cost(&mut watch)));
            let mut storage: Vec<MaybeUninit<OpenObject>> =
                (0..SETS).map(|_| MaybeUninit::uninit()).collect();
            let (attached, n) = attach(&mut storage, &cgroup, ifindex)?;
            let listed = watch.price(1.0, &BTreeMap::new(), false);
            counted = (n, listed.programs.len());
            with.extend((0..CYCLES).map(|_| interval_cost(&mut watch)));
            drop(attached);
        }
        Ok((median(without), median(with), counted))
    })();
    let _ = fs::remove_dir(&dir);
    drop(pair);
    let (without, with, (attached, listed)) = result?;
    let load_after = load_average();
    println!(
        "\n{attached} programs attached, {listed} listed (load average {load_before:.2} before, \
         {load_after:.2} after; medians of {} intervals each, alternating by round)",
        ROUNDS * CYCLES
    );
    let mut table = Table::new(
        "network-programs",
        &[
            "host",
            "CPU per interval (us)",
            "% of one CPU at 1 s intervals",
        ],
    )?;
    for (label, ns) in [
        ("as it is".to_owned(), without),
        (format!("with {attached} more attached"), with),
    ] {
        table.row(&[
            label,
            format!("{:.0}", ns as f64 / 1e3),
            format!("{:.4}", ns as f64 / 1e9 * 100.0),
        ]);
    }
    table.row(&[
        "added by the 50".into(),
        format!("{:.0}", (with as f64 - without as f64) / 1e3),
        format!("{:.4}", (with as f64 - without as f64) / 1e9 * 100.0),
    ]);
    table.publish()
}
