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
    pub(super) fn file_at(
        &mut self,
        pid: u32,
        fd: Option<i32>,
        id: Option<&FileId>,
        kdev: u64,
        ino: u64,
        path: Option<(&[u8], i32)>,
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
        let name = crate::trace::ebpf::names::name_of(pid, fd, dev, ino, path, kind);
        let (path, path_hex) = FileInfo::path_fields(&name);
        let page = crate::sys::page_size() as u64;
        let size = id.map_or(0, |f| f.size);
        self.st.files.push(FileInfo {
            path,
            path_hex,
            renamed: Vec::new(),
            kind,
            dev,
            ino,
            size,
            size_after: None,
            mtime_ns: id.map_or(0, |f| f.mtime.0 as i128 * 1_000_000_000 + f.mtime.1 as i128),
            mtime_after_ns: None,
            // The kernel's own count of the file's cached pages at the call's entry: seen
            // whatever the caller's rights (mincore hides it from who cannot write the file).
            resident_before: (kind == FileKind::File)
                .then(|| id.map(|f| (f.nrpages * page).min(size)))
                .flatten(),
            resident_after: None,
            xor: None,
            code: false,
            mapped_xor: None,
            cache: None,
        });
        let i = (self.st.files.len() - 1) as u32;
        self.by_id.insert((kdev, ino), (generation, i));
        if let Some(g) = generation {
            self.by_gen.insert((kdev, ino, g), i);
        }
        Some(i)
    }

    pub(super) fn file_of(&mut self, pid: u32, fd: i32, id: Option<FileId>) -> Option<u32> {
        let id = id?;
        self.file_at(pid, Some(fd), Some(&id), id.kdev, id.ino, None)
    }
}
