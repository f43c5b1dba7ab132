//! A temporary regular file for sendfile and for the file-read traffic.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::process;
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT_FILE: AtomicU32 = AtomicU32::new(0);

/// Bytes the file is filled with; the content does not matter, only its size.
static FILL: [u8; 64 * 1024] = [0x5a; 64 * 1024];

/// An open, already unlinked file of `len` bytes. Unlinking right after creation
/// means nothing is left in the temp dir even if the process is killed.
pub(crate) struct ScratchFile {
    pub(crate) file: File,
    pub(crate) len: u64,
}

impl ScratchFile {
    pub(crate) fn create(len: u64) -> io::Result<ScratchFile> {
        let n = NEXT_FILE.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("netto-scratch-{}-{n}", process::id()));
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        fs::remove_file(&path)?;
        let mut left = len;
        while left > 0 {
            let chunk = left.min(FILL.len() as u64) as usize;
            file.write_all(&FILL[..chunk])?;
            left -= chunk as u64;
        }
        Ok(ScratchFile { file, len })
    }
}
