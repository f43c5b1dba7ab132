//! The host's BPF programs on the network path, as `netto stat` finds and
//! prices them: an XDP program on a veth, a tc program on its peer (in
//! another namespace) and a cgroup_skb program on a test cgroup, which
//! this test loads, attaches and removes, under UDP traffic it makes; and
//! programs attached the old way, without a link: a classic tc filter and
//! a cgroup program attached with `BPF_PROG_ATTACH`.

mod common;

use std::fs;
use std::mem::MaybeUninit;
use std::net::UdpSocket;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use common::classic_tc::ClassicTc;
use common::*;
use libbpf_rs::libbpf_sys as sys;
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, OpenObject, ProgramInput};
use netto::kernel::cgroup::v2_hierarchy;
use netto::kernel::network_programs::program_id;
use netto::kernel::skel::stand_ins::{StandInsProgs, StandInsSkel, StandInsSkelBuilder};
use netto::kernel::stats::StatsGuard;
use netto::model::{AttachPoint, NetworkProgram, PriceBasis, Recording, SampleContext, Snapshot};
use netto::workload::netns::VethPair;
use netto::workload::undo::{self, Registered};

/// UDP packets sent, in bursts with a pause between, so that traffic
/// covers every part of the intervals.
const PACKETS: u64 = 20_000;
const BURST: u64 = 100;
const PAUSE: Duration = Duration::from_millis(12);
const PORT: u16 = 47_011;

/// A cgroup made under the v2 root and removed on drop (or on a signal).
struct TestCgroup {
    dir: PathBuf,
    _undo: Registered,
}

impl TestCgroup {
    fn new() -> TestCgroup {
        undo_on_signals();
        let root = v2_hierarchy().expect("a cgroup v2 hierarchy is mounted");
        let dir = root.join(format!("netto-nprog-{}", std::process::id()));
        fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
        let undo = {
            let dir = dir.clone();
            undo::register(move || {
                let _ = fs::remove_dir(&dir);
            })
        };
        TestCgroup { dir, _undo: undo }
    }

    /// Its id, as the kernel reports it in a cgroup link: its inode.
    fn id(&self) -> u64 {
        fs::metadata(&self.dir).unwrap().ino()
    }

    /// Runs `make` with this process in the group, and moves it back: a
    /// socket made meanwhile belongs to the group for its life.
    fn within<T>(&self, make: impl FnOnce() -> T) -> T {
        let parent = self.dir.parent().unwrap().join("cgroup.procs");
        let pid = std::process::id().to_string();
        fs::write(self.dir.join("cgroup.procs"), &pid).expect("joining the test cgroup");
        let made = make();
        fs::write(parent, &pid).expect("leaving the test cgroup");
        made
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.dir);
    }
}

/// The three stand-ins attached: XDP on the host end, tc egress (tcx) on
/// the peer, cgroup_skb egress on `cgroup`; detached when dropped.
struct Attached {
    ids: [u32; 3],
    _xdp: Link,
    _tc: OwnedFd,
    _cgroup: Link,
}

impl Attached {
    /// The stand-ins of `skel` attached where this test puts them; with
    /// the peer's interface index, as a link in its namespace gives it.
    fn new(progs: &StandInsProgs<'_>, pair: &VethPair, cgroup: &TestCgroup) -> (Attached, u32) {
        let xdp = progs
            .stand_in_xdp
            .attach_xdp(ifindex(pair.host_ifname()) as i32)
            .expect("XDP on the host end");
        let (tc, peer_index) = tcx_egress(pair, progs.stand_in_tc.as_fd());
        let dir = fs::File::open(&cgroup.dir).unwrap();
        let cgroup_link = progs
            .stand_in_cgroup
            .attach_cgroup(dir.as_raw_fd())
            .expect("cgroup_skb on the test cgroup");
        let id = |p: &libbpf_rs::ProgramMut<'_>| program_id(p.as_fd()).unwrap();
        let attached = Attached {
            ids: [
                id(&progs.stand_in_xdp),
                id(&progs.stand_in_tc),
                id(&progs.stand_in_cgroup),
            ],
            _xdp: xdp,
            _tc: tc,
            _cgroup: cgroup_link,
        };
        (attached, peer_index)
    }
}

fn ifindex(name: &str) -> u32 {
    nix::net::if_::if_nametoindex(name).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A tcx link of `prog` on the peer's egress, made from inside its
/// namespace (a link's interface index is its namespace's).
fn tcx_egress(pair: &VethPair, prog: std::os::fd::BorrowedFd<'_>) -> (OwnedFd, u32) {
    let fd = prog.as_raw_fd();
    thread::scope(|s| {
        s.spawn(|| {
            pair.enter_current_thread()
                .expect("entering the peer's namespace");
            let index = ifindex(pair.peer_ifname());
            // SAFETY: plain syscall wrapper; no options.
            let link = unsafe {
                sys::bpf_link_create(fd, index as i32, sys::BPF_TCX_EGRESS, std::ptr::null())
            };
            assert!(
                link >= 0,
                "tcx link on the peer: {}",
                std::io::Error::last_os_error()
            );
            // SAFETY: the kernel just handed us this fd and nothing else owns it.
            (unsafe { OwnedFd::from_raw_fd(link) }, index)
        })
        .join()
        .unwrap()
    })
}

/// Sends `count` UDP packets from the peer's namespace to the host end,
/// from a socket of `cgroup`, in bursts.
fn send(pair: &VethPair, cgroup: &TestCgroup, count: u64) {
    let target = (pair.host_addr(), PORT);
    thread::scope(|s| {
        s.spawn(|| {
            pair.enter_current_thread()
                .expect("entering the peer's namespace");
            let socket = cgroup.within(|| UdpSocket::bind((pair.peer_addr(), 0)).unwrap());
            for sent in 0..count {
                socket.send_to(&[0u8; 64], target).expect("sending");
                if sent % BURST == BURST - 1 {
                    thread::sleep(PAUSE);
                }
            }
        });
    });
}

fn stand_ins(storage: &mut MaybeUninit<OpenObject>) -> StandInsSkel<'_> {
    StandInsSkelBuilder::default()
        .open(storage)
        .and_then(|open| open.load())
        .expect("loading the stand-ins")
}

fn find(snapshot: &Snapshot, id: u32) -> Option<&NetworkProgram> {
    snapshot
        .network_programs
        .as_ref()?
        .programs
        .iter()
        .find(|p| p.id == id)
}

/// Runs of program `id` over the snapshots, and its run time.
fn runs_of(snaps: &[Snapshot], id: u32) -> (u64, u64) {
    snaps
        .iter()
        .filter_map(|s| find(s, id))
        .fold((0, 0), |(r, t), p| (r + p.runs, t + p.run_time_ns))
}

#[test]
fn three_programs_under_traffic_are_listed_with_where_and_priced() {
    let pair = veth_pair("nprog").expect("making a veth pair");
    let cgroup = TestCgroup::new();
    // The host end listens, so that no port-unreachable comes back.
    let _listener = UdpSocket::bind((pair.host_addr(), PORT)).unwrap();
    let mut storage = MaybeUninit::uninit();
    let skel = stand_ins(&mut storage);
    let progs = &skel.progs;
    let (attached, peer_index) = Attached::new(progs, &pair, &cgroup);

    // Statistics held on all along: the intervals' runs are counted, not
    // scaled from netto's slice.
    let held = StatsGuard::enable().expect("BPF run-time statistics");
    let netto = NettoStat::start(1, &["--interval", "0.5"]);
    thread::sleep(scaled(Duration::from_millis(1200)));
    let began = Instant::now();
    send(&pair, &cgroup, PACKETS);
    let sending = began.elapsed();
    thread::sleep(scaled(Duration::from_millis(1200)));
    let snaps = netto.stop();
    drop(held);

    let last = snaps.last().expect("netto printed snapshots");
    let [xdp_id, tc_id, cgroup_id] = attached.ids;
    let xdp = find(last, xdp_id).expect("the XDP program listed");
    assert_eq!(xdp.attach.len(), 1, "{xdp:?}");
    let at = &xdp.attach[0];
    assert_eq!(
        (at.hook.as_str(), at.iface.as_deref()),
        ("xdp", Some(pair.host_ifname()))
    );
    assert_eq!(
        (at.mode.as_deref(), at.link),
        (Some("driver"), true),
        "{at:?}"
    );
    assert!(!xdp.own);
    let tc = find(last, tc_id).expect("the tc program listed");
    let at = &tc.attach[0];
    let elsewhere = format!("#{peer_index}");
    assert_eq!(
        (at.hook.as_str(), at.iface.as_deref(), at.link),
        ("tc_egress", Some(elsewhere.as_str()), true),
        "the peer is in another namespace: by index"
    );
    let cg = find(last, cgroup_id).expect("the cgroup_skb program listed");
    let at = &cg.attach[0];
    assert_eq!(
        (at.hook.as_str(), at.cgroup_id),
        ("cgroup_skb_egress", Some(cgroup.id()))
    );

    // Counted whole once statistics were seen held (the first interval has
    // nothing to compare with, and no traffic). The last, cut short by the
    // stop, may hold so few hook runs that the couple the counters and
    // the statistics are read apart by are over the share that counts as
    // measured in full; it is then priced from the slice, and says so.
    assert!(snaps.len() >= 4, "{} snapshots", snaps.len());
    let bases: Vec<_> = snaps[1..snaps.len() - 1]
        .iter()
        .map(|s| s.network_programs.as_ref().and_then(|n| n.basis))
        .collect();
    assert!(
        bases.iter().all(|b| *b == Some(PriceBasis::WholeInterval)),
        "{bases:?}"
    );
    // Every packet once; ARP and IPv6 neighbour discovery add a few to the
    // two on the interface.
    for (name, id) in [("xdp", xdp_id), ("tc", tc_id), ("cgroup_skb", cgroup_id)] {
        let (runs, ns) = runs_of(&snaps, id);
        eprintln!(
            "{name}: {runs} runs for {PACKETS} packets sent in {sending:?}, {:.0} ns per run",
            ns as f64 / runs.max(1) as f64
        );
        assert!(
            (PACKETS * 99 / 100..=PACKETS * 103 / 100).contains(&runs),
            "{name}: {runs} runs for {PACKETS} packets"
        );
    }

    // ns per run against the same program under BPF_PROG_TEST_RUN, which
    // times its own loop around each run as well: within what entering a
    // program costs either way.
    let (runs, ns) = runs_of(&snaps, xdp_id);
    let live = ns as f64 / runs as f64;
    let frame = [0u8; 64];
    let out = progs
        .stand_in_xdp
        .test_run(ProgramInput {
            data_in: Some(&frame),
            repeat: 100_000,
            ..Default::default()
        })
        .expect("BPF_PROG_TEST_RUN");
    let test_run = out.duration.as_nanos() as f64;
    eprintln!("XDP: {live:.0} ns per run live, {test_run:.0} ns under BPF_PROG_TEST_RUN");
    assert!(
        (live - test_run).abs() <= 0.35 * test_run,
        "{live:.0} ns per run live, {test_run:.0} under test run"
    );
    drop(attached);
}

/// A program attached while netto runs appears in the next interval and,
/// detached, leaves it; no interval is lost meanwhile.
#[test]
fn a_program_attached_and_detached_mid_run_comes_and_goes() {
    let pair = veth_pair("nprog").expect("making a veth pair");
    let mut storage = MaybeUninit::uninit();
    let skel = stand_ins(&mut storage);
    let prog = &skel.progs.stand_in_xdp;
    let id = program_id(prog.as_fd()).unwrap();
    let netto = NettoStat::start(1, &["--interval", "0.25"]);
    thread::sleep(scaled(Duration::from_millis(800)));
    let link = prog
        .attach_xdp(ifindex(pair.host_ifname()) as i32)
        .expect("XDP on the host end");
    thread::sleep(scaled(Duration::from_millis(1000)));
    drop(link);
    thread::sleep(scaled(Duration::from_millis(1000)));
    let snaps = netto.stop();

    let present: Vec<bool> = snaps.iter().map(|s| find(s, id).is_some()).collect();
    let first = present
        .iter()
        .position(|p| *p)
        .expect("listed once attached");
    let gone = present[first..]
        .iter()
        .position(|p| !p)
        .expect("gone once detached")
        + first;
    assert!(first > 0, "not there before it was attached: {present:?}");
    assert!(present[first..gone].len() >= 2, "{present:?}");
    assert!(present[gone..].iter().all(|p| !p), "{present:?}");
    // Every interval delivered: each one starts where the last ended.
    for pair in snaps.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let gap = b.ts - b.interval_s - a.ts;
        assert!(
            gap.abs() < 0.05,
            "an interval lost between {} and {}",
            a.ts,
            b.ts
        );
    }
}

/// Samples of each stand-in, over the recording, in `context`'s breakdown.
fn program_samples(recording: &Recording, context: SampleContext, program: &str) -> u64 {
    let stage = format!("bpf:{program}");
    recording
        .snapshots
        .iter()
        .flat_map(|s| &s.breakdown)
        .filter(|b| b.context == context)
        .flat_map(|b| &b.categories)
        .filter(|c| c.category == stage)
        .map(|c| c.samples)
        .sum()
}

/// The stand-ins made dear enough to be sampled, under traffic: each is a
/// stage of the breakdown under its own name, in the context it runs in
/// (XDP in NET_RX; tc and cgroup_skb egress in the sender's call), and a
/// frame of the flame graph drawn as a BPF program.
#[test]
fn programs_are_stages_of_the_breakdown_under_their_names() {
    let pair = veth_pair("nprog").expect("making a veth pair");
    let cgroup = TestCgroup::new();
    let _listener = UdpSocket::bind((pair.host_addr(), PORT)).unwrap();
    let mut storage = MaybeUninit::uninit();
    let mut open = StandInsSkelBuilder::default()
        .open(&mut storage)
        .expect("opening the stand-ins");
    open.maps.rodata_data.as_deref_mut().expect("rodata").work = 4000;
    let skel = open.load().expect("loading the stand-ins");
    let _attached = Attached::new(&skel.progs, &pair, &cgroup);

    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("programs.json");
    let duration = scaled_secs(4).to_string();
    let args = [
        "--frequency",
        "999",
        "--duration",
        &duration,
        "--format",
        "json",
    ];
    let mut record = start_record(&args, &json);
    send(&pair, &cgroup, PACKETS / 2);
    let status = exit_within(
        &mut record.0,
        scaled(Duration::from_secs(30)),
        "netto record",
    );
    assert!(status.success(), "netto record exited with {status}");
    let recording: Recording = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();

    let found = [
        (SampleContext::NetRx, "stand_in_xdp"),
        (SampleContext::SockSend, "stand_in_tc"),
        (SampleContext::SockSend, "stand_in_cgroup"),
    ]
    .map(|(context, name)| (name, program_samples(&recording, context, name)));
    eprintln!("samples by program: {found:?}");
    for (name, samples) in found {
        assert!(samples >= 5, "{name}: {samples} samples in {found:?}");
    }
    let modules = &recording
        .snapshots
        .iter()
        .find(|s| !s.modules.is_empty())
        .unwrap()
        .modules;
    assert_eq!(modules.get("stand_in_xdp").map(String::as_str), Some("bpf"));

    // `report`'s flame graph draws the program's frame as one.
    let svg = out.path().join("programs.svg");
    let report = std::process::Command::new(NETTO)
        .arg("report")
        .arg(&json)
        .arg("-o")
        .arg(&svg)
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let drawn = fs::read_to_string(&svg).unwrap();
    assert!(
        drawn.contains("BPF program, category bpf:stand_in_xdp"),
        "the XDP stand-in's frame drawn as a program"
    );
}

/// `prog` attached to a cgroup with `BPF_PROG_ATTACH` (no link) on
/// `attach_type`; detached when dropped (and released with the cgroup).
struct LegacyCgroupAttach {
    prog: i32,
    cgroup: fs::File,
    attach_type: u32,
}

impl LegacyCgroupAttach {
    fn attach(prog: std::os::fd::BorrowedFd<'_>, cgroup: &TestCgroup, attach_type: u32) -> Self {
        let dir = fs::File::open(&cgroup.dir).unwrap();
        // SAFETY: plain syscall wrapper on two open fds.
        let ret =
            unsafe { sys::bpf_prog_attach(prog.as_raw_fd(), dir.as_raw_fd(), attach_type, 0) };
        assert_eq!(ret, 0, "BPF_PROG_ATTACH on the test cgroup");
        LegacyCgroupAttach {
            prog: prog.as_raw_fd(),
            cgroup: dir,
            attach_type,
        }
    }
}

impl Drop for LegacyCgroupAttach {
    fn drop(&mut self) {
        // SAFETY: plain syscall wrapper; the program's fd outlives this
        // value (the skeleton is dropped after it).
        unsafe { sys::bpf_prog_detach2(self.prog, self.cgroup.as_raw_fd(), self.attach_type) };
    }
}

/// Programs attached without a link are located where they are: a
/// classic tc filter by interface and direction (`cls_bpf`), a cgroup_skb
/// program by its cgroup's id, in `stat --json` and in `check`; detached
/// (both programs still loaded), they are no longer located anywhere.
#[test]
fn classic_tc_filters_and_legacy_cgroup_programs_are_located_and_leave() {
    let pair = veth_pair("nprog").expect("making a veth pair");
    let cgroup = TestCgroup::new();
    let mut storage = MaybeUninit::uninit();
    let skel = stand_ins(&mut storage);
    let progs = &skel.progs;
    let tc_id = program_id(progs.stand_in_tc.as_fd()).unwrap();
    let cg_id = program_id(progs.stand_in_cgroup.as_fd()).unwrap();
    let iface = pair.host_ifname();
    let tc = ClassicTc::on(ifindex(iface)).expect("a clsact qdisc");
    for direction in [sys::BPF_TC_INGRESS, sys::BPF_TC_EGRESS] {
        tc.filter(direction, progs.stand_in_tc.as_fd())
            .expect("a cls_bpf filter");
    }
    let legacy = LegacyCgroupAttach::attach(
        progs.stand_in_cgroup.as_fd(),
        &cgroup,
        sys::BPF_CGROUP_INET_EGRESS,
    );

    let stat = NettoStat::start(1, &["--interval", "0.25"]);
    thread::sleep(scaled(Duration::from_millis(1000)));
    let check = netto(&["check"]);
    let check = String::from_utf8_lossy(&check.stdout).into_owned();
    let detached = now_unix();
    drop(tc);
    drop(legacy);
    thread::sleep(scaled(Duration::from_millis(1000)));
    let snaps = stat.stop();

    let point = |hook: &str| AttachPoint {
        hook: hook.to_owned(),
        iface: Some(iface.to_owned()),
        mode: Some("cls_bpf".to_owned()),
        cgroup_id: None,
        link: false,
    };
    let in_cgroup = AttachPoint {
        hook: "cgroup_skb_egress".to_owned(),
        iface: None,
        mode: None,
        cgroup_id: Some(cgroup.id()),
        link: false,
    };
    let before: Vec<&Snapshot> = snaps.iter().filter(|s| s.ts < detached).collect();
    let last = before.last().expect("snapshots before the detach");
    let tc = find(last, tc_id).expect("the classic tc program listed");
    assert_eq!(
        tc.attach,
        [point("tc_egress"), point("tc_ingress")],
        "{tc:?}"
    );
    let cg = find(last, cg_id).expect("the legacy cgroup program listed");
    assert_eq!(cg.attach, [in_cgroup], "{cg:?}");

    let line = |id: u32| {
        check
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&id.to_string()))
            .unwrap_or_else(|| panic!("program {id} not in check:\n{check}"))
            .to_owned()
    };
    let tc_line = line(tc_id);
    for direction in ["tc_ingress", "tc_egress"] {
        let place = format!("{direction} on {iface} (cls_bpf), no link");
        assert!(tc_line.contains(&place), "{tc_line}");
    }
    let cg_line = line(cg_id);
    let place = format!("cgroup_skb_egress cgroup id {}, no link", cgroup.id());
    assert!(cg_line.contains(&place), "{cg_line}");

    // From the first interval begun after the detach on, neither is
    // located anywhere (loaded still, and not run: counted only).
    let after: Vec<&Snapshot> = snaps
        .iter()
        .filter(|s| s.ts - s.interval_s > detached)
        .collect();
    assert!(
        after.len() >= 2,
        "{} intervals after the detach",
        after.len()
    );
    for s in after {
        for id in [tc_id, cg_id] {
            assert!(
                find(s, id).is_none_or(|p| p.attach.is_empty()),
                "program {id} still located after its detach: {:?}",
                find(s, id)
            );
        }
    }
}
