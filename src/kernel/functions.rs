//! The kernel socket functions the fentry backend hooks. The candidates are
//! declared once, in bpf/window_functions.h; their program names say what
//! each does (`netto_send_X`, `netto_recv_X`, `netto_exit_X`) and their
//! sections where it attaches, so this side reads both from the object
//! instead of keeping a second list.

use libbpf_rs::btf::types::Func;
use libbpf_rs::Btf;
use serde::Serialize;

use super::KernelError;

/// What entering a hooked function means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Opens a send window.
    Send,
    /// Opens a receive window.
    Recv,
    /// The return of a function whose entry opened a window.
    Exit,
}

/// One fentry/fexit program of the accounting object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionHook<'a> {
    pub function: &'a str,
    pub role: Role,
}

impl<'a> FunctionHook<'a> {
    /// The hook a program is, from its name and section; `None` for
    /// programs that are not socket-function hooks.
    pub fn from_program(name: &str, section: &'a str) -> Option<FunctionHook<'a>> {
        let function = section
            .strip_prefix("fentry/")
            .or_else(|| section.strip_prefix("fexit/"))?;
        let role = if name.starts_with("netto_send_") {
            Role::Send
        } else if name.starts_with("netto_recv_") {
            Role::Recv
        } else if name.starts_with("netto_exit_") {
            Role::Exit
        } else {
            return None;
        };
        Some(FunctionHook { function, role })
    }
}

/// Whether the running kernel has `name` as a function of its own in BTF;
/// inlined functions have no entry and cannot be hooked.
pub fn function_exists(btf: &Btf<'_>, name: &str) -> bool {
    btf.type_by_name::<Func<'_>>(name).is_some()
}

/// Which candidates the fentry backend hooks on this kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SocketFunctions {
    /// Hooked functions, by the window they open.
    pub send: Vec<String>,
    pub recv: Vec<String>,
    /// Candidates this kernel does not have (not in BTF: absent or inlined).
    pub absent: Vec<String>,
}

impl SocketFunctions {
    pub fn note(&mut self, hook: &FunctionHook<'_>, present: bool) {
        let list = match (present, hook.role) {
            (false, Role::Exit) | (true, Role::Exit) => return,
            (false, _) => &mut self.absent,
            (true, Role::Send) => &mut self.send,
            (true, Role::Recv) => &mut self.recv,
        };
        list.push(hook.function.to_owned());
    }

    /// Both directions need at least one hook; the self-check then tells
    /// whether the hooks cover every kind of call.
    pub fn check_complete(&self) -> Result<(), KernelError> {
        if self.send.is_empty() || self.recv.is_empty() {
            return Err(KernelError::Unavailable {
                backend: "fentry",
                problem: format!(
                    "no socket {} function to hook in this kernel's BTF; absent: {}",
                    if self.send.is_empty() {
                        "send"
                    } else {
                        "receive"
                    },
                    self.absent.join(", ")
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_names_and_sections_say_what_a_hook_does() {
        assert_eq!(
            FunctionHook::from_program("netto_send___sock_sendmsg", "fentry/__sock_sendmsg"),
            Some(FunctionHook {
                function: "__sock_sendmsg",
                role: Role::Send
            })
        );
        assert_eq!(
            FunctionHook::from_program("netto_exit_sock_recvmsg", "fexit/sock_recvmsg")
                .unwrap()
                .role,
            Role::Exit
        );
        assert_eq!(
            FunctionHook::from_program("netto_sys_enter", "tp_btf/sys_enter"),
            None
        );
        assert_eq!(FunctionHook::from_program("other", "fentry/x"), None);
    }

    #[test]
    fn a_direction_without_hooks_is_an_error() {
        let mut functions = SocketFunctions::default();
        let hook = |function, role| FunctionHook { function, role };
        functions.note(&hook("__sock_sendmsg", Role::Send), false);
        functions.note(&hook("sock_sendmsg", Role::Send), true);
        functions.note(&hook("sock_sendmsg", Role::Exit), true);
        assert!(functions.check_complete().is_err());
        functions.note(&hook("sock_recvmsg", Role::Recv), true);
        functions.check_complete().unwrap();
        assert_eq!(functions.send, ["sock_sendmsg"]);
        assert_eq!(functions.absent, ["__sock_sendmsg"]);
    }
}
