//! The start-up self-check of a backend: netto makes one socket call of
//! each kind on loopback and asks the loaded programs whether each opened a
//! window. Function hooks differ between kernels (inlined, renamed, bypassed
//! by a new call path), so this is the only way to know the fentry backend
//! sees everything before trusting its numbers.

use serde::Serialize;

use super::accounting::Accounting;
use super::functions::SocketFunctions;
use super::KernelError;
use crate::workload::traffic::each_call::{LoopbackPair, SocketCall};

/// Whether the backend saw one kind of call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallSeen {
    pub call: &'static str,
    /// `send` or `recv`.
    pub window: &'static str,
    pub seen: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SelfCheck {
    pub backend: &'static str,
    pub calls: Vec<CallSeen>,
    /// Socket functions hooked (fentry backend).
    pub functions: SocketFunctions,
}

impl SelfCheck {
    /// The calls the backend did not see.
    pub fn missed(&self) -> Vec<&'static str> {
        self.calls
            .iter()
            .filter(|c| !c.seen)
            .map(|c| c.call)
            .collect()
    }

    pub fn complete(&self) -> bool {
        self.calls.iter().all(|c| c.seen)
    }

    /// One line: what is hooked and what was seen.
    pub fn summary(&self) -> String {
        let seen = self.calls.iter().filter(|c| c.seen).count();
        let mut text = format!("saw {seen} of {} kinds of socket call", self.calls.len());
        if !self.complete() {
            text.push_str(&format!(" (missed {})", self.missed().join(", ")));
        }
        if !self.functions.send.is_empty() || !self.functions.recv.is_empty() {
            text.push_str(&format!(
                "; hooks {}",
                [&self.functions.send[..], &self.functions.recv[..]]
                    .concat()
                    .join(", ")
            ));
        }
        text
    }
}

/// Runs the check on loaded programs, from the calling thread.
pub fn run(accounting: &mut Accounting<'_>) -> Result<SelfCheck, KernelError> {
    let failed = |e: std::io::Error| KernelError::SelfCheck(e.to_string());
    let pair = LoopbackPair::new().map_err(failed)?;
    // SAFETY: gettid has no preconditions.
    let tid = u32::try_from(unsafe { libc::gettid() }).unwrap_or(0);
    let mut calls = Vec::new();
    for call in SocketCall::all() {
        accounting.watch_thread(tid);
        pair.call(call).map_err(|e| {
            KernelError::SelfCheck(format!("{} on loopback failed: {e}", call.name()))
        })?;
        let (send, recv) = accounting.windows_seen();
        let (window, seen) = match call {
            SocketCall::Send(_) => ("send", send > 0),
            SocketCall::Recv(_) => ("recv", recv > 0),
        };
        calls.push(CallSeen {
            call: call.name(),
            window,
            seen,
        });
    }
    accounting.watch_thread(0);
    Ok(SelfCheck {
        backend: accounting.backend().name(),
        calls,
        functions: accounting.socket_functions().clone(),
    })
}
