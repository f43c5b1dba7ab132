//! Every BPF program on the host's network path, found anew each interval,
//! with where it is attached: links (`bpf_link_get_next_id` and each
//! link's info); each interface's name and XDP programs by mode (driver,
//! generic or offload) from one rtnetlink dump of every link; tcx per
//! interface and the flow dissector through `BPF_PROG_QUERY`; classic tc
//! (`cls_bpf` filters and `act_bpf` actions on `clsact` and `ingress`
//! qdiscs) through rtnetlink, and cgroup programs attached without a link
//! through `BPF_PROG_QUERY` on the cgroups (`cgroups.rs`), each only while a
//! program of its kind is not located otherwise. Every program is walked
//! by id (`bpf_prog_get_next_id`) and its type, name and tag are read
//! once; a network program found nowhere is still listed, by its type's
//! hook, so its runs are priced all the same (a socket filter, a tc
//! program on a qdisc other than `clsact` or `ingress`). Nothing here
//! holds a program: each is opened by id, read and closed, so a program
//! netto watches goes away when its owner lets it go.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use libbpf_rs::libbpf_sys as sys;

use super::netlink::{self, Link};
use super::network_hooks::{cgroup_attach_types, hook_of, network_type, NETFILTER_HOOKS, TCX};
use super::stats::{run_stats, RunStats};

mod cgroups;

/// One place a program runs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Attachment {
    /// The hook, as [`super::network_hooks`] names it.
    pub hook: &'static str,
    /// The interface (XDP, tc, tcx, netkit), by name in netto's network
    /// namespace; by index (`#7`) for a link netto's namespace does not
    /// show on that index (one in another namespace: a link's info gives
    /// no namespace). A netfilter link's netfilter hook.
    pub iface: Option<String>,
    /// XDP's mode: `driver`, `generic` or `offload`; classic tc's kind:
    /// `cls_bpf` (a filter) or `act_bpf` (a filter's action).
    pub mode: Option<&'static str>,
    /// The cgroup (cgroup programs): its id, the inode of its directory
    /// in the cgroup v2 hierarchy.
    pub cgroup_id: Option<u64>,
    /// Whether a BPF link holds it (else netlink or a legacy attach).
    pub link: bool,
}

/// A network program found in one pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub id: u32,
    pub name: String,
    /// The program's tag (a hash of its instructions), hex.
    pub tag: String,
    pub prog_type: &'static str,
    /// One of netto's own programs (the co-hosted sketch).
    pub own: bool,
    /// Where it runs; empty when netto found no attach point (see the
    /// module documentation): then [`Found::fallback_hook`] says where
    /// it runs by its type.
    pub attach: Vec<Attachment>,
    pub fallback_hook: &'static str,
}

/// What is read once per program id: ids are not reused while the host
/// runs, so name, type and tag stay.
#[derive(Debug, Clone)]
struct Known {
    name: String,
    tag: String,
    /// The type's name and fallback hook; `None` off the network path.
    network: Option<(&'static str, &'static str)>,
}

/// The discovery's state across intervals: what each program id and link
/// id was, so that only new ones are opened.
#[derive(Debug, Default)]
pub struct Discovery {
    programs: HashMap<u32, Known>,
    /// Each link id and what it attaches (`None`: off the network path).
    links: HashMap<u32, Option<(u32, Attachment)>>,
    own: BTreeSet<u32>,
    cgroups: cgroups::LegacyCgroups,
}

impl Discovery {
    /// `own`: the ids of netto's own programs, marked as such.
    pub fn new(own: impl IntoIterator<Item = u32>) -> Discovery {
        Discovery {
            own: own.into_iter().collect(),
            ..Discovery::default()
        }
    }

    /// Every network program on the host now, by id.
    pub fn discover(&mut self) -> Vec<Found> {
        self.walk_programs();
        let links = netlink::links();
        let ifaces: BTreeMap<u32, String> =
            links.iter().map(|(&i, l)| (i, l.name.clone())).collect();
        let mut places: BTreeMap<u32, BTreeSet<Attachment>> = BTreeMap::new();
        for (prog, attachment) in self.walk_links(&ifaces) {
            places.entry(prog).or_default().insert(attachment);
        }
        let present = self.types_present();
        let mut queried = xdp_attachments(&links);
        if present.contains("sched_cls") || present.contains("sched_act") {
            queried.extend(tcx_attachments(&ifaces));
        }
        for (prog, index, attachment) in queried {
            let at = places.entry(prog).or_default();
            // The link seen in netto's namespace: named, with its mode. Found
            // by its key, not by scanning the program's places: a program on
            // many interfaces costs each place a lookup.
            let linked = at.remove(&Attachment {
                iface: Some(format!("#{index}")),
                ..self::attachment(attachment.hook, true)
            });
            at.insert(Attachment {
                link: linked,
                ..attachment
            });
        }
        if present.contains("flow_dissector") {
            for prog in flow_dissector() {
                let at = places.entry(prog).or_default();
                if !at.iter().any(|a| a.hook == "flow_dissector") {
                    at.insert(attachment("flow_dissector", false));
                }
            }
        }
        let unlocated: Vec<(u32, &str)> = self
            .programs
            .iter()
            .filter(|(id, _)| !places.contains_key(id))
            .filter_map(|(&id, k)| Some((id, k.network?.0)))
            .collect();
        if unlocated
            .iter()
            .any(|(_, t)| matches!(*t, "sched_cls" | "sched_act"))
        {
            for tc in netlink::tc_programs() {
                places.entry(tc.prog).or_default().insert(Attachment {
                    iface: Some(iface_name(&ifaces, tc.ifindex)),
                    mode: Some(tc.kind),
                    ..attachment(tc.hook, false)
                });
            }
        }
        let in_cgroups: Vec<(u32, &str)> = unlocated
            .into_iter()
            .filter(|(_, t)| !cgroup_attach_types(t).is_empty())
            .collect();
        for (prog, attachment) in self.cgroups.locate(&in_cgroups) {
            let at = places.entry(prog).or_default();
            // A place a link holds is listed as the link's.
            let linked = Attachment {
                link: true,
                ..attachment.clone()
            };
            if !at.contains(&linked) {
                at.insert(attachment);
            }
        }
        let mut found: Vec<Found> = self
            .programs
            .iter()
            .filter_map(|(&id, known)| {
                let (prog_type, fallback_hook) = known.network?;
                Some(Found {
                    id,
                    name: known.name.clone(),
                    tag: known.tag.clone(),
                    prog_type,
                    own: self.own.contains(&id),
                    attach: places.remove(&id).map(Vec::from_iter).unwrap_or_default(),
                    fallback_hook,
                })
            })
            .collect();
        found.sort_by_key(|f| f.id);
        found
    }

    /// The network program types loaded now.
    fn types_present(&self) -> BTreeSet<&'static str> {
        self.programs
            .values()
            .filter_map(|k| Some(k.network?.0))
            .collect()
    }

    /// Reads each new program id once, and forgets the ids gone.
    fn walk_programs(&mut self) {
        let mut seen = BTreeSet::new();
        for id in ids(sys::bpf_prog_get_next_id) {
            seen.insert(id);
            if self.programs.contains_key(&id) {
                continue;
            }
            if let Some(known) = open_program(id).and_then(|fd| describe(fd_ref(&fd)).ok()) {
                self.programs.insert(id, known);
            }
        }
        self.programs.retain(|id, _| seen.contains(id));
    }

    /// Every link's attachment, each new link read once.
    fn walk_links(&mut self, ifaces: &BTreeMap<u32, String>) -> Vec<(u32, Attachment)> {
        let mut seen = BTreeSet::new();
        for id in ids(sys::bpf_link_get_next_id) {
            seen.insert(id);
            if self.links.contains_key(&id) {
                continue;
            }
            // SAFETY: plain syscall wrapper; a negative value is an error.
            let fd = unsafe { sys::bpf_link_get_fd_by_id(id) };
            if fd < 0 {
                continue;
            }
            // SAFETY: the kernel just handed us this fd and nothing else owns it.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            self.links.insert(id, link_attachment(fd_ref(&fd), ifaces));
        }
        self.links.retain(|id, _| seen.contains(id));
        self.links.values().flatten().cloned().collect()
    }
}

/// Each program's run-time statistics now, by id; a program gone since
/// it was found is left out.
pub fn read_stats(ids: impl IntoIterator<Item = u32>) -> BTreeMap<u32, RunStats> {
    ids.into_iter()
        .filter_map(|id| {
            let fd = open_program(id)?;
            Some((id, run_stats(fd_ref(&fd)).ok()?))
        })
        .collect()
}

/// A program's id, from its fd: how netto marks its own.
pub fn program_id(prog: BorrowedFd<'_>) -> io::Result<u32> {
    let mut info = sys::bpf_prog_info::default();
    let mut len = u32::try_from(std::mem::size_of_val(&info)).expect("small struct");
    // SAFETY: info and len describe a valid, writable bpf_prog_info.
    let ret = unsafe { sys::bpf_prog_get_info_by_fd(prog.as_raw_fd(), &mut info, &mut len) };
    if ret < 0 {
        return Err(io::Error::from_raw_os_error(-ret));
    }
    Ok(info.id)
}

fn fd_ref(fd: &OwnedFd) -> BorrowedFd<'_> {
    use std::os::fd::AsFd;
    fd.as_fd()
}

fn open_program(id: u32) -> Option<OwnedFd> {
    // SAFETY: plain syscall wrapper; a negative value is an error.
    let fd = unsafe { sys::bpf_prog_get_fd_by_id(id) };
    // SAFETY: the kernel just handed us this fd and nothing else owns it.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Every id `next` walks, in order.
fn ids(next: unsafe extern "C" fn(u32, *mut u32) -> i32) -> Vec<u32> {
    let mut ids = Vec::new();
    let mut id = 0;
    // SAFETY: `next` is one of libbpf's id walkers; it writes one u32.
    while unsafe { next(id, &mut id) } == 0 {
        ids.push(id);
    }
    ids
}

fn describe(prog: BorrowedFd<'_>) -> io::Result<Known> {
    let mut info = sys::bpf_prog_info::default();
    let mut len = u32::try_from(std::mem::size_of_val(&info)).expect("small struct");
    // SAFETY: info and len describe a valid, writable bpf_prog_info.
    let ret = unsafe { sys::bpf_prog_get_info_by_fd(prog.as_raw_fd(), &mut info, &mut len) };
    if ret < 0 {
        return Err(io::Error::from_raw_os_error(-ret));
    }
    let name = info
        .name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect::<Vec<u8>>();
    Ok(Known {
        name: String::from_utf8_lossy(&name).into_owned(),
        tag: info.tag.iter().map(|b| format!("{b:02x}")).collect(),
        network: network_type(info.type_),
    })
}

fn attachment(hook: &'static str, link: bool) -> Attachment {
    Attachment {
        hook,
        iface: None,
        mode: None,
        cgroup_id: None,
        link,
    }
}

fn iface_name(ifaces: &BTreeMap<u32, String>, index: u32) -> String {
    ifaces
        .get(&index)
        .cloned()
        .unwrap_or_else(|| format!("#{index}"))
}

/// What a link attaches, if it is on the network path.
fn link_attachment(
    link: BorrowedFd<'_>,
    ifaces: &BTreeMap<u32, String>,
) -> Option<(u32, Attachment)> {
    let mut info = sys::bpf_link_info::default();
    let mut len = u32::try_from(std::mem::size_of_val(&info)).expect("small struct");
    // SAFETY: info and len describe a valid, writable bpf_link_info; its
    // pointer fields are zero, so the kernel copies no name or array.
    let ret = unsafe { sys::bpf_link_get_info_by_fd(link.as_raw_fd(), &mut info, &mut len) };
    if ret < 0 {
        return None;
    }
    let u = &info.__bindgen_anon_1;
    // SAFETY: each arm reads the union member of the type the kernel says.
    let at = unsafe {
        match info.type_ {
            sys::BPF_LINK_TYPE_XDP => Attachment {
                iface: Some(format!("#{}", u.xdp.ifindex)),
                ..attachment("xdp", true)
            },
            sys::BPF_LINK_TYPE_TCX => Attachment {
                iface: Some(format!("#{}", u.tcx.ifindex)),
                ..attachment(hook_of(u.tcx.attach_type)?, true)
            },
            sys::BPF_LINK_TYPE_NETKIT => Attachment {
                iface: Some(iface_name(ifaces, u.netkit.ifindex)),
                ..attachment(hook_of(u.netkit.attach_type)?, true)
            },
            sys::BPF_LINK_TYPE_CGROUP => Attachment {
                cgroup_id: Some(u.cgroup.cgroup_id),
                ..attachment(hook_of(u.cgroup.attach_type)?, true)
            },
            sys::BPF_LINK_TYPE_NETNS => attachment(hook_of(u.netns.attach_type)?, true),
            sys::BPF_LINK_TYPE_SOCKMAP => attachment(hook_of(u.sockmap.attach_type)?, true),
            sys::BPF_LINK_TYPE_NETFILTER => Attachment {
                iface: NETFILTER_HOOKS
                    .get(u.netfilter.hooknum as usize)
                    .map(|h| (*h).to_owned()),
                ..attachment("netfilter", true)
            },
            _ => return None,
        }
    };
    Some((info.prog_id, at))
}

/// Each interface's XDP programs, by mode: program, interface index,
/// attachment. They come with the one dump of every link
/// ([`netlink::links`]), where asking each interface in turn
/// (`bpf_xdp_query`, a dump of every link per call) made the interfaces'
/// count squared.
fn xdp_attachments(links: &BTreeMap<u32, Link>) -> Vec<(u32, u32, Attachment)> {
    links
        .iter()
        .flat_map(|(&index, link)| {
            link.xdp.iter().map(move |&(prog, mode)| {
                (
                    prog,
                    index,
                    Attachment {
                        iface: Some(link.name.clone()),
                        mode: Some(mode),
                        ..attachment("xdp", false)
                    },
                )
            })
        })
        .collect()
}

/// Up to this many programs per tcx direction and interface are listed.
const MAX_QUERIED: usize = 64;

/// The programs `BPF_PROG_QUERY` lists on `target` for `attach_type`.
fn query(target: i32, attach_type: u32) -> Vec<u32> {
    let mut ids = [0u32; MAX_QUERIED];
    let mut opts = sys::bpf_prog_query_opts {
        sz: std::mem::size_of::<sys::bpf_prog_query_opts>() as _,
        prog_ids: ids.as_mut_ptr(),
        ..Default::default()
    };
    opts.__bindgen_anon_1.prog_cnt = MAX_QUERIED as u32;
    // SAFETY: opts points at `ids`, MAX_QUERIED entries long, as prog_cnt says.
    if unsafe { sys::bpf_prog_query_opts(target, attach_type, &mut opts) } < 0 {
        return Vec::new();
    }
    // SAFETY: the kernel wrote the count back into the same union member.
    let count = unsafe { opts.__bindgen_anon_1.prog_cnt } as usize;
    ids[..count.min(MAX_QUERIED)].to_vec()
}

/// Each interface's tcx programs, both directions.
fn tcx_attachments(ifaces: &BTreeMap<u32, String>) -> Vec<(u32, u32, Attachment)> {
    let mut out = Vec::new();
    for (&index, name) in ifaces {
        for direction in TCX {
            let hook = hook_of(direction).expect("tcx directions are in the table");
            for prog in query(index as i32, direction) {
                out.push((
                    prog,
                    index,
                    Attachment {
                        iface: Some(name.clone()),
                        ..attachment(hook, false)
                    },
                ));
            }
        }
    }
    out
}

/// The flow dissector program of netto's network namespace, if any.
fn flow_dissector() -> Vec<u32> {
    match std::fs::File::open("/proc/self/ns/net") {
        Ok(netns) => query(netns.as_raw_fd(), sys::BPF_FLOW_DISSECTOR),
        Err(_) => Vec::new(),
    }
}
