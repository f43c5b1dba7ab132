//! Times of day as people read them: the host's local time, not unix
//! seconds.

/// `ts` (unix seconds) as `HH:MM:SS` in the local time zone, with
/// `decimals` places of seconds (at most 3).
pub fn time_of_day(ts: f64, decimals: usize) -> String {
    let decimals = decimals.min(3);
    let whole = ts.floor();
    let fraction = ts - whole;
    let scale = 10f64.powi(decimals as i32);
    // Rounding the fraction may carry into the next second.
    let mut units = (fraction * scale).round();
    let mut seconds = whole as libc::time_t;
    if units >= scale {
        units -= scale;
        seconds += 1;
    }
    let (hour, minute, second) = local_hms(seconds);
    let mut text = format!("{hour:02}:{minute:02}:{second:02}");
    if decimals > 0 {
        text.push_str(&format!(".{:0width$}", units as u64, width = decimals));
    }
    text
}

/// Hours, minutes and seconds of `seconds` in the local time zone (UTC
/// where the C library cannot tell).
fn local_hms(seconds: libc::time_t) -> (i32, i32, i32) {
    // SAFETY: libc::tm is plain integers (and a pointer the C library
    // sets), for which all-zero bytes are a valid value.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: localtime_r writes only into `tm`, which outlives the call,
    // and reads only `seconds`; it returns null (and we fall back to UTC
    // arithmetic) for a time it cannot represent.
    let converted = unsafe { libc::localtime_r(&seconds, &mut tm) };
    if converted.is_null() {
        let day = seconds.rem_euclid(86_400) as i32;
        return (day / 3600, day / 60 % 60, day % 60);
    }
    (tm.tm_hour, tm.tm_min, tm.tm_sec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_of_day_in_the_local_zone() {
        // Whatever the zone, minutes and seconds of a whole-hour-offset
        // zone agree with UTC's, and the form is fixed.
        let text = time_of_day(1_700_000_000.25, 3);
        assert_eq!(text.len(), "HH:MM:SS.250".len(), "{text}");
        assert!(text.ends_with(":20.250"), "{text}");
        assert!(time_of_day(1_700_000_000.999_6, 3).ends_with(":21.000"));
        assert_eq!(time_of_day(1_700_000_000.4, 0).len(), "HH:MM:SS".len());
    }
}
