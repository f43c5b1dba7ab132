//! The breakdown and the sampled stacks: shares, sums a sampler could
//! take, and frames that are names (never a kernel address).

use super::{check_seconds, check_share, checked_sum, OVERFLOW};
use crate::kernel::sampler::MAX_FREQUENCY_HZ;
use crate::model::{Snapshot, StackCount};
use crate::recording::{invalid, Invalid};

/// Each context's categories add up to it, and all contexts together to
/// no more samples than the sampler can take.
pub(super) fn check_breakdown(at: &str, s: &Snapshot, most_samples: f64) -> Result<(), Invalid> {
    check_samples(
        &format!("{at}.breakdown"),
        s.breakdown.iter().map(|b| b.samples),
        most_samples,
        s.cpus,
    )?;
    let mut seen = Vec::new();
    for (j, breakdown) in s.breakdown.iter().enumerate() {
        let at = format!("{at}.breakdown[{j}]");
        if seen.contains(&breakdown.context) {
            return Err(invalid(
                format!("{at}.context"),
                format!("{} appears twice", breakdown.context.name()),
            ));
        }
        seen.push(breakdown.context);
        if let Some(agreement) = breakdown.agreement {
            check_seconds(&format!("{at}.agreement"), agreement, f64::MAX)?;
        }
        for (k, category) in breakdown.categories.iter().enumerate() {
            check_share(&format!("{at}.categories[{k}].share"), category.share)?;
        }
        let categories = &breakdown.categories;
        let overflow = || invalid(format!("{at}.categories"), OVERFLOW);
        let samples = checked_sum(0, categories.iter().map(|c| c.samples)).ok_or_else(overflow)?;
        let cpu_ns = checked_sum(0, categories.iter().map(|c| c.cpu_ns)).ok_or_else(overflow)?;
        if samples != breakdown.samples {
            return Err(invalid(
                format!("{at}.samples"),
                format!(
                    "{} is not the sum of its categories' samples ({samples})",
                    breakdown.samples
                ),
            ));
        }
        let event_ns = s.event(breakdown.context.event()).total_ns;
        if cpu_ns > event_ns {
            return Err(invalid(
                format!("{at}.categories"),
                format!(
                    "cpu_ns add up to {cpu_ns}, more than {}'s {event_ns}",
                    breakdown.context.event().name()
                ),
            ));
        }
    }
    Ok(())
}

pub(super) fn check_stacks(at: &str, s: &Snapshot, most_samples: f64) -> Result<(), Invalid> {
    for (j, stack) in s.stacks.iter().enumerate() {
        for (k, frame) in stack.frames.iter().enumerate() {
            if let Some(problem) = frame_problem(frame) {
                return Err(invalid(format!("{at}.stacks[{j}].frames[{k}]"), problem));
            }
        }
        check_stack_cpus(&format!("{at}.stacks[{j}]"), stack, s.cpus)?;
        check_stack_group(&format!("{at}.stacks[{j}].group"), stack, s)?;
    }
    check_samples(
        &format!("{at}.stacks"),
        s.stacks.iter().map(|stack| stack.count),
        most_samples,
        s.cpus,
    )
}

/// Samples that add up to no more than the sampler can take in the
/// interval (`most`, on `cpus` CPUs).
fn check_samples(
    at: &str,
    counts: impl Iterator<Item = u64>,
    most: f64,
    cpus: usize,
) -> Result<(), Invalid> {
    let samples = checked_sum(0, counts).ok_or_else(|| invalid(at, OVERFLOW))?;
    if samples as f64 > most {
        return Err(invalid(
            at,
            format!("{samples} samples, more than {MAX_FREQUENCY_HZ} Hz on {cpus} CPUs can take"),
        ));
    }
    Ok(())
}

/// A stack's group, when it has one, is a group of the snapshot's
/// attribution: its time is what a group's flame graph shares out.
fn check_stack_group(at: &str, stack: &StackCount, s: &Snapshot) -> Result<(), Invalid> {
    let Some(name) = &stack.group else {
        return Ok(());
    };
    let groups = s.attribution.as_ref().map_or(&[][..], |a| &a.groups[..]);
    if groups.iter().any(|g| &g.name == name) {
        return Ok(());
    }
    Err(invalid(at, "names no group of the snapshot's attribution"))
}

/// A stack's samples by CPU, when kept: CPUs the snapshot has, adding up
/// to the stack's count (the pprof writer splits time by them).
fn check_stack_cpus(at: &str, stack: &StackCount, cpus: usize) -> Result<(), Invalid> {
    if stack.cpus.is_empty() {
        return Ok(());
    }
    if let Some(cpu) = stack.cpus.keys().find(|&&cpu| cpu as usize >= cpus) {
        return Err(invalid(
            format!("{at}.cpus"),
            format!("CPU {cpu}, but the snapshot has {cpus} CPUs"),
        ));
    }
    let sum = stack
        .cpus
        .values()
        .try_fold(0u64, |sum, &n| sum.checked_add(n));
    if sum != Some(stack.count) {
        return Err(invalid(
            format!("{at}.cpus"),
            format!("do not add up to the count {}", stack.count),
        ));
    }
    Ok(())
}

/// What is wrong with a frame, if anything. Frames are function names:
/// never empty, no blank or `;` (the folded format's separators), no
/// control character, and no kernel address (a hexadecimal word of 12 or
/// more digits starting `ffff`, the kernel half of a 64-bit address
/// space, with or without `0x`).
pub(in crate::recording) fn frame_problem(frame: &str) -> Option<String> {
    if frame.is_empty() {
        return Some("empty".into());
    }
    if frame
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == ';')
    {
        return Some(format!(
            "{:?} holds a blank, a control character or ';'",
            frame
        ));
    }
    let address = frame
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map(|word| {
            word.strip_prefix("0x")
                .or_else(|| word.strip_prefix("0X"))
                .unwrap_or(word)
        })
        .any(|word| {
            word.len() >= 12
                && word[..4].eq_ignore_ascii_case("ffff")
                && word.bytes().all(|b| b.is_ascii_hexdigit())
        });
    address.then(|| "is a kernel address, which netto never records".into())
}
