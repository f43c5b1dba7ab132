//! Standard output of the commands that print one interval at a time
//! (`stat`, `sketch`).

use std::io;

use anyhow::{Context, Result};

/// Whether the run should go on after writing an interval: a reader that
/// went away (`netto stat | head -1`, or a pipeline's reader killed by the
/// same Ctrl-C that asked netto for its last interval) ends the run as a
/// stop does, quietly, because nobody is left to read an error or the
/// intervals after it. Any other write error is one.
pub fn still_read(written: io::Result<()>) -> Result<bool> {
    match written {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(e).context("writing to standard output"),
    }
}
