//! Owning the terminal: raw mode, the alternate screen and a hidden
//! cursor while the UI runs, and the terminal as it was afterwards,
//! whichever way the run ends: a normal return or an error (the guard is
//! dropped), a panic (a hook restores before the message is printed, so
//! it is readable), or a signal (the command turns it into a normal
//! return, or, on a second one, calls [`give_back`] before it exits).

use std::io::{self, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::{Frame, Terminal};

/// The UI's screen; the terminal is restored when it is dropped.
pub struct Screen {
    terminal: Terminal<CrosstermBackend<Stdout>>,
    _restore: Restore,
}

impl Screen {
    pub fn enter() -> io::Result<Screen> {
        install_panic_hook();
        terminal::enable_raw_mode()?;
        // From here on, a failure still restores what was changed.
        TAKEN.store(true, Ordering::SeqCst);
        let restore = Restore;
        execute!(io::stdout(), terminal::EnterAlternateScreen, cursor::Hide)?;
        let terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
        Ok(Screen {
            terminal,
            _restore: restore,
        })
    }

    /// Draws one frame; only what changed since the last one is sent.
    pub fn draw(&mut self, paint: impl FnOnce(&mut Frame<'_>)) -> io::Result<()> {
        self.terminal.draw(paint).map(|_| ())
    }
}

struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        give_back();
    }
}

/// Whether a [`Screen`] holds the terminal now.
static TAKEN: AtomicBool = AtomicBool::new(false);

/// Restores the terminal if a [`Screen`] holds it, from any thread: for a
/// process about to exit without unwinding. Writes nothing otherwise, so
/// the data on another command's stdout stays clean.
pub fn give_back() {
    if TAKEN.swap(false, Ordering::SeqCst) {
        restore();
    }
}

/// Cooked mode, the normal screen, a visible cursor. Harmless when the
/// terminal is already so, which lets the panic hook and the guard both
/// call it.
fn restore() {
    // Nothing sensible is left to do if the terminal refuses: the process
    // is ending either way.
    let _ = terminal::disable_raw_mode();
    let _ = execute!(io::stdout(), terminal::LeaveAlternateScreen, cursor::Show);
}

fn install_panic_hook() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}
