//! Queries of the Count Sketch: a flow's estimate is the median over rows
//! of its signed cells (the mean of the middle two for an even number of
//! rows), in fixed point scaled by 1/p already; top-K ranks candidate
//! flows by it.

use std::collections::{BTreeMap, HashSet};

use crate::model::ProtocolEstimate;

use super::config::{Geometry, WEIGHT_ONE};
use super::counters::Counters;
use super::flow::{protocol_name, FlowKey, PROTOCOLS};
use super::hash::{flow_hash, lane};

/// Estimated packets and bytes; negative estimates are possible and kept,
/// callers that report clamp them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub packets: f64,
    pub bytes: f64,
}

/// The median of `values`, sorting them.
pub fn median(values: &mut [i64]) -> f64 {
    values.sort_unstable();
    let n = values.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => values[n / 2] as f64,
        _ => (i128::from(values[n / 2 - 1]) + i128::from(values[n / 2])) as f64 / 2.0,
    }
}

pub fn flow(counters: &Counters, geometry: Geometry, key: &FlowKey) -> Estimate {
    let hash = flow_hash(key);
    let mut packets = Vec::with_capacity(geometry.rows() as usize);
    let mut bytes = Vec::with_capacity(geometry.rows() as usize);
    for row in 0..geometry.rows() {
        let lane = lane(hash, geometry, row);
        let [p, b] = counters.cells[lane.cell];
        let sign = if lane.negative { -1 } else { 1 };
        packets.push(p.wrapping_mul(sign));
        bytes.push(b.wrapping_mul(sign));
    }
    let one = f64::from(WEIGHT_ONE);
    Estimate {
        packets: median(&mut packets) / one,
        bytes: median(&mut bytes) / one,
    }
}

/// The `k` candidates with the most estimated packets (ties by key, so
/// the order is reproducible), leaving out those estimated at nothing.
pub fn top(
    counters: &Counters,
    geometry: Geometry,
    candidates: &HashSet<FlowKey>,
    k: usize,
) -> Vec<(FlowKey, Estimate)> {
    let mut ranked: Vec<(FlowKey, Estimate)> = candidates
        .iter()
        .map(|key| (*key, flow(counters, geometry, key)))
        .filter(|(_, e)| e.packets >= 0.5)
        .collect();
    ranked.sort_by(|a, b| b.1.packets.total_cmp(&a.1.packets).then(a.0.cmp(&b.0)));
    ranked.truncate(k);
    ranked
}

/// `estimates` of disjoint parts of a whole of `total`, brought within
/// what they can be: none below zero, and together no more than the whole.
/// A Count Sketch's estimates carry an error either way, so on light
/// traffic a flow can come out above every byte seen, or the heaviest
/// flows above them together; the exact total bounds the true values.
/// This is the Euclidean projection onto {x >= 0, sum x <= total}: the
/// true values lie in that set, so the projected estimates are never
/// farther from them than the raw ones, and their order is kept.
pub fn within_total(estimates: &mut [f64], total: f64) {
    let positive: f64 = estimates.iter().map(|e| e.max(0.0)).sum();
    let shift = if positive <= total {
        0.0
    } else {
        // The smallest shift that brings the part above zero down to
        // `total`: over the largest estimates first, the last one still
        // above the shift decides it.
        let mut sorted: Vec<f64> = estimates.to_vec();
        sorted.sort_by(|a, b| b.total_cmp(a));
        let mut sum = 0.0;
        let mut shift = 0.0;
        for (i, &e) in sorted.iter().enumerate() {
            sum += e;
            let candidate = (sum - total) / (i + 1) as f64;
            if e >= candidate {
                shift = candidate;
            }
        }
        shift
    };
    for e in estimates.iter_mut() {
        *e = (*e - shift).max(0.0);
    }
}

/// Flows kept as candidates from one ranking to the next, per flow
/// reported: a heavy flow the program happened not to sample lately keeps
/// its place.
const CARRIED_PER_REPORTED: usize = 4;

/// Top-K across intervals: each ranking estimates the flows the program
/// sampled lately together with the previous ranking's leaders.
#[derive(Debug, Clone)]
pub struct TopK {
    k: usize,
    carried: Vec<FlowKey>,
}

impl TopK {
    pub fn new(k: usize) -> TopK {
        TopK {
            k,
            carried: Vec::new(),
        }
    }

    /// The `k` heaviest of the candidates by `counters`.
    pub fn rank(
        &mut self,
        counters: &Counters,
        geometry: Geometry,
        sampled: impl IntoIterator<Item = FlowKey>,
    ) -> Vec<(FlowKey, Estimate)> {
        let mut candidates: HashSet<FlowKey> = sampled.into_iter().collect();
        candidates.extend(self.carried.drain(..));
        let mut ranked = top(
            counters,
            geometry,
            &candidates,
            self.k * CARRIED_PER_REPORTED,
        );
        self.carried = ranked.iter().map(|(key, _)| *key).collect();
        ranked.truncate(self.k);
        ranked
    }
}

/// Packets and bytes by protocol class. Every sampled row added its weight,
/// so the sum over rows estimates `rows` times the traffic.
pub fn protocols(counters: &Counters, geometry: Geometry) -> BTreeMap<String, ProtocolEstimate> {
    let scale = f64::from(WEIGHT_ONE) * f64::from(geometry.rows());
    PROTOCOLS
        .iter()
        .enumerate()
        .filter(|&(i, _)| counters.proto_packets[i] > 0)
        .map(|(i, &protocol)| {
            (
                protocol_name(protocol).to_owned(),
                ProtocolEstimate {
                    packets: (counters.proto_packets[i] as f64 / scale).round() as u64,
                    bytes: (counters.proto_bytes[i].max(0) as f64 / scale).round() as u64,
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_within_the_total_add_up_to_no_more_than_it() {
        let mut within = [30.0, -5.0, 20.0];
        within_total(&mut within, 100.0);
        assert_eq!(within, [30.0, 0.0, 20.0], "only negatives change");
        // Shares of 70 %, 30 % and 11 %: 111 %.
        let mut over = [70.0, 30.0, 11.0];
        within_total(&mut over, 100.0);
        assert!((over.iter().sum::<f64>() - 100.0).abs() < 1e-9, "{over:?}");
        assert_eq!(
            over.map(|e| (e * 1e6).round() / 1e6),
            [66.333333, 26.333333, 7.333333]
        );
        let mut two = [70.0, 60.0];
        within_total(&mut two, 100.0);
        assert_eq!(two, [55.0, 45.0]);
        // One flow above the whole (a light interval).
        let mut one = [130.0, 2.0];
        within_total(&mut one, 100.0);
        assert_eq!(one, [100.0, 0.0]);
        // A small one that the shift takes to zero.
        let mut small = [150.0, 1.0];
        within_total(&mut small, 100.0);
        assert_eq!(small, [100.0, 0.0]);
        let mut none: [f64; 0] = [];
        within_total(&mut none, 0.0);
        let mut nothing_seen = [3.0];
        within_total(&mut nothing_seen, 0.0);
        assert_eq!(nothing_seen, [0.0]);
    }

    #[test]
    fn median_of_even_rows_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&mut [5, 1, 3]), 3.0);
        assert_eq!(median(&mut [4, 1, 10, 2]), 3.0);
        assert_eq!(median(&mut [i64::MAX, i64::MAX]), i64::MAX as f64);
        assert_eq!(median(&mut []), 0.0);
    }
}
