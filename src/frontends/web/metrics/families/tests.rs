use super::*;
use crate::model::Losses;

#[test]
fn names_are_unique_and_only_counters_end_in_total() {
    let mut names = std::collections::BTreeSet::new();
    for family in FAMILIES {
        assert!(names.insert(family.name), "{} twice", family.name);
        assert!(family.name.starts_with("netto_"), "{}", family.name);
        assert_eq!(
            family.name.ends_with("_total"),
            family.kind == Kind::Counter,
            "{}",
            family.name
        );
    }
}

/// The help text names the kinds for a scrape's reader; the label's
/// values come from the model's table, so a new kind fails here until
/// the help says what it is.
#[test]
fn the_losses_help_names_every_kind() {
    for kind in &Losses::KINDS {
        assert!(LOSSES.help.contains(kind.name), "{}", kind.name);
    }
}

#[test]
fn each_group_family_is_in_the_table_and_names_its_by() {
    for by in GroupBy::ALL {
        let family = group_seconds(by);
        assert!(FAMILIES.iter().any(|f| f.name == family.name));
        assert!(
            family.help.contains(&format!("(--by {})", by.name())),
            "{}",
            family.name
        );
    }
}
