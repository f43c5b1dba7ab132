use super::*;
use crate::collect::estimate::ESTIMATE_HZ;
use crate::model::Tier;
use crate::output_file::Destination;
use crate::sketch::config as sketch_config;
use clap::ValueEnum;

fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("netto").chain(args.iter().copied()))
}

#[test]
fn accepts_sane_values() {
    let cli = parse(&["stat", "--interval", "0.5", "--duration", "3", "--json"]).unwrap();
    let Command::Stat(args) = cli.into_command() else {
        panic!("stat expected")
    };
    assert_eq!(args.measure.interval, 0.5);
    assert_eq!(args.duration, Some(3.0));
    assert_eq!(args.measure.backend, BackendArg::Auto);
    let cli = parse(&[
        "sketch",
        "--iface",
        "eth0",
        "--probability",
        "1",
        "--rows",
        "3",
    ])
    .unwrap();
    let Command::Sketch(args) = cli.into_command() else {
        panic!("sketch expected")
    };
    let config = args.config();
    assert_eq!(
        (config.probability, config.rows, config.columns),
        (1.0, 3, 2048)
    );
}

#[test]
fn serve_listens_on_an_address_localhost_or_a_bare_port() {
    let listen = |text: &str| match parse(&["serve", "--listen", text]).unwrap().into_command() {
        Command::Serve(args) => args.listen.to_string(),
        _ => unreachable!(),
    };
    assert_eq!(listen("9464"), "127.0.0.1:9464");
    assert_eq!(listen("localhost:9464"), "127.0.0.1:9464");
    assert_eq!(listen("LocalHost:0"), "127.0.0.1:0");
    assert_eq!(listen("0.0.0.0:80"), "0.0.0.0:80");
    assert_eq!(listen("[::1]:9464"), "[::1]:9464");
    match parse(&["serve", "--duration", "30", "--serve-budget", "5"])
        .unwrap()
        .into_command()
    {
        Command::Serve(args) => {
            assert_eq!((args.duration, args.serve_budget), (Some(30.0), 5.0))
        }
        _ => unreachable!(),
    }
    match parse(&["serve"]).unwrap().into_command() {
        Command::Serve(args) => {
            assert_eq!(
                (args.duration, args.serve_budget),
                (None, DEFAULT_SERVE_BUDGET)
            )
        }
        _ => unreachable!(),
    }
}

#[test]
fn recording_sizes_with_binary_units() {
    for (text, bytes) in [
        ("1", 1),
        ("4096", 4096),
        ("64k", 64 << 10),
        ("512M", 512 << 20),
        ("1G", 1 << 30),
        ("2GiB", 2 << 30),
        ("1t", 1 << 40),
    ] {
        assert_eq!(parse_size(text), Ok(bytes), "{text}");
    }
    for bad in [
        "0",
        "",
        "G",
        "1.5G",
        "-1",
        "1X",
        "1 G",
        "1iB",
        "99999999999T",
    ] {
        assert!(parse_size(bad).is_err(), "{bad}");
    }
    let default = |args: &[&str]| match parse(args).unwrap().into_command() {
        Command::Report(r) => r.reading.max_recording_size,
        Command::Top(t) => t.source.reading.max_recording_size,
        Command::Serve(s) => s.source.reading.max_recording_size,
        _ => unreachable!(),
    };
    assert_eq!(default(&["report", "r.json", "-o", "r.svg"]), 1 << 30);
    assert_eq!(default(&["top", "--replay", "r.json"]), 1 << 30);
    assert_eq!(
        default(&["serve", "--replay", "r.json", "--max-recording-size", "2G"]),
        2 << 30
    );
    let err = parse(&["top", "--max-recording-size", "2G"]).unwrap_err();
    assert!(
        usage_error_lines::<Cli>(&err)
            .join(" ")
            .contains("--replay"),
        "{err}"
    );
}

#[test]
fn demo_rates_in_bits_per_second_or_max() {
    assert_eq!(parse_rate("1G"), Ok(Rate(Some(1_000_000_000))));
    assert_eq!(parse_rate("2.5G"), Ok(Rate(Some(2_500_000_000))));
    assert_eq!(parse_rate("500M"), Ok(Rate(Some(500_000_000))));
    assert_eq!(parse_rate("max"), Ok(Rate(None)));
    assert_eq!(
        parse_rate("fast"),
        Err(
            "'fast' is not a rate (bits per second with k, M or G, such as 500M), or max"
                .to_owned()
        )
    );
    for out_of_range in ["10k", "0", "-1G", "2000G"] {
        assert_eq!(
            parse_rate(out_of_range),
            Err("must be from 1M to 1000G bits per second, or max".to_owned()),
            "{out_of_range}"
        );
    }
    let Command::Stat(stat) = parse(&["stat"]).unwrap().into_command() else {
        unreachable!()
    };
    assert_eq!(stat.measure.demo_rate, Rate(Some(1_000_000_000)));
}

#[test]
fn file_names_pick_formats() {
    let file = |path: &str| Destination::File(path.into());
    for (path, format) in [
        ("run.pb.gz", Format::Pprof),
        ("run.pprof", Format::Pprof),
        ("run.otlp", Format::Otlp),
        ("dir.d/run.json", Format::Json),
        ("run.folded", Format::Folded),
        ("run.txt", Format::Folded),
        ("run.svg", Format::Svg),
        ("RUN.SVG", Format::Svg),
    ] {
        assert_eq!(
            Format::for_output(&file(path), None).unwrap(),
            format,
            "{path}"
        );
    }
    for path in ["run.gz", "run", "r.html", "run.svg.bak", "svg"] {
        let err = Format::for_output(&file(path), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "cannot tell the format of {path} from its name: use .svg, .folded or \
                     .txt, .json, .pprof or .pb.gz, .otlp, or pass --format"
            )
        );
    }
    assert_eq!(
        Format::for_output(&file("r.html"), Some(Format::Json)).unwrap(),
        Format::Json
    );
    assert_eq!(
        Format::for_output(&Destination::Stdout, None).unwrap(),
        Format::Svg
    );
    for format in [
        Format::Svg,
        Format::Folded,
        Format::Json,
        Format::Pprof,
        Format::Otlp,
    ] {
        let value = format.to_possible_value().unwrap();
        assert_eq!(value.get_name(), format.name());
        assert!(EXTENSIONS.iter().any(|&(f, _)| f == format));
    }
}

#[test]
fn dash_is_standard_output_for_record_and_report() {
    let Command::Report(args) = parse(&["report", "r.json", "-o", "-"])
        .unwrap()
        .into_command()
    else {
        panic!("report expected")
    };
    assert_eq!(args.output, Destination::Stdout);
    let Command::Record(args) = parse(&["record", "--duration", "1", "-o", "out.svg"])
        .unwrap()
        .into_command()
    else {
        panic!("record expected")
    };
    assert_eq!(args.output, Destination::File("out.svg".into()));
}

#[test]
fn top_is_the_default_command() {
    for args in [&[][..], &["top"]] {
        let Command::Top(top) = parse(args).unwrap().into_command() else {
            panic!("top expected for {args:?}")
        };
        let source = &top.source;
        assert_eq!(
            (
                source.measure.interval,
                source.sampling.frequency,
                top.history
            ),
            (1.0, 499, 300.0)
        );
        assert_eq!(
            (&source.replay, source.speed, top.flame_seconds),
            (&None, 1.0, 30.0)
        );
    }
    let Command::Top(top) = parse(&["--demo", "--frequency", "99"])
        .unwrap()
        .into_command()
    else {
        panic!("top expected")
    };
    assert_eq!(top.source.measure.demo, DemoArg::On);
    assert_eq!(top.source.sampling.frequency, 99);
    let Command::Top(top) = parse(&["top", "--replay", "r.json", "--speed", "4"])
        .unwrap()
        .into_command()
    else {
        panic!("top expected")
    };
    let replay = top.source.replay.as_deref();
    assert_eq!(replay, Some(std::path::Path::new("r.json")));
    assert_eq!(top.source.speed, 4.0);
}

#[test]
fn each_sampling_command_has_its_default_frequency() {
    let Command::Serve(serve) = parse(&["serve"]).unwrap().into_command() else {
        panic!("serve expected")
    };
    assert_eq!(serve.source.sampling.frequency, 99);
    assert_eq!(serve.source.measure.budget, OrOff(Some(1.0)));
    assert_eq!(serve.source.measure.calibrate_every, OrOff(Some(600.0)));
    let Command::Serve(serve) = parse(&["serve", "--budget", "off", "--calibrate-every", "off"])
        .unwrap()
        .into_command()
    else {
        panic!("serve expected")
    };
    assert_eq!(serve.source.measure.budget, OrOff(None));
    assert_eq!(serve.source.measure.calibrate_every, OrOff(None));
    let Command::Record(record) = parse(&["record", "--duration", "1", "-o", "x.svg"])
        .unwrap()
        .into_command()
    else {
        panic!("record expected")
    };
    assert_eq!(record.sampling.frequency, 1000);
    assert_eq!(record.measure.budget, OrOff(None));
    assert_eq!(record.measure.calibrate_every, OrOff(None));
    let config = record
        .measure
        .live_config(Some(&record.sampling), Some(1.0), true);
    assert_eq!(config.sampling.map(|s| s.frequency_hz), Some(1000));
    assert_eq!(config.duration, Some(std::time::Duration::from_secs(1)));
    assert_eq!(config.budget, None);
    let Command::Stat(stat) = parse(&["stat", "--budget", "0.05"]).unwrap().into_command() else {
        panic!("stat expected")
    };
    assert_eq!(
        stat.measure.live_config(None, None, false).budget,
        Some(0.05)
    );
    let Command::Stat(stat) = parse(&["stat", "--tier", "sampled", "--calibrate-every", "30"])
        .unwrap()
        .into_command()
    else {
        panic!("stat expected")
    };
    assert_eq!(
        stat.measure
            .live_config(None, None, false)
            .calibrate_every_s,
        Some(30.0)
    );
}

#[test]
fn a_tier_that_estimates_samples_even_where_the_command_does_not() {
    let Command::Stat(stat) = parse(&["stat", "--tier", "softirq"])
        .unwrap()
        .into_command()
    else {
        panic!("stat");
    };
    let config = stat.measure.live_config(None, None, false);
    assert_eq!(config.tier, Tier::Softirq);
    assert_eq!(config.sampling.map(|s| s.frequency_hz), Some(ESTIMATE_HZ));
    let Command::Stat(stat) = parse(&["stat"]).unwrap().into_command() else {
        panic!("stat");
    };
    let config = stat.measure.live_config(None, None, false);
    assert_eq!(
        (config.tier, config.sampling.is_none()),
        (Tier::Exact, true)
    );
    let Command::Record(record) = parse(&[
        "record",
        "--duration",
        "1",
        "-o",
        "x.svg",
        "--tier",
        "sampled",
        "--frequency",
        "49",
    ])
    .unwrap()
    .into_command() else {
        panic!("record");
    };
    let config = record
        .measure
        .live_config(Some(&record.sampling), None, false);
    assert_eq!(config.sampling.map(|s| s.frequency_hz), Some(49));
}

#[test]
fn the_cohosted_sketch_samples_at_the_asked_probability() {
    let sketch = |args: &[&str]| {
        let Command::Stat(stat) = parse(args).unwrap().into_command() else {
            panic!("stat");
        };
        let config = stat.measure.live_config(None, None, false);
        config.xdp_sketch.map(|(iface, c)| (iface, c.probability))
    };
    assert_eq!(sketch(&["stat"]), None);
    assert_eq!(
        sketch(&["stat", "--xdp-sketch", "lo"]),
        Some(("lo".to_owned(), sketch_config::DEFAULT_PROBABILITY))
    );
    assert_eq!(
        sketch(&[
            "stat",
            "--xdp-sketch",
            "lo",
            "--xdp-sketch-probability",
            "0.5"
        ]),
        Some(("lo".to_owned(), 0.5))
    );
}

#[test]
fn verbose_is_offered_where_bpf_loads_only() {
    for args in [
        &["-v"][..],
        &["stat", "-v"],
        &["record", "--duration", "1", "-o", "x.svg", "--verbose"],
        &["serve", "-v"],
        &["check", "-v"],
        &["sketch", "--iface", "lo", "-v"],
    ] {
        let command = parse(args).unwrap().into_command();
        assert!(command.libbpf_log(), "{args:?}");
    }
    assert!(!parse(&["stat"]).unwrap().into_command().libbpf_log());
    for args in [
        &["report", "r.json", "-o", "x.svg", "-v"][..],
        &["top", "--replay", "r.json", "-v"],
        &["completions", "bash", "-v"],
    ] {
        assert!(parse(args).is_err(), "{args:?} accepted -v");
    }
    use clap::CommandFactory;
    let report = Cli::command()
        .find_subcommand_mut("report")
        .unwrap()
        .render_long_help()
        .to_string();
    assert!(!report.contains("--verbose"), "{report}");
}

#[test]
fn a_usage_error_is_a_line_then_its_tips() {
    let lines = |args: &[&str]| usage_error_lines::<Cli>(&parse(args).unwrap_err());
    assert_eq!(
        lines(&["frobnicate"]),
        [
            "unrecognized subcommand 'frobnicate'",
            "commands: stat, check, record, report, top, serve, sketch, completions, man"
        ]
    );
    assert_eq!(
        lines(&["stat", "--interva", "1"]),
        [
            "unexpected argument '--interva' found",
            "tip: a similar argument exists: '--interval'"
        ]
    );
    assert_eq!(
        lines(&["rec"]),
        [
            "unrecognized subcommand 'rec'",
            "tip: a similar subcommand exists: 'record'",
            "commands: stat, check, record, report, top, serve, sketch, completions, man"
        ]
    );
    assert_eq!(
        lines(&["stat", "--interval", "0"]),
        ["invalid value '0' for '--interval <SECONDS>': must be between 0.05 and 3600 seconds"]
    );
}

#[test]
fn rejects_bad_values() {
    for bad in [
        &["stat", "--xdp-sketch-probability", "0.5"] as &[&str],
        &[
            "stat",
            "--xdp-sketch",
            "lo",
            "--xdp-sketch-probability",
            "0",
        ],
        &[
            "stat",
            "--xdp-sketch",
            "lo",
            "--xdp-sketch-probability",
            "1.5",
        ],
        &[
            "top",
            "--xdp-sketch",
            "lo",
            "--xdp-sketch-probability",
            "nan",
        ],
        &["stat", "--interval", "0"][..],
        &["stat", "--interval", "-1"],
        &["stat", "--interval", "nan"],
        &["stat", "--duration", "-5"],
        &["stat", "--duration", "0"],
        &["stat", "--duration", "1e12"],
        &["stat", "--duration", "inf"],
        &["stat", "--backend", "kprobe"],
        &["stat", "--backend", "bogus"],
        &["stat", "--budget", "0"],
        &["stat", "--budget", "101"],
        &["stat", "--budget", "x"],
        &["stat", "--budget", "nan"],
        &["stat", "--budget", "-1"],
        &["serve", "--budget", "inf"],
        &["top", "--replay", "r.json", "--budget", "1"],
        &["stat", "--tier", "nosuch"],
        &["stat", "--tier", "sampled", "--by", "cgroup"],
        &["stat", "--calibrate-every", "0"],
        &["stat", "--calibrate-every", "never"],
        &["serve", "--calibrate-every", "-5"],
        &["top", "--replay", "r.json", "--calibrate-every", "60"],
        &["serve", "--tier", "softirq", "--by", "process"],
        &["top", "--replay", "r.json", "--tier", "sampled"],
        &[
            "record",
            "--duration",
            "1",
            "-o",
            "x.svg",
            "--frequency",
            "0",
        ],
        &[
            "record",
            "--duration",
            "1",
            "-o",
            "x.svg",
            "--frequency",
            "100000",
        ],
        &[
            "record",
            "--duration",
            "1",
            "-o",
            "x.svg",
            "--format",
            "png",
        ],
        &["record", "--duration", "0", "-o", "x.svg"],
        &["report", "-o", "x.svg"],
        &["top", "--replay", "r.json", "--demo"],
        &["top", "--replay", "r.json", "--frequency", "99"],
        &["top", "--speed", "2"],
        &["top", "--replay", "r.json", "--speed", "0"],
        &["top", "--replay", "r.json", "--speed", "-1"],
        &["top", "--history", "0"],
        &["top", "--flame-seconds", "1e9"],
        &["top", "--frequency", "0"],
        &["--demo", "stat"],
        &["serve", "--listen", "localhost"],
        &["serve", "--listen", "1.2.3.4:99999"],
        &["serve", "--listen", "99999"],
        &["serve", "--listen", "evil.example:9464"],
        &["serve", "--listen", ""],
        &["serve", "--duration", "0"],
        &["serve", "--serve-budget", "0"],
        &["serve", "--serve-budget", "nan"],
        &["serve", "--speed", "2"],
        &["serve", "--replay", "r.json", "--speed", "0"],
        &["serve", "--replay", "r.json", "--speed", "nan"],
        &["serve", "--replay", "r.json", "--speed", "1001"],
        &["top", "--replay", "r.json", "--speed", "1e300"],
        &["top", "--replay", "r.json", "--speed", "-inf"],
        &["top", "--replay", "r.json", "--speed", "1e-320"],
        &["serve", "--replay", "r.json", "--demo"],
        &["serve", "--history", "0"],
        &["serve", "--history", "0.5"],
        &["serve", "--replay", "r.json", "--xdp-sketch", "lo"],
        &["top", "--replay", "r.json", "--no-bpf-stats"],
        &["top", "--replay", "r.json", "--transport", "ringbuf"],
        &["stat", "--by", "container"],
        &["stat", "--max-groups", "5"],
        &["stat", "--by", "cgroup", "--max-groups", "0"],
        &["stat", "--by", "cgroup", "--max-groups", "1001"],
        &["top", "--replay", "r.json", "--by", "cgroup"],
        &["serve", "--allow-host", "evil.example/x"],
        &["serve", "--allow-host", ""],
        &["serve-http", "--uid", "65534"],
        &["sketch"],
        &["sketch", "--iface", "lo", "--probability", "0"],
        &["sketch", "--iface", "lo", "--probability", "1.5"],
        &["sketch", "--iface", "lo", "--probability", "-0.1"],
        &["sketch", "--iface", "lo", "--rows", "0"],
        &["sketch", "--iface", "lo", "--rows", "9"],
        &["sketch", "--iface", "lo", "--columns", "1000"],
        &["sketch", "--iface", "lo", "--columns", "65536"],
        &["sketch", "--iface", "lo", "--top", "0"],
        &[
            "report", "a.json", "--diff", "b.json", "c.json", "-o", "x.svg",
        ],
    ] {
        assert!(parse(bad).is_err(), "{bad:?} accepted");
    }
}
