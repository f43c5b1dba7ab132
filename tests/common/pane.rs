//! `netto top` in a real terminal: a tmux window the tests type keys into
//! and read the screen of.

use std::path::PathBuf;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use super::NETTO;

/// A shell in a tmux window of its own tmux server, which is killed on
/// drop (and with it anything still running in the window). The server's
/// socket and the shell's working directory are one temporary directory,
/// removed on drop too.
pub struct Pane {
    socket: PathBuf,
    pub dir: tempfile::TempDir,
}

impl Pane {
    pub fn new(width: u16, height: u16) -> Pane {
        let dir = tempfile::tempdir().unwrap();
        let pane = Pane {
            socket: dir.path().join("tmux.socket"),
            dir,
        };
        pane.tmux(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            &width.to_string(),
            "-y",
            &height.to_string(),
            "env PS1='$ ' bash --norc --noprofile",
        ]);
        pane
    }

    pub fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux (scripts/install-deps.sh installs it)");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Types a command line into the shell, in the pane's directory. Then
    /// the shell prints `EXIT=status` (typed as `"EXIT""=`, so that the
    /// command line itself does not match) and saves the terminal modes.
    pub fn run_netto(&self, args: &str) {
        let line = format!(
            "cd {} && {NETTO} {args}; echo \"EXIT\"\"=$?\"; stty -a > stty.txt",
            self.dir.path().display()
        );
        self.tmux(&["send-keys", "-l", &line]);
        self.tmux(&["send-keys", "Enter"]);
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys"];
        args.extend(keys);
        self.tmux(&args);
    }

    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p"])
    }

    /// The screen once `done` holds for it; panics with the last screen.
    pub fn wait_for(&self, what: &str, timeout: Duration, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            if Instant::now() > deadline {
                panic!("no {what} within {timeout:?}; the screen:\n{screen}");
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// tmux's view of the terminal: alternate screen on, cursor visible.
    pub fn terminal_state(&self) -> (bool, bool) {
        let flags = self.tmux(&["display-message", "-p", "#{alternate_on} #{cursor_flag}"]);
        let flags: Vec<&str> = flags.split_whitespace().collect();
        (flags[0] == "1", flags[1] == "1")
    }

    pub fn netto_pid(&self) -> i32 {
        let shell = self.tmux(&["display-message", "-p", "#{pane_pid}"]);
        let shell = shell.trim();
        let children =
            std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).unwrap();
        children
            .split_whitespace()
            .next()
            .expect("netto runs under the shell")
            .parse()
            .unwrap()
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// After netto exits: its status within `timeout`, and the terminal as
    /// the shell found it (cooked mode, normal screen, cursor shown).
    pub fn assert_exits_and_restores(&self, timeout: Duration) {
        let started = Instant::now();
        let screen = self.wait_for("exit status", timeout, |s| s.contains("EXIT="));
        let took = started.elapsed();
        assert!(screen.contains("EXIT=0"), "{screen}");
        assert!(took < timeout, "exit took {took:?}");
        assert!(
            !screen.contains("events:"),
            "the UI is gone from the screen:\n{screen}"
        );
        let stty = self.wait_for_file("stty.txt");
        let words: Vec<&str> = stty.split_whitespace().collect();
        for mode in ["icanon", "echo", "isig", "icrnl", "opost"] {
            assert!(words.contains(&mode), "{mode} not restored: {stty}");
        }
        assert_eq!(
            self.terminal_state(),
            (false, true),
            "normal screen, cursor on"
        );
    }

    pub fn wait_for_file(&self, name: &str) -> String {
        let path = self.path(name);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            match std::fs::read_to_string(&path) {
                Ok(text) if !text.is_empty() => return text,
                _ => thread::sleep(Duration::from_millis(20)),
            }
        }
        panic!("{} never written", path.display());
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}
