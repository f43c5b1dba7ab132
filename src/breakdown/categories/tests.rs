use super::*;

#[test]
fn skid_is_where_interrupts_come_back_on() {
    for name in [
        "_raw_spin_unlock_irqrestore",
        "_raw_spin_unlock_irq",
        "handle_softirqs",
        "finish_task_switch.isra.0",
    ] {
        assert!(is_skid(name), "{name}");
    }
    for name in [
        "_raw_spin_unlock",
        "_raw_spin_lock_irqsave",
        "tcp_sendmsg",
        "finish_task",
    ] {
        assert!(!is_skid(name), "{name}");
    }
}

#[test]
fn no_row_is_shadowed() {
    let mut seen = std::collections::HashSet::new();
    for &(pattern, expected) in RULES {
        if let Exact(name) = pattern {
            assert!(seen.insert(name), "{name} listed twice");
            assert_eq!(action(name), Some(expected), "{name}");
        }
    }
    for (i, &(pattern, expected)) in RULES.iter().enumerate() {
        assert!(!pattern.text().is_empty(), "row {i} matches everything");
        let example = match pattern {
            Exact(_) => continue,
            Prefix(p) => format!("{p}zz"),
            Suffix(p) => format!("zz{p}"),
            Contains(p) => format!("zz{p}zz"),
        };
        let first = RULES[..i]
            .iter()
            .find(|(p, _)| !matches!(p, Exact(_)) && p.matches(&example));
        assert!(
            first.is_none(),
            "row {i} ({pattern:?}) is shadowed by {first:?}"
        );
        assert_eq!(action(&example), Some(expected), "{example}");
    }
}

#[test]
fn hook_functions_are_listed_stages() {
    for &(name, hook) in HOOKS {
        assert!(action(name).is_some(), "{name} matches no row");
        assert!(hook.name().starts_with("netfilter_"), "{name}");
    }
}

#[test]
fn exact_beats_pattern_and_suffixes_are_ignored() {
    assert_eq!(action("sch_handle_ingress"), Some(Is(Tc)));
    assert_eq!(action("sch_direct_xmit"), Some(Is(Qdisc)));
    assert_eq!(action("tcp_write_xmit"), Some(Is(TcpOutput)));
    assert_eq!(action("br_dev_xmit"), Some(Is(Bridge)));
    assert_eq!(action("br_nf_pre_routing"), Some(Netfilter));
    assert_eq!(action("nf_conntrack_in"), Some(Is(Conntrack)));
    assert_eq!(action("nf_nat_ipv4_fn"), Some(Netfilter));
    assert_eq!(action("tcp_ack.isra.0"), Some(Is(LocalTcp)));
    assert_eq!(action("mlx5e_napi_poll"), Some(Is(DriverNapi)));
    assert_eq!(action("tcp4_gro_receive"), Some(Is(Gro)));
    assert_eq!(action("kmem_cache_alloc_node"), None);
}
