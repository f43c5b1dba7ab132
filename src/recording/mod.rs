//! Reading a recording (`netto record -o run.json`) for `report`, `top
//! --replay`, `serve --replay` and the replay source, with one check of
//! everything those front ends rely on. A file that parses is not yet a
//! recording the front ends can draw: a missing event key, an array
//! shorter than `cpus` or an interval of 1e19 s would panic or hang them,
//! so [`load`] refuses such a file with one line naming what is wrong and
//! where (`snapshots[3].events: lacks net_timers`), and the replay source
//! only takes a [`ValidRecording`].

use std::fs;
use std::io::Read;
use std::ops::Deref;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use thiserror::Error;

use crate::model::{Recording, Snapshot};

/// Most CPUs a recording may have: the kernel's own ceiling (`NR_CPUS`
/// is at most 8192 on x86-64 with MAXSMP, and on arm64 and powerpc). A
/// larger count is a corrupt file, and `top`'s per-CPU grid is this big.
pub const MAX_CPUS: usize = 8192;

/// How far a measured time may exceed the time it was measured over. The
/// BPF side charges time at a CPU's next transition, so a window open at
/// an interval's end counts in the next one, and the CPUs are read one
/// after another; both move a little time across interval boundaries, and
/// timers fire late, so a measured interval overruns the one asked for.
/// Anything beyond 25 % plus 100 ms is not a measurement.
const OVERRUN_SHARE: f64 = 0.25;
const OVERRUN_S: f64 = 0.1;

/// The longest a recording can have measured, in one interval or in all of
/// them: intervals are timed on the monotonic clock, which counts from
/// boot, and no host stays up for a century. An interval may be far
/// longer than the one asked for: netto stopped (Ctrl-Z) or its host
/// paused, the interval in progress lasts until it runs again.
pub const MAX_MEASURED_S: f64 = 100.0 * 365.25 * 86400.0;

/// What `--max-recording-size` is unless given: recordings are read whole.
pub const DEFAULT_MAX_RECORDING_SIZE: u64 = 1 << 30;

/// The most a measured time (or interval) spanning `seconds` can be.
fn with_overrun(seconds: f64) -> f64 {
    seconds * (1.0 + OVERRUN_SHARE) + OVERRUN_S
}

/// Why a recording cannot be used.
#[derive(Debug, Error)]
pub enum RecordingError {
    /// The cause is part of the message (not a `source`), so the one line
    /// netto prints says it once.
    #[error("cannot read {path}: {cause}")]
    Read { path: String, cause: std::io::Error },
    /// A directory, a FIFO, a device, a socket: a recording is a file
    /// (reading a FIFO could block for ever, a device never end).
    #[error("{path} is {kind}, not a regular file: a recording is a file")]
    NotAFile { path: String, kind: &'static str },
    #[error("{path} is larger than --max-recording-size ({limit} bytes)")]
    TooLarge { path: String, limit: u64 },
    /// Not the JSON of a recording: a syntax error, a missing field, a
    /// value of the wrong type.
    #[error("{path} is not a netto recording: {problem}")]
    Malformed { path: String, problem: Invalid },
    /// Snapshots a line each, as `netto stat --json` writes them: the
    /// likeliest file to be taken for a recording.
    #[error(
        "{path} is `netto stat --json` output (a snapshot per line), not a recording; \
         `netto record --duration SECONDS -o FILE.json` records one"
    )]
    StatOutput { path: String },
    /// A recording in form, whose contents no run could have measured.
    #[error("{path}: {problem}")]
    Invalid { path: String, problem: Invalid },
}

impl RecordingError {
    /// Bad input, as opposed to a file that could not be read.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, RecordingError::Read { .. })
    }
}

/// What is wrong, and where (a JSON path such as `snapshots[3].cpus`).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{at}: {problem}")]
pub struct Invalid {
    pub at: String,
    pub problem: String,
}

fn invalid(at: impl Into<String>, problem: impl Into<String>) -> Invalid {
    Invalid {
        at: at.into(),
        problem: problem.into(),
    }
}

/// A recording that passed [`validate`]: the only kind the replay source
/// plays.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidRecording(Recording);

impl ValidRecording {
    pub fn new(recording: Recording) -> Result<ValidRecording, Invalid> {
        validate(&recording)?;
        Ok(ValidRecording(recording))
    }

    pub fn into_inner(self) -> Recording {
        self.0
    }
}

impl Deref for ValidRecording {
    type Target = Recording;

    fn deref(&self) -> &Recording {
        &self.0
    }
}

/// Reads, parses and validates the recording at `path`, of at most
/// [`DEFAULT_MAX_RECORDING_SIZE`] bytes.
pub fn load(path: &Path) -> Result<ValidRecording, RecordingError> {
    load_within(path, DEFAULT_MAX_RECORDING_SIZE)
}

/// Reads, parses and validates the recording at `path`, a regular file of
/// at most `limit` bytes (`--max-recording-size`).
pub fn load_within(path: &Path, limit: u64) -> Result<ValidRecording, RecordingError> {
    let name = path.display().to_string();
    let bytes = read_within(path, limit)?;
    let recording = parse(&bytes).map_err(|problem| {
        if is_stat_output(&bytes) {
            RecordingError::StatOutput { path: name.clone() }
        } else {
            RecordingError::Malformed {
                path: name.clone(),
                problem,
            }
        }
    })?;
    ValidRecording::new(recording).map_err(|problem| RecordingError::Invalid {
        path: name,
        problem,
    })
}

/// The bytes of the regular file at `path`, if there are at most `limit`.
/// Its type is looked at before it is opened (opening a device can do
/// something) and again once open, without blocking (a FIFO put there
/// meanwhile is refused, not waited on); reading stops past `limit`, in
/// case the file grows.
fn read_within(path: &Path, limit: u64) -> Result<Vec<u8>, RecordingError> {
    let name = || path.display().to_string();
    let read_error = |cause| RecordingError::Read {
        path: name(),
        cause,
    };
    let regular = |file_type: fs::FileType| {
        if file_type.is_file() {
            return Ok(());
        }
        let kind = if file_type.is_dir() {
            "a directory"
        } else if file_type.is_fifo() {
            "a FIFO"
        } else if file_type.is_char_device() {
            "a character device"
        } else if file_type.is_block_device() {
            "a block device"
        } else if file_type.is_socket() {
            "a socket"
        } else {
            "not a file"
        };
        Err(RecordingError::NotAFile { path: name(), kind })
    };
    regular(fs::metadata(path).map_err(read_error)?.file_type())?;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(read_error)?;
    let meta = file.metadata().map_err(read_error)?;
    regular(meta.file_type())?;
    let too_large = || RecordingError::TooLarge {
        path: name(),
        limit,
    };
    if meta.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Whether `bytes` begin with a snapshot on a line of its own, as `netto
/// stat --json` writes them.
fn is_stat_output(bytes: &[u8]) -> bool {
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    serde_json::from_slice::<Snapshot>(first).is_ok()
}

/// The recording in `bytes`, or where its JSON goes wrong.
pub fn parse(bytes: &[u8]) -> Result<Recording, Invalid> {
    let mut json = serde_json::Deserializer::from_slice(bytes);
    let recording: Recording = serde_path_to_error::deserialize(&mut json).map_err(|e| {
        let at = e.path().to_string();
        // A file that is not JSON at all has no place to point to.
        let not_json = matches!(
            e.inner().classify(),
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof
        );
        let at = match at.as_str() {
            "." if not_json => "not JSON",
            "." => "the file",
            path => path,
        };
        invalid(at, e.inner().to_string())
    })?;
    json.end()
        .map_err(|e| invalid("the file", format!("{e} (after the recording)")))?;
    Ok(recording)
}

mod check;

pub use check::{validate, Checker};

#[cfg(test)]
mod tests;
