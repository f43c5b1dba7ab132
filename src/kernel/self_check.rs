//! The start-up self-check of a backend: one socket call of each kind is
//! made on loopback, and the loaded programs are asked whether each opened
//! a window. Function hooks differ between kernels (inlined, renamed,
//! bypassed by a new call path), so this is the only way to know the fentry
//! backend sees everything before trusting its numbers. The calls come from
//! the command that measures ([`ProbeTraffic`]): the kernel layer makes no
//! traffic of its own.

use std::io;

use serde::Serialize;

use super::accounting::Accounting;
use super::functions::SocketFunctions;
use super::KernelError;

/// The window a socket call opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    Send,
    Recv,
}

impl Window {
    pub fn name(self) -> &'static str {
        match self {
            Window::Send => "send",
            Window::Recv => "recv",
        }
    }
}

/// One kind of socket call, as the self-check reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeCall {
    pub name: &'static str,
    pub window: Window,
}

/// The self-check's traffic: one call of every kind of socket call netto
/// accounts.
pub trait ProbeTraffic {
    /// Makes each call once, in turn, from the calling thread, and tells
    /// `made` of each as soon as it returns (before the next is made). An
    /// error names the call that failed.
    fn each_call(&self, made: &mut dyn FnMut(ProbeCall)) -> io::Result<()>;
}

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
}

/// Runs the check on loaded programs with `traffic`'s calls, from the
/// calling thread.
pub fn run(
    accounting: &mut Accounting<'_>,
    traffic: &dyn ProbeTraffic,
) -> Result<SelfCheck, KernelError> {
    // SAFETY: gettid has no preconditions.
    let tid = u32::try_from(unsafe { libc::gettid() }).unwrap_or(0);
    let mut calls = Vec::new();
    accounting.watch_thread(tid);
    let made = traffic.each_call(&mut |call| {
        let (send, recv) = accounting.windows_seen();
        calls.push(CallSeen {
            call: call.name,
            window: call.window.name(),
            seen: match call.window {
                Window::Send => send > 0,
                Window::Recv => recv > 0,
            },
        });
        accounting.watch_thread(tid);
    });
    accounting.watch_thread(0);
    made.map_err(|e| KernelError::SelfCheck(e.to_string()))?;
    Ok(SelfCheck {
        backend: accounting.backend().name(),
        calls,
        functions: accounting.socket_functions().clone(),
    })
}
