//! The sketch co-hosted on an interface: what `netto sketch` runs, and
//! what a measuring session calls once per interval.

use std::mem::MaybeUninit;
use std::os::fd::AsFd;
use std::time::Instant;

use libbpf_rs::OpenObject;

use crate::collect::clock::{interval_end, unix_now};
use crate::kernel::stats::{run_stats, RunStats};
use crate::model::{percent, FlowEstimate, PacketUnit, SketchCost, SketchSnapshot, XdpMode};

use super::config::{Geometry, Sampling, SketchConfig};
use super::error::SketchError;
use super::flow::FlowKey;
use super::link::{ifindex, XdpLink};
use super::program::Loaded;
use super::query::{self, Estimate, TopK};
use super::slots::Reading;
use super::variates::Variates;

pub struct Cohosted<'obj> {
    iface: String,
    top: TopK,
    variates: Variates,
    loaded: Loaded<'obj>,
    link: XdpLink,
    previous: Reading,
    previous_stats: RunStats,
    previous_at: Instant,
    /// When the previous interval ended, in unix seconds.
    previous_ts: f64,
}

impl<'obj> Cohosted<'obj> {
    /// Loads the sketch into `storage` and attaches it to `iface`. Nothing
    /// is attached when any step fails.
    pub fn attach(
        iface: &str,
        config: &SketchConfig,
        storage: &'obj mut MaybeUninit<OpenObject>,
    ) -> Result<Cohosted<'obj>, SketchError> {
        let geometry = config.geometry()?;
        let sampling = config.sampling()?;
        let index = ifindex(iface)?;
        let mut variates = Variates::new(sampling, config.seed.unwrap_or_else(rand::random));
        let loaded = Loaded::load(storage, geometry, &mut variates)?;
        let link = XdpLink::attach(loaded.program().as_fd(), iface, index)?;
        let previous_stats = stats_of(&loaded);
        Ok(Cohosted {
            iface: iface.to_owned(),
            top: TopK::new(config.top),
            variates,
            previous: Reading::zero(geometry),
            previous_stats,
            previous_at: Instant::now(),
            previous_ts: unix_now(),
            loaded,
            link,
        })
    }

    /// The kernel's id of the sketch's program: how the host's network
    /// programs tell it for netto's own.
    pub fn program_id(&self) -> Option<u32> {
        crate::kernel::network_programs::program_id(self.loaded.program().as_fd()).ok()
    }

    pub fn mode(&self) -> XdpMode {
        self.link.mode()
    }

    pub fn geometry(&self) -> Geometry {
        self.loaded.geometry()
    }

    /// The probability as applied (see [`super::config::Sampling`]).
    pub fn probability(&self) -> f64 {
        self.variates.sampling().probability()
    }

    /// Samples at `probability` from the next packet with a sampled row on:
    /// each CPU's ring is drawn anew from its cursor. The program may take
    /// an entry meanwhile; it gets an old variate or a new one, whole, and
    /// either carries the weight it was drawn with, so estimates across
    /// the change stay unbiased.
    pub fn set_probability(&mut self, probability: f64) -> Result<(), SketchError> {
        self.variates.set_sampling(Sampling::new(probability)?);
        let (slots, rows) = (self.loaded.slots(), self.geometry().rows());
        for cpu in 0..slots.cpus() {
            let (cursor, _) = slots.ring_position(cpu);
            slots.refill(cpu, &self.variates.rewrite(rows, cursor));
        }
        Ok(())
    }

    /// Fresh variates for every entry taken since the last top-up.
    fn top_up(&mut self) {
        let (slots, rows) = (self.loaded.slots(), self.geometry().rows());
        for cpu in 0..slots.cpus() {
            let (cursor, limit) = slots.ring_position(cpu);
            slots.refill(cpu, &self.variates.top_up(rows, cursor, limit));
        }
    }

    /// Ends the current interval: the top flows and protocols counted in
    /// it and what the program cost. Tops the rings up for the next.
    pub fn snapshot(&mut self) -> SketchSnapshot {
        let now = Instant::now();
        let slots = self.loaded.slots();
        let current = slots.read();
        let sampled = slots.candidates();
        let stats = stats_of(&self.loaded);
        let interval_s = now.duration_since(self.previous_at).as_secs_f64();
        let delta = current.counters.since(&self.previous.counters);
        let geometry = self.geometry();
        let top = top_flows(
            &self.top.rank(&delta, geometry, sampled),
            current.most_since(&self.previous),
        );
        let snapshot = SketchSnapshot {
            ts: interval_end((self.previous_at, self.previous_ts), now, unix_now()),
            interval_s,
            iface: self.iface.clone(),
            mode: self.mode(),
            probability: self.probability(),
            rows: geometry.rows(),
            columns: geometry.columns(),
            packet_unit: PacketUnit::of(self.mode()),
            packets: delta.packets,
            bytes: delta.bytes,
            gaps_reused: delta.gaps_reused,
            top,
            other_protocols: query::protocols(&delta, geometry),
            cost: cost(self.previous_stats, stats, interval_s),
        };
        self.previous = current;
        self.previous_stats = stats;
        self.previous_at = now;
        self.previous_ts = snapshot.ts;
        self.top_up();
        snapshot
    }
}

/// The ranked flows as reported: their estimates within the most the
/// interval's cells can have counted ([`query::within_total`],
/// [`Reading::most_since`]), so that no flow has more than every packet
/// or byte seen and the shares, of that most, add up to at most 1.
fn top_flows(ranked: &[(FlowKey, Estimate)], (packets, bytes): (u64, u64)) -> Vec<FlowEstimate> {
    let mut flow_packets: Vec<f64> = ranked.iter().map(|(_, e)| e.packets).collect();
    let mut flow_bytes: Vec<f64> = ranked.iter().map(|(_, e)| e.bytes).collect();
    query::within_total(&mut flow_packets, packets as f64);
    query::within_total(&mut flow_bytes, bytes as f64);
    ranked
        .iter()
        .zip(flow_packets.iter().zip(&flow_bytes))
        .map(|((key, _), (&p, &b))| FlowEstimate {
            flow: key.to_flow(),
            packets: p.round() as u64,
            bytes: b.round() as u64,
            share: if bytes > 0 { b / bytes as f64 } else { 0.0 },
            // Joined once the interval's attribution is made.
            flows: Vec::new(),
        })
        .collect()
}

fn stats_of(loaded: &Loaded<'_>) -> RunStats {
    run_stats(loaded.program().as_fd()).unwrap_or_default()
}

fn cost(before: RunStats, after: RunStats, interval_s: f64) -> SketchCost {
    let run_count = after.run_count.wrapping_sub(before.run_count);
    let run_time_ns = after.run_time_ns.wrapping_sub(before.run_time_ns);
    SketchCost {
        run_count,
        run_time_ns,
        ns_per_packet: if run_count > 0 {
            run_time_ns as f64 / run_count as f64
        } else {
            0.0
        },
        cpu_percent: percent(run_time_ns, interval_s),
    }
}
