//! The flame graph picture: inferno draws it, netto decides the colours.
//! inferno's own palettes colour by name hash, which says nothing; here a
//! frame's colour is its category (socket layer, TCP, driver, ...), so the
//! share of each category can be seen at a glance.

use std::io::Write;

use inferno::flamegraph::color::{BackgroundColor, Color, PaletteMap};

use super::folded::fold;
use super::{draw, inferno_options, FlameError, FlameStack, Labels, Weight};
use crate::breakdown::{categorize, Category};

/// Light enough for inferno's black frame text, far enough apart in hue to
/// tell apart at a glance. A category's colour is its position in
/// [`Categories::names`]; beyond this many categories colours repeat.
const CATEGORY_COLOURS: [Color; 10] = [
    rgb(0x8d, 0xb6, 0xe8), // blue
    rgb(0xf2, 0xa6, 0x5a), // orange
    rgb(0x8f, 0xd1, 0x7f), // green
    rgb(0xe8, 0x84, 0x84), // red
    rgb(0xc3, 0xa6, 0xe0), // purple
    rgb(0xe6, 0xd0, 0x6a), // yellow
    rgb(0x7f, 0xd1, 0xcc), // teal
    rgb(0xe8, 0xa7, 0xcf), // pink
    rgb(0xc4, 0xa0, 0x7c), // brown
    rgb(0xb5, 0xc9, 0x5a), // olive
];

/// Grey, so frames no rule claims recede behind the coloured ones.
const UNCATEGORISED: Color = rgb(0xd4, 0xd4, 0xd4);

/// Plain white: inferno's default yellow gradient is part of its hot
/// palette and muddies the category colours.
const BACKGROUND: Color = rgb(0xff, 0xff, 0xff);

const fn rgb(r: u8, g: u8, b: u8) -> Color {
    Color { r, g, b }
}

/// How frames are coloured.
pub struct Categories<'a> {
    /// Every category the caller knows, in a fixed order. Colours are
    /// handed out by position in this list rather than by which
    /// categories happen to occur, so a category keeps its colour from one
    /// graph to the next.
    pub names: &'a [&'static str],
    /// The category of a frame (function name), if any. A category missing
    /// from `names` is drawn like an uncategorised frame.
    pub of_frame: &'a dyn Fn(&str) -> Option<&'static str>,
}

impl Categories<'_> {
    fn colour_of(&self, frame: &str) -> Color {
        (self.of_frame)(frame)
            .and_then(|category| self.names.iter().position(|name| *name == category))
            .map_or(UNCATEGORISED, |index| {
                CATEGORY_COLOURS[index % CATEGORY_COLOURS.len()]
            })
    }
}

/// Draws the stacks as one flame graph, contexts side by side under the
/// root, widths counted as `weight` says. Fails with
/// [`FlameError::NoSamples`] before writing anything when there is nothing
/// to draw.
pub fn write_svg(
    stacks: &[FlameStack],
    labels: &Labels,
    weight: Weight,
    categories: &Categories<'_>,
    out: &mut dyn Write,
) -> Result<(), FlameError> {
    let folded = fold(stacks);
    // inferno consults the map before its own palette, so filling it with
    // every frame drawn (and "", the root) leaves it no choice to make.
    let mut palette = PaletteMap::default();
    palette.insert("", UNCATEGORISED);
    for frame in folded.keys().flat_map(|stack| stack.split(';')) {
        if palette.get(frame).is_none() {
            palette.insert(frame, categories.colour_of(frame));
        }
    }
    let lines: Vec<String> = folded
        .iter()
        .map(|(stack, count)| format!("{stack} {count}"))
        .collect();
    let mut options = inferno_options(labels, weight);
    options.palette_map = Some(&mut palette);
    options.bgcolors = Some(BackgroundColor::Flat(BACKGROUND));
    draw(&mut options, &lines, out)
}

/// [`write_svg`] coloured by netto's own categories (src/breakdown), the
/// colouring every netto flame graph uses: a file from `record` and the
/// web view's graph show a category in the same colour.
pub fn write_categorized_svg(
    stacks: &[FlameStack],
    labels: &Labels,
    weight: Weight,
    out: &mut dyn Write,
) -> Result<(), FlameError> {
    let names = Category::ALL.map(Category::name);
    let categories = Categories {
        names: &names,
        of_frame: &frame_category,
    };
    write_svg(stacks, labels, weight, &categories, out)
}

/// The category a single frame stands for, if it names one on its own.
fn frame_category(frame: &str) -> Option<&'static str> {
    match categorize(&[frame]) {
        Category::Other => None,
        category => Some(category.name()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashSet};

    use super::*;
    use crate::model::SampleContext;

    const NAMES: [&str; 3] = ["driver", "tcp", "socket"];

    fn category_of(frame: &str) -> Option<&'static str> {
        match frame {
            "veth_xmit" | "napi_poll" => Some("driver"),
            "tcp_sendmsg" | "tcp_v4_rcv" => Some("tcp"),
            "sock_sendmsg" => Some("socket"),
            "mystery" => Some("not_in_names"),
            _ => None,
        }
    }

    fn stacks() -> Vec<FlameStack> {
        let stack = FlameStack::of;
        vec![
            stack(
                SampleContext::SockSend,
                &["sock_sendmsg", "tcp_sendmsg", "veth_xmit"],
                40,
            ),
            stack(
                SampleContext::NetRx,
                &["__do_softirq", "napi_poll", "tcp_v4_rcv"],
                30,
            ),
            stack(SampleContext::NetRx, &["__do_softirq", "mystery"], 30),
        ]
    }

    fn labels() -> Labels {
        Labels {
            title: "Kernel network stack CPU on <box> & co".into(),
            subtitle: "kernel 6.8.0, 10.0 s sampled at 99 Hz, tracepoint backend".into(),
            estimated: false,
        }
    }

    fn render() -> String {
        let categories = Categories {
            names: &NAMES,
            of_frame: &category_of,
        };
        let mut out = Vec::new();
        write_svg(&stacks(), &labels(), Weight::Samples, &categories, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Frame name -> fill of its rectangle, from the parsed picture.
    fn frame_fills(doc: &roxmltree::Document<'_>) -> BTreeMap<String, String> {
        let frames = doc
            .descendants()
            .find(|n| n.has_tag_name("svg") && n.attribute("id") == Some("frames"))
            .expect("frames container");
        frames
            .children()
            .filter(|n| n.has_tag_name("g"))
            .map(|g| {
                let title = g
                    .children()
                    .find(|n| n.has_tag_name("title"))
                    .and_then(|t| t.text())
                    .expect("frame title");
                let name = title.split(" (").next().unwrap().to_string();
                let fill = g
                    .children()
                    .find(|n| n.has_tag_name("rect"))
                    .and_then(|r| r.attribute("fill"))
                    .expect("frame fill");
                (name, fill.to_string())
            })
            .collect()
    }

    fn css(colour: Color) -> String {
        format!("rgb({},{},{})", colour.r, colour.g, colour.b)
    }

    #[test]
    fn svg_is_well_formed_with_title_subtitle_and_every_frame() {
        let svg = render();
        let doc = super::super::parse_svg(&svg);
        let text_of = |id: &str| {
            doc.descendants()
                .find(|n| n.attribute("id") == Some(id))
                .and_then(|n| n.text())
                .map(str::to_string)
        };
        assert_eq!(text_of("title"), Some(labels().title));
        assert_eq!(
            text_of("subtitle"),
            Some(format!("{}; widths: samples", labels().subtitle))
        );

        let fills = frame_fills(&doc);
        for name in [
            "sock_send",
            "net_rx",
            "sock_sendmsg",
            "tcp_sendmsg",
            "veth_xmit",
            "__do_softirq",
            "napi_poll",
            "tcp_v4_rcv",
            "mystery",
        ] {
            assert!(fills.contains_key(name), "{name} missing from {fills:?}");
        }
    }

    #[test]
    fn frames_take_their_category_colour_and_the_rest_are_grey() {
        let svg = render();
        let doc = super::super::parse_svg(&svg);
        let fills = frame_fills(&doc);
        let expect = [
            ("veth_xmit", CATEGORY_COLOURS[0]),
            ("napi_poll", CATEGORY_COLOURS[0]),
            ("tcp_sendmsg", CATEGORY_COLOURS[1]),
            ("tcp_v4_rcv", CATEGORY_COLOURS[1]),
            ("sock_sendmsg", CATEGORY_COLOURS[2]),
            ("__do_softirq", UNCATEGORISED),
            ("net_rx", UNCATEGORISED),
            ("mystery", UNCATEGORISED),
        ];
        for (frame, colour) in expect {
            assert_eq!(fills[frame], css(colour), "{frame}");
        }
        assert_eq!(fills["all"], css(UNCATEGORISED));
    }

    #[test]
    fn palette_colours_are_distinct_and_not_grey() {
        let distinct: HashSet<_> = CATEGORY_COLOURS.iter().map(|c| (c.r, c.g, c.b)).collect();
        assert_eq!(distinct.len(), CATEGORY_COLOURS.len());
        assert!(!CATEGORY_COLOURS.contains(&UNCATEGORISED));
    }

    #[test]
    fn colours_wrap_after_the_palette() {
        const ELEVEN: [&str; 11] = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"];
        assert_eq!(ELEVEN.len(), CATEGORY_COLOURS.len() + 1);
        let categories = Categories {
            names: &ELEVEN,
            of_frame: &|_| Some("k"),
        };
        assert_eq!(categories.colour_of("anything"), CATEGORY_COLOURS[0]);
    }

    #[test]
    fn nothing_is_written_without_samples() {
        let categories = Categories {
            names: &NAMES,
            of_frame: &category_of,
        };
        let mut out = Vec::new();
        let err = write_svg(&[], &labels(), Weight::Samples, &categories, &mut out).unwrap_err();
        assert!(matches!(err, FlameError::NoSamples));
        assert!(out.is_empty());
    }
}
