use libbpf_rs::skel::SkelBuilder;

use super::*;

/// The program that ends what the program of `section` begins.
fn end_of(section: &str) -> Option<String> {
    if let Some(function) = section.strip_prefix("fentry/") {
        return Some(format!("fexit/{function}"));
    }
    [
        ("_entry", "_exit"),
        ("_start", "_end"),
        ("sys_enter", "sys_exit"),
    ]
    .iter()
    .find_map(|(begin, end)| Some(format!("{}{end}", section.strip_suffix(begin)?)))
}

#[test]
fn the_callback_table_is_its_section_whole() {
    let mut storage = MaybeUninit::uninit();
    let mut open = AccountSkelBuilder::default().open(&mut storage).unwrap();
    let table = netto_callback_table::default();
    open.maps
        .rodata_callbacks
        .set_initial_value(bytes_of(&table))
        .expect("the section is the size of the table");
    assert!(open
        .maps
        .rodata_callbacks
        .set_initial_value(&bytes_of(&table)[1..])
        .is_err());
}

#[test]
fn every_state_that_begins_is_ended_by_a_program_attached_before() {
    let mut storage = MaybeUninit::uninit();
    let open = AccountSkelBuilder::default().open(&mut storage).unwrap();
    let sections: Vec<String> = open
        .open_object()
        .progs()
        .map(|p| p.section().to_string_lossy().into_owned())
        .collect();
    let mut begins = 0;
    for section in &sections {
        let Some(end) = end_of(section) else {
            continue;
        };
        begins += 1;
        assert!(sections.contains(&end), "{section}: no {end}");
        assert!(!ends_a_state(section), "{section} attaches with the ends");
        assert!(ends_a_state(&end), "{end} attaches after {section}");
    }
    // softirq, device irq, 5 x86 vectors, 4 callback kinds, the
    // syscall window, and at least one socket function.
    assert!(begins >= 13, "{begins} programs begin a state");
    assert!(!ends_a_state("tp_btf/sched_switch"));
}
