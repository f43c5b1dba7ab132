//! The header's lines: where the numbers come from (host, kernel,
//! backend, tier, live or replayed), how they are taken (sampling frequency,
//! refresh period) and what taking them costs (netto's own CPU time,
//! dropped samples, other losses; wrapped onto another line where the
//! terminal is too narrow), and under a budget or serving one more: the
//! cost split into measuring and serving, and what each knob costs,
//! costliest first.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::frontends::tui::app::App;
use crate::frontends::tui::format;
use crate::model::{percent, CostBasis, KnobCost, Overhead, Snapshot, Tier};

pub fn draw(app: &App, frame: &mut Frame<'_>, area: Rect) {
    frame.render_widget(Paragraph::new(lines(app, area.width)), area);
}

/// Rows the header takes at this width: the second line's fields wrap onto
/// another rather than lose netto's cost off the edge (80 columns with a
/// loss), and a third comes for [`costs`] when there is one.
pub fn height(app: &App, width: u16) -> u16 {
    u16::try_from(lines(app, width).len()).unwrap_or(u16::MAX)
}

fn lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let info = &app.info;
    let origin = info.origin.to_string();
    let first = Line::from(
        [
            field("host", info.host.clone()),
            field("kernel", info.kernel.clone()),
            field("backend", info.backend.clone()),
            app.latest()
                .map_or_else(Vec::new, |s| field("tier", tier(s))),
            vec![Span::styled(origin, Style::new().fg(Color::Cyan))],
        ]
        .concat(),
    );
    // Each a field of its own, so that a narrow terminal wraps between
    // fields, never inside one.
    let mut second = Vec::new();
    if app.paused {
        second.push(vec![
            Span::styled(
                format!("PAUSED (+{} new)", app.held()),
                Style::new().fg(Color::Black).bg(Color::Yellow),
            ),
            Span::raw("  "),
        ]);
    }
    second.push(field("sampling", sampling(app)));
    if let Some(snapshot) = app.latest() {
        // Losses next to the sampling and before the costs: rare, and
        // then what the eye must not miss.
        let alarm = Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
        if let Some(sampling) = snapshot.sampling.as_ref().filter(|s| s.dropped > 0) {
            second.push(vec![
                Span::styled(format!("dropped {}", sampling.dropped), alarm),
                Span::raw("  "),
            ]);
        }
        if snapshot.losses.any() {
            let lost = snapshot.losses.describe(|kind| kind.short).join(", ");
            second.push(vec![
                Span::styled(format!("lost {lost}"), alarm),
                Span::raw("  "),
            ]);
        }
        let interval = snapshot.interval_s;
        second.push(field(
            "refresh",
            format!("{:.2} s", interval / app.settings.speed),
        ));
        second.push(field("netto cost", cost(&snapshot.overhead, interval)));
        if let Some(b) = &snapshot.budget {
            let over = snapshot.budget_exceeded();
            let text = format!("{} %{}", b.percent, if over { " EXCEEDED" } else { "" });
            second.push(field("budget", text));
        }
    }
    let mut lines = vec![first];
    lines.extend(wrap(second, usize::from(width)));
    lines.extend(app.latest().and_then(costs));
    lines
}

/// Fields packed into as few lines of `width` columns as hold them; a
/// field's trailing gap may run past the edge.
fn wrap(fields: Vec<Vec<Span<'static>>>, width: usize) -> Vec<Line<'static>> {
    let mut lines: Vec<Vec<Span<'static>>> = vec![Vec::new()];
    let mut used = 0;
    for field in fields {
        let text: usize = field.iter().map(Span::width).sum();
        let gap = field
            .last()
            .map_or(0, |s| s.content.len() - s.content.trim_end().len());
        let line = lines.last_mut().expect("one line at least");
        if used > 0 && used + text - gap > width {
            lines.push(field);
            used = text;
        } else {
            line.extend(field);
            used += text;
        }
    }
    lines.into_iter().map(Line::from).collect()
}

/// What measuring and serving cost apart (`serve`), and each knob's cost
/// (`budget.knobs`), costliest first, a predicted one marked `~` (it is
/// off: its last measured cost, scaled by the load since). `None` when the
/// snapshot carries neither. The split only when serving costs something:
/// `top` serves nothing, and there measuring is the whole cost already in
/// the line above.
fn costs(snapshot: &Snapshot) -> Option<Line<'static>> {
    let overhead = &snapshot.overhead;
    let mut spans = Vec::new();
    if let (Some(measuring), Some(serving)) = (
        overhead.measuring_percent,
        overhead.serving_percent.filter(|&s| s > 0.0),
    ) {
        spans.extend(field("measuring", format::percent(measuring)));
        spans.extend(field("serving", format::percent(serving)));
    }
    let mut knobs: Vec<&KnobCost> = snapshot.budget.iter().flat_map(|b| &b.knobs).collect();
    knobs.sort_by(|a, b| b.cost_percent.total_cmp(&a.cost_percent));
    if !knobs.is_empty() {
        spans.push(Span::styled("knobs ", Style::new().fg(Color::DarkGray)));
    }
    for knob in knobs {
        let mark = match knob.basis {
            CostBasis::Measured => "",
            CostBasis::Predicted => "~",
        };
        spans.push(Span::raw(format!(
            "{mark}{} {}  ",
            knob.knob.name(),
            format::percent(knob.cost_percent)
        )));
    }
    (!spans.is_empty()).then(|| Line::from(spans))
}

/// netto's whole cost, its error when estimated, and what it leaves out
/// when BPF statistics are off. Recordings made before the figure existed
/// show their process and program times added up.
fn cost(overhead: &Overhead, interval: f64) -> String {
    let whole = overhead
        .cost_percent
        .unwrap_or_else(|| percent(overhead.process_cpu_ns + overhead.bpf_run_time_ns, interval));
    let mut text = format::percent(whole);
    if !overhead.bpf_stats {
        text.push_str(" (BPF n/a)");
    } else if overhead.estimated {
        text.push_str(&format!(" +-{}", format::percent(overhead.error_percent)));
    }
    text
}

/// The tier of the latest interval, and what in it is estimated (the
/// events panel marks those rows with `~`).
fn tier(snapshot: &Snapshot) -> String {
    match (snapshot.tier, snapshot.calibrating) {
        (Tier::Exact, Some(back)) => format!("exact (calibrating {})", back.name()),
        (Tier::Exact, None) => "exact".to_owned(),
        (Tier::Softirq, _) => "softirq (~socket calls estimated)".to_owned(),
        (Tier::Sampled, _) => "sampled (~all estimated)".to_owned(),
    }
}

/// `name value  `, the name dimmed.
fn field(name: &'static str, value: String) -> Vec<Span<'static>> {
    vec![
        Span::styled(format!("{name} "), Style::new().fg(Color::DarkGray)),
        Span::styled(value, Style::new().add_modifier(Modifier::BOLD)),
        Span::raw("  "),
    ]
}

/// The measured frequency, and the one asked for while the change is on
/// its way.
fn sampling(app: &App) -> String {
    let budget = app.latest().and_then(|s| s.budget.as_ref());
    match (app.measured_frequency(), app.frequency_hz) {
        (None, _) => "off".to_owned(),
        (Some(now), Some(asked))
            if asked != now && budget.is_some_and(|b| b.asked_frequency_hz == Some(asked)) =>
        {
            format!("{now} Hz (budget; asked {asked} Hz)")
        }
        (Some(now), Some(asked)) if asked != now => format!("{now} Hz (-> {asked} Hz)"),
        (Some(now), _) => format!("{now} Hz"),
    }
}
