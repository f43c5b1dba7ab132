//! Kernel symbols' addresses by name, asked of the kernel one name at a
//! time (bpf/lookup.bpf.c, run with BPF_PROG_TEST_RUN). The accounting
//! needs the network callbacks' addresses before it loads; finding them in
//! /proc/kallsyms means the kernel formats every symbol it has, and the
//! symbolizer reads the whole file once more after load. The kernel's own
//! lookup answers a dozen names for the price of loading one small program.
//! Its helper came in Linux 5.16; on older kernels [`addresses`] fails and
//! the caller reads kallsyms instead.

use std::mem::MaybeUninit;

use libbpf_rs::{OpenObject, ProgramInput};

use super::skel;
use super::skel::lookup::LookupSkelBuilder;
use super::KernelError;
use crate::abi::{bytes_of, netto_symbol_lookup, read_from, NETTO_SYMBOL_NAME_LEN};

/// What the kernel answered for the names asked, in their order. Holds
/// addresses, so it has no `Debug` (they never reach any output).
pub struct Addresses {
    /// Each name's address; `None` when the kernel has no such symbol or
    /// hides addresses.
    pub found: Vec<Option<u64>>,
    /// Addresses are hidden from this process (kernel.kptr_restrict).
    pub hidden: bool,
}

/// The addresses of `names`. A name too long to ask is one the kernel is
/// taken not to have.
pub fn addresses(names: &[&str]) -> Result<Addresses, KernelError> {
    let mut storage = MaybeUninit::<OpenObject>::uninit();
    let (loaded, ()) = skel::load::<LookupSkelBuilder, _, _>(
        &mut storage,
        |source| KernelError::Load {
            what: "the symbol lookup",
            source,
        },
        |_| Ok(()),
    )?;
    let program = &loaded.progs.netto_lookup_symbol;
    let mut found = Vec::with_capacity(names.len());
    let mut hidden = false;
    for name in names {
        let mut asked = netto_symbol_lookup::default();
        if name.len() >= NETTO_SYMBOL_NAME_LEN as usize || name.contains('\0') {
            found.push(None);
            continue;
        }
        for (to, from) in asked.name.iter_mut().zip(name.bytes()) {
            *to = from as _;
        }
        let mut context = bytes_of(&asked).to_vec();
        let verdict = program
            .test_run(ProgramInput {
                context_in: Some(&mut context),
                ..Default::default()
            })
            .map_err(|source| KernelError::Load {
                what: "a symbol's address (running the lookup)",
                source,
            })?
            .return_value as i32;
        let answer = read_from::<netto_symbol_lookup>(&context).unwrap_or_default();
        match verdict {
            0 => found.push(Some(answer.address)),
            e if e == -libc::ENOENT => found.push(None),
            e if e == -libc::EPERM => {
                hidden = true;
                found.push(None);
            }
            e => {
                return Err(KernelError::Load {
                    what: "a symbol's address (the kernel's answer)",
                    source: libbpf_rs::Error::from_raw_os_error(-e),
                })
            }
        }
    }
    Ok(Addresses { found, hidden })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::callbacks::NETWORK_CALLBACKS;
    use crate::symbols::kallsyms::Kallsyms;

    /// The kernel's answers are what /proc/kallsyms lists, for the
    /// callbacks (some absent from any one kernel), a symbol every kernel
    /// has, and names no kernel has.
    #[test]
    fn the_kernel_answers_as_kallsyms_lists() {
        let mut names: Vec<&str> = NETWORK_CALLBACKS.iter().map(|(name, _)| *name).collect();
        let long = "x".repeat(80);
        names.extend(["schedule", "netto_no_such_symbol", &long]);
        let asked = addresses(&names).expect("the lookup program runs on this kernel");
        let listed = Kallsyms::load(&names).unwrap();
        assert!(!asked.hidden && !listed.addresses_hidden());
        for (name, address) in names.iter().zip(&asked.found) {
            assert!(
                *address == listed.address_of(name),
                "{name}: the lookup and kallsyms differ"
            );
        }
        assert!(asked.found[names.len() - 3].is_some(), "schedule");
        assert_eq!(asked.found[names.len() - 2..], [None, None]);
        assert!(
            asked.found.iter().filter(|a| a.is_some()).count() > NETWORK_CALLBACKS.len() / 2,
            "most callbacks are in any kernel"
        );
    }
}
