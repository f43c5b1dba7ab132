//! How the terminal front ends (`stat`, `top`) write an estimate's
//! calibration, so the two read alike; the web page writes the same words
//! in web/app.js.

use crate::model::Calibration;

/// `calibrated 0.78 +-0.04, 3 min ago` for an estimate in the snapshot
/// ending at `ts` that its calibration corrected (its estimate over exact
/// time; the estimate shown is divided by it), `calibration 0.78 +-0.30
/// (not applied), ...` for one that rests on too few samples or comes from
/// a recording made before calibrations were applied.
pub fn calibration(c: &Calibration, ts: f64) -> String {
    let (word, applied) = if c.applied {
        ("calibrated", "")
    } else {
        ("calibration", " (not applied)")
    };
    format!(
        "{word} {:.2} +-{:.2}{applied}, {} ago",
        c.agreement,
        c.error(),
        age(c.age_s(ts))
    )
}

/// Seconds, minutes or hours: whole units a reader compares at a glance.
fn age(seconds: f64) -> String {
    if seconds < 90.0 {
        format!("{seconds:.0} s")
    } else if seconds < 90.0 * 60.0 {
        format!("{:.0} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_carries_the_error_and_the_age_in_readable_units() {
        let c = Calibration {
            agreement: 0.784,
            samples: 400,
            ts: 1000.0,
            ..Default::default()
        };
        assert_eq!(
            calibration(&c, 1001.0),
            "calibration 0.78 +-0.04 (not applied), 1 s ago"
        );
        let applied = Calibration {
            agreement_error: Some(0.1),
            applied: true,
            ..c
        };
        assert_eq!(
            calibration(&applied, 1001.0),
            "calibrated 0.78 +-0.10, 1 s ago"
        );
        assert!(calibration(&c, 1000.0 + 600.0).ends_with(", 10 min ago"));
        assert!(calibration(&c, 1000.0 + 3.0 * 3600.0).ends_with(", 3.0 h ago"));
        // A clock that stepped back reads as no age, not a negative one.
        assert!(calibration(&c, 999.0).ends_with(", 0 s ago"));
    }
}
