//! The flame graph picture: inferno draws it, netto decides the colours,
//! the tooltips and the legend. inferno's own palettes colour by name
//! hash, which says nothing; here a frame's colour is the part of the
//! stack its category belongs to (receive path, netfilter, local
//! delivery, socket calls, transmit, timers, netto's own), a legend under
//! the graph says so, and a frame's tooltip names its category and gives
//! its time in milliseconds.

use std::fmt::Write as _;
use std::io::Write;

use inferno::flamegraph::color::{BackgroundColor, Color, PaletteMap};

use super::folded::fold;
use super::{draw, inferno_options, FlameError, FlameStack, Labels, Weight};
use crate::breakdown::categories::{is_skid, Action};
use crate::breakdown::{categorize, Category, ProgramNames, Stage};
use crate::frontends::glossary;

/// A colour of the graph and what it stands for, as the legend says it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Swatch {
    pub colour: Color,
    pub legend: &'static str,
}

/// How one frame is drawn: its colour, and what its tooltip adds after
/// the time (its category, or why it has none).
#[derive(Debug, Clone, PartialEq)]
pub struct Look {
    pub swatch: Swatch,
    pub note: String,
}

/// Light enough for inferno's black frame text, far enough apart in hue to
/// tell apart at a glance; one per part of the stack ([`FAMILIES`]).
const fn rgb(r: u8, g: u8, b: u8) -> Color {
    Color { r, g, b }
}

/// The parts of the stack a category belongs to, each with its colour:
/// a table, so a new category is one entry in one row (a test holds
/// every category to exactly one row).
pub const FAMILIES: [(Swatch, &[Category]); 8] = [
    (
        Swatch {
            colour: rgb(0x8d, 0xb6, 0xe8), // blue
            legend: "receive and forward",
        },
        &[
            Category::DriverNapi,
            Category::Xdp,
            Category::Gro,
            Category::NetifReceive,
            Category::Tc,
            Category::Bridge,
            Category::IpReceive,
            Category::Ipv4Forward,
            Category::Ipv6Forward,
        ],
    ),
    (
        Swatch {
            colour: rgb(0xe8, 0x84, 0x84), // red
            legend: "netfilter, conntrack",
        },
        &[
            Category::NetfilterPrerouting,
            Category::NetfilterInput,
            Category::NetfilterForward,
            Category::NetfilterOutput,
            Category::NetfilterPostrouting,
            Category::NetfilterOther,
            Category::Conntrack,
        ],
    ),
    (
        Swatch {
            colour: rgb(0x8f, 0xd1, 0x7f), // green
            legend: "local delivery",
        },
        &[
            Category::LocalTcp,
            Category::LocalUdp,
            Category::LocalIcmp,
            Category::LocalOther,
            Category::SocketEnqueueWakeup,
        ],
    ),
    (
        Swatch {
            colour: rgb(0xe6, 0xd0, 0x6a), // yellow
            legend: "socket calls, copies",
        },
        &[
            Category::SocketSend,
            Category::SocketRecv,
            Category::CopyUser,
        ],
    ),
    (
        Swatch {
            colour: rgb(0xf2, 0xa6, 0x5a), // orange
            legend: "transmit",
        },
        &[
            Category::TcpOutput,
            Category::UdpOutput,
            Category::IpOutput,
            Category::Qdisc,
            Category::DevXmit,
        ],
    ),
    (
        Swatch {
            colour: rgb(0xc3, 0xa6, 0xe0), // purple
            legend: "timers",
        },
        &[
            Category::TcpPacing,
            Category::TcpSmallQueues,
            Category::TcpRetransmitTimer,
            Category::TcpAckTimer,
            Category::TcpConnectionTimer,
            Category::QdiscWatchdog,
            Category::TimerSoftirq,
        ],
    ),
    (
        Swatch {
            colour: rgb(0xe8, 0xa7, 0xcf), // pink
            legend: "netto's own",
        },
        &[Category::Netto, Category::XdpSketch],
    ),
    (
        Swatch {
            colour: rgb(0x7f, 0xd1, 0xc8), // teal
            legend: "other BPF programs, entering them",
        },
        &[Category::BpfProgram, Category::BpfDispatch],
    ),
];

/// Frames where interrupts come back on ([`crate::breakdown::categories::SKID`]):
/// dark, so a wide one reads as a warning rather than a hot spot.
pub const SKID: Swatch = Swatch {
    colour: rgb(0x9a, 0x9a, 0x9a),
    legend: "skid: interrupts back on",
};

/// Grey, so frames no rule claims recede behind the coloured ones.
pub const UNCATEGORISED: Swatch = Swatch {
    colour: rgb(0xd4, 0xd4, 0xd4),
    legend: "no category of its own",
};

/// Plain white: inferno's default yellow gradient is part of its hot
/// palette and muddies the category colours.
const BACKGROUND: Color = rgb(0xff, 0xff, 0xff);

/// Draws the stacks as one flame graph, contexts side by side under the
/// root, widths counted as `weight` says, each frame as `look` says, a
/// legend of the colours drawn underneath. Fails with
/// [`FlameError::NoSamples`] before writing anything when there is nothing
/// to draw.
pub fn write_svg(
    stacks: &[FlameStack],
    labels: &Labels,
    weight: Weight,
    look: &dyn Fn(&str) -> Look,
    out: &mut dyn Write,
) -> Result<(), FlameError> {
    let folded = fold(stacks);
    // inferno consults the map before its own palette, so filling it with
    // every frame drawn (and "", the root) leaves it no choice to make.
    let mut palette = PaletteMap::default();
    palette.insert("", UNCATEGORISED.colour);
    let mut drawn: Vec<Swatch> = Vec::new();
    for frame in folded.keys().flat_map(|stack| stack.split(';')) {
        if palette.get(frame).is_none() {
            let swatch = look(frame).swatch;
            palette.insert(frame, swatch.colour);
            if !drawn.contains(&swatch) {
                drawn.push(swatch);
            }
        }
    }
    drawn.sort_by_key(legend_order);
    let lines: Vec<String> = folded
        .iter()
        .map(|(stack, count)| format!("{stack} {count}"))
        .collect();
    let mut options = inferno_options(labels, weight);
    options.palette_map = Some(&mut palette);
    options.bgcolors = Some(BackgroundColor::Flat(BACKGROUND));
    let mut picture = Vec::new();
    draw(&mut options, &lines, &mut picture)?;
    let picture = String::from_utf8(picture)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let picture = retitle(&picture, weight, look);
    out.write_all(with_legend(&picture, &drawn).as_bytes())?;
    Ok(())
}

/// [`write_svg`] coloured by netto's own categories (src/breakdown), the
/// colouring every netto flame graph uses: a file from `record` and the
/// web view's graph show a category in the same colour. `programs`: the
/// BPF programs among the frames (from the snapshots' `modules`), drawn
/// as such.
pub fn write_categorized_svg(
    stacks: &[FlameStack],
    labels: &Labels,
    weight: Weight,
    programs: &ProgramNames,
    out: &mut dyn Write,
) -> Result<(), FlameError> {
    write_svg(
        stacks,
        labels,
        weight,
        &|frame| category_look(frame, programs),
        out,
    )
}

/// A frame as netto's categories draw it: skid first (its name says where
/// interrupts came on, not what the time was for), then the category the
/// frame stands for on its own, its part of the stack's colour.
fn category_look(frame: &str, programs: &ProgramNames) -> Look {
    if is_skid(frame) {
        return Look {
            swatch: SKID,
            note: format!("skid: {}", glossary::SKID.meaning),
        };
    }
    if programs.action(frame) == Some(Action::Program) {
        return Look {
            swatch: family(Category::BpfProgram),
            note: format!("BPF program, category {}", Stage::Program(frame).name()),
        };
    }
    match categorize(&[frame]) {
        Category::Other => Look {
            swatch: UNCATEGORISED,
            note: "no category of its own: a stack takes the category of its frame nearest \
                   the leaf that has one"
                .to_owned(),
        },
        category => Look {
            swatch: family(category),
            note: format!("category {}", category.name()),
        },
    }
}

/// Where a swatch goes in the legend: the parts of the stack in table
/// order, then skid, then no category.
fn legend_order(swatch: &Swatch) -> usize {
    FAMILIES
        .iter()
        .position(|(s, _)| s == swatch)
        .unwrap_or(if *swatch == SKID {
            FAMILIES.len()
        } else {
            FAMILIES.len() + 1
        })
}

/// The part of the stack `category` belongs to.
fn family(category: Category) -> Swatch {
    FAMILIES
        .iter()
        .find(|(_, members)| members.contains(&category))
        .map_or(UNCATEGORISED, |&(swatch, _)| swatch)
}

/// inferno's tooltips say `name (1,234,567 ns, 12.34%)`; netto's say
/// `name (1.23 ms, 12.34%; category tcp_output)`. The note stays inside
/// the final parentheses, which inferno's script strips to label the
/// frame, so it holds none of its own. Frames are named in the folded
/// form's plain characters, which the SVG escapes; the name is kept as
/// written and read unescaped only to look it up.
fn retitle(svg: &str, weight: Weight, look: &dyn Fn(&str) -> Look) -> String {
    const OPEN: &str = "<title>";
    const CLOSE: &str = "</title>";
    let mut out = String::with_capacity(svg.len() + svg.len() / 4);
    let mut rest = svg;
    while let Some(start) = rest.find(OPEN) {
        let Some(len) = rest[start..].find(CLOSE) else {
            break;
        };
        let inner = &rest[start + OPEN.len()..start + len];
        out.push_str(&rest[..start + OPEN.len()]);
        match tooltip(inner, weight, look) {
            Some(text) => out.push_str(&text),
            None => out.push_str(inner),
        }
        out.push_str(CLOSE);
        rest = &rest[start + len + CLOSE.len()..];
    }
    out.push_str(rest);
    out
}

/// One tooltip rewritten; `None` for a title of another form.
fn tooltip(title: &str, weight: Weight, look: &dyn Fn(&str) -> Look) -> Option<String> {
    let (name, figures) = title.strip_suffix(')')?.rsplit_once(" (")?;
    let (amount, share) = figures.split_once(", ")?;
    let count: f64 = amount
        .strip_suffix(weight_unit(weight))?
        .trim_end()
        .replace(',', "")
        .parse()
        .ok()?;
    let amount = match weight {
        Weight::Time => format!("{} ms", super::super::rounding::fixed(count / 1e6, 2)),
        Weight::Samples => format!("{count:.0} samples"),
    };
    if name == "all" {
        return Some(format!("all ({amount}, {share})"));
    }
    let note = look(&unescape(name)).note.replace(['(', ')'], "");
    Some(format!("{name} ({amount}, {share}; {})", escape(&note)))
}

/// What inferno calls a width's unit ([`inferno_options`]).
fn weight_unit(weight: Weight) -> &'static str {
    match weight {
        Weight::Time => "ns",
        Weight::Samples => "samples",
    }
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The legend's rows: a box and a label per colour, as many to a row as
/// fit [`LEGEND_WIDTH`].
const LEGEND_ROW: usize = 18;
const LEGEND_BOX: usize = 12;
/// inferno's default width, and its monospace font: 12 px at 0.59 em.
const PICTURE_WIDTH: f64 = 1200.0;
/// The narrowest the picture is shown at (the web page's flame panel in a
/// 1000 px window). inferno's script fits the frames to whatever width
/// the picture is given, but the legend is laid out in pixels, so rows
/// as wide as the full picture were cut off there.
const LEGEND_WIDTH: f64 = 800.0;
const CHAR_WIDTH: f64 = 12.0 * 0.59;
const MARGIN: f64 = 10.0;

/// `svg` made taller by a legend of `swatches` at its foot.
fn with_legend(svg: &str, swatches: &[Swatch]) -> String {
    let Some(height) = root_height(svg) else {
        return svg.to_owned();
    };
    let mut legend = String::from("<g id=\"legend\">");
    let (mut x, mut row) = (MARGIN, 0usize);
    for swatch in swatches {
        let width = LEGEND_BOX as f64 + 4.0 + swatch.legend.len() as f64 * CHAR_WIDTH + 16.0;
        if x + width > LEGEND_WIDTH - MARGIN && x > MARGIN {
            x = MARGIN;
            row += 1;
        }
        let y = height + 4 + row * LEGEND_ROW;
        let Color { r, g, b } = swatch.colour;
        let _ = write!(
            legend,
            "<rect x=\"{x:.0}\" y=\"{y}\" width=\"{LEGEND_BOX}\" height=\"{LEGEND_BOX}\" \
             fill=\"rgb({r},{g},{b})\" stroke=\"rgb(120,120,120)\" stroke-width=\"0.5\"/>\
             <text x=\"{:.0}\" y=\"{}\">{}</text>",
            x + LEGEND_BOX as f64 + 4.0,
            y + LEGEND_BOX - 2,
            escape(swatch.legend)
        );
        x += width;
    }
    legend.push_str("</g>");
    let taller = height + 8 + (row + 1) * LEGEND_ROW;
    let Some(end) = svg.rfind("</svg>") else {
        return svg.to_owned();
    };
    let body = svg[..end]
        .replacen(
            &format!(" height=\"{height}\""),
            &format!(" height=\"{taller}\""),
            1,
        )
        .replacen(
            &format!("viewBox=\"0 0 {PICTURE_WIDTH} {height}\""),
            &format!("viewBox=\"0 0 {PICTURE_WIDTH} {taller}\""),
            1,
        )
        .replacen(
            &format!("<rect x=\"0\" y=\"0\" width=\"100%\" height=\"{height}\""),
            &format!("<rect x=\"0\" y=\"0\" width=\"100%\" height=\"{taller}\""),
            1,
        );
    format!("{body}{legend}</svg>")
}

/// The picture's height, from its root element.
fn root_height(svg: &str) -> Option<usize> {
    let root = &svg[svg.find("<svg ")?..];
    let root = &root[..root.find('>')?];
    let at = root.find(" height=\"")? + " height=\"".len();
    let end = root[at..].find('"')? + at;
    root[at..end].parse().ok()
}

#[cfg(test)]
mod tests;
