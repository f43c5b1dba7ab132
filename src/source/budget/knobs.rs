//! What each knob costs, measured from the interval's programs and
//! process where it ran and predicted where it is off, and what each step
//! down saves.

use std::collections::BTreeMap;

use super::{at_level, Budget, Step, MIN_LEARNING_LOAD, SKETCH_STEP};
use crate::collect::estimate::ESTIMATE_HZ;
use crate::model::{percent, CostBasis, KnobCost, KnobName, Overhead, Snapshot, Tier};

impl Budget {
    /// Each part of the interval's cost: measured where it ran, predicted
    /// from when it last did where it is off (see [`KnobCost`]); empty
    /// without program costs.
    pub(super) fn knob_costs(&mut self, snapshot: &Snapshot) -> Vec<KnobCost> {
        let overhead = &snapshot.overhead;
        if !overhead.bpf_stats || snapshot.interval_s <= 0.0 {
            return Vec::new();
        }
        let load = network_load(snapshot);
        let dispatch_ns = overhead.dispatch_ns.unwrap_or(0.0);
        let process_ns = overhead
            .process_cpu_ns
            .saturating_sub(overhead.startup_cpu_ns);
        let mut ns = BTreeMap::from([(KnobName::Process, process_ns as f64)]);
        for program in &overhead.programs {
            if let Some(knob) = knob_of_hook(&program.hook) {
                let dispatch = match knob {
                    KnobName::SocketWindow | KnobName::ExactHooks => dispatch_ns,
                    _ => 0.0,
                };
                *ns.entry(knob).or_default() +=
                    program.run_time_ns as f64 + program.run_count as f64 * dispatch;
            }
        }
        let on = [
            (KnobName::Process, true),
            (KnobName::SocketWindow, snapshot.tier == Tier::Exact),
            (KnobName::ExactHooks, snapshot.tier != Tier::Sampled),
            (KnobName::Sampler, self.asked_hz.is_some()),
            (KnobName::Sketch, self.asked_sketch.is_some()),
        ];
        let mut knobs = Vec::new();
        for (knob, running) in on {
            if running {
                let cost = ns
                    .get(&knob)
                    .map_or(0.0, |&ns| ns / snapshot.interval_s / 1e7);
                self.seen.insert(knob, (cost, load));
                knobs.push(KnobCost {
                    knob,
                    cost_percent: cost,
                    basis: CostBasis::Measured,
                });
            } else if let Some(&(cost, then)) = self.seen.get(&knob) {
                let scale = load.max(MIN_LEARNING_LOAD) / then.max(MIN_LEARNING_LOAD);
                knobs.push(KnobCost {
                    knob,
                    cost_percent: cost * scale,
                    basis: CostBasis::Predicted,
                });
            }
        }
        knobs
    }

    /// What the next step up would add, as the knobs' costs predict it:
    /// back to a tier adds the hooks it attaches.
    pub(super) fn predicted_up_cost(&self, knobs: &[KnobCost]) -> f64 {
        let hooks = match self.tier {
            _ if self.tier == self.asked_tier => return 0.0,
            Tier::Softirq => KnobName::SocketWindow,
            Tier::Sampled => KnobName::ExactHooks,
            Tier::Exact => return 0.0,
        };
        cost_of(knobs, hooks)
    }

    /// The next step down that saves the most by `parts` (percent of one
    /// CPU per knob), and what it saves; the ladder's next step when none
    /// is known to save anything.
    pub(super) fn best_step(&self, parts: &BTreeMap<KnobName, f64>) -> (Option<Step>, f64) {
        let part = |knob| parts.get(&knob).copied().unwrap_or(0.0);
        let hz = self.frequency_hz().unwrap_or(0) as f64;
        let mut candidates = Vec::new();
        if !self.frequency_at_floor() {
            let next = self.asked_hz.map_or(0, |a| at_level(a, self.level + 1)) as f64;
            candidates.push((Step::Frequency, part(KnobName::Sampler) * (1.0 - next / hz)));
        }
        if !self.sketch_at_floor() {
            candidates.push((
                Step::Sketch,
                part(KnobName::Sketch) * (1.0 - 1.0 / SKETCH_STEP),
            ));
        }
        if !self.tier_at_floor() {
            let hooks = match self.tier {
                Tier::Exact => KnobName::SocketWindow,
                _ => KnobName::ExactHooks,
            };
            // An estimating tier samples at ESTIMATE_HZ at least.
            let faster = if hz > 0.0 && hz < ESTIMATE_HZ as f64 {
                part(KnobName::Sampler) * (ESTIMATE_HZ as f64 / hz - 1.0)
            } else {
                0.0
            };
            candidates.push((Step::Tier, part(hooks) - faster));
        }
        candidates
            .into_iter()
            .filter(|&(_, saving)| saving > 0.0)
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map_or((None, 0.0), |(step, saving)| (Some(step), saving))
    }

    /// `parts` after `step` was taken.
    pub(super) fn apply_saving(&self, step: Option<Step>, parts: &mut BTreeMap<KnobName, f64>) {
        let hz = self.frequency_hz().unwrap_or(0) as f64;
        match step {
            Some(Step::Frequency) => {
                if let Some(sampler) = parts.get_mut(&KnobName::Sampler) {
                    let was = self.asked_hz.map_or(0, |a| at_level(a, self.level - 1)) as f64;
                    *sampler *= hz / was.max(1.0);
                }
            }
            Some(Step::Sketch) => {
                if let Some(sketch) = parts.get_mut(&KnobName::Sketch) {
                    *sketch /= SKETCH_STEP;
                }
            }
            Some(Step::Tier) => {
                let hooks = match self.tier {
                    Tier::Softirq => KnobName::SocketWindow,
                    _ => KnobName::ExactHooks,
                };
                parts.insert(hooks, 0.0);
            }
            None => {}
        }
    }
}

/// The part of netto's cost a knob turns down, by the hook its programs
/// run on (`kernel::hooks`, and the sketch's).
fn knob_of_hook(hook: &str) -> Option<KnobName> {
    Some(match hook {
        "window" => KnobName::SocketWindow,
        "softirq" | "hardirq" | "callback" | "sched_switch" => KnobName::ExactHooks,
        "sample" => KnobName::Sampler,
        "xdp_sketch" => KnobName::Sketch,
        _ => return None,
    })
}

fn cost_of(knobs: &[KnobCost], knob: KnobName) -> f64 {
    knobs
        .iter()
        .find(|k| k.knob == knob)
        .map_or(0.0, |k| k.cost_percent)
}

/// The interval's overhead as the budget judges it: start-up's CPU time
/// left out, since no knob gets it back.
pub(super) fn without_startup(snapshot: &Snapshot) -> Overhead {
    let mut overhead = snapshot.overhead.clone();
    let startup = percent(overhead.startup_cpu_ns, snapshot.interval_s);
    overhead.cost_percent = overhead.cost_percent.map(|c| (c - startup).max(0.0));
    overhead.measuring_percent = overhead.measuring_percent.map(|c| (c - startup).max(0.0));
    overhead
}

/// The interval's network CPU time (every event, exact or estimated), in
/// percent of one CPU: what a step's cost grows with.
pub(super) fn network_load(snapshot: &Snapshot) -> f64 {
    let ns: u64 = snapshot.events.values().map(|e| e.total_ns).sum();
    if snapshot.interval_s > 0.0 {
        ns as f64 / (snapshot.interval_s * 1e9) * 100.0
    } else {
        0.0
    }
}
