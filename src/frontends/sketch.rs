//! `netto sketch` output: the interval's heaviest flows and what the
//! sketch cost, as a table; JSON lines go through [`super::stat::write_json`].

use std::fmt::Write as _;
use std::io::{self, Write};

use super::glossary::{self, Legend};
use super::local_time::time_of_day;
use crate::model::{Attribution, PacketUnit, SketchSnapshot};

/// Writes the interval's table; `legend` explains each word once in the
/// run.
pub fn write_table(
    out: &mut impl Write,
    snapshot: &SketchSnapshot,
    legend: &mut Legend,
) -> io::Result<()> {
    out.write_all(render_table(snapshot, None, legend).as_bytes())?;
    out.flush()
}

fn rate(count: u64, interval_s: f64) -> f64 {
    if interval_s > 0.0 {
        count as f64 / interval_s
    } else {
        0.0
    }
}

/// `attribution` is the same interval's (`netto stat --by flow`): each
/// heavy hitter joined to its connection shows that connection's network
/// time (`NET CPU`).
pub fn render_table(
    s: &SketchSnapshot,
    attribution: Option<&Attribution>,
    legend: &mut Legend,
) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "sketch on {} ({} XDP), p={}, {}x{}, interval {:.3} s ending {}",
        s.iface,
        s.mode.name(),
        s.probability,
        s.rows,
        s.columns,
        s.interval_s,
        time_of_day(s.ts, 3)
    );
    let _ = writeln!(
        text,
        "seen: {} packets ({:.0}/s), {} bytes ({:.3} Mbit/s); gaps reused: {}",
        s.packets,
        rate(s.packets, s.interval_s),
        s.bytes,
        rate(s.bytes, s.interval_s) * 8.0 / 1e6,
        s.gaps_reused
    );
    legend.explain_word(&mut text, glossary::GAPS_REUSED);
    if s.packet_unit == PacketUnit::GroAggregate {
        text.push_str(
            "generic XDP: a packet is a GRO aggregate (many wire segments); \
             ns/packet is per aggregate and leaves out the skb linearisation\n",
        );
    }
    let c = &s.cost;
    if c.run_count == 0 && s.packets > 0 {
        text.push_str("cost: unknown (BPF run-time statistics off)\n");
    } else {
        let _ = writeln!(
            text,
            "cost: {:.1} ns/packet, {:.3}% CPU ({} runs, {:.3} ms)",
            c.ns_per_packet,
            c.cpu_percent,
            c.run_count,
            c.run_time_ns as f64 / 1e6
        );
    }
    let joined = s.top.iter().any(|e| !e.flows.is_empty());
    let _ = write!(
        text,
        "{:<4} {:<47} {:>12} {:>14} {:>7}",
        "PROTO", "FLOW", "PACKETS", "BYTES", "SHARE"
    );
    text.push_str(if joined { "    NET CPU\n" } else { "\n" });
    for e in &s.top {
        let f = &e.flow;
        let flow = format!(
            "{} -> {}",
            endpoint(&f.src, f.sport),
            endpoint(&f.dst, f.dport)
        );
        let _ = write!(
            text,
            "{:<5} {:<46} {:>12} {:>14} {:>6.1}%",
            f.proto,
            flow,
            e.packets,
            e.bytes,
            e.share * 100.0
        );
        match e.network_ns(attribution) {
            Some(ns) if joined => {
                let _ = writeln!(text, " {:>7.3} ms", ns as f64 / 1e6);
            }
            _ if joined => text.push_str("          -\n"),
            _ => text.push('\n'),
        }
    }
    if joined {
        legend.explain_word(&mut text, glossary::NET_CPU);
    }
    if s.top.is_empty() {
        text.push_str("(no TCP or UDP flow sampled)\n");
    }
    if !s.other_protocols.is_empty() {
        let others: Vec<String> = s
            .other_protocols
            .iter()
            .map(|(name, e)| format!("{name} {} packets", e.packets))
            .collect();
        let _ = writeln!(text, "other protocols (estimated): {}", others.join(", "));
    }
    text.push('\n');
    text
}

/// `addr:port`, with IPv6 addresses in brackets as in URLs.
fn endpoint(addr: &str, port: u16) -> String {
    if addr.contains(':') {
        format!("[{addr}]:{port}")
    } else {
        format!("{addr}:{port}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FiveTuple, FlowEstimate, ProtocolEstimate, SketchCost, XdpMode};
    use std::collections::BTreeMap;

    fn snapshot() -> SketchSnapshot {
        SketchSnapshot {
            ts: 1_700_000_000.5,
            interval_s: 2.0,
            iface: "veth0".into(),
            mode: XdpMode::Generic,
            probability: 0.01,
            rows: 4,
            columns: 2048,
            packet_unit: PacketUnit::GroAggregate,
            packets: 3000,
            bytes: 1_500_000,
            gaps_reused: 7,
            top: vec![FlowEstimate {
                flow: FiveTuple {
                    src: "fd00::1".into(),
                    dst: "fd00::2".into(),
                    sport: 40000,
                    dport: 5201,
                    proto: "tcp".into(),
                },
                packets: 2000,
                bytes: 1_200_000,
                share: 0.8,
                flows: Vec::new(),
            }],
            other_protocols: BTreeMap::from([(
                "arp".to_owned(),
                ProtocolEstimate {
                    packets: 4,
                    bytes: 168,
                },
            )]),
            cost: SketchCost {
                run_count: 3000,
                run_time_ns: 90_000,
                ns_per_packet: 30.0,
                cpu_percent: 0.0045,
            },
        }
    }

    #[test]
    fn table_shows_flows_rates_and_cost() {
        let mut legend = Legend::default();
        let text = render_table(&snapshot(), None, &mut legend);
        assert!(
            text.contains("veth0 (generic XDP), p=0.01, 4x2048"),
            "{text}"
        );
        assert!(
            text.lines().next().unwrap().ends_with(&format!(
                "interval 2.000 s ending {}",
                time_of_day(1_700_000_000.5, 3)
            )),
            "{text}"
        );
        // The words explained below their first use, once in a run.
        assert!(
            text.contains(&format!("\n  {}\n", glossary::GAPS_REUSED.line())),
            "{text}"
        );
        assert!(
            !render_table(&snapshot(), None, &mut legend).contains(glossary::GAPS_REUSED.meaning)
        );
        assert!(text.contains("3000 packets (1500/s)"), "{text}");
        assert!(text.contains("[fd00::1]:40000 -> [fd00::2]:5201"), "{text}");
        assert!(text.contains("80.0%"), "{text}");
        assert!(text.contains("30.0 ns/packet"), "{text}");
        assert!(text.contains("arp 4 packets"), "{text}");
        assert!(text.contains("gaps reused: 7"), "{text}");
        assert!(text.contains("GRO aggregate"), "{text}");
        let mut native = snapshot();
        native.packet_unit = PacketUnit::Frame;
        assert!(!render_table(&native, None, &mut legend).contains("GRO aggregate"));
        let mut off = snapshot();
        off.cost = SketchCost::default();
        assert!(render_table(&off, None, &mut legend).contains("statistics off"));
    }

    #[test]
    fn a_joined_heavy_hitter_shows_its_connections_network_time() {
        use crate::model::{Attribution, Group, GroupBy};
        let mut joined = snapshot();
        joined.top[0].flows = vec!["[fd00::2]:53 -> [fd00::1]:40000 udp".into()];
        let attribution = Attribution {
            by: GroupBy::Flow,
            on: true,
            groups: vec![Group {
                name: joined.top[0].flows[0].clone(),
                label: String::new(),
                events: Attribution::zero_events()
                    .into_keys()
                    .map(|k| (k, 250_000))
                    .collect(),
                traffic: None,
            }],
            unattributed: Attribution::zero_events(),
            unattributed_why: BTreeMap::new(),
        };
        let mut legend = Legend::default();
        let text = render_table(&joined, Some(&attribution), &mut legend);
        let ms = 0.25 * crate::model::EventKey::ALL.len() as f64;
        assert!(text.contains("NET CPU"), "{text}");
        assert!(text.contains(&format!("{ms:.3} ms")), "{text}");
        assert!(text.contains(glossary::NET_CPU.meaning), "explained once");
        let again = render_table(&joined, Some(&attribution), &mut legend);
        assert!(!again.contains(glossary::NET_CPU.meaning), "{again}");
        // Folded into `other` this interval: a dash.
        let folded = render_table(&joined, None, &mut legend);
        assert!(folded.lines().any(|l| l.ends_with(" -")), "{folded}");
        // Nothing joined (no --by flow): no column.
        assert!(!render_table(&snapshot(), None, &mut legend).contains("NET CPU"));
    }

    #[test]
    fn json_has_the_documented_field_names() {
        let mut out = Vec::new();
        super::super::stat::write_json(&mut out, &snapshot()).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["mode"], "generic");
        assert_eq!(v["top"][0]["flow"]["dport"], 5201);
        assert_eq!(v["top"][0]["share"], 0.8);
        assert_eq!(v["other_protocols"]["arp"]["packets"], 4);
        assert_eq!(v["cost"]["ns_per_packet"], 30.0);
        assert_eq!(v["packet_unit"], "gro_aggregate");
        assert_eq!(v["gaps_reused"], 7);
        let back: SketchSnapshot = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, snapshot());
    }
}
