//! How numbers read on screen. One place, so the same quantity looks the
//! same in every panel and tests can compute the text they expect.

/// A percentage with one decimal place, or two below 1% so that small but
/// real costs do not read as zero.
pub fn percent(value: f64) -> String {
    if value != 0.0 && value.abs() < 1.0 {
        format!("{value:.2}%")
    } else {
        format!("{value:.1}%")
    }
}

/// A duration in the largest unit that keeps it above 1.
pub fn duration_ns(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.1} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// A count or a rate with a k/M/G suffix.
pub fn quantity(value: f64) -> String {
    if value >= 1e9 {
        format!("{:.1}G", value / 1e9)
    } else if value >= 1e6 {
        format!("{:.1}M", value / 1e6)
    } else if value >= 1e4 {
        format!("{:.1}k", value / 1e3)
    } else {
        format!("{value:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readable_numbers() {
        assert_eq!(percent(12.345), "12.3%");
        assert_eq!(percent(0.123), "0.12%");
        assert_eq!(percent(0.0), "0.0%");
        assert_eq!(duration_ns(999.0), "999 ns");
        assert_eq!(duration_ns(1_500.0), "1.5 µs");
        assert_eq!(duration_ns(2_340_000.0), "2.3 ms");
        assert_eq!(duration_ns(3e9), "3.00 s");
        assert_eq!(quantity(950.4), "950");
        assert_eq!(quantity(12_345.0), "12.3k");
        assert_eq!(quantity(2_500_000.0), "2.5M");
        assert_eq!(quantity(3.4e9), "3.4G");
    }
}
