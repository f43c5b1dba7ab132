//! What is drawn from the kept snapshots, at most once per snapshot
//! however many clients ask: flame graphs and folded stacks of the page's
//! windows, pprof profiles of any span (rounded up to a profile window),
//! and the latest snapshot in full.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use actix_web::web::Bytes;

use super::{lock, Recent, Stacks, State};
use crate::breakdown::ProgramNames;
use crate::frontends::flame::{
    any_estimated, flame_stacks, folded, pprof, svg, FlameError, FlameStack, Labels, Scope, Weight,
};
use crate::model::Snapshot;

/// The flame graph windows the page offers, in seconds. A request names
/// one of them, so each is drawn at most once per snapshot whatever the
/// clients ask.
pub const FLAME_WINDOWS_S: [f64; 4] = [10.0, 30.0, 60.0, 300.0];

/// One of [`FLAME_WINDOWS_S`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlameWindow(usize);

impl FlameWindow {
    /// The window a request gets when it names none.
    pub const DEFAULT: FlameWindow = FlameWindow(1);

    /// The window of exactly `seconds`, if one is offered.
    pub fn of(seconds: f64) -> Option<FlameWindow> {
        FLAME_WINDOWS_S
            .iter()
            .position(|w| *w == seconds)
            .map(FlameWindow)
    }

    pub fn seconds(self) -> f64 {
        FLAME_WINDOWS_S[self.0]
    }
}

/// The windows a pprof profile is drawn for, in seconds: profile scrapers
/// (Parca, Pyroscope) ask for their own scrape interval rather than one of
/// the page's windows, and any number of seconds is accepted; it is rounded
/// up to the next of these, so that a snapshot's profiles are a few
/// encodings shared by every client, whatever windows they ask for. The
/// last is the longest flame window (how long stacks are kept).
pub const PROFILE_WINDOWS_S: [u32; 10] = [1, 2, 5, 10, 15, 20, 30, 60, 120, 300];

/// One of [`PROFILE_WINDOWS_S`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProfileWindow(pub(super) u32);

impl ProfileWindow {
    /// `seconds` rounded up to the next profile window, if positive and
    /// within the longest.
    pub fn of(seconds: f64) -> Option<ProfileWindow> {
        if !(seconds.is_finite() && seconds > 0.0) {
            return None;
        }
        PROFILE_WINDOWS_S
            .iter()
            .find(|&&w| f64::from(w) >= seconds)
            .map(|&w| ProfileWindow(w))
    }

    pub fn seconds(self) -> f64 {
        f64::from(self.0)
    }
}

/// What a window's flame graphs are drawn from, taken under the history
/// lock and drawn after it is released.
pub(super) struct WindowStacks {
    generation: u64,
    sampled: Vec<Arc<Snapshot>>,
    covered_s: f64,
    newest_ts: f64,
}

/// Something drawn from the kept snapshots: redrawn only when a snapshot
/// arrived since. Requests for the same thing wait for one drawing rather
/// than each drawing their own.
pub(super) struct Drawn<T> {
    pub(super) slot: Mutex<Option<(u64, T)>>,
}

impl<T: Clone> Drawn<T> {
    pub(super) fn new() -> Self {
        Drawn {
            slot: Mutex::new(None),
        }
    }

    /// The value drawn for the current generation, or `draw`n now from
    /// what `take` reads (under the history lock) when there is none.
    pub(super) fn get<D>(
        &self,
        state: &State,
        take: impl FnOnce(&Recent) -> (u64, D),
        draw: impl FnOnce(D) -> T,
    ) -> T {
        let mut slot = lock(&self.slot);
        let (generation, input) = {
            let recent = state.read();
            if let Some((drawn_at, value)) = &*slot {
                if *drawn_at == recent.generation {
                    return value.clone();
                }
            }
            take(&recent)
        };
        let value = draw(input);
        *slot = Some((generation, value.clone()));
        value
    }
}

/// The drawings of one flame window in one [`Weight`].
pub(super) struct Flame {
    pub(super) folded: Drawn<Bytes>,
    pub(super) svg: Drawn<Result<Bytes, FlameFailure>>,
}

/// Encoded profiles by window and weight.
pub(super) type Profiles = HashMap<(ProfileWindow, Weight), Bytes>;

/// A flame graph that could not be drawn, for the response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlameFailure {
    NoSamples,
    Render(String),
}

impl State {
    /// Folded stacks of `window`, widths in `weight`.
    pub fn folded(&self, window: FlameWindow, weight: Weight) -> Bytes {
        self.flames[window.0][weight as usize].folded.get(
            self,
            |r| take_window(r, window),
            |part| {
                let mut out = Vec::new();
                folded::write_folded(&part.towers(weight), &mut out)
                    .expect("writing to memory cannot fail");
                Bytes::from(out)
            },
        )
    }

    /// The pprof profile (gzip-compressed) of `window`: the same stacks as
    /// the flame graphs, each context's exact time shared out over them,
    /// `weight` the value shown first. Encoded once per window, weight and
    /// snapshot.
    pub fn pprof(&self, window: ProfileWindow, weight: Weight) -> Bytes {
        let mut profiles = lock(&self.profiles);
        let (generation, part) = {
            let recent = self.read();
            if profiles.0 == recent.generation {
                if let Some(profile) = profiles.1.get(&(window, weight)) {
                    return profile.clone();
                }
            }
            take_span(&recent, window.seconds())
        };
        let labels = self.window_labels(&part);
        let mut out = Vec::new();
        pprof::write_pprof(
            part.sampled.iter().map(Arc::as_ref),
            &labels,
            weight,
            Scope::All,
            &mut out,
        )
        .expect("writing to memory cannot fail");
        let profile = Bytes::from(out);
        if profiles.0 != generation {
            *profiles = (generation, HashMap::new());
        }
        profiles.1.insert((window, weight), profile.clone());
        profile
    }

    /// The title and subtitle of a graph or profile drawn from `part`.
    fn window_labels(&self, part: &WindowStacks) -> Labels {
        Labels {
            title: format!("Kernel network stack CPU on {}", self.info.host),
            subtitle: format!(
                "last {} s up to {}, kernel {}, {} backend",
                part.covered_s.round(),
                clock(part.newest_ts),
                self.info.kernel,
                self.info.backend
            ),
            estimated: any_estimated(part.sampled.iter().map(Arc::as_ref)),
        }
    }

    /// The flame graph of `window`, widths in `weight`.
    pub fn flame_svg(&self, window: FlameWindow, weight: Weight) -> Result<Bytes, FlameFailure> {
        self.flames[window.0][weight as usize].svg.get(
            self,
            |r| take_window(r, window),
            |part| {
                let labels = self.window_labels(&part);
                let mut out = Vec::new();
                let programs = ProgramNames::of(part.sampled.iter().map(Arc::as_ref));
                let towers = part.towers(weight);
                match svg::write_categorized_svg(&towers, &labels, weight, &programs, &mut out) {
                    Ok(()) => Ok(Bytes::from(out)),
                    Err(FlameError::NoSamples) => Err(FlameFailure::NoSamples),
                    Err(e) => Err(FlameFailure::Render(e.to_string())),
                }
            },
        )
    }
}

pub(super) fn take_window(recent: &Recent, window: FlameWindow) -> (u64, WindowStacks) {
    take_span(recent, window.seconds())
}

fn take_span(recent: &Recent, seconds: f64) -> (u64, WindowStacks) {
    let taken: Vec<&Stacks> = recent.stacks.last(seconds).collect();
    let part = WindowStacks {
        generation: recent.generation,
        covered_s: taken.iter().map(|s| s.interval_s).sum(),
        sampled: taken.iter().map(|s| s.sampled.clone()).collect(),
        newest_ts: recent.latest.as_ref().map_or(0.0, |s| s.ts),
    };
    (part.generation, part)
}

impl WindowStacks {
    pub(super) fn towers(&self, weight: Weight) -> Vec<FlameStack> {
        flame_stacks(self.sampled.iter().map(Arc::as_ref), weight, Scope::All)
    }
}

/// Time of day (UTC) of a unix timestamp, for the flame graph's subtitle.
pub(super) fn clock(ts: f64) -> String {
    let seconds = ts.max(0.0) as u64 % 86_400;
    format!(
        "{:02}:{:02}:{:02} UTC",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
}
