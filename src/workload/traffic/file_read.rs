//! Reads of a regular file: traffic that must NOT show up as socket receives.

use std::io::{Read, Seek};

use super::drive::{drive, is_transient};
use super::scratch::ScratchFile;
use super::{Summary, TrafficError, Until};

/// Larger than one read, so reads walk through the file like a real one.
const FILE_LEN: u64 = 4 << 20;

const READ_SIZE: usize = 64 * 1024;

/// Calls read(2) (std's `File::read`) on a page-cached temporary file, seeking back
/// to the start at the end, until `until`. netto hooks read() for sockets too, so this
/// is the control that proves file reads are told apart.
pub fn read_file(until: Until<'_>) -> Result<Summary, TrafficError> {
    let ScratchFile { mut file, len } =
        ScratchFile::create(FILE_LEN).map_err(TrafficError::io("creating the file to read"))?;
    file.rewind()
        .map_err(TrafficError::io("seeking the file to read"))?;
    let mut position = 0;
    let mut buf = vec![0; READ_SIZE];
    let mut summary = Summary::default();
    drive(until, &mut summary, is_transient, || {
        if position >= len {
            file.rewind()?;
            position = 0;
        }
        let n = file.read(&mut buf)? as u64;
        position += n;
        Ok(Some(n))
    })
    .map_err(TrafficError::io("reading the file"))?;
    Ok(summary)
}
