//! The tracer's model of the program's kernel state: descriptor tables (shared by threads,
//! copied by fork, pruned at exec) pointing at open file descriptions (whose position read and
//! write advance, shared by dup and fork), and address spaces of file mappings with the times
//! they lived, to turn a page fault's address into a file offset afterwards.

use rustc_hash::FxHashMap as HashMap;
use std::cell::RefCell;
use std::rc::Rc;

/// An open file description: what `open` made, shared by `dup` and `fork`.
#[derive(Debug, Clone)]
pub struct Desc {
    /// Index into the trace's files.
    pub file: u32,
    /// The position `read`/`write`/`lseek` move.
    pub pos: u64,
    /// Opened with O_APPEND (writes go to the end).
    pub append: bool,
}

/// A descriptor: its description and its close-on-exec flag.
#[derive(Debug, Clone)]
pub struct Slot {
    /// The open file description.
    pub desc: Rc<RefCell<Desc>>,
    /// Closed by exec.
    pub cloexec: bool,
}

/// A descriptor table.
#[derive(Debug, Clone, Default)]
pub struct Fds(pub HashMap<i32, Slot>);

impl Fds {
    /// Drops the close-on-exec descriptors (exec did).
    pub fn exec(&mut self) {
        self.0.retain(|_, s| !s.cloexec);
    }

    /// Closes descriptors `first..=last` (close_range), or marks them close-on-exec.
    pub fn close_range(&mut self, first: u32, last: u32, cloexec_only: bool) {
        for (fd, slot) in self.0.iter_mut() {
            let fd = *fd as u32;
            if fd >= first && fd <= last && cloexec_only {
                slot.cloexec = true;
            }
        }
        if !cloexec_only {
            self.0
                .retain(|fd, _| (*fd as u32) < first || (*fd as u32) > last);
        }
    }
}

/// One file mapping and when it lived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TracedMapping {
    /// Address space it belongs to.
    pub mm: u32,
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Index into the trace's files.
    pub file: u32,
    /// The file offset mapped at `start`.
    pub off: u64,
    /// When it was made, ns.
    pub from: u64,
    /// When it was unmapped (u64::MAX while alive).
    pub until: u64,
}

/// Every address space's mappings over time, and which address space each process had when.
#[derive(Debug, Default)]
pub struct Spaces {
    /// Every mapping ever made, in order.
    pub maps: Vec<TracedMapping>,
    /// Live mappings per address space: indexes into `maps`.
    live: HashMap<u32, Vec<usize>>,
    /// Per process: (from ns, address space) in time order.
    pub of_pid: HashMap<u32, Vec<(u64, u32)>>,
    next: u32,
}

impl Spaces {
    /// A new, empty address space for process `pid` from time `t` (its start or an exec).
    pub fn fresh(&mut self, pid: u32, t: u64) -> u32 {
        if let Some(old) = self.of_pid.get(&pid).and_then(|v| v.last()).map(|x| x.1) {
            self.unmap(old, 0, u64::MAX, t);
        }
        let id = self.next;
        self.next += 1;
        self.of_pid.entry(pid).or_default().push((t, id));
        id
    }

    /// A copy of address space `parent` for a forked process `pid` at time `t`.
    pub fn fork(&mut self, parent: u32, pid: u32, t: u64) -> u32 {
        let id = self.fresh(pid, t);
        let copies: Vec<TracedMapping> = self
            .live
            .get(&parent)
            .map(|v| v.iter().map(|&i| self.maps[i]).collect())
            .unwrap_or_default();
        for m in copies {
            self.add(TracedMapping {
                mm: id,
                from: t,
                until: u64::MAX,
                ..m
            });
        }
        id
    }

    /// A new mapping (what it covers is first unmapped, as MAP_FIXED does).
    pub fn map(&mut self, mm: u32, start: u64, len: u64, file: Option<u32>, off: u64, t: u64) {
        self.unmap(mm, start, len, t);
        if let Some(file) = file {
            self.add(TracedMapping {
                mm,
                start,
                end: start.saturating_add(len),
                file,
                off,
                from: t,
                until: u64::MAX,
            });
        }
    }

    fn add(&mut self, m: TracedMapping) {
        self.maps.push(m);
        let i = self.maps.len() - 1;
        self.live.entry(m.mm).or_default().push(i);
    }

    /// Unmaps `len` bytes from `start` in `mm` at time `t`: mappings inside end; mappings that
    /// stick out keep their outer parts as new mappings.
    pub fn unmap(&mut self, mm: u32, start: u64, len: u64, t: u64) {
        let end = start.saturating_add(len);
        let Some(live) = self.live.get(&mm).cloned() else {
            return;
        };
        let mut keep = Vec::new();
        let mut pieces = Vec::new();
        for i in live {
            let m = self.maps[i];
            if m.end <= start || m.start >= end {
                keep.push(i);
                continue;
            }
            self.maps[i].until = t;
            if m.start < start {
                pieces.push(TracedMapping {
                    end: start,
                    from: t,
                    ..m
                });
            }
            if m.end > end {
                pieces.push(TracedMapping {
                    start: end,
                    off: m.off + (end - m.start),
                    from: t,
                    ..m
                });
            }
        }
        self.live.insert(mm, keep);
        for p in pieces {
            self.add(p);
        }
    }

    /// The mapping of `mm` alive at `start` (for mremap).
    pub fn at(&self, mm: u32, addr: u64) -> Option<TracedMapping> {
        self.live.get(&mm).and_then(|v| {
            v.iter()
                .map(|&i| self.maps[i])
                .find(|m| m.start <= addr && addr < m.end)
        })
    }

    /// The file and offset process `pid` had mapped at `addr` at time `t`.
    pub fn resolve(&self, pid: u32, addr: u64, t: u64) -> Option<(u32, u64)> {
        let hist = self.of_pid.get(&pid)?;
        let mm = hist.iter().rev().find(|(from, _)| *from <= t)?.1;
        self.maps
            .iter()
            .rev()
            .find(|m| m.mm == mm && m.start <= addr && addr < m.end && m.from <= t && t < m.until)
            .map(|m| (m.file, m.off + (addr - m.start)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmapping_the_middle_keeps_both_ends_at_their_offsets() {
        let mut s = Spaces::default();
        let mm = s.fresh(7, 0);
        s.map(mm, 0x10000, 0x4000, Some(3), 0x1000, 10);
        s.unmap(mm, 0x11000, 0x1000, 20);
        assert_eq!(s.resolve(7, 0x11800, 15), Some((3, 0x2800)));
        assert_eq!(s.resolve(7, 0x11800, 25), None);
        assert_eq!(s.resolve(7, 0x12000, 25), Some((3, 0x3000)));
        assert_eq!(s.resolve(7, 0x10fff, 25), Some((3, 0x1fff)));
        // An exec ends every mapping; a forked child sees its parent's.
        let child = s.fork(mm, 8, 30);
        assert_eq!(s.resolve(8, 0x13000, 31), Some((3, 0x4000)));
        s.fresh(7, 40);
        assert_eq!(s.resolve(7, 0x13000, 41), None);
        assert_eq!(s.resolve(8, 0x13000, 41), Some((3, 0x4000)));
        s.map(child, 0x13000, 0x1000, None, 0, 50);
        assert_eq!(s.resolve(8, 0x13000, 51), None);
    }

    #[test]
    fn close_range_closes_or_marks() {
        let d = Rc::new(RefCell::new(Desc {
            file: 0,
            pos: 0,
            append: false,
        }));
        let mut f = Fds::default();
        for fd in 3..8 {
            f.0.insert(
                fd,
                Slot {
                    desc: d.clone(),
                    cloexec: false,
                },
            );
        }
        f.close_range(5, 6, true);
        f.exec();
        assert_eq!(f.0.len(), 3);
        f.close_range(4, u32::MAX, false);
        assert_eq!(f.0.keys().copied().collect::<Vec<_>>(), vec![3]);
    }
}
