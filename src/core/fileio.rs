//! File plumbing shared by every stage: transparent zstd on input (by magic
//! bytes, not by name), atomic output (temporary name, then rename) and
//! content hashes for manifests.

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::core::error::bad_input;

/// The zstd frame magic number, little endian on disk.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Opens `path` for reading, decompressing zstd when the file starts with the
/// zstd magic number. `wrap` may wrap the raw (compressed) file reader, for
/// example in a progress bar counting compressed bytes.
pub(crate) fn open_input_with<F>(path: &Path, wrap: F) -> Result<Box<dyn BufRead + Send>>
where
    F: FnOnce(File) -> Box<dyn Read + Send>,
{
    require_file(path)?;
    let mut file =
        File::open(path).map_err(|e| bad_input(format!("cannot open {}: {e}", path.display())))?;
    let mut magic = [0u8; 4];
    let mut filled = 0;
    while filled < magic.len() {
        let n = file
            .read(&mut magic[filled..])
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    let compressed = filled == magic.len() && magic == ZSTD_MAGIC;
    io::Seek::seek(&mut file, io::SeekFrom::Start(0))
        .with_context(|| format!("rewinding {}", path.display()))?;
    let raw = wrap(file);
    if compressed {
        let decoder = zstd::stream::read::Decoder::new(raw)
            .with_context(|| format!("starting zstd decoder on {}", path.display()))?;
        Ok(Box::new(BufReader::with_capacity(1 << 16, decoder)))
    } else {
        Ok(Box::new(BufReader::with_capacity(1 << 16, raw)))
    }
}

/// Refuses (exit 2) an input that is not a regular file, links followed:
/// a folder, a FIFO (opening one would wait for a writer, and hashing it
/// would consume what the reader needs), a socket or a device, each named
/// as what it is; a path that cannot be looked at says why.
pub(crate) fn require_file(path: &Path) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::metadata(path)
        .map_err(|e| bad_input(format!("cannot open {}: {e}", path.display())))?;
    let kind = meta.file_type();
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    };
    Err(bad_input(format!(
        "{} is {what}, where a file is expected",
        path.display()
    )))
}

/// Opens `path` for reading, zstd or plain.
pub(crate) fn open_input(path: &Path) -> Result<Box<dyn BufRead + Send>> {
    open_input_with(path, |f| Box::new(f))
}

/// Skips leading whitespace and a UTF-8 byte order mark and returns the
/// first byte of content without consuming it (`None` for an input with no
/// content): it tells a file's format (`{` JSON Lines, `[` PGN, else CSV)
/// before a parser takes over. Only whole buffers of whitespace are
/// consumed, so the parser still sees any BOM that precedes content.
pub(crate) fn first_content_byte(input: &mut dyn BufRead, path: &Path) -> Result<Option<u8>> {
    const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];
    loop {
        let buffer = input
            .fill_buf()
            .map_err(|e| bad_input(format!("{}: cannot read: {e}", path.display())))?;
        if buffer.is_empty() {
            return Ok(None);
        }
        match buffer
            .iter()
            .position(|b| !b.is_ascii_whitespace() && !BOM.contains(b))
        {
            Some(i) => return Ok(Some(buffer[i])),
            None => {
                let n = buffer.len();
                input.consume(n);
            }
        }
    }
}

/// A file being written under a temporary name in the destination folder.
/// [`AtomicFile::commit`] flushes, syncs and renames it into place; dropping
/// it without committing removes the temporary file, so no reader ever sees
/// a torn or half-written output.
pub(crate) struct AtomicFile {
    final_path: PathBuf,
    temp_path: PathBuf,
    writer: Option<Box<dyn Write + Send>>,
    zstd: bool,
}

impl AtomicFile {
    /// Creates the temporary file. Compresses with zstd when the final name
    /// ends in `.zst`.
    pub(crate) fn create(path: &Path) -> Result<Self> {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&parent)
            .with_context(|| format!("creating folder {}", parent.display()))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "output".to_string());
        let temp_path = parent.join(format!(".{name}.tmp-{}", std::process::id()));
        let file = create_new_file(&temp_path)?;
        let zstd = name.ends_with(".zst");
        // 32 KiB: small writes are gathered, and the large runs the ingest
        // writes (a chunk of rows, about 64 KiB) pass to the file uncopied.
        let buffered = BufWriter::with_capacity(1 << 15, WritebackFile::new(file));
        let writer: Box<dyn Write + Send> = if zstd {
            Box::new(zstd::stream::write::Encoder::new(buffered, 3)?.auto_finish())
        } else {
            Box::new(buffered)
        };
        Ok(Self {
            final_path: path.to_path_buf(),
            temp_path,
            writer: Some(writer),
            zstd,
        })
    }

    /// The path the file will have once committed.
    pub fn path(&self) -> &Path {
        &self.final_path
    }

    /// Finishes the file and renames it into place.
    pub(crate) fn commit(mut self) -> Result<()> {
        if let Some(mut writer) = self.writer.take() {
            writer
                .flush()
                .with_context(|| format!("writing {}", self.temp_path.display()))?;
            // Dropping the writer finishes the zstd frame (auto_finish) and
            // closes the file before it is synced and renamed.
            drop(writer);
        }
        let _ = self.zstd;
        File::open(&self.temp_path)
            .and_then(|f| f.sync_all())
            .with_context(|| format!("syncing {}", self.temp_path.display()))?;
        std::fs::rename(&self.temp_path, &self.final_path).with_context(|| {
            format!(
                "renaming {} to {}",
                self.temp_path.display(),
                self.final_path.display()
            )
        })?;
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.writer.as_mut() {
            Some(w) => w.write(buf),
            None => Err(io::Error::other("write after commit")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.writer.as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

/// A file that asks the kernel to start writing its data to disk every few
/// megabytes (Linux `sync_file_range`, asynchronous), so the sync before the
/// rename in [`AtomicFile::commit`] finds little left to do instead of the
/// whole output at once: on a large ingest that final wait was about a
/// tenth of the run. A hint only: failures are ignored, and other systems
/// skip it.
struct WritebackFile {
    file: File,
    written: u64,
    hinted: u64,
}

impl WritebackFile {
    /// Bytes between two writeback hints.
    const HINT_BYTES: u64 = 8 << 20;

    fn new(file: File) -> Self {
        Self {
            file,
            written: 0,
            hinted: 0,
        }
    }

    #[cfg(target_os = "linux")]
    fn hint_writeback(&mut self) {
        use std::os::fd::AsRawFd;
        let (offset, length) = (self.hinted, self.written - self.hinted);
        let (Ok(offset), Ok(length)) = (i64::try_from(offset), i64::try_from(length)) else {
            return;
        };
        // SAFETY: sync_file_range only reads its integer arguments; the
        // descriptor is this open file's.
        unsafe {
            libc::sync_file_range(
                self.file.as_raw_fd(),
                offset,
                length,
                libc::SYNC_FILE_RANGE_WRITE,
            );
        }
        self.hinted = self.written;
    }

    #[cfg(not(target_os = "linux"))]
    fn hint_writeback(&mut self) {
        self.hinted = self.written;
    }
}

impl Write for WritebackFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        if self.written - self.hinted >= Self::HINT_BYTES {
            self.hint_writeback();
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.take().is_some() {
            let _ = std::fs::remove_file(&self.temp_path);
        }
    }
}

/// Creates `path` as a new file without following a symbolic link there
/// (`O_CREAT | O_EXCL`): a link is an error naming it, since writing
/// through it would overwrite whatever it points at; a regular file left
/// there (by a dead process of the same pid) is replaced.
fn create_new_file(path: &Path) -> Result<File> {
    for _ in 0..2 {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
        {
            Ok(file) => return Ok(file),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let meta = std::fs::symlink_metadata(path)
                    .with_context(|| format!("creating {}", path.display()))?;
                if meta.file_type().is_symlink() {
                    return Err(link_error(path));
                }
                if !meta.file_type().is_file() {
                    return Err(bad_input(format!(
                        "{} is not a regular file: puzzleforge writes a temporary file there; remove it",
                        path.display()
                    )));
                }
                std::fs::remove_file(path)
                    .with_context(|| format!("removing the leftover {}", path.display()))?;
            }
            Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
        }
    }
    Err(bad_input(format!(
        "{}: keeps reappearing while it is created",
        path.display()
    )))
}

/// The error for a symbolic link found where puzzleforge writes (a lock
/// file, a scratch folder, a temporary file): following it would
/// overwrite what it points at, on a shared folder or as root any file.
pub(crate) fn link_error(path: &Path) -> anyhow::Error {
    bad_input(format!(
        "{} is a symbolic link: puzzleforge follows no link where it writes (it would overwrite what the link points at); remove it",
        path.display()
    ))
}

/// Creates the scratch folder `path` empty: a folder left there is
/// removed first; a symbolic link there is an error naming it (the folder
/// is created with `mkdir`, which follows no link).
pub(crate) fn create_scratch_dir(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => return Err(link_error(path)),
        Ok(meta) if meta.is_dir() => {
            std::fs::remove_dir_all(path).with_context(|| format!("removing {}", path.display()))?
        }
        Ok(_) => {
            std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?
        }
        Err(_) => {}
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::create_dir(path).with_context(|| format!("creating {}", path.display()))
}

/// Writes `contents` to `path` atomically.
pub(crate) fn write_atomic(path: &Path, contents: &[u8]) -> Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(contents)
        .with_context(|| format!("writing {}", path.display()))?;
    file.commit()
}

/// Whether a temporary name ending in `<marker><pid>` (such as
/// [`write_atomic`]'s `.NAME.tmp-PID`) was left by a process that is gone:
/// a killed run's leftover, safe to remove. A live process's name, or one
/// without a pid after `marker`, is not.
pub(crate) fn left_by_dead_process(name: &str, marker: &str) -> bool {
    name.rsplit_once(marker)
        .and_then(|(_, pid)| pid.parse::<u32>().ok())
        .is_some_and(|pid| !Path::new("/proc").join(pid.to_string()).exists())
}

/// Hex sha256 of a file's bytes. A file that is not a regular file, or
/// cannot be read, is bad input (exit 2) naming it.
pub fn sha256_file(path: &Path) -> Result<String> {
    require_file(path)?;
    let mut file = File::open(path)
        .map_err(|e| bad_input(format!("cannot open {} to hash it: {e}", path.display())))?;
    let mut hasher = Sha256::new();
    io::copy(&mut file, &mut hasher)
        .map_err(|e| bad_input(format!("cannot read {} to hash it: {e}", path.display())))?;
    Ok(hex(&hasher.finalize()))
}

/// Hex sha256 of a file's content as [`open_input`] reads it: a zstd
/// file's decompressed bytes, so that two compressions of one text (other
/// zstd versions, other levels) hash alike.
/// A damaged file (a truncated zstd frame, bytes after the last frame) is
/// bad input (exit 2) naming it and the reason.
pub(crate) fn sha256_content(path: &Path) -> Result<String> {
    let mut input = open_input(path)?;
    let mut hasher = Sha256::new();
    io::copy(&mut input, &mut hasher).map_err(|e| {
        bad_input(format!(
            "{} cannot be read to the end (damaged or truncated?): {e}",
            path.display()
        ))
    })?;
    Ok(hex(&hasher.finalize()))
}

/// Hex sha256 of bytes.
pub(crate) fn sha256_bytes(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zstd_is_detected_by_magic_not_name() {
        let dir = tempfile::tempdir().unwrap();
        let disguised = dir.path().join("plain-looking.csv");
        let mut out = AtomicFile::create(&dir.path().join("x.csv.zst")).unwrap();
        out.write_all(b"hello\n").unwrap();
        out.commit().unwrap();
        std::fs::rename(dir.path().join("x.csv.zst"), &disguised).unwrap();
        let mut text = String::new();
        open_input(&disguised)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "hello\n");
    }

    /// A symbolic link at the temporary name is an error naming it, and
    /// what it points at is left alone; a stale regular file is replaced.
    #[test]
    fn a_temporary_file_never_follows_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let temp = dir
            .path()
            .join(format!(".out.csv.tmp-{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &temp).unwrap();
        let error = write_atomic(&dir.path().join("out.csv"), b"new").unwrap_err();
        assert!(
            format!("{error:#}").contains("is a symbolic link"),
            "{error:#}"
        );
        assert!(format!("{error:#}").contains(".out.csv.tmp-"), "{error:#}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        std::fs::remove_file(&temp).unwrap();
        std::fs::write(&temp, "stale").unwrap();
        write_atomic(&dir.path().join("out.csv"), b"new").unwrap();
        assert_eq!(std::fs::read(dir.path().join("out.csv")).unwrap(), b"new");
    }

    #[test]
    fn uncommitted_file_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        {
            let mut out = AtomicFile::create(&path).unwrap();
            out.write_all(b"partial").unwrap();
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
