//! Where a command's output goes (`-o`): a regular file, written so that it
//! is either complete or absent, or standard output (`-o -`). A run
//! interrupted halfway, a full disk or a failing renderer must never leave a
//! truncated file that looks like a result, nor silently replace one the
//! operator kept; and netto writes only regular files, never through or over
//! a symbolic link, a FIFO, a socket or a device, --force or not.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, FileType, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;
use thiserror::Error;

/// What `-o` names: a file, or `-` for standard output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    Stdout,
    File(PathBuf),
}

/// The command line's `-o`: `-` is standard output, anything else a path.
impl From<OsString> for Destination {
    fn from(arg: OsString) -> Destination {
        if arg == "-" {
            Destination::Stdout
        } else {
            Destination::File(arg.into())
        }
    }
}

/// As messages name it.
impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Destination::Stdout => f.write_str("standard output"),
            Destination::File(path) => path.display().fmt(f),
        }
    }
}

#[derive(Debug, Error)]
pub enum OutputError {
    #[error("{} already exists; pass --force to overwrite it", path.display())]
    Exists { path: PathBuf },
    #[error("cannot write {}: directory {} does not exist", path.display(), dir.display())]
    MissingDirectory { path: PathBuf, dir: PathBuf },
    #[error("cannot write {}: it is a directory", path.display())]
    IsDirectory { path: PathBuf },
    /// `kind` as `special_kind` names it.
    #[error(
        "{} is {kind}; netto writes only regular files (use -o - for standard output)",
        path.display()
    )]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("cannot write {}: {cause}", path.display())]
    Unwritable { path: PathBuf, cause: io::Error },
    #[error("writing {} failed, nothing was written: {cause}", path.display())]
    Write { path: PathBuf, cause: io::Error },
    #[error("writing to standard output: {0}")]
    Stdout(io::Error),
}

impl Destination {
    /// Whether [`Destination::write`] can succeed, checked before the
    /// work that produces the output (a recording of many minutes):
    /// everything [`write_atomically`] refuses is refused here, and the
    /// directory takes a new file.
    pub fn check(&self, force: bool) -> Result<(), OutputError> {
        match self {
            Destination::Stdout => Ok(()),
            Destination::File(path) => {
                let dir = inspect(path, force)?;
                // A file made and removed at once, the way the output will
                // be: a read-only filesystem or a directory without write
                // permission says so now.
                temp_in(dir, path)
                    .map(drop)
                    .map_err(|cause| OutputError::Unwritable {
                        path: path.to_owned(),
                        cause,
                    })
            }
        }
    }

    /// Calls `write` on the output: see [`write_atomically`] for a file.
    /// Standard output gets the whole output at once, after `write` has
    /// succeeded, so a failing renderer prints nothing there either; a
    /// reader that went away (`| head`) is not an error, as nobody is left
    /// to read one.
    pub fn write(
        &self,
        force: bool,
        write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<(), OutputError> {
        match self {
            Destination::File(path) => write_atomically(path, force, write),
            Destination::Stdout => {
                let mut whole = Vec::new();
                write(&mut whole).map_err(OutputError::Stdout)?;
                let mut stdout = io::stdout().lock();
                match stdout.write_all(&whole).and_then(|()| stdout.flush()) {
                    Err(err) if err.kind() != io::ErrorKind::BrokenPipe => {
                        Err(OutputError::Stdout(err))
                    }
                    _ => Ok(()),
                }
            }
        }
    }
}

/// Calls `write` on a new hidden file in the same directory as `path`
/// (named after it), then gives it `path` in one step. An existing regular
/// file at `path` is only replaced when `force` is set; anything else there
/// never is. On any failure nothing new is left and `path` is as it was.
/// Only a process killed while writing (SIGKILL, a second Ctrl-C) leaves
/// the hidden file behind.
pub fn write_atomically(
    path: &Path,
    force: bool,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), OutputError> {
    let unwritable = |cause| OutputError::Unwritable {
        path: path.to_owned(),
        cause,
    };
    let dir = inspect(path, force)?;
    let mut temp = temp_in(dir, path).map_err(unwritable)?;
    fill(temp.as_file_mut(), write).map_err(|cause| OutputError::Write {
        path: path.to_owned(),
        cause,
    })?;
    if force {
        // Again, just before: what appeared since the first look is not
        // replaced either. A rename never writes through a symbolic link
        // put there after this, it replaces the link itself.
        inspect(path, force)?;
        return temp
            .persist(path)
            .map(drop)
            .map_err(|err| unwritable(err.error));
    }
    // Fails, unlike a rename, if the name was taken since the check before
    // writing: a file created meanwhile is not replaced either.
    match temp.persist_noclobber(path) {
        Ok(_) => Ok(()),
        // Said as the first look would have said it (a symbolic link
        // made meanwhile is one, not a file that --force may replace).
        Err(err) if err.error.kind() == io::ErrorKind::AlreadyExists => Err(inspect(path, false)
            .err()
            .unwrap_or_else(|| OutputError::Exists {
                path: path.to_owned(),
            })),
        // Filesystems that can neither rename without replacing nor make a
        // hard link (some FUSE): the check before writing is all the
        // protection they allow.
        Err(err) if fs::symlink_metadata(path).is_err() => err
            .file
            .persist(path)
            .map(drop)
            .map_err(|err| unwritable(err.error)),
        Err(err) => Err(unwritable(err.error)),
    }
}

/// The directory `path` would be written in, once it is known that a
/// regular file may be written there: `path` names a file, its directory
/// exists, and nothing but (with `force`) a regular file has the name.
/// Never follows a symbolic link at `path` and never opens what is there,
/// so a FIFO cannot block it.
fn inspect(path: &Path, force: bool) -> Result<&Path, OutputError> {
    if path.file_name().is_none() {
        return Err(OutputError::Unwritable {
            path: path.to_owned(),
            cause: io::Error::new(io::ErrorKind::InvalidInput, "the path does not name a file"),
        });
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if let Err(err) = fs::metadata(dir) {
        if err.kind() == io::ErrorKind::NotFound {
            return Err(OutputError::MissingDirectory {
                path: path.to_owned(),
                dir: dir.to_owned(),
            });
        }
        // A parent that is not a directory fails below with the system's
        // own words for it.
    }
    match fs::symlink_metadata(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(dir),
        Err(cause) => Err(OutputError::Unwritable {
            path: path.to_owned(),
            cause,
        }),
        Ok(meta) if meta.is_dir() => Err(OutputError::IsDirectory {
            path: path.to_owned(),
        }),
        Ok(meta) => match special_kind(meta.file_type()) {
            Some(kind) => Err(OutputError::NotRegular {
                path: path.to_owned(),
                kind,
            }),
            None if !force => Err(OutputError::Exists {
                path: path.to_owned(),
            }),
            None => Ok(dir),
        },
    }
}

/// Whether a file is of one kind.
type IsKind = fn(&FileType) -> bool;

/// The kinds of file netto never writes to, each with how a message names
/// it.
const SPECIAL_KINDS: [(IsKind, &str); 5] = [
    (FileType::is_symlink, "a symbolic link"),
    (FileType::is_fifo, "a FIFO"),
    (FileType::is_socket, "a socket"),
    (FileType::is_char_device, "a character device"),
    (FileType::is_block_device, "a block device"),
];

/// What a file other than a regular one or a directory is, in words.
fn special_kind(kind: FileType) -> Option<&'static str> {
    SPECIAL_KINDS
        .iter()
        .find(|(is, _)| is(&kind))
        .map(|&(_, name)| name)
}

/// A new empty file in `dir`, hidden and named after `path`, so a leftover
/// of a killed run is neither picked up by a glob for results nor a
/// mystery; removed when dropped. Its mode is a new file's (0666 less the
/// umask), which a rename keeps. Opened here rather than by tempfile's
/// default so that an error is the system's own words, without the
/// temporary name.
fn temp_in(dir: &Path, path: &Path) -> io::Result<NamedTempFile> {
    let mut prefix = OsString::from(".");
    prefix.push(path.file_name().unwrap_or_default());
    prefix.push(".");
    tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".netto-tmp")
        .make_in(dir, |temp| {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o666)
                .open(temp)
        })
}

/// Synced to disk before it is given its name, so a crash right after
/// cannot leave an empty file under the final name.
fn fill(
    file: &mut fs::File,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> io::Result<()> {
    let mut out = BufWriter::new(&mut *file);
    write(&mut out)?;
    out.flush()?;
    drop(out);
    file.sync_all()
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
    fn a_new_file_has_the_mode_of_any_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.svg");
        write_atomically(&path, false, |w| w.write_all(b"<svg/>")).unwrap();
        let reference = dir.path().join("reference");
        fs::write(&reference, b"").unwrap();
        let mode = |p: &Path| {
            use std::os::unix::fs::PermissionsExt;
            fs::metadata(p).unwrap().permissions().mode() & 0o777
        };
        assert_eq!(mode(&path), mode(&reference));
    }

    #[test]
    fn the_output_has_its_name_only_once_it_is_complete() {
        // While the writer runs, the name is free and the one new entry is
        // hidden and named after the output.
        let dir = tempfile::tempdir().unwrap();
        for force in [false, true] {
            let path = dir.path().join(format!("out-{force}.svg"));
            let before = entries(dir.path());
            write_atomically(&path, force, |w| {
                let now = entries(dir.path());
                let new: Vec<_> = now.iter().filter(|n| !before.contains(n)).collect();
                assert_eq!(new.len(), 1, "{now:?}");
                assert!(new[0].starts_with(&format!(".out-{force}.svg.")), "{new:?}");
                assert!(new[0].ends_with(".netto-tmp"), "{new:?}");
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
    fn a_file_made_while_writing_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.svg");
        let err = write_atomically(&path, false, |w| {
            fs::write(&path, b"theirs")?;
            w.write_all(b"ours")
        })
        .unwrap_err();
        assert!(matches!(err, OutputError::Exists { .. }), "{err:?}");
        assert_eq!(fs::read(&path).unwrap(), b"theirs");
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

    /// A rename (what `persist` does) replaces a symbolic link as readily
    /// as a file: with --force too, a link is refused before and after
    /// writing, and neither it nor what it points at changes.
    #[test]
    fn a_symbolic_link_is_never_replaced_nor_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("kept.svg");
        fs::write(&target, b"kept").unwrap();
        let link = dir.path().join("out.svg");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        for force in [false, true] {
            let err = write_atomically(&link, force, |w| w.write_all(b"new")).unwrap_err();
            assert!(
                matches!(
                    err,
                    OutputError::NotRegular {
                        kind: "a symbolic link",
                        ..
                    }
                ),
                "{err:?}"
            );
            assert_eq!(
                err.to_string(),
                format!(
                    "{} is a symbolic link; netto writes only regular files \
                     (use -o - for standard output)",
                    link.display()
                )
            );
            assert!(Destination::File(link.clone()).check(force).is_err());
        }
        // One that appears while writing is found by the second look.
        let late = dir.path().join("late.svg");
        let err = write_atomically(&late, true, |w| {
            std::os::unix::fs::symlink(&target, &late)?;
            w.write_all(b"new")
        })
        .unwrap_err();
        assert!(matches!(err, OutputError::NotRegular { .. }), "{err:?}");
        assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
        assert!(fs::symlink_metadata(&late).unwrap().is_symlink());
        assert_eq!(fs::read(&target).unwrap(), b"kept");
        assert_eq!(entries(dir.path()), ["kept.svg", "late.svg", "out.svg"]);
    }

    #[test]
    fn a_fifo_is_refused_without_opening_it() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("out.svg");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        // Opening it to write would block here for ever: no reader.
        for force in [false, true] {
            let err = write_atomically(&fifo, force, |w| w.write_all(b"x")).unwrap_err();
            assert!(
                matches!(err, OutputError::NotRegular { kind: "a FIFO", .. }),
                "{err:?}"
            );
        }
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
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

    #[test]
    fn the_check_finds_what_writing_would_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str| Destination::File(dir.path().join(name));
        fs::write(dir.path().join("kept.svg"), b"kept").unwrap();
        file("new.svg").check(false).unwrap();
        file("kept.svg").check(true).unwrap();
        assert!(matches!(
            file("kept.svg").check(false),
            Err(OutputError::Exists { .. })
        ));
        assert!(matches!(
            Destination::File(dir.path().to_owned()).check(true),
            Err(OutputError::IsDirectory { .. })
        ));
        assert!(matches!(
            Destination::File("/proc/netto-out.svg".into()).check(true),
            Err(OutputError::Unwritable { .. })
        ));
        Destination::Stdout.check(false).unwrap();
        assert_eq!(entries(dir.path()), ["kept.svg"]);
    }

    #[test]
    fn dash_is_standard_output() {
        assert_eq!(Destination::from(OsString::from("-")), Destination::Stdout);
        assert_eq!(
            Destination::from(OsString::from("./-")),
            Destination::File("./-".into())
        );
        assert_eq!(Destination::Stdout.to_string(), "standard output");
    }
}
