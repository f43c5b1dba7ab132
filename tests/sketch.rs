//! The XDP sketch against its reference implementation, its accuracy, and
//! `netto sketch` end to end. Needs root: programs are loaded and run for
//! real, and the live test builds a namespace.

mod common;

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use netto::sketch::config::{Geometry, Sampling};
use netto::sketch::flow::FlowKey;
use netto::sketch::packet::{arp, frame, make_later_fragment};
use netto::sketch::program::Loaded;
use netto::sketch::reference::Reference;
use netto::sketch::variates::Variates;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// test_run executes on the calling CPU; the reference models one slot,
/// the one started first, which is CPU 0's.
fn pin_to_cpu0() {
    // SAFETY: a zeroed cpu_set_t with one bit set, for this thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        assert_eq!(libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set), 0);
    }
}

fn addr(rng: &mut StdRng, v6: bool) -> IpAddr {
    if v6 {
        IpAddr::from(rng.random::<[u8; 16]>())
    } else {
        IpAddr::from(rng.random::<[u8; 4]>())
    }
}

/// Many distinct TCP/UDP flows over IPv4 and IPv6, some VLAN-tagged, with
/// ICMP, GRE, ARP, fragments and truncated frames mixed in.
fn mixed_trace(packets: usize, flows: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let pool: Vec<Vec<u8>> = (0..flows)
        .map(|i| {
            let v6 = i % 3 == 0;
            let proto = if i % 2 == 0 { 6 } else { 17 };
            let (s, d) = (addr(&mut rng, v6), addr(&mut rng, v6));
            frame(s, d, rng.random(), rng.random(), proto, i % 5 == 0, 64 + i % 1400)
        })
        .collect();
    (0..packets)
        .map(|_| match rng.random_range(0..100) {
            0 => arp(),
            1 => frame(addr(&mut rng, false), addr(&mut rng, false), 0, 0, 1, false, 98),
            2 => frame(addr(&mut rng, true), addr(&mut rng, true), 0, 0, 58, false, 118),
            3 => {
                let mut f = frame(addr(&mut rng, false), addr(&mut rng, false), 1, 2, 17, false, 600);
                make_later_fragment(&mut f);
                f
            }
            4 => pool[rng.random_range(0..flows)][..30].to_vec(),
            5 => frame(addr(&mut rng, false), addr(&mut rng, false), 0, 0, 47, false, 80),
            6 => frame(addr(&mut rng, true), addr(&mut rng, true), 0, 0, 47, true, 90),
            _ => pool[rng.random_range(0..flows)].clone(),
        })
        .collect()
}

fn exact_run(rows: u32, columns: u32, probabilities: &[f64], seed: u64) {
    pin_to_cpu0();
    let geometry = Geometry::new(rows, columns).unwrap();
    let first = Sampling::new(probabilities[0]).unwrap();
    let mut kernel_variates = Variates::new(first, seed);
    let loaded = Loaded::load(geometry, &mut kernel_variates).expect("loading netto_sketch");
    let mut reference = Reference::new(geometry, Variates::new(first, seed).slot_start());
    let mut refills = Variates::new(first, seed ^ 0xabcdef);
    for (round, &p) in probabilities.iter().enumerate() {
        if round > 0 {
            // A run-time change of p: new variates, same program.
            refills.set_sampling(Sampling::new(p).unwrap());
            let ring = refills.ring();
            loaded.slots().write_ring(0, &ring);
            reference.set_ring(ring);
        }
        for packet in mixed_trace(20_000, 3_000, seed + round as u64) {
            assert_eq!(loaded.test_run(&packet).unwrap(), 2, "XDP_PASS");
            reference.process(&packet);
        }
    }
    let kernel = loaded.slots().read();
    let expected = reference.counters();
    assert_eq!(kernel.packets, expected.packets);
    assert_eq!(kernel.bytes, expected.bytes);
    assert_eq!(kernel.proto_packets, expected.proto_packets);
    assert_eq!(kernel.proto_bytes, expected.proto_bytes);
    let differing = kernel.cells.iter().zip(&expected.cells).filter(|(a, b)| a != b).count();
    assert_eq!(differing, 0, "{differing} of {} cells differ", kernel.cells.len());
    assert!(
        expected.cells.iter().filter(|c| c[0] != 0).count() > kernel.cells.len() / 2,
        "the trace must touch most cells for the comparison to mean something"
    );
    assert!(expected.proto_packets.iter().all(|&n| n > 0), "every protocol class was sampled");
    let kernel_candidates: HashSet<FlowKey> = loaded.slots().candidates().into_iter().collect();
    let expected_candidates: HashSet<FlowKey> = reference.candidates().copied().collect();
    assert_eq!(kernel_candidates, expected_candidates);
}

#[test]
fn kernel_counts_exactly_what_the_reference_counts() {
    exact_run(4, 256, &[0.3], 11);
}

#[test]
fn exact_with_odd_rows_full_sampling_and_a_change_of_p() {
    exact_run(3, 1024, &[1.0, 0.05, 0.5], 12);
}
