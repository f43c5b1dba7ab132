//! The values options take, and their parsers: each says in one line what
//! it takes.

use crate::model::{MAX_DURATION_S, MAX_INTERVAL_S, MIN_INTERVAL_S};
use crate::sketch::config as sketch_config;

/// Bits per second, or `None`: as fast as it goes (`--demo-rate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate(pub Option<u64>);

/// A number, or `off` (`--budget`, `--calibrate-every`): its own type, so
/// that clap takes `None` for a value rather than for an absent option.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OrOff(pub Option<f64>);

/// Longest history and flame graph window the live views (`top`, `serve`)
/// keep: memory grows with it (one snapshot, stacks included, per interval).
pub(super) const MAX_HISTORY_S: f64 = 3600.0;

pub(super) fn parse_seconds(text: &str, min: f64, max: f64) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds"))?;
    if !value.is_finite() || value < min || value > max {
        return Err(format!("must be between {min} and {max} seconds"));
    }
    Ok(value)
}

pub(super) fn parse_frequency(text: &str) -> Result<u64, String> {
    use crate::kernel::sampler::{MAX_FREQUENCY_HZ, MIN_FREQUENCY_HZ};
    let value: u64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a whole number of hertz"))?;
    if !(MIN_FREQUENCY_HZ..=MAX_FREQUENCY_HZ).contains(&value) {
        return Err(format!(
            "must be between {MIN_FREQUENCY_HZ} and {MAX_FREQUENCY_HZ} Hz"
        ));
    }
    Ok(value)
}

/// `off`, or what `number` makes of `text` (its errors say `off` is
/// taken too).
pub(super) fn or_off(
    text: &str,
    number: impl FnOnce(&str) -> Result<f64, String>,
) -> Result<OrOff, String> {
    if text == "off" {
        return Ok(OrOff(None));
    }
    number(text).map(|n| OrOff(Some(n)))
}

pub(super) fn parse_budget(text: &str) -> Result<OrOff, String> {
    use crate::model::{MAX_BUDGET_PERCENT, MIN_BUDGET_PERCENT};
    or_off(text, |text| match text.parse::<f64>() {
        Ok(percent) if (MIN_BUDGET_PERCENT..=MAX_BUDGET_PERCENT).contains(&percent) => Ok(percent),
        Ok(_) => Err(format!(
            "must be from {MIN_BUDGET_PERCENT} to {MAX_BUDGET_PERCENT} (percent of one CPU), or off"
        )),
        Err(_) => Err(format!("'{text}' is not a percentage (or off)")),
    })
}

pub(super) fn parse_calibrate_every(text: &str) -> Result<OrOff, String> {
    or_off(text, |text| {
        parse_seconds(text, MIN_INTERVAL_S, MAX_DURATION_S).map_err(|e| format!("{e} (or off)"))
    })
}

/// `serve --serve-budget`'s default, in percent of one CPU.
pub const DEFAULT_SERVE_BUDGET: f64 = 2.0;

pub(super) fn parse_serve_budget(text: &str) -> Result<f64, String> {
    use crate::model::{MAX_BUDGET_PERCENT, MIN_BUDGET_PERCENT};
    match text.parse::<f64>() {
        Ok(percent) if (MIN_BUDGET_PERCENT..=MAX_BUDGET_PERCENT).contains(&percent) => Ok(percent),
        Ok(_) => Err(format!(
            "must be from {MIN_BUDGET_PERCENT} to {MAX_BUDGET_PERCENT} (percent of one CPU)"
        )),
        Err(_) => Err(format!("'{text}' is not a percentage")),
    }
}

/// `--listen`: ADDR:PORT with an IP address or `localhost`, or a bare
/// port on 127.0.0.1. No other name: which address it would resolve to
/// is the resolver's choice, and netto says exactly where it listens.
pub(super) fn parse_listen(text: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::{Ipv4Addr, SocketAddr};
    if let Ok(address) = text.parse::<SocketAddr>() {
        return Ok(address);
    }
    let port = |digits: &str| {
        digits
            .parse::<u16>()
            .map_err(|_| format!("'{digits}' is not a port (0 to 65535)"))
    };
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port(text)?)));
    }
    match text.rsplit_once(':') {
        Some((host, digits)) if host.eq_ignore_ascii_case("localhost") => {
            Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port(digits)?)))
        }
        _ => Err(format!(
            "'{text}' is not ADDR:PORT (an IP address or localhost, and a port) or a PORT"
        )),
    }
}

pub(super) fn parse_host_name(text: &str) -> Result<String, String> {
    if crate::frontends::web::host_header::is_host_name(text) {
        Ok(text.to_owned())
    } else {
        Err(format!("'{text}' is not a host name"))
    }
}

/// Replay speeds: beyond the fastest, every pause is shorter than drawing
/// a frame, so `inf` (all at once) says what is meant; below the slowest,
/// one interval would outlast any session (and a pause must fit a
/// `Duration`).
pub const MIN_SPEED: f64 = 0.001;
pub const MAX_SPEED: f64 = 1000.0;

pub(super) fn parse_speed(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(speed) if speed == f64::INFINITY || (MIN_SPEED..=MAX_SPEED).contains(&speed) => {
            Ok(speed)
        }
        _ => Err(format!(
            "'{text}' is not a speed factor ({MIN_SPEED} to {MAX_SPEED}, or inf)"
        )),
    }
}

pub(super) fn parse_probability(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a probability"))?;
    sketch_config::Sampling::new(value).map_err(|e| e.to_string())?;
    Ok(value)
}

pub(super) fn parse_count(text: &str) -> Result<u32, String> {
    text.parse()
        .map_err(|_| format!("'{text}' is not a whole number"))
}

pub(super) fn parse_rows(text: &str) -> Result<u32, String> {
    sketch_config::check_rows(parse_count(text)?).map_err(|e| e.to_string())
}

pub(super) fn parse_columns(text: &str) -> Result<u32, String> {
    sketch_config::check_columns(parse_count(text)?).map_err(|e| e.to_string())
}

/// More flows than fit a terminal is a typo.
pub(super) const MAX_TOP: usize = 1000;

pub(super) fn parse_top(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(k) if (1..=MAX_TOP).contains(&k) => Ok(k),
        _ => Err(format!("must be a whole number from 1 to {MAX_TOP}")),
    }
}

pub(super) fn parse_interval(text: &str) -> Result<f64, String> {
    parse_seconds(text, MIN_INTERVAL_S, MAX_INTERVAL_S)
}

pub(super) fn parse_window(text: &str) -> Result<f64, String> {
    parse_seconds(text, 1.0, MAX_HISTORY_S)
}

/// The units a size may be given in.
pub(super) const SIZE_UNITS: [(&str, u64); 5] = [
    ("", 1),
    ("K", 1 << 10),
    ("M", 1 << 20),
    ("G", 1 << 30),
    ("T", 1 << 40),
];

pub(super) fn parse_size(text: &str) -> Result<u64, String> {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &text[digits.len()..];
    let unit = unit
        .strip_suffix("iB")
        .filter(|u| !u.is_empty())
        .unwrap_or(unit);
    let scale = SIZE_UNITS
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(unit))
        .map(|&(_, scale)| scale);
    match (digits.parse::<u64>(), scale) {
        (Ok(n), Some(scale)) if n > 0 => n
            .checked_mul(scale)
            .ok_or_else(|| format!("'{text}' is more bytes than 2^64")),
        _ => Err(format!(
            "'{text}' is not a size in bytes (a whole number above 0, optionally with K, M, G or T)"
        )),
    }
}

/// Bits per second (`--demo-rate`): a number with k, M or G (powers of
/// 1000, as network rates go), or `max`.
pub(super) fn parse_rate(text: &str) -> Result<Rate, String> {
    const MIN: f64 = 1e6;
    const MAX: f64 = 1e12;
    if text == "max" {
        return Ok(Rate(None));
    }
    let (number, scale) = match text.char_indices().last() {
        Some((at, 'k' | 'K')) => (&text[..at], 1e3),
        Some((at, 'M')) => (&text[..at], 1e6),
        Some((at, 'G')) => (&text[..at], 1e9),
        _ => (text, 1.0),
    };
    match number.parse::<f64>().map(|n| n * scale) {
        Ok(bits) if (MIN..=MAX).contains(&bits) => Ok(Rate(Some(bits as u64))),
        Ok(_) => Err("must be from 1M to 1000G bits per second, or max".to_owned()),
        Err(_) => Err(format!(
            "'{text}' is not a rate (bits per second with k, M or G, such as 500M), or max"
        )),
    }
}

pub(super) fn parse_duration(text: &str) -> Result<f64, String> {
    let value = parse_seconds(text, 0.0, MAX_DURATION_S)?;
    if value == 0.0 {
        return Err(format!(
            "must be between 0 and {MAX_DURATION_S} seconds, exclusive of 0"
        ));
    }
    Ok(value)
}
