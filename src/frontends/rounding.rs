//! How an estimate reads: to the precision its error allows, no finer. A
//! value of 57.57 % with an error of 7.6 % reads `~58`, not `~57.57`.
//! stat and top write estimates with these functions; the web page
//! follows the same rule in web/app.js (`decimalsFor`).

/// Decimal places that show `error` to one significant digit, or two when
/// that digit is a 1 (0.15 would otherwise round to 0.2, a third more).
/// Negative: the error is tens or more, and so is the rounding. `None` for
/// no error (0, or not a number): the caller keeps its usual precision.
pub fn decimals_for(error: f64) -> Option<i32> {
    if !(error.is_finite() && error > 0.0) {
        return None;
    }
    let magnitude = error.log10().floor();
    let leading = (error / 10f64.powf(magnitude)).floor();
    let places = -(magnitude as i32);
    Some(if leading < 2.0 { places + 1 } else { places })
}

/// `value` rounded to `decimals` places (negative: to tens, hundreds),
/// written with no more places than that.
pub fn fixed(value: f64, decimals: i32) -> String {
    if decimals >= 0 {
        return format!("{value:.*}", decimals as usize);
    }
    let step = 10f64.powi(-decimals);
    format!("{:.0}", (value / step).round() * step)
}

/// `value` and its `error`, both to the error's precision; at most
/// `max_decimals` places, which is also the precision without an error.
pub fn with_error(value: f64, error: f64, max_decimals: i32) -> (String, String) {
    let decimals = decimals_for(error).map_or(max_decimals, |d| d.min(max_decimals));
    (fixed(value, decimals), fixed(error, decimals))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_estimate_reads_to_its_errors_precision() {
        // The example: 57.57 % of one CPU with 76.3 ms of error in
        // a one-second interval (7.63 %).
        assert_eq!(with_error(57.57, 7.63, 2), ("58".into(), "8".into()));
        assert_eq!(with_error(575.7, 76.3, 3), ("580".into(), "80".into()));
        assert_eq!(with_error(3.0, 1.5, 3), ("3.0".into(), "1.5".into()));
        assert_eq!(with_error(0.3, 0.15, 2), ("0.30".into(), "0.15".into()));
        assert_eq!(
            with_error(12.3456, 0.03, 2),
            ("12.35".into(), "0.03".into())
        );
        // Never finer than the caller's own precision, and that precision
        // where there is no error to go by.
        assert_eq!(
            with_error(12.3456, 0.0004, 2),
            ("12.35".into(), "0.00".into())
        );
        assert_eq!(with_error(12.3456, 0.0, 1), ("12.3".into(), "0.0".into()));
        assert_eq!(decimals_for(f64::NAN), None);
        assert_eq!(decimals_for(-1.0), None);
        assert_eq!(decimals_for(1.0), Some(1));
        assert_eq!(decimals_for(9.9), Some(0));
        assert_eq!(decimals_for(250.0), Some(-2));
        assert_eq!(fixed(1234.0, -2), "1200");
    }
}
