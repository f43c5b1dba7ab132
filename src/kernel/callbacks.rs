//! Kernel functions that do network work from the TIMER, HRTIMER and
//! TASKLET softirqs. Time inside them is the `net_timers` event. Names that
//! the running kernel lacks are skipped (and `check` lists them), so this
//! table may name functions from several kernel generations.

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::NETTO_MAX_CALLBACKS;

    #[test]
    fn table_fits_the_bpf_counters() {
        assert!(NETWORK_CALLBACKS.len() <= NETTO_MAX_CALLBACKS as usize);
    }
}
