//! Attribution's delivery points (`bpf/attribute.bpf.c`): where the kernel
//! says, inside a softirq, whom its work is for. Loaded beside the
//! accounting, sharing its per-CPU record and group map, and attached or
//! detached at run time with the accounting's switch, so attribution is a
//! knob that costs nothing while off. Each point is optional: a kernel
//! without one leaves what it would have claimed unattributed, and
//! [`POINTS`](super::tracepoints::POINTS) says what that is.

use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, Skel};
use libbpf_rs::{Btf, Link, OpenObject};

use super::accounting::Accounting;
use super::skel;
use super::skel::attribute::{AttributeSkel, AttributeSkelBuilder};
use super::tracepoints::{missing_points, Point};
use super::KernelError;
use crate::abi::netto_group_key;

/// A group map key as Rust compares it (the group map's, and a stack
/// sample's: whom the sampled work was for).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub cgroup: u64,
    pub tgid: u32,
    pub netns: u32,
}

impl From<&netto_group_key> for Key {
    fn from(k: &netto_group_key) -> Key {
        Key {
            cgroup: k.cgroup,
            tgid: k.tgid,
            netns: k.netns,
        }
    }
}

impl From<Key> for netto_group_key {
    fn from(k: Key) -> netto_group_key {
        netto_group_key {
            cgroup: k.cgroup,
            tgid: k.tgid,
            netns: k.netns,
        }
    }
}

impl Key {
    /// The key a sample carries: none when the BPF side left it empty
    /// (attribution off, or no delivery point yet; every real key has a
    /// network namespace).
    pub fn of_sample(k: &netto_group_key) -> Option<Key> {
        (k.netns != 0).then(|| Key::from(k))
    }
}

/// The loaded delivery points, attached while attribution is on.
pub struct Points<'obj> {
    skel: AttributeSkel<'obj>,
    links: Vec<Link>,
    missing: Vec<&'static Point>,
}

impl<'obj> Points<'obj> {
    /// Loads the points this kernel has, sharing `accounting`'s maps;
    /// attaches nothing.
    pub fn load(
        storage: &'obj mut MaybeUninit<OpenObject>,
        accounting: &Accounting<'_>,
    ) -> Result<Self, KernelError> {
        let load_err = |source| KernelError::Load {
            what: "the attribution programs",
            source,
        };
        let btf = Btf::from_vmlinux().map_err(KernelError::NoBtf)?;
        let missing = missing_points(&btf);
        let (skel, ()) = skel::load::<AttributeSkelBuilder, _, _>(storage, load_err, |open| {
            open.maps
                .cpus
                .reuse_fd(accounting.cpus_map())
                .map_err(load_err)?;
            open.maps
                .groups
                .reuse_fd(accounting.groups_map())
                .map_err(load_err)?;
            for mut prog in open.open_object_mut().progs_mut() {
                let name = prog.name().to_string_lossy().into_owned();
                let absent = missing.iter().any(|point| point.program == name);
                prog.set_autoload(!absent);
            }
            Ok(())
        })?;
        Ok(Points {
            skel,
            links: Vec::new(),
            missing,
        })
    }

    /// Attaches (on) or detaches (off) every point and sets the
    /// accounting's switch to match: off, nothing runs but the marks the
    /// accounting's hooks keep.
    pub fn switch(&mut self, accounting: &Accounting<'_>, on: bool) -> Result<(), KernelError> {
        if !on {
            accounting.set_attribution(false)?;
            self.links.clear();
            return Ok(());
        }
        if self.is_on() {
            return Ok(());
        }
        for prog in self.skel.object().progs_mut().filter(|p| p.autoload()) {
            let name = prog.name().to_string_lossy().into_owned();
            let link = prog
                .attach()
                .map_err(|source| KernelError::Attach { prog: name, source })?;
            self.links.push(link);
        }
        accounting.set_attribution(true)
    }

    pub fn is_on(&self) -> bool {
        !self.links.is_empty()
    }

    /// The delivery points this kernel lacks: what each would have claimed
    /// stays unattributed.
    pub fn missing(&self) -> &[&'static Point] {
        &self.missing
    }
}

#[cfg(test)]
mod tests {
    use libbpf_rs::skel::SkelBuilder;

    use super::*;
    use crate::kernel::tracepoints::POINTS;

    #[test]
    fn every_point_is_a_program_of_the_object() {
        let mut storage = MaybeUninit::uninit();
        let open = AttributeSkelBuilder::default().open(&mut storage).unwrap();
        let programs: Vec<String> = open
            .open_object()
            .progs()
            .map(|p| p.name().to_string_lossy().into_owned())
            .collect();
        for point in POINTS {
            assert!(programs.iter().any(|p| p == point.program), "{point:?}");
        }
        assert_eq!(programs.len(), POINTS.len(), "a program without a row");
    }
}
