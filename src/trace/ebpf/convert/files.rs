//! The kernel tracer's files: each (device, inode, generation) a row of the trace, named
//! where the program named it.

use super::Convert;
use crate::trace::ebpf::events::{FileId, user_dev};
use crate::trace::{FileInfo, FileKind};

impl Convert {
    /// The index of the file `(kdev, ino)` of `id`'s generation, registered on first sight and
    /// named from `fd` of process `pid` (while it is open), else from `path` (an open's
    /// argument, relative to `dirfd`), else from the process's mappings. A file that reuses
    /// the inode number of one freed before it has another generation: a row of its own.
    /// `from_kernel`: `path` is the kernel's walk of the open file in a process that sees the
    /// file system as iolab does, its name as is (no check that it names the file still).
    pub(super) fn file_at(
        &mut self,
        pid: u32,
        fd: Option<i32>,
        id: Option<&FileId>,
        (kdev, ino): (u64, u64),
        path: Option<(&[u8], i32)>,
        from_kernel: bool,
    ) -> Option<u32> {
        let generation = id.map(|f| f.generation);
        if let Some(g) = generation
            && let Some(&i) = self.by_gen.get(&(kdev, ino, g))
        {
            return Some(i);
        }
        match (self.by_id.get(&(kdev, ino)).copied(), generation) {
            // Known by its mapping at the attach only: that file is this generation's.
            (Some((None, i)), Some(g)) => {
                self.by_id.insert((kdev, ino), (Some(g), i));
                self.by_gen.insert((kdev, ino, g), i);
                return Some(i);
            }
            (Some((_, i)), None) => return Some(i),
            // Another generation: a new file on a freed inode number.
            _ => {}
        }
        let dev = user_dev(kdev);
        let mode = id.map_or(libc::S_IFREG, |f| f.mode);
        let kind = match mode & libc::S_IFMT {
            libc::S_IFREG => FileKind::File,
            libc::S_IFDIR => FileKind::Dir,
            libc::S_IFIFO => FileKind::Pipe,
            libc::S_IFSOCK => FileKind::Socket,
            libc::S_IFCHR | libc::S_IFBLK => FileKind::Device,
            _ => FileKind::Other,
        };
        let name = match path {
            Some((p, _)) if from_kernel => std::path::PathBuf::from(
                <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(p),
            ),
            _ => crate::trace::ebpf::names::name_of(pid, fd, dev, ino, path, kind),
        };
        let page = crate::sys::page_size() as u64;
        let size = id.map_or(0, |f| f.size);
        let mtime_ns = id.map_or(0, |f| f.mtime.0 as i128 * 1_000_000_000 + f.mtime.1 as i128);
        let i = self.rec.add_file(FileInfo {
            // The kernel's own count of the file's cached pages at the call's entry: seen
            // whatever the caller's rights (mincore hides it from who cannot write the file).
            resident_before: (kind == FileKind::File)
                .then(|| id.map(|f| (f.nrpages * page).min(size)))
                .flatten(),
            ..FileInfo::first_seen(&name, kind, (dev, ino), size, mtime_ns)
        });
        self.by_id.insert((kdev, ino), (generation, i));
        if let Some(g) = generation {
            self.by_gen.insert((kdev, ino, g), i);
        }
        Some(i)
    }

    pub(super) fn file_of(&mut self, pid: u32, fd: i32, id: Option<FileId>) -> Option<u32> {
        let id = id?;
        self.file_at(pid, Some(fd), Some(&id), (id.kdev, id.ino), None, false)
    }
}

impl Convert {
    /// Whether process `pid` sees the file system as iolab does: the same mount namespace and
    /// root (asked once per process; a process already gone does not).
    pub(super) fn shares_mounts(&mut self, pid: u32) -> bool {
        *self.shares_mounts.entry(pid).or_insert_with(|| {
            let link = |p: String| std::fs::read_link(p).ok();
            let mine = link("/proc/self/ns/mnt".into());
            mine.is_some()
                && link(format!("/proc/{pid}/ns/mnt")) == mine
                && link(format!("/proc/{pid}/root")).as_deref() == Some(std::path::Path::new("/"))
        })
    }

    /// A close of file `i` at `t` (ns from the start), the file as the kernel had it then.
    pub(super) fn closing(&mut self, i: u32, t: u64, id: FileId) {
        self.closed.insert(i, (t, id));
    }

    /// Each file's size, modification time and cached pages after the run, from its last close
    /// as the kernel had it, where nothing touched it after that close and it was never
    /// mapped (a mapping writes without a call): the files left to [`crate::trace::finish`] to
    /// look at again are those still open at the end, or touched after their last close.
    pub fn after_from_closes(&mut self) {
        use crate::trace::Call;
        if self.closed.is_empty() {
            return;
        }
        // Per file: when an op other than a close last touched it; u64::MAX: mapped.
        let mut touched = vec![0u64; self.rec.files.len()];
        for op in &self.rec.ops {
            if op.call == Call::Close {
                continue;
            }
            let mapping = matches!(op.call, Call::Mmap | Call::Mremap);
            for f in [op.file, op.to_file].into_iter().flatten() {
                if let Some(t) = touched.get_mut(f as usize) {
                    *t = if mapping {
                        u64::MAX
                    } else {
                        (*t).max(op.t + op.dur)
                    };
                }
            }
        }
        let page = crate::sys::page_size() as u64;
        for (i, (t, id)) in std::mem::take(&mut self.closed) {
            let moved = touched.get(i as usize).is_some_and(|&last| last > t);
            if moved || self.rec.unnamed.contains(&i) {
                continue;
            }
            let Some(f) = self.rec.files.get_mut(i as usize) else {
                continue;
            };
            if f.kind != FileKind::File || (id.kdev, id.ino) != (kdev_of(f), f.ino) {
                continue;
            }
            f.size_after = Some(id.size);
            f.mtime_after_ns = Some(id.mtime.0 as i128 * 1_000_000_000 + id.mtime.1 as i128);
            f.resident_after = Some((id.nrpages * page).min(id.size));
        }
    }
}

/// A file's device in the kernel's encoding (major << 20 | minor).
fn kdev_of(f: &FileInfo) -> u64 {
    ((libc::major(f.dev) as u64) << 20) | libc::minor(f.dev) as u64
}
