use std::collections::{BTreeMap, HashSet};

use super::*;
use crate::model::{SampleContext, Snapshot};

fn stacks() -> Vec<FlameStack> {
    let stack = FlameStack::of;
    vec![
        stack(
            SampleContext::SockSend,
            &["sock_sendmsg", "tcp_sendmsg", "veth_xmit"],
            40_000_000,
        ),
        stack(
            SampleContext::NetRx,
            &["__napi_poll", "tcp_v4_rcv", "_raw_spin_unlock_irqrestore"],
            30_000_000,
        ),
        stack(
            SampleContext::NetRx,
            &["__napi_poll", "mystery"],
            30_000_000,
        ),
    ]
}

fn labels() -> Labels {
    Labels {
        title: "Kernel network stack CPU on <box> & co".into(),
        subtitle: "kernel 6.8.0, 10.0 s sampled at 99 Hz, tracepoint backend".into(),
        estimated: false,
    }
}

fn render(weight: Weight) -> String {
    render_with(&stacks(), &ProgramNames::default(), weight)
}

fn render_with(stacks: &[FlameStack], programs: &ProgramNames, weight: Weight) -> String {
    let mut out = Vec::new();
    write_categorized_svg(stacks, &labels(), weight, programs, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// Frame name -> (fill of its rectangle, its tooltip), from the parsed
/// picture.
fn frames(doc: &roxmltree::Document<'_>) -> BTreeMap<String, (String, String)> {
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
            (name, (fill.to_string(), title.to_owned()))
        })
        .collect()
}

fn css(colour: Color) -> String {
    format!("rgb({},{},{})", colour.r, colour.g, colour.b)
}

#[test]
fn svg_is_well_formed_with_title_subtitle_and_every_frame() {
    let svg = render(Weight::Samples);
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
    let frames = frames(&doc);
    for name in [
        "sock_send",
        "net_rx",
        "sock_sendmsg",
        "tcp_sendmsg",
        "veth_xmit",
        "__napi_poll",
        "tcp_v4_rcv",
        "_raw_spin_unlock_irqrestore",
        "mystery",
    ] {
        assert!(frames.contains_key(name), "{name} missing from {frames:?}");
    }
}

#[test]
fn frames_take_the_colour_of_their_part_of_the_stack() {
    let svg = render(Weight::Time);
    let doc = super::super::parse_svg(&svg);
    let frames = frames(&doc);
    let expect = [
        ("__napi_poll", FAMILIES[0].0),
        ("tcp_v4_rcv", FAMILIES[2].0),
        ("sock_sendmsg", FAMILIES[3].0),
        ("tcp_sendmsg", FAMILIES[4].0),
        ("veth_xmit", FAMILIES[4].0),
        ("_raw_spin_unlock_irqrestore", SKID),
        ("net_rx", UNCATEGORISED),
        ("mystery", UNCATEGORISED),
    ];
    for (frame, swatch) in expect {
        assert_eq!(frames[frame].0, css(swatch.colour), "{frame}");
    }
    assert_eq!(frames["all"].0, css(UNCATEGORISED.colour));
}

#[test]
fn tooltips_give_milliseconds_and_the_category() {
    let svg = render(Weight::Time);
    let doc = super::super::parse_svg(&svg);
    let frames = frames(&doc);
    assert_eq!(frames["all"].1, "all (100.00 ms, 100%)");
    assert_eq!(
        frames["tcp_v4_rcv"].1,
        "tcp_v4_rcv (30.00 ms, 30.00%; category local_tcp)"
    );
    assert_eq!(
        frames["_raw_spin_unlock_irqrestore"].1,
        format!(
            "_raw_spin_unlock_irqrestore (30.00 ms, 30.00%; skid: {})",
            glossary::SKID.meaning
        )
    );
    assert!(frames["mystery"]
        .1
        .ends_with("; no category of its own: a stack takes the category of its frame nearest the leaf that has one)"));
    let samples = render(Weight::Samples);
    let doc = super::super::parse_svg(&samples);
    assert_eq!(
        frames_of(&doc, "tcp_v4_rcv"),
        "tcp_v4_rcv (30000000 samples, 30.00%; category local_tcp)"
    );
}

fn frames_of(doc: &roxmltree::Document<'_>, name: &str) -> String {
    frames(doc)[name].1.clone()
}

#[test]
fn a_legend_names_each_colour_drawn_and_fits_the_picture() {
    let svg = render(Weight::Time);
    let doc = super::super::parse_svg(&svg);
    let legend = doc
        .descendants()
        .find(|n| n.attribute("id") == Some("legend"))
        .expect("a legend");
    let entries: Vec<&str> = legend
        .children()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    let mut expected = vec![
        UNCATEGORISED.legend,
        FAMILIES[3].0.legend,
        FAMILIES[4].0.legend,
        FAMILIES[0].0.legend,
        FAMILIES[2].0.legend,
        SKID.legend,
    ];
    let mut sorted = entries.clone();
    sorted.sort_unstable();
    expected.sort_unstable();
    assert_eq!(sorted, expected, "only the colours drawn");
    let root = doc.root_element();
    let height: f64 = root.attribute("height").unwrap().parse().unwrap();
    let lowest = legend
        .children()
        .filter_map(|n| n.attribute("y"))
        .map(|y| y.parse::<f64>().unwrap())
        .fold(0.0, f64::max);
    assert!(lowest + 12.0 <= height, "legend at {lowest} below {height}");
    // Each label ends inside the narrowest width the picture is shown at.
    for text in legend.children().filter(|n| n.has_tag_name("text")) {
        let x: f64 = text.attribute("x").unwrap().parse().unwrap();
        let end = x + text.text().unwrap().len() as f64 * CHAR_WIDTH;
        assert!(end <= LEGEND_WIDTH, "{:?} ends at {end}", text.text());
    }
    assert!(root
        .attribute("viewBox")
        .unwrap()
        .ends_with(&format!(" {height}")));
}

#[test]
fn every_category_has_one_part_of_the_stack() {
    for category in Category::ALL {
        let rows = FAMILIES
            .iter()
            .filter(|(_, members)| members.contains(&category))
            .count();
        let expected = usize::from(category != Category::Other);
        assert_eq!(rows, expected, "{}", category.name());
    }
    let colours: HashSet<_> = FAMILIES
        .iter()
        .map(|(s, _)| s.colour)
        .chain([SKID.colour, UNCATEGORISED.colour])
        .map(|c| (c.r, c.g, c.b))
        .collect();
    assert_eq!(colours.len(), FAMILIES.len() + 2, "colours distinct");
}

#[test]
fn nothing_is_written_without_samples() {
    let mut out = Vec::new();
    let none = ProgramNames::default();
    let err = write_categorized_svg(&[], &labels(), Weight::Samples, &none, &mut out).unwrap_err();
    assert!(matches!(err, FlameError::NoSamples));
    assert!(out.is_empty());
}

/// A BPF program's frame (known by its module) is drawn in the colour of
/// BPF programs and says so; the same name unknown as a program is just a
/// frame of its caller's stage.
#[test]
fn a_bpf_program_frame_is_drawn_as_one() {
    let stacks = [FlameStack::of(
        SampleContext::NetRx,
        &[
            "__napi_poll",
            "bpf_prog_run_xdp",
            "bpf_dispatcher_xdp_func",
            "edge_fw",
            "memcpy",
        ],
        10,
    )];
    let mut snapshot = Snapshot::empty("tracepoint", 1);
    snapshot.modules = BTreeMap::from([("edge_fw".to_owned(), "bpf".to_owned())]);
    let programs = ProgramNames::of([&snapshot]);
    let svg = render_with(&stacks, &programs, Weight::Samples);
    let doc = super::super::parse_svg(&svg);
    let drawn = frames(&doc);
    let teal = css(family(Category::BpfProgram).colour);
    let (fill, title) = &drawn["edge_fw"];
    assert_eq!(fill, &teal);
    assert!(
        title.contains("BPF program, category bpf:edge_fw"),
        "{title}"
    );
    assert_eq!(
        drawn["bpf_dispatcher_xdp_func"].0, teal,
        "dispatch, same family"
    );
    assert!(
        svg.contains("other BPF programs, entering them"),
        "in the legend"
    );

    let svg = render_with(&stacks, &ProgramNames::default(), Weight::Samples);
    let drawn = frames(&super::super::parse_svg(&svg));
    // Unknown as a program, the frame is what its name matches: nothing.
    assert_eq!(drawn["edge_fw"].0, css(UNCATEGORISED.colour));
}
