//! `--budget`: netto keeps what measuring costs (its measuring process plus
//! its BPF programs, `overhead.measuring_percent`; serving is bounded apart,
//! by `serve --serve-budget`) under a share of one CPU by itself.
//!
//! The knobs, in the order they are turned down: the stack sampling
//! frequency, on a ladder of halvings of the asked frequency down to
//! [`MIN_FREQUENCY_HZ`]; then attribution (`--by`), whose per-event work
//! goes while its time is left `unattributed`; then the co-hosted XDP
//! sketch's probability (`--xdp-sketch`), divided by [`SKETCH_STEP`] a step
//! down to [`SKETCH_FLOOR`]: its flow estimates widen, its packet and byte
//! totals stay exact, and it pays per sampled packet, so on a fast link it
//! can be most of netto's cost; then the tier, one step at a time from the
//! asked one down to `sampled`, when netto samples (the lower tiers
//! estimate from samples, at [`ESTIMATE_HZ`] at least, so the sampling
//! frequency comes back up to that with the first tier step). The tier
//! goes last because it is the one knob that makes accounting estimate.
//! They come back up in the reverse order. When every knob is at its floor
//! and netto still costs more, the snapshot and one line say so
//! ([`BudgetChange::Exceeded`]). Whatever the tier, every estimate is
//! labelled as one, with its error.
//!
//! That ladder is the order when nothing says what a step saves (without
//! BPF run-time statistics, `--no-bpf-stats`). With them, every snapshot
//! carries each part's cost (`budget.knobs`: the socket window hooks, the
//! other exact hooks, the sampler, the sketch, the measuring process;
//! dispatch included): measured where it ran, and where it is off,
//! predicted from its last measured cost scaled by the network load since.
//! Over the budget, the budget then takes at once, at the end of one
//! interval, as many steps as the costs say it takes to fit, each time
//! the step that saves the most: under load that is the tier, not the
//! sampling frequency. A step back up that the predicted cost of the hooks
//! it brings back leaves no room for is not tried. The CPU time of
//! start-up counts in the first snapshot's cost, but is not judged: no
//! knob gets it back.
//!
//! Hysteresis, counted in intervals: one step down after [`DOWN_AFTER`]
//! intervals in a row over the budget (the first interval of a run whose
//! knobs are priced alone is enough: a loaded host leaves the asked tier
//! after one interval); one step up after [`UP_AFTER`] in a
//! row with room, that is with the cost plus twice its error under
//! [`ROOM`] of the budget. The [`SETTLE`] intervals after a step are not
//! judged: they pay for loading the new sampler and for re-reading the
//! kernel's symbols, which its programs change (the first of them is the
//! costly one: stepping every [`DOWN_AFTER`] + [`SETTLE`] intervals, the
//! old ladder showed a peak every fourth interval). A step up that is over the budget again
//! straight away doubles the wait before the next one (up to
//! [`LONGEST_UP_WAIT`]), so a cost that sits between two steps does not
//! swing back and forth every few intervals. Such an undone step also
//! teaches what it added per unit of network load (the interval's network
//! CPU time, exact or estimated): the step is tried again only once the
//! cost now plus that much for the load now has room, which holds netto
//! where it is while the load lasts, and lets it back up when the load
//! falls, without paying for a try that would go over.
//!
//! The controller only reads snapshots and answers with a
//! [`Control`](super::Control) request, which the live source carries out
//! like one from a front end.

use std::collections::BTreeMap;

use crate::collect::estimate::ESTIMATE_HZ;
use crate::kernel::sampler::MIN_FREQUENCY_HZ;
use crate::model::{BudgetChange, BudgetStatus, KnobCost, KnobName, Overhead, Snapshot, Tier};
use knobs::{network_load, without_startup};
use pace::Spent;

pub const DOWN_AFTER: u32 = 2;
pub const UP_AFTER: u32 = 5;
pub const ROOM: f64 = 0.6;
pub const LONGEST_UP_WAIT: u32 = 80;
pub const SETTLE: u32 = 2;

/// The least network load, in percent of one CPU, an undone step up learns
/// its cost per unit of load from: below it the division means nothing.
pub const MIN_LEARNING_LOAD: f64 = 1.0;

/// A step of the sketch's probability: a quarter of the last, so that the
/// few steps from the default 1 % reach the floor in seconds, each still
/// a clear change of its cost.
pub const SKETCH_STEP: f64 = 4.0;

/// The lowest probability the budget takes the sketch to. Below it the
/// sketch's cost hardly falls (its packets then run the skip path alone,
/// docs/src/concepts/sketch.md), while its estimates keep widening.
pub const SKETCH_FLOOR: f64 = 0.001;

/// What the budget turns at the end of an interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Knob {
    Frequency(u64),
    Attribution(bool),
    /// The XDP sketch's sampling probability.
    Sketch(f64),
    /// The tier, and the sampling frequency that goes with it.
    Tier(Tier, u64),
}

/// A knob the budget can step down by what it saves (attribution's
/// programs are not priced, so it goes by the ladder alone).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Frequency,
    Sketch,
    Tier,
}

#[derive(Debug)]
pub struct Budget {
    percent: f64,
    /// The asked frequency; `None` when not sampling.
    asked_hz: Option<u64>,
    /// Halvings of the asked frequency in force.
    level: u32,
    /// Whether attribution runs (`--by`) and may be turned off.
    attributing: bool,
    /// Attribution turned off by the budget.
    attribution_off: bool,
    /// The sketch's asked probability; `None` without a sketch.
    asked_sketch: Option<f64>,
    /// Steps of the sketch's probability in force.
    sketch_level: u32,
    /// The tier asked for (the ceiling) and the one in force.
    asked_tier: Tier,
    tier: Tier,
    over_for: u32,
    room_for: u32,
    /// Intervals with room a step up waits for.
    up_wait: u32,
    /// Intervals since the last step up, while it may still be undone.
    since_up: Option<u32>,
    /// The cost of the last interval before the last step up.
    cost_before_up: f64,
    /// What the step up from the knobs in force added to netto's cost per
    /// percent of one CPU of network load, the last time it was tried and
    /// undone; `None` when never tried from here.
    up_cost_per_load: Option<f64>,
    /// Intervals still not judged after a step.
    settling: u32,
    /// No interval judged yet: the first, when its knobs are priced, is
    /// enough to step on (see [`Budget::intervals_to_step`]).
    first: bool,
    exceeded: bool,
    /// Measuring's cost from the run's start, start-up left out, which
    /// paces calibration intervals.
    spent: Spent,
    steps_down: u64,
    steps_up: u64,
    /// Each knob's cost (percent of one CPU) and the network load (the
    /// same unit) when last measured on.
    seen: BTreeMap<KnobName, (f64, f64)>,
}

impl Budget {
    pub fn new(percent: f64, asked_hz: Option<u64>, attributing: bool, asked_tier: Tier) -> Budget {
        Budget {
            percent,
            asked_hz,
            level: 0,
            attributing,
            attribution_off: false,
            asked_sketch: None,
            sketch_level: 0,
            asked_tier,
            tier: asked_tier,
            over_for: 0,
            room_for: 0,
            up_wait: UP_AFTER,
            since_up: None,
            cost_before_up: 0.0,
            up_cost_per_load: None,
            settling: 0,
            first: true,
            exceeded: false,
            spent: Spent::default(),
            steps_down: 0,
            steps_up: 0,
            seen: BTreeMap::new(),
        }
    }

    /// The co-hosted sketch, sampling at `probability`, is one more knob.
    pub fn with_sketch(self, probability: Option<f64>) -> Budget {
        Budget {
            asked_sketch: probability,
            ..self
        }
    }

    /// A front end asked for a frequency: it becomes the ceiling, in force
    /// now, and the budget judges it afresh (attribution stays as it is).
    pub fn asked(&mut self, hz: u64) {
        if self.asked_hz.is_some() {
            *self = Budget {
                steps_down: self.steps_down,
                steps_up: self.steps_up,
                attribution_off: self.attribution_off,
                tier: self.tier,
                sketch_level: self.sketch_level,
                seen: std::mem::take(&mut self.seen),
                spent: std::mem::take(&mut self.spent),
                first: false,
                ..Budget::new(self.percent, Some(hz), self.attributing, self.asked_tier)
                    .with_sketch(self.asked_sketch)
            };
            self.settling = SETTLE;
        }
    }

    /// The frequency the budget wants in force: the ladder's, and in a
    /// tier that estimates never below what its estimates need.
    pub fn frequency_hz(&self) -> Option<u64> {
        let hz = at_level(self.asked_hz?, self.level);
        Some(if self.tier == Tier::Exact {
            hz
        } else {
            hz.max(ESTIMATE_HZ)
        })
    }

    /// The sketch's probability the budget wants in force.
    pub fn sketch_probability(&self) -> Option<f64> {
        let asked = self.asked_sketch?;
        let stepped = asked / SKETCH_STEP.powf(f64::from(self.sketch_level));
        Some(stepped.max(SKETCH_FLOOR.min(asked)))
    }

    /// Whether a calibration interval of `interval_s` (every knob on) now
    /// keeps measuring's average from the run's start (start-up left out)
    /// within the budget; a calibration that is due waits until it does.
    pub fn affords_calibration(&self, interval_s: f64) -> bool {
        self.spent.affords_all_on(interval_s, self.percent)
    }

    /// The tier the budget wants in force.
    pub fn tier(&self) -> Tier {
        self.tier
    }

    /// At the bottom of the ladder: [`MIN_FREQUENCY_HZ`] in the exact tier,
    /// [`ESTIMATE_HZ`] in the tiers that estimate.
    fn frequency_at_floor(&self) -> bool {
        let floor = if self.tier == Tier::Exact {
            MIN_FREQUENCY_HZ
        } else {
            ESTIMATE_HZ
        };
        self.asked_hz
            .is_none_or(|hz| at_level(hz, self.level) <= floor)
    }

    fn attribution_at_floor(&self) -> bool {
        !self.attributing || self.attribution_off
    }

    fn sketch_at_floor(&self) -> bool {
        self.sketch_probability().is_none_or(|p| p <= SKETCH_FLOOR)
    }

    /// Only a run that samples can estimate what a lower tier leaves out.
    fn tier_at_floor(&self) -> bool {
        self.asked_hz.is_none() || self.tier.lower().is_none()
    }

    fn at_floor(&self) -> bool {
        self.frequency_at_floor()
            && self.attribution_at_floor()
            && self.sketch_at_floor()
            && self.tier_at_floor()
    }

    /// Judges one interval's cost (`snapshot.overhead`, start-up left
    /// out) under its network load; returns what the interval's snapshot
    /// says about the budget, and the knobs to turn, if any.
    pub fn observe(&mut self, snapshot: &Snapshot) -> (BudgetStatus, Vec<Knob>) {
        let knobs = self.knob_costs(snapshot);
        let overhead = &without_startup(snapshot);
        self.spent.count(snapshot, overhead, &knobs);
        let load = network_load(snapshot);
        let room_for = |extra: f64| {
            overhead
                .budgeted_percent()
                .is_some_and(|c| c + extra + 2.0 * overhead.error_percent < ROOM * self.percent)
        };
        let room = room_for(0.0);
        let above = self.up_cost_per_load.map_or(0.0, |k| k * load);
        let room_above = room_for(above.max(self.predicted_up_cost(&knobs)));
        let before = self.setting();
        let change = if self.settling > 0 {
            self.settling -= 1;
            None
        } else {
            self.judge(overhead, &knobs, load, room, room_above)
        };
        let turned = self.turned_since(before);
        let mut status = self.status(overhead, change);
        status.knobs = knobs;
        (status, turned)
    }

    /// What an interval the budget does not judge says about it: the last
    /// of a run (nothing changes after it), or a calibration interval
    /// (exact for one interval by design, whatever the budget), whose
    /// costs are learnt all the same.
    pub fn unjudged(&mut self, snapshot: &Snapshot) -> BudgetStatus {
        let knobs = self.knob_costs(snapshot);
        let overhead = without_startup(snapshot);
        self.spent.count(snapshot, &overhead, &knobs);
        let mut status = self.status(&overhead, None);
        status.knobs = knobs;
        status
    }

    /// The knobs as they are now, to tell what a judgement turned.
    fn setting(&self) -> (Tier, Option<u64>, bool, Option<f64>) {
        (
            self.tier,
            self.frequency_hz(),
            self.attribution_off,
            self.sketch_probability(),
        )
    }

    /// The knobs turned since `before`, each once, in the order the live
    /// source carries them out (the sampler last).
    fn turned_since(&self, before: (Tier, Option<u64>, bool, Option<f64>)) -> Vec<Knob> {
        let (tier, hz, attribution_off, sketch) = before;
        let mut turned = Vec::new();
        if attribution_off != self.attribution_off {
            turned.push(Knob::Attribution(!self.attribution_off));
        }
        if let (Some(p), true) = (
            self.sketch_probability(),
            sketch != self.sketch_probability(),
        ) {
            turned.push(Knob::Sketch(p));
        }
        if tier != self.tier {
            turned.push(Knob::Tier(
                self.tier,
                self.frequency_hz().unwrap_or(ESTIMATE_HZ),
            ));
        } else if let (Some(now), true) = (self.frequency_hz(), hz != self.frequency_hz()) {
            turned.push(Knob::Frequency(now));
        }
        turned
    }

    fn is_over(&self, overhead: &Overhead) -> bool {
        overhead
            .budgeted_percent()
            .is_some_and(|c| c > self.percent)
    }

    fn status(&self, overhead: &Overhead, change: Option<BudgetChange>) -> BudgetStatus {
        BudgetStatus {
            percent: self.percent,
            over: self.is_over(overhead),
            at_floor: self.at_floor(),
            asked_frequency_hz: self.asked_hz,
            asked_sketch_probability: self.asked_sketch,
            change,
            steps_down: self.steps_down,
            steps_up: self.steps_up,
            knobs: Vec::new(),
        }
    }

    /// `room`: the cost has room under the budget; `room_above`: it has
    /// room for what the step up added per unit of load, when known.
    fn judge(
        &mut self,
        overhead: &Overhead,
        knobs: &[KnobCost],
        load: f64,
        room: bool,
        room_above: bool,
    ) -> Option<BudgetChange> {
        let over = self.is_over(overhead);
        let cost = overhead.budgeted_percent().unwrap_or(0.0);
        if let Some(n) = self.since_up.as_mut() {
            *n += 1;
            if *n > DOWN_AFTER {
                // The step up held: the knobs in force are new.
                self.since_up = None;
                self.up_cost_per_load = None;
            }
        }
        let needed = self.intervals_to_step(knobs);
        self.over_for = if over { self.over_for + 1 } else { 0 };
        self.room_for = if room { self.room_for + 1 } else { 0 };
        if self.exceeded && !over {
            self.exceeded = false;
            return Some(BudgetChange::Kept);
        }
        if self.over_for >= needed {
            self.over_for = 0;
            if self.at_floor() {
                return (!std::mem::replace(&mut self.exceeded, true))
                    .then_some(BudgetChange::Exceeded);
            }
            let undone = self.since_up.take().is_some();
            if undone {
                self.up_wait = (self.up_wait * 2).min(LONGEST_UP_WAIT);
            }
            let change = self.steps_down_to_fit(cost, knobs);
            // Back where the step up started: what it added per unit of
            // load, for the next try. Any other step down lands elsewhere.
            self.up_cost_per_load = (undone && load >= MIN_LEARNING_LOAD)
                .then(|| (cost - self.cost_before_up).max(0.0) / load);
            return Some(change);
        }
        let below_asked = self.level > 0
            || self.attribution_off
            || self.sketch_level > 0
            || self.tier != self.asked_tier;
        if self.room_for >= self.up_wait && below_asked && room_above {
            self.room_for = 0;
            self.since_up = Some(0);
            self.cost_before_up = cost;
            return Some(self.step_up());
        }
        None
    }

    /// Intervals in a row over the budget a step down waits for:
    /// [`DOWN_AFTER`], so that one costly interval does not turn a knob;
    /// but the first interval of a run, when its knobs are priced, alone.
    /// It measured the asked setting under the load there is, and the
    /// prices say which steps fit: a loaded host goes to the tier that fits
    /// after one interval instead of paying for the asked one for two.
    /// Without prices a step is a guess down the ladder, and waits.
    fn intervals_to_step(&mut self, knobs: &[KnobCost]) -> u32 {
        if std::mem::take(&mut self.first) && !knobs.is_empty() {
            1
        } else {
            DOWN_AFTER
        }
    }

    /// Steps down until the knobs' costs predict the budget holds, each
    /// time turning the knob whose step saves the most, or to the floor;
    /// without knowing what a step saves, one step down the ladder
    /// ([`Budget::step_down`]). Returns the last step.
    fn steps_down_to_fit(&mut self, cost: f64, knobs: &[KnobCost]) -> BudgetChange {
        let mut parts: BTreeMap<KnobName, f64> =
            knobs.iter().map(|k| (k.knob, k.cost_percent)).collect();
        let mut predicted = cost;
        let mut taken: Vec<BudgetChange> = Vec::new();
        loop {
            let (step, saving) = self.best_step(&parts);
            taken.push(self.step_down(step));
            predicted -= saving;
            if saving <= 0.0 || predicted <= self.percent || self.at_floor() {
                return whole_move(&taken);
            }
            self.apply_saving(step, &mut parts);
        }
    }

    /// One step down of `step`'s knob, or without one the ladder's: the
    /// frequency while it can go lower, then attribution, then the
    /// sketch's probability, then the tier. A tier below exact turns
    /// attribution off with it (it needs every event exact).
    fn step_down(&mut self, step: Option<Step>) -> BudgetChange {
        self.settling = SETTLE;
        self.steps_down += 1;
        match step {
            Some(Step::Frequency) => return self.frequency_down(),
            Some(Step::Sketch) => {
                if let Some(change) = self.sketch_down() {
                    return change;
                }
            }
            Some(Step::Tier) => return self.tier_down(),
            None => {}
        }
        if self.frequency_at_floor() {
            if !self.attribution_at_floor() {
                self.attribution_off = true;
                return BudgetChange::AttributionOff;
            }
            if let Some(change) = self.sketch_down() {
                return change;
            }
            return self.tier_down();
        }
        self.frequency_down()
    }

    fn sketch_down(&mut self) -> Option<BudgetChange> {
        let from = self
            .sketch_probability()
            .filter(|_| !self.sketch_at_floor())?;
        self.sketch_level += 1;
        let to = self.sketch_probability().unwrap_or(from);
        Some(BudgetChange::SketchDown { from, to })
    }

    fn tier_down(&mut self) -> BudgetChange {
        let from = self.tier;
        self.tier = from.lower().unwrap_or(from);
        if self.attributing {
            self.attribution_off = true;
        }
        BudgetChange::TierDown {
            from,
            to: self.tier,
        }
    }

    fn frequency_down(&mut self) -> BudgetChange {
        let from_hz = self.frequency_hz().unwrap_or(0);
        self.level += 1;
        let to_hz = self.frequency_hz().unwrap_or(0);
        BudgetChange::Down { from_hz, to_hz }
    }

    /// One step up, undoing the last step down.
    fn step_up(&mut self) -> BudgetChange {
        self.settling = SETTLE;
        self.steps_up += 1;
        if self.tier != self.asked_tier {
            let from = self.tier;
            self.tier = from.higher().unwrap_or(from);
            return BudgetChange::TierUp {
                from,
                to: self.tier,
            };
        }
        if let (true, Some(from)) = (self.sketch_level > 0, self.sketch_probability()) {
            self.sketch_level -= 1;
            let to = self.sketch_probability().unwrap_or(from);
            return BudgetChange::SketchUp { from, to };
        }
        if std::mem::replace(&mut self.attribution_off, false) {
            return BudgetChange::AttributionOn;
        }
        let from_hz = self.frequency_hz().unwrap_or(0);
        self.level -= 1;
        let to_hz = self.frequency_hz().unwrap_or(0);
        BudgetChange::Up { from_hz, to_hz }
    }
}

/// The last of `taken`'s steps as one move of its knob, from where the
/// first step of that knob started: "tier exact -> sampled", not the
/// last step alone.
fn whole_move(taken: &[BudgetChange]) -> BudgetChange {
    let last = taken[taken.len() - 1];
    let first_of_kind = taken
        .iter()
        .find(|c| std::mem::discriminant(*c) == std::mem::discriminant(&last))
        .copied()
        .unwrap_or(last);
    match (first_of_kind, last) {
        (BudgetChange::Down { from_hz, .. }, BudgetChange::Down { to_hz, .. }) => {
            BudgetChange::Down { from_hz, to_hz }
        }
        (BudgetChange::SketchDown { from, .. }, BudgetChange::SketchDown { to, .. }) => {
            BudgetChange::SketchDown { from, to }
        }
        (BudgetChange::TierDown { from, .. }, BudgetChange::TierDown { to, .. }) => {
            BudgetChange::TierDown { from, to }
        }
        _ => last,
    }
}

fn at_level(asked_hz: u64, level: u32) -> u64 {
    asked_hz
        .checked_shr(level)
        .unwrap_or(0)
        .max(MIN_FREQUENCY_HZ)
}

mod knobs;
mod pace;

#[cfg(test)]
mod tests;
