//! Writing an output file (recording, flame graph, folded stacks) so that
//! it is either complete or absent: a run interrupted halfway, a full disk
//! or a failing renderer must never leave a truncated file that looks like
//! a result, nor silently replace one the operator kept.

use std::ffi::{CString, OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process;
use std::sync::atomic::{AtomicU64, Ordering};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum OutputError {
    #[error("{} already exists; pass --force to overwrite it", path.display())]
    Exists { path: PathBuf },
    #[error("cannot write {}: directory {} does not exist", path.display(), dir.display())]
    MissingDirectory { path: PathBuf, dir: PathBuf },
    #[error("cannot write {}: it is a directory", path.display())]
    IsDirectory { path: PathBuf },
    #[error("cannot write {}: {source}", path.display())]
    Unwritable { path: PathBuf, source: io::Error },
    #[error("writing {} failed, nothing was written: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
}

/// How many temporary names [`name_temp`] tries.
const TEMP_ATTEMPTS: u32 = 64;

/// Calls `write` on a new file in the same directory as `path` (one without
/// a name where the filesystem allows), then gives it `path` in one step.
/// An existing `path` is only replaced when `force` is set. On any failure
/// nothing new is left and `path` is as it was.
pub fn write_atomically(
    path: &Path,
    force: bool,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), OutputError> {
    let unwritable = |source| OutputError::Unwritable {
        path: path.to_owned(),
        source,
    };
    let file_name = path.file_name().ok_or_else(|| {
        unwritable(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path does not name a file",
        ))
    })?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    match fs::metadata(dir) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Err(OutputError::MissingDirectory {
                path: path.to_owned(),
                dir: dir.to_owned(),
            })
        }
        // A parent that is not a directory fails below, when the temporary
        // file is created, with the system's own words for it.
        _ => {}
    }
    refuse_to_clobber(path, force)?;

    let pending = Pending::create(dir, file_name).map_err(unwritable)?;
    fill(pending.file(), write).map_err(|source| OutputError::Write {
        path: path.to_owned(),
        source,
    })?;
    pending.publish(dir, file_name, path, force)
}

fn refuse_to_clobber(path: &Path, force: bool) -> Result<(), OutputError> {
    // symlink_metadata: a dangling symlink is still something in the way.
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Err(OutputError::IsDirectory {
            path: path.to_owned(),
        }),
        Ok(_) if !force => Err(OutputError::Exists {
            path: path.to_owned(),
        }),
        _ => Ok(()),
    }
}

/// The output while it is being written. Where the filesystem allows
/// (`O_TMPFILE`), it has no name at all until it is complete, so even a
/// SIGKILL or a power cut halfway leaves nothing behind; elsewhere it is a
/// hidden file named after the target, removed on every way out but those.
enum Pending {
    Anonymous(File),
    Named(TempFile, File),
}

impl Pending {
    fn create(dir: &Path, file_name: &OsStr) -> io::Result<Pending> {
        let anonymous = OpenOptions::new()
            .write(true)
            .mode(0o666)
            .custom_flags(libc::O_TMPFILE)
            .open(dir);
        match anonymous {
            Ok(file) => Ok(Pending::Anonymous(file)),
            // Kernels or filesystems without O_TMPFILE say so in one of
            // these ways; anything else (no permission, not a directory)
            // is the real answer.
            Err(err)
                if matches!(
                    err.raw_os_error(),
                    Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
                ) =>
            {
                let (path, file) = create_temp(dir, file_name)?;
                Ok(Pending::Named(
                    TempFile {
                        path,
                        renamed: false,
                    },
                    file,
                ))
            }
            Err(err) => Err(err),
        }
    }

    fn file(&self) -> &File {
        match self {
            Pending::Anonymous(file) | Pending::Named(_, file) => file,
        }
    }

    /// Gives the complete file its name. Without `force` the name is
    /// taken with a hard link, which, unlike a rename, fails if the name
    /// was taken since the check before writing, so a file created
    /// meanwhile is not replaced either.
    fn publish(
        self,
        dir: &Path,
        file_name: &OsStr,
        path: &Path,
        force: bool,
    ) -> Result<(), OutputError> {
        let unwritable = |source| OutputError::Unwritable {
            path: path.to_owned(),
            source,
        };
        let exists = || OutputError::Exists {
            path: path.to_owned(),
        };
        match self {
            Pending::Anonymous(file) if !force => match link_anonymous(&file, path) {
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Err(exists()),
                result => result.map_err(unwritable),
            },
            // A rename is the only way to replace a name in one step, and
            // it needs a name to move: the file gets a hidden one just
            // before, for as long as the rename takes.
            Pending::Anonymous(file) => {
                let mut temp =
                    name_temp(dir, file_name, |candidate| link_anonymous(&file, candidate))
                        .map(|path| TempFile {
                            path,
                            renamed: false,
                        })
                        .map_err(unwritable)?;
                fs::rename(&temp.path, path).map_err(unwritable)?;
                temp.renamed = true;
                Ok(())
            }
            Pending::Named(mut temp, _) => {
                if force {
                    fs::rename(&temp.path, path).map_err(unwritable)?;
                    temp.renamed = true;
                    return Ok(());
                }
                match fs::hard_link(&temp.path, path) {
                    Ok(()) => Ok(()),
                    Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Err(exists()),
                    // Filesystems without hard links (FAT, some FUSE):
                    // the check before writing is all the protection they
                    // allow.
                    Err(_) if fs::symlink_metadata(path).is_err() => {
                        fs::rename(&temp.path, path).map_err(unwritable)?;
                        temp.renamed = true;
                        Ok(())
                    }
                    Err(err) => Err(unwritable(err)),
                }
            }
        }
    }
}

/// Links an `O_TMPFILE` file to `path`, through its /proc/self/fd entry
/// (which, unlike `AT_EMPTY_PATH`, needs no privilege).
fn link_anonymous(file: &File, path: &Path) -> io::Result<()> {
    let from =
        CString::new(format!("/proc/self/fd/{}", file.as_raw_fd())).expect("no NUL in a number");
    let to = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in the path"))?;
    // SAFETY: both are valid NUL-terminated strings that outlive the call.
    let done = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if done == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Hidden, and named after the target, so a leftover from a crash is
/// neither picked up by a glob for results nor a mystery.
fn create_temp(dir: &Path, file_name: &OsStr) -> io::Result<(PathBuf, File)> {
    let mut file = None;
    let path = name_temp(dir, file_name, |candidate| {
        file = Some(
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(candidate)?,
        );
        Ok(())
    })?;
    Ok((path, file.expect("set when a name was taken")))
}

/// Tries temporary names until `take` succeeds on one. Names that collide
/// (another netto, a leftover from a crash) are skipped; this many
/// collisions in a row means something else is wrong.
fn name_temp(
    dir: &Path,
    file_name: &OsStr,
    mut take: impl FnMut(&Path) -> io::Result<()>,
) -> io::Result<PathBuf> {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let mut last_err = None;
    for _ in 0..TEMP_ATTEMPTS {
        let mut name = OsString::from(".");
        name.push(file_name);
        name.push(format!(
            ".netto-{}-{}.tmp",
            process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        ));
        let temp = dir.join(name);
        match take(&temp) {
            Ok(()) => return Ok(temp),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => last_err = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::other("no temporary file name was free")))
}

/// Synced to disk before it is given its name, so a crash right after
/// cannot leave an empty file under the final name.
fn fill(file: &File, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let mut out = BufWriter::new(file);
    write(&mut out)?;
    out.flush()?;
    let file = out.into_inner().map_err(|err| err.into_error())?;
    file.sync_all()
}

/// Removes a named temporary file when dropped, on every path out of
/// [`write_atomically`] that did not rename it, panics included.
struct TempFile {
    path: PathBuf,
    renamed: bool,
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.renamed {
            // Nothing to report to: the outcome the caller sees is already
            // decided, and the name marks a leftover as netto's.
            let _ = fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn writes_a_new_file_and_leaves_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.svg");
        write_atomically(&path, false, |w| w.write_all(b"<svg/>")).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"<svg/>");
        assert_eq!(entries(dir.path()), ["out.svg"]);
    }

    #[test]
    fn the_output_has_no_name_until_it_is_complete() {
        // A run killed while writing (SIGKILL, a second Ctrl-C) must leave
        // nothing: while the writer runs, the directory holds no entry.
        let dir = tempfile::tempdir().unwrap();
        for force in [false, true] {
            let path = dir.path().join(format!("out-{force}.svg"));
            let before = entries(dir.path());
            write_atomically(&path, force, |w| {
                assert_eq!(entries(dir.path()), before);
                w.write_all(b"<svg/>")
            })
            .unwrap();
            assert_eq!(fs::read(&path).unwrap(), b"<svg/>");
        }
        assert_eq!(entries(dir.path()), ["out-false.svg", "out-true.svg"]);
    }

    #[test]
    fn refuses_to_overwrite_without_force() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.svg");
        fs::write(&path, b"kept").unwrap();
        let mut called = false;
        let err = write_atomically(&path, false, |w| {
            called = true;
            w.write_all(b"new")
        })
        .unwrap_err();
        assert!(matches!(err, OutputError::Exists { .. }));
        assert_eq!(
            err.to_string(),
            format!(
                "{} already exists; pass --force to overwrite it",
                path.display()
            )
        );
        assert!(!called, "no work is done for a file that will be refused");
        assert_eq!(fs::read(&path).unwrap(), b"kept");
        assert_eq!(entries(dir.path()), ["out.svg"]);
    }

    #[test]
    fn overwrites_with_force() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.svg");
        fs::write(&path, b"old and longer").unwrap();
        write_atomically(&path, true, |w| w.write_all(b"new")).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert_eq!(entries(dir.path()), ["out.svg"]);
    }

    #[test]
    fn a_failing_writer_leaves_no_file_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.svg");
        let err = write_atomically(&path, false, |w| {
            w.write_all(b"half a graph")?;
            Err(io::Error::other("renderer gave up"))
        })
        .unwrap_err();
        assert!(matches!(err, OutputError::Write { .. }));
        assert!(err.to_string().contains("renderer gave up"));
        assert!(err.to_string().contains(&path.display().to_string()));
        assert!(entries(dir.path()).is_empty());
    }

    #[test]
    fn a_failing_writer_keeps_the_old_file_even_with_force() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.svg");
        fs::write(&path, b"kept").unwrap();
        write_atomically(&path, true, |_| Err(io::Error::other("no"))).unwrap_err();
        assert_eq!(fs::read(&path).unwrap(), b"kept");
        assert_eq!(entries(dir.path()), ["out.svg"]);
    }

    #[test]
    fn a_panicking_writer_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.svg");
        let result = std::panic::catch_unwind(|| {
            let _ = write_atomically(&path, false, |_| panic!("renderer bug"));
        });
        assert!(result.is_err());
        assert!(entries(dir.path()).is_empty());
    }

    #[test]
    fn missing_directory_is_named() {
        let path = Path::new("/nonexistent/dir/file");
        let err = write_atomically(path, false, |w| w.write_all(b"x")).unwrap_err();
        assert!(matches!(err, OutputError::MissingDirectory { .. }));
        assert_eq!(
            err.to_string(),
            "cannot write /nonexistent/dir/file: directory /nonexistent/dir does not exist"
        );
        assert!(!err.to_string().contains('\n'));
    }

    #[test]
    fn a_file_as_parent_is_unwritable_with_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let parent = dir.path().join("plain");
        fs::write(&parent, b"").unwrap();
        let path = parent.join("out.svg");
        let err = write_atomically(&path, false, |w| w.write_all(b"x")).unwrap_err();
        assert!(matches!(err, OutputError::Unwritable { .. }), "{err:?}");
        let message = err.to_string();
        assert!(message.starts_with(&format!("cannot write {}: ", path.display())));
        assert!(!message.contains('\n'));
    }

    #[test]
    fn a_directory_is_never_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomically(dir.path(), true, |w| w.write_all(b"x")).unwrap_err();
        assert!(matches!(err, OutputError::IsDirectory { .. }), "{err:?}");
        assert!(dir.path().is_dir());
    }

    #[test]
    fn a_path_without_a_file_name_is_refused() {
        let err = write_atomically(Path::new("/"), true, |w| w.write_all(b"x")).unwrap_err();
        assert!(matches!(err, OutputError::Unwritable { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "cannot write /: the path does not name a file"
        );
    }
}
