//! The stack sampler: a cpu-clock perf event per CPU runs `bpf/sample.bpf.c`,
//! which keeps kernel stacks taken in network context. This module loads
//! it, sizes its buffer, and drains samples through either transport.

use std::cell::{Cell, RefCell};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use libbpf_rs::{OpenObject, RingBuffer, RingBufferBuilder};

use super::accounting::{cpu_records, Accounting};
use super::attribution::Key;
use super::idle;
use super::mmap::Mapping;
use super::perf::CpuEvent;
use super::skel;
use super::skel::sample::{SampleSkel, SampleSkelBuilder};
use super::stats;
use super::KernelError;
use crate::abi::{
    netto_hook, netto_sample, netto_sample_context, netto_sample_ctl, netto_tier, netto_transport,
    read_from,
};
use crate::model::{SampleContext, Tier};

mod double_buffer;

pub use double_buffer::WRITER_WAIT;
use double_buffer::{CtlView, DoubleBuffer};

/// Accepted sampling frequencies. Above 10 kHz a sample every 100 us costs
/// more than the network work it would explain.
pub const MIN_FREQUENCY_HZ: u64 = 1;
pub const MAX_FREQUENCY_HZ: u64 = 10_000;
/// The buffer is never larger than this, whatever the CPU count.
pub const MAX_BUFFER_BYTES: u64 = 64 << 20;
/// Room for this many drain periods' worth of samples per half, so a late
/// drain does not drop.
const HEADROOM: u64 = 2;
/// Samples per CPU by which the runs counted may trail the samples due
/// without a loss: the clock's count and the runs are read one after the
/// other, and a sample is due only once its whole period has passed.
pub const TIMING_SLACK: f64 = 2.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Mmapable BPF array used as a double buffer: no syscall per sample.
    Mmap,
    /// The BPF ring buffer.
    Ringbuf,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Mmap => "mmap",
            Transport::Ringbuf => "ringbuf",
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct SamplerConfig {
    pub frequency_hz: u64,
    pub transport: Transport,
    /// How often user space drains; sizes the buffer.
    pub drain_period: Duration,
    /// Overrides the computed buffer size (tests use a tiny one).
    pub slots_per_half: Option<u32>,
    /// How long the reader waits for writers still inside a half it just
    /// retired before it gives the half up ([`WRITER_WAIT`]; tests use
    /// zero to provoke it).
    pub writer_wait: Duration,
    /// The tier in force: which accounting programs the sampler may trust.
    pub tier: Tier,
}

/// Slots per half: frequency x CPUs x drain period, with headroom, capped.
pub fn slots_for(frequency_hz: u64, cpus: usize, drain_period: Duration) -> u32 {
    let per_period = (frequency_hz as f64 * cpus as f64 * drain_period.as_secs_f64()).ceil() as u64;
    let cap = MAX_BUFFER_BYTES / 2 / size_of::<netto_sample>() as u64;
    u32::try_from((per_period * HEADROOM).clamp(16, cap)).unwrap_or(u32::MAX)
}

/// A drained sample: where it was taken, whom it was for (with
/// attribution on) and its stack, leaf first.
pub struct RawSample<'a> {
    pub cpu: u32,
    /// `None`: a kernel stack the sampler could not place, because the
    /// tier in force detached the programs that would have said where it
    /// was taken; its frames say (`breakdown::placement`).
    pub context: Option<SampleContext>,
    pub group: Option<Key>,
    pub frames: &'a [u64],
}

/// Cumulative counters of the sampler.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SamplerCounters {
    pub samples: u64,
    /// Samples lost: the buffer was full, or their half was given up.
    pub dropped: u64,
    pub failed: u64,
    /// Halves of the mmap buffer given up because a writer was still
    /// inside at the reader's deadline (their samples are in `dropped`).
    pub dropped_halves: u64,
    /// Runs of the sampler program the kernel skipped (recursion). Read
    /// like every program's; kernels up to 6.18 count none for perf_event
    /// programs (their overflow handler skips without counting).
    pub recursion_misses: u64,
    /// The program's runs and run time while BPF run-time statistics were
    /// on, for netto's own cost.
    pub measured_runs: u64,
    pub measured_ns: u64,
    /// Samples the CPUs' clocks were due for while they worked (idle time
    /// left out, `kernel::idle`) that the program never ran for (perf
    /// throttling, or the kernel skipping it), beyond [`TIMING_SLACK`] per
    /// CPU.
    pub missed: u64,
}

impl SamplerCounters {
    /// Field by field, with `op`.
    fn zip(self, other: SamplerCounters, op: fn(u64, u64) -> u64) -> SamplerCounters {
        SamplerCounters {
            samples: op(self.samples, other.samples),
            dropped: op(self.dropped, other.dropped),
            failed: op(self.failed, other.failed),
            dropped_halves: op(self.dropped_halves, other.dropped_halves),
            recursion_misses: op(self.recursion_misses, other.recursion_misses),
            measured_runs: op(self.measured_runs, other.measured_runs),
            measured_ns: op(self.measured_ns, other.measured_ns),
            missed: op(self.missed, other.missed),
        }
    }
}

impl std::ops::Add for SamplerCounters {
    type Output = SamplerCounters;

    fn add(self, other: SamplerCounters) -> SamplerCounters {
        self.zip(other, u64::wrapping_add)
    }
}

/// Saturating: counters of two different samplers are never compared.
impl std::ops::Sub for SamplerCounters {
    type Output = SamplerCounters;

    fn sub(self, other: SamplerCounters) -> SamplerCounters {
        self.zip(other, u64::saturating_sub)
    }
}

pub struct Sampler<'obj> {
    skel: SampleSkel<'obj>,
    /// One per possible CPU: the event of each online CPU.
    events: Vec<Option<CpuEvent>>,
    /// The online CPUs as last seen (`/sys/devices/system/cpu/online`).
    online: String,
    online_cpus: Vec<usize>,
    /// Samples missed on events since dropped, and the most reported.
    missed_before: u64,
    missed_reported: Cell<u64>,
    transport: Transport,
    frequency_hz: u64,
    /// The frequency the buffer was sized for: [`Sampler::retune`] goes
    /// no higher.
    capacity_hz: u64,
    buffer_bytes: u64,
    samples: u64,
    ctl: Mapping,
    mmap: Option<DoubleBuffer>,
    ring: Option<(RingBuffer<'static>, SampleQueue)>,
}

/// Samples the ring buffer callback has copied out, until drain() takes them.
type SampleQueue = Rc<RefCell<Vec<netto_sample>>>;

impl<'obj> Sampler<'obj> {
    pub fn load(
        storage: &'obj mut MaybeUninit<OpenObject>,
        accounting: &Accounting<'_>,
        config: SamplerConfig,
    ) -> Result<Self, KernelError> {
        let load_err = |source| KernelError::Load {
            what: "the stack sampler",
            source,
        };
        let cpus = accounting.cpus();
        let slots = config
            .slots_per_half
            .unwrap_or_else(|| slots_for(config.frequency_hz, cpus, config.drain_period));
        let (skel, buffer_bytes) =
            skel::load::<SampleSkelBuilder, _, _>(storage, load_err, |open| {
                open.maps
                    .cpus
                    .reuse_fd(accounting.cpus_map())
                    .map_err(load_err)?;
                open.maps
                    .data_attr
                    .reuse_fd(accounting.attribution_switch_map())
                    .map_err(load_err)?;
                let rodata = open.maps.rodata_data.as_deref_mut().ok_or_else(|| {
                    load_err(io::Error::other("the object has no read-only data").into())
                })?;
                Ok(match config.transport {
                    Transport::Mmap => {
                        rodata.transport = netto_transport::NETTO_TRANSPORT_MMAP as u32;
                        open.maps
                            .samples
                            .set_max_entries(slots * 2)
                            .map_err(load_err)?;
                        u64::from(slots) * 2 * size_of::<netto_sample>() as u64
                    }
                    Transport::Ringbuf => {
                        rodata.transport = netto_transport::NETTO_TRANSPORT_RINGBUF as u32;
                        let bytes = (u64::from(slots) * 2 * (size_of::<netto_sample>() as u64 + 8))
                            .next_power_of_two()
                            .max(4096);
                        let bytes = u32::try_from(bytes).unwrap_or(1 << 30);
                        open.maps
                            .sample_ring
                            .set_max_entries(bytes)
                            .map_err(load_err)?;
                        u64::from(bytes)
                    }
                })
            })?;

        let ctl = map(
            &skel.maps.sample_ctl,
            "sample_ctl",
            size_of::<netto_sample_ctl>(),
        )?;
        // SAFETY: the control block is mapped and only this process writes
        // slots_per_half, before any program runs.
        unsafe { (*ctl.as_ptr::<netto_sample_ctl>()).slots_per_half = slots };
        set_tier(&ctl, config.tier);
        let mmap = match config.transport {
            Transport::Mmap => Some(DoubleBuffer {
                slots: map(
                    &skel.maps.samples,
                    "samples",
                    size_of::<netto_sample>() * slots as usize * 2,
                )?,
                slots_per_half: slots,
                writer_wait: config.writer_wait,
                abandoned: None,
                late: SamplerCounters::default(),
            }),
            Transport::Ringbuf => None,
        };
        let mut sampler = Sampler {
            events: Vec::new(),
            online: String::new(),
            online_cpus: Vec::new(),
            missed_before: 0,
            missed_reported: Cell::new(0),
            transport: config.transport,
            frequency_hz: config.frequency_hz,
            capacity_hz: config.frequency_hz,
            buffer_bytes,
            samples: 0,
            ctl,
            mmap,
            ring: None,
            skel,
        };
        if config.transport == Transport::Ringbuf {
            sampler.ring = Some(sampler.build_ring()?);
        }
        sampler.events = (0..cpus).map(|_| None).collect();
        sampler.follow_cpus()?;
        Ok(sampler)
    }

    fn build_ring(&self) -> Result<(RingBuffer<'static>, SampleQueue), KernelError> {
        let queue: SampleQueue = Rc::default();
        let sink = Rc::clone(&queue);
        let mut builder = RingBufferBuilder::new();
        builder
            .add(&self.skel.maps.sample_ring, move |bytes: &[u8]| {
                if let Some(sample) = read_from::<netto_sample>(bytes) {
                    sink.borrow_mut().push(sample);
                }
                0
            })
            .map_err(ring_error)?;
        let ring = builder.build().map_err(ring_error)?;
        Ok((ring, queue))
    }

    /// Tells the program which accounting programs the tier in force keeps
    /// attached, before they are detached or after they are attached.
    pub fn set_tier(&self, tier: Tier) {
        set_tier(&self.ctl, tier);
    }

    pub fn transport(&self) -> Transport {
        self.transport
    }

    pub fn frequency_hz(&self) -> u64 {
        self.frequency_hz
    }

    /// Samples at `hz` from now on, in place, if the buffer (sized for the
    /// frequency the sampler was loaded at) holds a drain period's samples
    /// at `hz`; `false` if it does not, and the caller loads a sampler
    /// sized for `hz`. In place is what the budget's steps need: a new
    /// sampler is a new program id, which makes the symbolizer read all of
    /// /proc/kallsyms again.
    pub fn retune(&mut self, hz: u64) -> Result<bool, KernelError> {
        if hz > self.capacity_hz {
            return Ok(false);
        }
        let idle = idle::idle_ns().unwrap_or_default();
        for (cpu, event) in self.events.iter_mut().enumerate() {
            if let Some(event) = event {
                event.set_frequency(hz, idle.get(cpu).copied().flatten())?;
            }
        }
        self.frequency_hz = hz;
        Ok(true)
    }

    pub fn buffer_bytes(&self) -> u64 {
        self.buffer_bytes
    }

    /// Gives every online CPU whose event is missing or dead a fresh one,
    /// and drops the events of offline CPUs. A CPU that goes offline loses
    /// its perf event for good (the kernel does not bring it back), so
    /// without this a CPU that came back would never be sampled again. An
    /// event is dead when its clock stopped counting, which also catches a
    /// CPU that went off and on between two calls. The live source calls
    /// this once an interval: one sysfs read and one counter read per CPU.
    pub fn follow_cpus(&mut self) -> Result<(), KernelError> {
        let online = std::fs::read_to_string(ONLINE_CPUS)
            .map_err(|e| KernelError::Perf(format!("{ONLINE_CPUS}: {e}")))?;
        if online != self.online {
            self.online_cpus = parse_cpu_list(online.trim()).ok_or_else(|| {
                KernelError::Perf(format!("{ONLINE_CPUS}: unreadable list {online:?}"))
            })?;
            self.online = online;
        }
        let mut runs = None;
        let frequency_hz = self.frequency_hz;
        for cpu in 0..self.events.len() {
            let online = self.online_cpus.contains(&cpu);
            if online
                && self.events[cpu]
                    .as_mut()
                    .is_some_and(CpuEvent::still_counting)
            {
                continue;
            }
            if self.events[cpu].is_none() && !online {
                continue;
            }
            let (runs, idle) = match &runs {
                Some(read) => read,
                None => runs.insert(self.busy_runs_and_idle()?),
            };
            let ran = runs.get(cpu).copied().unwrap_or(0);
            let idle = idle.get(cpu).copied().flatten();
            if let Some(gone) = self.events[cpu].take() {
                self.missed_before += beyond_slack(gone.shortfall(ran, idle), frequency_hz);
            }
            // Also a CPU perf refused before (ENODEV while it came up):
            // asked again at every drain until it has an event.
            if online {
                self.events[cpu] =
                    CpuEvent::attach(&self.skel.progs.netto_sample, cpu, frequency_hz, ran, idle)?;
            }
        }
        Ok(())
    }

    /// Online CPUs without an event: perf would not sample them yet.
    pub fn unsampled_cpus(&self) -> u64 {
        self.online_cpus
            .iter()
            .filter(|&&cpu| self.events.get(cpu).is_some_and(Option::is_none))
            .count() as u64
    }

    /// Stops sampling and hands what the buffer holds to `each`: before a
    /// sampler is replaced, so that no sample taken meanwhile is lost.
    pub fn retire(&mut self, each: impl FnMut(RawSample<'_>)) -> Result<(), KernelError> {
        let (runs, idle) = self.busy_runs_and_idle()?;
        for (cpu, event) in self.events.iter_mut().enumerate() {
            if let Some(gone) = event.take() {
                let shortfall = gone.shortfall(
                    runs.get(cpu).copied().unwrap_or(0),
                    idle.get(cpu).copied().flatten(),
                );
                self.missed_before += beyond_slack(shortfall, self.frequency_hz);
            }
        }
        self.drain(each)
    }

    /// The program's runs outside the idle loop on each CPU so far (the
    /// accounting's per-CPU records), and each CPU's idle time
    /// (`kernel::idle`; none known if /proc/stat cannot be read), index =
    /// CPU: the two sides of the samples due while the CPU worked.
    fn busy_runs_and_idle(&self) -> Result<(Vec<u64>, Vec<Option<u64>>), KernelError> {
        let runs = cpu_records(&self.skel.maps.cpus)?
            .iter()
            .map(|c| {
                c.hook_runs[netto_hook::NETTO_HOOK_SAMPLE as usize]
                    .saturating_sub(c.sample_idle_runs)
            })
            .collect();
        Ok((runs, idle::idle_ns().unwrap_or_default()))
    }

    /// Hands every sample taken since the last drain to `each`.
    pub fn drain(&mut self, mut each: impl FnMut(RawSample<'_>)) -> Result<(), KernelError> {
        let mut count = 0;
        let mut deliver = |s: &netto_sample| {
            let n = (s.nr_frames as usize).min(s.frames.len());
            if n == 0 {
                return;
            }
            if let Some(context) = context_of(s.context) {
                count += 1;
                each(RawSample {
                    cpu: s.cpu,
                    context,
                    group: Key::of_sample(&s.group),
                    frames: &s.frames[..n],
                });
            }
        };
        if let Some(buffer) = &mut self.mmap {
            buffer.drain(&CtlView::new(&self.ctl), &mut deliver);
        }
        if let Some((ring, queue)) = &self.ring {
            ring.consume().map_err(ring_error)?;
            for sample in queue.borrow_mut().drain(..) {
                deliver(&sample);
            }
        }
        self.samples += count;
        Ok(())
    }

    pub fn counters(&self) -> SamplerCounters {
        let ctl = CtlView::new(&self.ctl);
        let late = self.mmap.as_ref().map(|b| b.late).unwrap_or_default();
        let run = stats::run_stats(self.skel.progs.netto_sample.as_fd()).unwrap_or_default();
        SamplerCounters {
            samples: self.samples,
            dropped: ctl.dropped.load(Ordering::Relaxed) + late.dropped,
            failed: ctl.failed.load(Ordering::Relaxed),
            dropped_halves: late.dropped_halves,
            recursion_misses: run.recursion_misses,
            measured_runs: run.run_count,
            measured_ns: run.run_time_ns,
            missed: self.missed(),
        }
    }
}

impl Sampler<'_> {
    /// Samples missed so far, never fewer than last reported (the live
    /// events' shortfall moves with the timing of its two readings).
    fn missed(&self) -> u64 {
        let (runs, idle) = self.busy_runs_and_idle().unwrap_or_default();
        let live: u64 = self
            .events
            .iter()
            .enumerate()
            .filter_map(|(cpu, event)| {
                let idle = idle.get(cpu).copied().flatten();
                Some(event.as_ref()?.shortfall(*runs.get(cpu)?, idle))
            })
            .map(|shortfall| beyond_slack(shortfall, self.frequency_hz))
            .sum();
        let missed = self.missed_reported.get().max(self.missed_before + live);
        self.missed_reported.set(missed);
        missed
    }
}

/// A CPU's shortfall of samples beyond [`TIMING_SLACK`] and the samples
/// due at `frequency_hz` in one tick of the idle time's count.
fn beyond_slack(shortfall: f64, frequency_hz: u64) -> u64 {
    let idle_tick = idle::tick_ns() as f64 * frequency_hz as f64 / 1e9;
    (shortfall - TIMING_SLACK - idle_tick).max(0.0).floor() as u64
}

/// A libbpf error around the ring buffer transport.
fn ring_error(source: libbpf_rs::Error) -> KernelError {
    KernelError::Map {
        map: "sample_ring",
        source,
    }
}

/// Maps the first `bytes` of the sampler's mmap-able map `name`.
fn map(map: &impl AsFd, name: &'static str, bytes: usize) -> Result<Mapping, KernelError> {
    Mapping::new(map.as_fd(), bytes).map_err(|source| KernelError::Mmap { map: name, source })
}

/// The program's context number as [`RawSample::context`]; `None` for a
/// number the program never writes.
fn context_of(raw: u32) -> Option<Option<SampleContext>> {
    use netto_sample_context::*;
    const CONTEXTS: [(netto_sample_context, Option<SampleContext>); 6] = [
        (NETTO_CTX_NET_RX, Some(SampleContext::NetRx)),
        (NETTO_CTX_NET_TX, Some(SampleContext::NetTx)),
        (NETTO_CTX_SOCK_SEND, Some(SampleContext::SockSend)),
        (NETTO_CTX_SOCK_RECV, Some(SampleContext::SockRecv)),
        (NETTO_CTX_NET_TIMERS, Some(SampleContext::NetTimers)),
        (NETTO_CTX_BY_FRAMES, None),
    ];
    CONTEXTS
        .iter()
        .find(|(abi, _)| *abi as u32 == raw)
        .map(|(_, context)| *context)
}

/// Writes the tier into the program's control block.
fn set_tier(ctl: &Mapping, tier: Tier) {
    let tier = match tier {
        Tier::Exact => netto_tier::NETTO_TIER_EXACT,
        Tier::Softirq => netto_tier::NETTO_TIER_SOFTIRQ,
        Tier::Sampled => netto_tier::NETTO_TIER_SAMPLED,
    };
    let p = ctl.as_ptr::<netto_sample_ctl>();
    // SAFETY: the control block stays mapped while the sampler lives; the
    // program only reads the field, and a 32-bit aligned store is atomic.
    unsafe { AtomicU32::from_ptr(&raw mut (*p).tier).store(tier as u32, Ordering::Release) };
}

const ONLINE_CPUS: &str = "/sys/devices/system/cpu/online";

/// The kernel's CPU list format ("0-3,5"), as in /sys/devices/system/cpu.
fn parse_cpu_list(list: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        let (first, last): (usize, usize) = match part.split_once('-') {
            Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
            None => {
                let cpu = part.parse().ok()?;
                (cpu, cpu)
            }
        };
        if first > last {
            return None;
        }
        cpus.extend(first..=last);
    }
    Some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_read_like_the_kernel_writes_them() {
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list("0-1"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("0,2-4,7"), Some(vec![0, 2, 3, 4, 7]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("a"), None);
    }

    #[test]
    fn buffer_follows_frequency_cpus_and_period_with_a_cap() {
        let small = slots_for(1000, 2, Duration::from_millis(100));
        assert_eq!(small, 400);
        assert!(slots_for(1000, 256, Duration::from_millis(100)) > small);
        let capped = slots_for(10_000, 4096, Duration::from_secs(1));
        assert!(u64::from(capped) * 2 * size_of::<netto_sample>() as u64 <= MAX_BUFFER_BYTES);
        assert_eq!(slots_for(1, 1, Duration::from_millis(1)), 16);
    }
}
