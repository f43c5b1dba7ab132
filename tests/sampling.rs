//! The stack sampler, driven directly through the library: samples taken in
//! NET_RX agree with the exact NET_RX time, and a buffer too small for the
//! rate drops (and says so) instead of delivering garbage. Both transports.
//! Needs root and BPF.

mod common;

use std::mem::MaybeUninit;
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use netto::collect::Collector;
use netto::kernel::accounting::Accounting;
use netto::kernel::sampler::{Sampler, SamplerConfig, Transport};
use netto::model::{EventKey, SampleContext};
use netto::netns::VethPair;

/// Lowest address of the x86-64 kernel half: every real frame is above it.
const KERNEL_SPACE: u64 = 0xffff_8000_0000_0000;

struct Tally {
    per_context: [u64; 4],
    bad_stacks: u64,
}

fn run(
    transport: Transport,
    frequency_hz: u64,
    slots: Option<u32>,
    seconds: u64,
) -> (Tally, u64, u64, u64) {
    let pair = VethPair::create("sample").expect("creating the test namespace");
    let dest = format!("{}:5601", pair.peer_addr());
    let mut acct_storage = MaybeUninit::uninit();
    let accounting = Accounting::load(&mut acct_storage, library_backend()).unwrap();
    let mut sampler_storage = MaybeUninit::uninit();
    let mut sampler = Sampler::load(
        &mut sampler_storage,
        &accounting,
        SamplerConfig {
            frequency_hz,
            transport,
            drain_period: Duration::from_millis(100),
            slots_per_half: slots,
        },
    )
    .unwrap();
    let mut collector = Collector::start(&accounting, false).unwrap();
    // Started only now: its lifetime must cover the load, not BPF
    // verification, which takes many seconds in an emulated guest.
    let _sink = Server::start(loadgen_in(
        &pair,
        &format!(
            "sink --proto tcp --listen {dest} --duration {}",
            seconds + 3
        ),
    ));
    let load = thread::spawn(move || {
        run_client(loadgen(&format!(
            "send --proto tcp --syscall write --dest {dest} --duration {seconds}"
        )))
    });
    let mut tally = Tally {
        per_context: [0; 4],
        bad_stacks: 0,
    };
    let end = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < end {
        thread::sleep(Duration::from_millis(100));
        sampler
            .drain(|s| {
                let index = SampleContext::ALL
                    .iter()
                    .position(|c| *c == s.context)
                    .unwrap();
                tally.per_context[index] += 1;
                let plausible = !s.frames.is_empty()
                    && s.frames.len() <= 64
                    && s.frames.iter().all(|&f| f >= KERNEL_SPACE);
                if !plausible {
                    tally.bad_stacks += 1;
                }
            })
            .unwrap();
    }
    let snapshot = collector.collect().unwrap();
    load.join().unwrap();
    let counters = sampler.counters();
    (
        tally,
        snapshot.event(EventKey::NetRxSoftirq).total_ns,
        counters.dropped,
        counters.failed,
    )
}

fn agreement(transport: Transport) {
    let frequency = 1000;
    let (tally, net_rx_ns, dropped, _) = run(transport, frequency, None, 10);
    assert_eq!(tally.bad_stacks, 0);
    assert_eq!(dropped, 0, "the default buffer dropped samples at 1 kHz");
    let sampled_ns = tally.per_context[0] * 1_000_000_000 / frequency;
    let ratio = sampled_ns as f64 / net_rx_ns as f64;
    eprintln!(
        "{}: {} NET_RX samples = {sampled_ns} ns vs exact {net_rx_ns} ns ({ratio:.2}); contexts {:?}",
        transport.name(),
        tally.per_context[0],
        tally.per_context
    );
    // Runs on these VMs have given 0.74 to 1.13 (the cpu-clock timer of a
    // virtual CPU fires late and skips periods; not fully understood, see
    // README, "Tests").
    assert!(
        (0.7..=1.3).contains(&ratio),
        "sampled NET_RX is {ratio:.2} of the exact time"
    );
    assert!(tally.per_context[2] > 0, "no samples inside socket sends");
}

#[test]
fn net_rx_samples_agree_with_exact_time_mmap() {
    agreement(Transport::Mmap);
}

#[test]
fn net_rx_samples_agree_with_exact_time_ringbuf() {
    agreement(Transport::Ringbuf);
}

fn overflow(transport: Transport) {
    let (tally, _, dropped, _) = run(transport, 10_000, Some(4), 3);
    let taken: u64 = tally.per_context.iter().sum();
    eprintln!("{}: {taken} samples, {dropped} dropped", transport.name());
    assert!(dropped > 0, "a 4-slot buffer at 10 kHz must drop");
    assert!(taken > 0, "nothing got through");
    assert_eq!(tally.bad_stacks, 0, "garbage stacks delivered");
}

#[test]
fn tiny_buffer_drops_and_stays_correct_mmap() {
    overflow(Transport::Mmap);
}

#[test]
fn tiny_buffer_drops_and_stays_correct_ringbuf() {
    overflow(Transport::Ringbuf);
}
