//! The file behind a traced process's descriptor, as /proc shows it: registered in the trace's
//! files on first sight, by device, inode and birth time.

use super::ops::State;
use crate::trace::{FileInfo, FileKind};
use std::os::unix::fs::{FileTypeExt, MetadataExt};

impl State {
    /// The file behind descriptor `fd` of process `pid`, registered on first sight.
    pub(super) fn identify(&mut self, pid: u32, fd: i32) -> Option<u32> {
        let link = format!("/proc/{pid}/fd/{fd}");
        let meta = std::fs::metadata(&link).ok()?;
        let key = (meta.dev(), meta.ino(), meta.created().ok());
        if let Some(&i) = self.by_id.get(&key) {
            return Some(i);
        }
        let name = std::fs::read_link(&link).unwrap_or_else(|_| link.clone().into());
        let ft = meta.file_type();
        let kind = if ft.is_file() {
            FileKind::File
        } else if ft.is_dir() {
            FileKind::Dir
        } else if ft.is_fifo() {
            FileKind::Pipe
        } else if ft.is_socket() {
            FileKind::Socket
        } else if ft.is_char_device() || ft.is_block_device() {
            FileKind::Device
        } else {
            FileKind::Other
        };
        let resident_before = if kind == FileKind::File {
            resident_bytes(&link, (meta.dev(), meta.ino()), meta.len())
        } else {
            None
        };
        let mtime_ns = meta.mtime() as i128 * 1_000_000_000 + meta.mtime_nsec() as i128;
        let i = self.rec.add_file(FileInfo {
            resident_before,
            ..FileInfo::first_seen(&name, kind, (meta.dev(), meta.ino()), meta.len(), mtime_ns)
        });
        self.by_id.insert(key, i);
        Some(i)
    }
}

fn resident_bytes(link: &str, id: (u64, u64), size: u64) -> Option<u64> {
    // The descriptor's file, checked to be that regular file before it is opened.
    let (f, _) = crate::source::open_regular(std::path::Path::new(link), true, Some(id)).ok()?;
    let path = std::path::Path::new(link);
    if !crate::cache::residency_visible(&f, path) {
        return None;
    }
    let r = crate::cache::residency_of(&f, size, path).ok()?;
    Some((r.resident_pages * r.page_size).min(size))
}
