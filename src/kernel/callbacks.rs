//! Kernel functions that do network work from the TIMER, HRTIMER and
//! TASKLET softirqs. Time inside them is the `net_timers` event. Names that
//! the running kernel lacks are skipped (and `check` lists them), so this
//! table may name functions from several kernel generations.

use crate::abi::{netto_callback_slot, netto_callback_table, NETTO_CALLBACK_SLOT_BITS};

/// (function, what it does)
pub const NETWORK_CALLBACKS: &[(&str, &str)] = &[
    ("tcp_pace_kick", "TCP pacing hrtimer (BBR, fq-less pacing)"),
    ("tcp_compressed_ack_kick", "TCP compressed ACK hrtimer"),
    ("tcp_tsq_workfn", "TCP small queues (BH workqueue)"),
    (
        "tcp_tasklet_func",
        "TCP small queues (tasklet, older kernels)",
    ),
    ("tcp_write_timer", "TCP retransmit / probe timer"),
    ("tcp_delack_timer", "TCP delayed ACK timer"),
    (
        "tcp_keepalive_timer",
        "TCP keepalive / SYN-ACK / FIN_WAIT2 timer",
    ),
    ("tcp_orphan_update", "TCP orphan count refresh"),
    ("reqsk_timer_handler", "TCP request socket (SYN-ACK) timer"),
    ("tw_timer_handler", "TIME_WAIT socket timer"),
    ("qdisc_watchdog", "qdisc throttling watchdog (fq pacing)"),
    (
        "napi_watchdog",
        "NAPI deferred GRO flush / busy-poll hrtimer",
    ),
    ("ip_expire", "IPv4 fragment reassembly timeout"),
    ("ip6_frag_expire", "IPv6 fragment reassembly timeout"),
    ("neigh_timer_handler", "neighbour (ARP/NDP) state timer"),
];

/// The slot of `address` under `multiplier` (the BPF side computes the same).
fn slot(address: u64, multiplier: u64) -> usize {
    (address.wrapping_mul(multiplier) >> (64 - NETTO_CALLBACK_SLOT_BITS)) as usize
}

/// The read-only lookup table of the accounting programs: each `(address,
/// index)` in a slot of its own under a multiplier found by trying odd
/// numbers from a fixed sequence (15 callbacks in 64 slots: about one in six
/// multipliers fits, so a handful of tries). `None` only if no multiplier
/// of the sequence separates them, which for a table this sparse does not
/// happen; two equal addresses (aliases) can share a slot.
pub fn lookup_table(callbacks: &[(u64, u32)]) -> Option<netto_callback_table> {
    // splitmix64: well-spread odd multipliers, the same on every run.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..100_000 {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let multiplier = (z ^ (z >> 31)) | 1;
        let mut table = netto_callback_table {
            multiplier,
            ..Default::default()
        };
        let fits = callbacks.iter().all(|&(address, index)| {
            let s = &mut table.slots[slot(address, multiplier)];
            if s.address != 0 && s.address != address {
                return false;
            }
            *s = netto_callback_slot {
                address,
                index,
                pad: 0,
            };
            true
        });
        if fits {
            return Some(table);
        }
    }
    None
}

/// The index `table` gives `address`, as the BPF side finds it.
#[cfg(test)]
fn look_up(table: &netto_callback_table, address: u64) -> Option<u32> {
    let s = &table.slots[slot(address, table.multiplier)];
    (address != 0 && s.address == address).then_some(s.index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{NETTO_CALLBACK_SLOTS, NETTO_MAX_CALLBACKS};

    #[test]
    fn table_fits_the_bpf_counters() {
        assert!(NETWORK_CALLBACKS.len() <= NETTO_MAX_CALLBACKS as usize);
        assert!(NETWORK_CALLBACKS.len() * 4 <= NETTO_CALLBACK_SLOTS as usize);
    }

    #[test]
    fn every_callback_finds_its_index_and_nothing_else_finds_one() {
        // Kernel text addresses as kallsyms gives them: close together,
        // 16-byte aligned, which is what a poor hash would collide on.
        let base = 0xffff_ffff_8100_0000u64;
        let callbacks: Vec<(u64, u32)> = (0..NETWORK_CALLBACKS.len() as u32)
            .map(|i| (base + u64::from(i) * 0x40, i))
            .collect();
        let table = lookup_table(&callbacks).expect("a multiplier separates them");
        for &(address, index) in &callbacks {
            assert_eq!(look_up(&table, address), Some(index));
        }
        for other in (0..100_000u64).map(|i| base + 0x10 + i * 0x30) {
            if !callbacks.iter().any(|&(a, _)| a == other) {
                assert_eq!(look_up(&table, other), None, "{other:#x}");
            }
        }
        assert_eq!(look_up(&table, 0), None);
        // Nothing resolved (kallsyms hides addresses): an empty table.
        let empty = lookup_table(&[]).unwrap();
        assert_eq!(look_up(&empty, base), None);
    }
}
