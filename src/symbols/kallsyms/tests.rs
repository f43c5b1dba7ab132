use super::*;

const FIXTURE: &str = "\
ffffffff8202a140 T tcp_pace_kick
ffffffff8202d1e0 t tcp_write_timer
ffffffffc0a01000 t br_handle_frame\t[bridge]
ffffffff8202a140 T tcp_pace_kick_alias
";

const BASIC: &str = include_str!("../../../tests/fixtures/kallsyms/basic.txt");
const HIDDEN: &str = include_str!("../../../tests/fixtures/kallsyms/hidden.txt");

#[test]
fn resolves_kernel_and_module_symbols() {
    let syms = Kallsyms::parse(
        FIXTURE,
        &["tcp_pace_kick", "br_handle_frame", "missing", "tcp_pace"],
    );
    assert_eq!(syms.address_of("tcp_pace_kick"), Some(0xffffffff8202a140));
    assert_eq!(syms.address_of("br_handle_frame"), Some(0xffffffffc0a01000));
    assert_eq!(syms.address_of("missing"), None);
    assert!(!syms.contains("tcp_pace"), "a prefix is not the name");
    assert!(!syms.addresses_hidden());
}

/// Only asked names are kept: another one is absent, even when the
/// kernel has it.
#[test]
fn names_not_asked_for_are_not_kept() {
    let syms = Kallsyms::parse(FIXTURE, &["tcp_write_timer"]);
    assert!(syms.contains("tcp_write_timer"));
    assert!(!syms.contains("tcp_pace_kick"));
}

/// The kernel's own layout only: a line split another way is skipped,
/// not read with its fields shifted.
#[test]
fn lines_in_another_layout_are_skipped() {
    let text = "ffffffff8202a140  T tcp_pace_kick\nffffffff8202d1e0 tt tcp_write_timer\nffffffff8202d1f0 t \n";
    let syms = Kallsyms::parse(text, &["tcp_pace_kick", "tcp_write_timer"]);
    assert!(!syms.contains("tcp_pace_kick"));
    assert!(!syms.contains("tcp_write_timer"));
    assert!(!syms.addresses_hidden(), "no line read, so nothing hidden");
}

#[test]
fn detects_hidden_addresses() {
    let syms = Kallsyms::parse(
        "0000000000000000 T tcp_pace_kick\n0000000000000000 t x\n",
        &["tcp_pace_kick"],
    );
    assert!(syms.addresses_hidden());
    assert_eq!(syms.address_of("tcp_pace_kick"), None);
    assert!(syms.contains("tcp_pace_kick"));
}

#[test]
fn hidden_addresses_are_a_typed_error() {
    assert!(Kallsyms::parse(HIDDEN, &[]).addresses_hidden());
    assert!(matches!(
        SymbolTable::parse(HIDDEN),
        Err(KallsymsError::AddressesHidden)
    ));
}

#[test]
fn empty_input_is_an_empty_table_not_hidden() {
    let table = SymbolTable::parse("").unwrap();
    assert!(table.is_empty());
    assert_eq!(table.resolve(0xffffffff81000000), None);
}

fn table() -> SymbolTable {
    SymbolTable::parse(BASIC).unwrap()
}

#[test]
fn resolves_inside_and_at_the_start_of_functions() {
    let t = table();
    assert_eq!(t.resolve(0xffffffff81e66590), Some("__netif_receive_skb"));
    assert_eq!(t.resolve(0xffffffff81e665ef), Some("__netif_receive_skb"));
    assert_eq!(t.resolve(0xffffffff81e66600), Some("netif_receive_skb"));
    assert_eq!(t.resolve(0xffffffff81e66bd4), Some("weak_hook"));
    assert_eq!(t.resolve(0xffffffff83783020), Some("set_reset_devices"));
    assert_eq!(t.resolve(0xffffffff837f8910), None);
}

#[test]
fn compiler_suffixes_resolve_to_the_function() {
    let t = table();
    assert_eq!(
        t.resolve(0xffffffff81e64e70),
        Some("__netif_receive_skb_core")
    );
    assert_eq!(t.resolve(0xffffffff812439f8), Some("ip_forward_options"));
    assert_eq!(t.resolve(0xffffffff81a10010), Some("tcp_ack"));
    assert_eq!(t.resolve(0xffffffff81a20010), Some("skb_release_data"));
    assert_eq!(t.resolve(0xffffffff81a30010), Some("udp_queue_rcv_one_skb"));
    for raw in [
        "foo.isra.0",
        "foo.constprop.0",
        "foo.cold",
        "foo.part.0",
        "foo.constprop.0.isra.0",
        "foo.part.0.cold",
        "foo.llvm.16373950434580939011",
    ] {
        assert_eq!(normalize_name(raw), "foo", "{raw}");
    }
    assert_eq!(normalize_name("foo.bar"), "foo.bar");
    assert_eq!(normalize_name(".cold"), ".cold");
}

#[test]
fn padding_belongs_to_the_function_it_pads_and_is_never_a_name() {
    let t = table();
    assert_eq!(t.resolve(0xffffffff81dbcee0), Some("veth_poll"));
    assert_eq!(t.resolve(0xffffffff81dbcef4), Some("veth_poll"));
    for addr in [
        0xffffffff81000000u64,
        0xffffffff81e66580,
        0xffffffff81dca550,
    ] {
        assert!(!t.resolve(addr).unwrap_or("").starts_with("__pfx_"));
    }
}

#[test]
fn aliases_pick_one_name_deterministically() {
    let t = table();
    // `_stext`/`_text` are markers; of the functions the name without a
    // leading underscore wins, then the shortest, then the first in order.
    assert_eq!(
        t.resolve(0xffffffff81000004),
        Some("srso_alias_untrain_ret")
    );
    assert_eq!(t.resolve(0xffffffff81b00008), Some("sk_data_ready"));
    assert_eq!(t.resolve(0xffffffff81b10008), Some("alpha"));
    assert_eq!(t.resolve(0xffffffff81b20008), Some("__short"));
    let shuffled: String = BASIC.lines().rev().map(|l| format!("{l}\n")).collect();
    let again = SymbolTable::parse(&shuffled).unwrap();
    for addr in [
        0xffffffff81b00008u64,
        0xffffffff81b10008,
        0xffffffff81b20008,
    ] {
        assert_eq!(again.resolve(addr), t.resolve(addr));
    }
}

#[test]
fn module_symbols_resolve_and_end_at_a_cap() {
    let t = table();
    assert_eq!(t.resolve(0xffffffffc0a01010), Some("br_handle_frame"));
    assert_eq!(t.resolve(0xffffffffc0a03000), Some("br_forward"));
    assert_eq!(t.resolve(0xffffffffc0b00010), Some("nf_conntrack_in"));
    // Last symbol of nf_conntrack: up to the cap, then nothing.
    assert_eq!(
        t.resolve(0xffffffffc0b02000 + 100),
        Some("__nf_conntrack_confirm")
    );
    assert_eq!(t.resolve(0xffffffffc0b02000 + TAIL_CAP), None);
}

#[test]
fn addresses_beyond_the_end_are_unknown() {
    let t = table();
    // Last kernel function ends at `_etext`, not at the next symbol.
    assert_eq!(t.resolve(0xffffffff82209900), Some("last_text_function"));
    assert_eq!(t.resolve(0xffffffff82209988), None);
    assert_eq!(t.resolve(0xffffffff8220a000), None);
    // Data symbols bound the code before them but never resolve.
    assert_eq!(t.resolve(0xffffffff82400000), None);
    assert_eq!(t.resolve(0xffffffff80000000), None);
    assert_eq!(t.resolve(u64::MAX), None);
}

#[test]
fn bpf_programs_resolve_to_their_name() {
    let t = table();
    assert_eq!(t.resolve(0xffffffffa0001010), Some("xdp_pass_prog"));
    assert_eq!(t.resolve(0xffffffffa0002010), Some("tc_ingress"));
    assert_eq!(
        t.resolve(0xffffffffa0003010),
        Some("bpf_prog_0123456789abcdef")
    );
    assert_eq!(t.resolve(0xffffffffa0004010), Some("bpf_dispatcher_xdp"));
    assert_eq!(bpf_program_name("bpf_prog_0123456789abcdef_a.b"), "a.b");
    assert_eq!(bpf_program_name("bpf_prog_run_xdp"), "bpf_prog_run_xdp");
}

/// Read from a file, which stops once the answer is complete, the
/// answer is the one the whole text gives.
#[test]
fn a_file_gives_what_its_text_gives() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut file, BASIC.as_bytes()).unwrap();
    for names in [
        &[][..],
        &["veth_poll"],
        &["veth_poll", "br_forward", "no_such_function"],
    ] {
        let read = Kallsyms::from_file(file.path(), names).unwrap();
        let parsed = Kallsyms::parse(BASIC, names);
        assert_eq!(read.asked, parsed.asked, "{names:?}");
        assert_eq!(read.hidden, parsed.hidden);
    }
    let mut hidden = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut hidden, HIDDEN.as_bytes()).unwrap();
    assert!(Kallsyms::from_file(hidden.path(), &[])
        .unwrap()
        .addresses_hidden());
}

#[test]
fn debug_output_shows_no_address() {
    let shown = format!("{:?} {:?}", table(), Kallsyms::parse(BASIC, &["veth_poll"]));
    assert!(!shown.contains("ffff"), "{shown}");
    assert!(
        !shown.contains(&0xffffffff81000000u64.to_string()),
        "{shown}"
    );
}
