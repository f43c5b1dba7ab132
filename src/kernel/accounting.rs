//! Loading and attaching the accounting programs, and reading their
//! counters. Every program attaches through a BPF link owned by this
//! process, so the kernel detaches everything when netto exits, however it
//! exits (SIGKILL included).

use std::cell::{Cell, RefCell};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd};

use libbpf_rs::skel::{OpenSkel, Skel};
use libbpf_rs::{libbpf_sys, Btf, Link, MapCore, MapFlags, OpenObject};

use super::backend::Backend;
use super::callbacks::{lookup_table, NETWORK_CALLBACKS};
use super::functions::{function_exists, FunctionHook, SocketFunctions};
use super::hooks;
use super::lookup;
use super::skel;
use super::skel::account::{AccountSkel, AccountSkelBuilder, OpenAccountSkel};
use super::stats::{self, ProgramRun};
use super::syscalls::socket_syscalls;
use super::tracepoints::{self, OptionalGroup};
use super::{privileges, KernelError};
use crate::abi::{
    bytes_of, netto_callback_table, netto_cpu, netto_group_key, netto_group_time, netto_syscall,
    netto_task_window, netto_tier_epochs, read_from, NETTO_ATTR_CALLS_WAIT, NETTO_ATTR_ON,
};
use crate::model::Tier;
use crate::symbols::kallsyms::Kallsyms;

/// Programs whose runs the kernel may skip for recursion without losing
/// anything. Only an interrupt can nest a program on its CPU, and of
/// netto's programs only the hrtimer expiry hooks fire inside one: every
/// hrtimer whose interrupt (the perf cpu-clock's, at the sampling
/// frequency) arrives while the hook runs for a softirq hrtimer. A run in
/// hardirq does nothing (`in_timer_softirq()` in bpf/account.bpf.c), so
/// the skipped run would have done nothing either. Every other program's
/// misses are losses.
const NESTED_RUNS_DO_NOTHING: [&str; 2] = ["netto_hrtimer_entry", "netto_hrtimer_exit"];

/// Whether a recursion miss of `program` loses a measurement.
pub fn recursion_miss_is_loss(program: &str) -> bool {
    !NESTED_RUNS_DO_NOTHING.contains(&program)
}

/// Whether the program of `section` ends a state (a softirq, a hardirq, a
/// callback, a socket window) rather than beginning one. These attach
/// first: a state that begins while the programs are attached one by one
/// is then always ended, whereas an entry attached before its exit would
/// leave, say, NET_RX set by a softirq that ended in between, charging the
/// CPU's idle and task time to NET_RX until the next softirq ends there.
fn ends_a_state(section: &str) -> bool {
    section.starts_with("fexit/") || section.ends_with("_exit") || section.ends_with("_end")
}

/// Whether the program of `section` opens or closes socket windows: the
/// programs only the exact tier attaches, as they run on every system call
/// of the host (or every socket function call).
fn is_window_program(name: &str, section: &str) -> bool {
    FunctionHook::from_program(name, section).is_some()
        || tracepoints::from_section(section)
            .is_some_and(|tp| tracepoints::SYSCALL_WINDOWS.contains(&tp))
}

/// One loaded accounting program and its link while attached.
struct Attached {
    name: String,
    window: bool,
    link: Option<Link>,
}

impl Attached {
    /// Whether `tier` keeps this program attached.
    fn wanted_in(&self, tier: Tier) -> bool {
        match tier {
            Tier::Exact => true,
            Tier::Softirq => !self.window,
            Tier::Sampled => false,
        }
    }
}

/// How long a program detached from a hook may still be running on another
/// CPU: the kernel unhooks it at once but lets runs in progress finish,
/// which takes microseconds.
const DETACH_GRACE: std::time::Duration = std::time::Duration::from_millis(10);

/// Loaded and attached accounting programs.
pub struct Accounting<'obj> {
    skel: AccountSkel<'obj>,
    /// In attach order: every state's end before its beginning.
    links: RefCell<Vec<Attached>>,
    tier: Cell<Tier>,
    /// The epochs last written to the programs' `.data.tier`.
    epochs: Cell<(u32, u32)>,
    backend: Backend,
    cpus: usize,
    callbacks: Vec<&'static str>,
    skipped: Vec<&'static OptionalGroup>,
    callbacks_resolved: bool,
    functions: SocketFunctions,
}

impl<'obj> Accounting<'obj> {
    pub fn load(
        storage: &'obj mut MaybeUninit<OpenObject>,
        backend: Backend,
    ) -> Result<Self, KernelError> {
        if !privileges::sufficient() {
            return Err(KernelError::NotPrivileged);
        }
        let btf = Btf::from_vmlinux().map_err(KernelError::NoBtf)?;
        let (skel, (functions, callbacks, callbacks_resolved)) =
            skel::load::<AccountSkelBuilder, _, _>(storage, load_error, |open| {
                let functions = choose_programs(open, backend, &btf)?;
                let (callbacks, resolved, table) = resolve_callbacks()?;
                open.maps
                    .rodata_callbacks
                    .set_initial_value(bytes_of(&table))
                    .map_err(load_error)?;
                Ok((functions, callbacks, resolved))
            })?;

        for (nr, kind, fd_arg) in socket_syscalls().filter(|_| backend == Backend::Tracepoint) {
            let value = netto_syscall {
                kind: kind as u32,
                fd_arg,
            };
            skel.maps
                .syscalls
                .update(&nr.to_ne_bytes(), bytes_of(&value), MapFlags::ANY)
                .map_err(|source| KernelError::Map {
                    map: "syscalls",
                    source,
                })?;
        }

        let cpus = libbpf_rs::num_possible_cpus().map_err(load_error)?;

        let mut progs: Vec<_> = skel.object().progs_mut().filter(|p| p.autoload()).collect();
        progs.sort_by_key(|p| !ends_a_state(&p.section().to_string_lossy()));
        let mut links = Vec::new();
        for prog in progs {
            let name = prog.name().to_string_lossy().into_owned();
            let link = prog.attach().map_err(|source| KernelError::Attach {
                prog: name.clone(),
                source,
            })?;
            links.push(Attached {
                window: is_window_program(&name, &prog.section().to_string_lossy()),
                name,
                link: Some(link),
            });
        }

        Ok(Accounting {
            skel,
            links: RefCell::new(links),
            tier: Cell::new(Tier::Exact),
            epochs: Cell::new((0, 0)),
            backend,
            cpus,
            callbacks,
            skipped: tracepoints::missing_groups(&btf),
            callbacks_resolved,
            functions,
        })
    }

    /// The socket functions the fentry backend hooks, and the candidates
    /// this kernel does not have (both empty for other backends).
    pub fn socket_functions(&self) -> &SocketFunctions {
        &self.functions
    }

    /// Counts the socket windows the calling thread opens from now on, by
    /// kind (see [`Accounting::windows_seen`]); the start-up self-check.
    pub fn watch_thread(&mut self, tid: u32) {
        if let Some(bss) = self.skel.maps.bss_data.as_deref_mut() {
            bss.check_windows = [0; 3];
            bss.check_tid = tid;
        }
    }

    /// Windows the watched thread opened: (send, receive).
    pub fn windows_seen(&self) -> (u64, u64) {
        self.skel.maps.bss_data.as_deref().map_or((0, 0), |bss| {
            // SAFETY: the mmap-ed .bss stays mapped while the skeleton
            // lives; BPF programs update it behind the compiler's back.
            let windows = unsafe { std::ptr::read_volatile(&bss.check_windows) };
            (
                windows[netto_task_window::NETTO_WIN_SEND as usize],
                windows[netto_task_window::NETTO_WIN_RECV as usize],
            )
        })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub fn cpus(&self) -> usize {
        self.cpus
    }

    /// Names of the network callbacks, indexed like `netto_cpu.callback_ns`.
    pub fn callback_names(&self) -> &[&'static str] {
        &self.callbacks
    }

    /// The optional tracepoint groups this kernel lacks, which the
    /// accounting runs without.
    pub fn skipped(&self) -> &[&'static OptionalGroup] {
        &self.skipped
    }

    /// Whether kallsyms gave the network callbacks' addresses (not with
    /// kernel.kptr_restrict): without them net_timers stays 0.
    pub fn callbacks_resolved(&self) -> bool {
        self.callbacks_resolved
    }

    /// The cumulative per-CPU records, index = CPU.
    pub fn read_cpus(&self) -> Result<Vec<netto_cpu>, KernelError> {
        cpu_records(&self.skel.maps.cpus)
    }

    /// Cumulative run-time statistics and recursion misses of each attached
    /// program.
    pub fn program_stats(&self) -> Vec<ProgramRun> {
        self.skel
            .object()
            .progs()
            .filter(|p| p.autoload())
            .filter_map(|prog| {
                Some(ProgramRun {
                    name: prog.name().to_string_lossy().into_owned(),
                    hook: hooks::of_section(&prog.section().to_string_lossy())?.name,
                    stats: stats::run_stats(prog.as_fd()).ok()?,
                })
            })
            .collect()
    }

    /// The per-CPU record map, which the sampler shares.
    pub fn cpus_map(&self) -> std::os::fd::BorrowedFd<'_> {
        self.skel.maps.cpus.as_fd()
    }

    /// Names of the programs attached now, in the order they were attached.
    pub fn attached(&self) -> Vec<String> {
        self.links
            .borrow()
            .iter()
            .filter(|a| a.link.is_some())
            .map(|a| a.name.clone())
            .collect()
    }

    pub fn tier(&self) -> Tier {
        self.tier.get()
    }

    /// Attaches and detaches programs so that exactly those `tier` needs
    /// run. Detaching goes beginnings first and attaching ends first (see
    /// `ends_a_state`); the epochs in `.data.tier` make the programs
    /// ignore windows, and forget CPU states, left over from programs
    /// detached meanwhile, so nothing is charged for time no hook saw.
    /// Cumulative counters are never reset: they only stop moving while
    /// their programs are detached.
    pub fn set_tier(&self, tier: Tier) -> Result<(), KernelError> {
        let from = self.tier.get();
        if from == tier {
            return Ok(());
        }
        let mut links = self.links.borrow_mut();
        for attached in links.iter_mut().rev().filter(|a| !a.wanted_in(tier)) {
            attached.link = None;
        }
        let (mut state, mut window) = self.epochs.get();
        window = window.wrapping_add(1);
        if tier == Tier::Sampled || from == Tier::Sampled {
            state = state.wrapping_add(1);
        }
        std::thread::sleep(DETACH_GRACE);
        self.write_epochs(state, window)?;
        for attached in links
            .iter_mut()
            .filter(|a| a.wanted_in(tier) && a.link.is_none())
        {
            attached.link = Some(self.attach(&attached.name)?);
        }
        self.tier.set(tier);
        Ok(())
    }

    fn write_epochs(&self, state: u32, window: u32) -> Result<(), KernelError> {
        let epochs = netto_tier_epochs {
            window_epoch: window,
            state_epoch: state,
        };
        self.skel
            .maps
            .data_tier
            .update(&0u32.to_ne_bytes(), bytes_of(&epochs), MapFlags::ANY)
            .map_err(|source| KernelError::Map {
                map: "tier epochs",
                source,
            })?;
        self.epochs.set((state, window));
        Ok(())
    }

    /// Attaches the loaded program `name` again.
    fn attach(&self, name: &str) -> Result<Link, KernelError> {
        let prog = self
            .skel
            .object()
            .progs_mut()
            .find(|p| p.name() == name)
            .ok_or(KernelError::Object(
                "a program to attach is not in the object",
            ))?;
        prog.attach().map_err(|source| KernelError::Attach {
            prog: name.to_owned(),
            source,
        })
    }
}

/// Decides which programs `backend` loads on this kernel, before the
/// verifier sees them: its socket window hooks and no other backend's,
/// each optional group only whole. Returns the socket functions hooked
/// (fentry); a required tracepoint this kernel lacks is an error.
fn choose_programs(
    open: &mut OpenAccountSkel<'_>,
    backend: Backend,
    btf: &Btf<'_>,
) -> Result<SocketFunctions, KernelError> {
    let mut missing = Vec::new();
    let mut functions = SocketFunctions::default();
    let variants = tracepoints::Variants {
        direct: function_exists(btf, tracepoints::DIRECT_KFUNC),
        names: open
            .open_object()
            .progs()
            .map(|p| p.name().to_string_lossy().into_owned())
            .collect(),
    };
    for mut prog in open.open_object_mut().progs_mut() {
        let section = prog.section().to_string_lossy().into_owned();
        if let Some(hook) = FunctionHook::from_program(&prog.name().to_string_lossy(), &section) {
            let wanted = backend == Backend::Fentry && function_exists(btf, hook.function);
            prog.set_autoload(wanted);
            if backend == Backend::Fentry {
                functions.note(&hook, wanted);
            }
            continue;
        }
        let Some(tp) = tracepoints::from_section(&section) else {
            continue;
        };
        if tracepoints::SYSCALL_WINDOWS.contains(&tp) {
            let name = prog.name().to_string_lossy().into_owned();
            prog.set_autoload(backend == Backend::Tracepoint && variants.wanted(&name));
        } else if tracepoints::optional_group(tp).is_some_and(|group| {
            !group
                .tracepoints
                .iter()
                .all(|t| tracepoints::exists(btf, t))
        }) {
            prog.set_autoload(false);
        } else if !tracepoints::exists(btf, tp) {
            missing.push(tp.to_owned());
        }
    }
    if !missing.is_empty() {
        return Err(KernelError::MissingTracepoints {
            missing: missing.join(", "),
            minimum: backend.minimum_kernel(),
        });
    }
    if backend == Backend::Fentry {
        functions.check_complete()?;
    }
    Ok(functions)
}

/// The per-CPU records in `map` (the accounting's `cpus`, which the sampler
/// shares), index = CPU.
pub(super) fn cpu_records(map: &impl MapCore) -> Result<Vec<netto_cpu>, KernelError> {
    let values = map
        .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
        .map_err(|source| KernelError::Map {
            map: "cpus",
            source,
        })?
        .unwrap_or_default();
    Ok(values
        .iter()
        .map(|bytes| read_from::<netto_cpu>(bytes).unwrap_or_default())
        .collect())
}

/// A libbpf error while loading the accounting.
fn load_error(source: libbpf_rs::Error) -> KernelError {
    KernelError::Load {
        what: "the accounting programs",
        source,
    }
}

/// Resolves the network callbacks, asking the kernel ([`lookup`]) or, on
/// kernels before its helper (5.16), reading kallsyms: the index -> name
/// table, whether addresses were readable at all, and the programs' lookup
/// table of those found.
fn resolve_callbacks() -> Result<(Vec<&'static str>, bool, netto_callback_table), KernelError> {
    let names: Vec<&'static str> = NETWORK_CALLBACKS.iter().map(|(name, _)| *name).collect();
    let (addresses, hidden) = match lookup::addresses(&names) {
        Ok(asked) => (asked.found, asked.hidden),
        Err(_) => match Kallsyms::load(&names) {
            Ok(kallsyms) => (
                names.iter().map(|name| kallsyms.address_of(name)).collect(),
                kallsyms.addresses_hidden(),
            ),
            Err(_) => return Ok((names, false, netto_callback_table::default())),
        },
    };
    let found: Vec<(u64, u32)> = addresses
        .iter()
        .zip(0..)
        .filter_map(|(address, index)| Some(((*address)?, index)))
        .collect();
    let table = lookup_table(&found).ok_or(KernelError::Object(
        "no lookup table separates the network callbacks' addresses",
    ))?;
    Ok((names, !hidden, table))
}

/// Attribution's side of the accounting object: the switch its hooks obey
/// and the group map they and the delivery points fill (bpf/attribution.h).
impl Accounting<'_> {
    /// Whether settled time goes to groups, and whether a socket call's
    /// time waits for the socket it names (`calls_wait`, `--by
    /// flow|port`). The delivery points ([`super::attribution::Points`])
    /// are attached apart.
    pub fn set_attribution(&self, on: bool, calls_wait: bool) -> Result<(), KernelError> {
        let switch = match (on, calls_wait) {
            (false, _) => 0,
            (true, false) => NETTO_ATTR_ON,
            (true, true) => NETTO_ATTR_ON | NETTO_ATTR_CALLS_WAIT,
        };
        self.skel
            .maps
            .data_attr
            .update(&0u32.to_ne_bytes(), &switch.to_ne_bytes(), MapFlags::ANY)
            .map_err(|source| KernelError::Map {
                map: "attribution switch",
                source,
            })
    }

    /// The attribution switch's map, which the sampler shares: it reads
    /// the switch to know whether to say whom a sample was for.
    pub fn attribution_switch_map(&self) -> std::os::fd::BorrowedFd<'_> {
        self.skel.maps.data_attr.as_fd()
    }

    /// The group map, which the delivery points share.
    pub fn groups_map(&self) -> std::os::fd::BorrowedFd<'_> {
        self.skel.maps.groups.as_fd()
    }

    /// Every group's cumulative time per event and bytes, summed over CPUs.
    pub fn read_groups(&self) -> Result<Vec<(netto_group_key, netto_group_time)>, KernelError> {
        let map = &self.skel.maps.groups;
        let mut groups = Vec::new();
        for key in map.keys() {
            // A key removed since the iteration listed it is skipped.
            let Some(per_cpu) =
                map.lookup_percpu(&key, MapFlags::ANY)
                    .map_err(|source| KernelError::Map {
                        map: "groups",
                        source,
                    })?
            else {
                continue;
            };
            let Some(key) = read_from::<netto_group_key>(&key) else {
                continue;
            };
            groups.push((key, sum_cpus(per_cpu.iter().map(Vec::as_slice))));
        }
        Ok(groups)
    }

    /// Removes groups from the map (idle ones, to make room) and returns
    /// what each held at the moment it went, summed over CPUs: time a
    /// group gained after the interval's reading is handed on, not lost
    /// with its key. A key gone already is left out. Kernels before 5.14
    /// cannot take a per-CPU entry and delete it in one step; there the key
    /// is deleted and what it gained since the reading is lost.
    pub fn forget_groups(
        &self,
        keys: &[netto_group_key],
    ) -> Result<Vec<(netto_group_key, netto_group_time)>, KernelError> {
        let map = &self.skel.maps.groups;
        let stride = (map.value_size() as usize).next_multiple_of(8);
        let cpus = libbpf_rs::num_possible_cpus().map_err(|source| KernelError::Map {
            map: "groups",
            source,
        })?;
        let mut buffer = vec![0u8; stride * cpus];
        let mut taken = Vec::with_capacity(keys.len());
        for key in keys {
            let key_bytes = bytes_of(key);
            // libbpf-rs's lookup_and_delete sizes its buffer for one CPU's
            // value, which a per-CPU map would overrun; this one holds
            // every possible CPU's.
            // SAFETY: the key is the map's key type, and the buffer holds
            // `cpus` values of the map's value size rounded up to 8 bytes,
            // which is what the kernel writes for a per-CPU hash.
            let ret = unsafe {
                libbpf_sys::bpf_map_lookup_and_delete_elem(
                    map.as_fd().as_raw_fd(),
                    key_bytes.as_ptr().cast(),
                    buffer.as_mut_ptr().cast(),
                )
            };
            match -ret {
                0 => taken.push((*key, sum_cpus(buffer.chunks(stride)))),
                // Gone already is as good as removed.
                libc::ENOENT => {}
                // A kernel that cannot take a per-CPU entry in one step.
                _ => {
                    let _ = map.delete(key_bytes);
                }
            }
        }
        Ok(taken)
    }
}

/// One group's values from each CPU, added up.
fn sum_cpus<'a>(per_cpu: impl Iterator<Item = &'a [u8]>) -> netto_group_time {
    let mut sum = netto_group_time::default();
    for time in per_cpu.filter_map(read_from::<netto_group_time>) {
        let counts = time.ns.iter().chain(&time.bytes);
        for (total, n) in sum.ns.iter_mut().chain(&mut sum.bytes).zip(counts) {
            *total = total.wrapping_add(*n);
        }
    }
    sum
}

#[cfg(test)]
mod tests;
