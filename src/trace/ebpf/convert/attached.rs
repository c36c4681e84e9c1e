//! A process traced from the middle of its run (`iolab trace --pid`): its threads' counters
//! at the attach are subtracted from theirs at the end (at their exit, or read from /proc when
//! they still run), and the file mappings it had made are taken from /proc/PID/maps, so that
//! its faults on them are placed.

use super::Convert;
use crate::trace::KernelIo;

fn io_array(k: &KernelIo) -> [u64; 6] {
    [
        k.rchar,
        k.wchar,
        k.syscr,
        k.syscw,
        k.read_bytes,
        k.write_bytes,
    ]
}

impl Convert {
    /// Processes `pids` (the first one the trace's own), running, traced from `t0` on: their
    /// threads as /proc has them now.
    pub fn attached(pids: &[u32], t0: u64) -> Self {
        let root = pids.first().copied().unwrap_or(0);
        let mut c = Convert::new(root, t0);
        c.rec.launching = false;
        c.rec.threads = 0;
        c.rec.processes = 0;
        c.tids.clear();
        for &pid in pids {
            c.adopt(pid);
        }
        c.rec.threads = c.rec.threads.max(1);
        c.rec.processes = c.rec.processes.max(1);
        c
    }

    /// Process `pid`, running: its threads and counters now, its file mappings.
    fn adopt(&mut self, pid: u32) {
        let tids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        for &tid in &tids {
            if self.tids.insert(tid) {
                self.rec.threads += 1;
            }
            self.born.insert(tid, 0);
            self.pid_of.insert(tid, pid);
            if let Some(s) = std::fs::read(format!("/proc/{pid}/task/{tid}/schedstat"))
                .ok()
                .and_then(|b| crate::trace::record::parse_schedstat(&b))
            {
                self.sched_before.insert(tid, s);
            }
            if let Some(k) = crate::trace::KernelIo::of_thread(pid, tid as i32) {
                self.io_before.insert(tid, io_array(&k));
                self.io_from.insert(tid, crate::sys::monotonic_ns());
            }
        }
        if let Some((b, _)) = super::super::alive::stat(pid) {
            self.births.insert(pid, b);
        }
        if self.live.insert(pid) || pid == self.root {
            self.rec.processes += 1;
        }
        if !self.mm.contains_key(&pid) {
            let mm = self.rec.spaces.fresh(pid, 0);
            self.mm.insert(pid, mm);
        }
        self.mappings_of(pid);
    }

    /// The file mappings process `pid` has now (/proc/PID/maps).
    fn mappings_of(&mut self, pid: u32) {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
            return;
        };
        let Some(&mm) = self.mm.get(&pid) else {
            return;
        };
        for line in text.lines() {
            // start-end perms offset major:minor inode path
            let mut w = line.split_whitespace();
            let (Some(range), Some(perms), Some(off), Some(dev), Some(ino)) =
                (w.next(), w.next(), w.next(), w.next(), w.next())
            else {
                continue;
            };
            let path: String = w.collect::<Vec<_>>().join(" ");
            let ino: u64 = ino.parse().unwrap_or(0);
            if ino == 0 || !path.starts_with('/') {
                continue;
            }
            let Some((start, end)) = range.split_once('-') else {
                continue;
            };
            let (Ok(start), Ok(end), Ok(off)) = (
                u64::from_str_radix(start, 16),
                u64::from_str_radix(end, 16),
                u64::from_str_radix(off, 16),
            ) else {
                continue;
            };
            let Some((major, minor)) = dev.split_once(':') else {
                continue;
            };
            let (Ok(major), Ok(minor)) = (
                u64::from_str_radix(major, 16),
                u64::from_str_radix(minor, 16),
            ) else {
                continue;
            };
            let kdev = (major << 20) | minor;
            let name = path.strip_suffix(" (deleted)").unwrap_or(&path);
            let file = self.file_at(
                pid,
                None,
                None,
                (kdev, ino),
                Some((name.as_bytes(), libc::AT_FDCWD)),
                false,
            );
            if let Some(f) = file {
                if perms.contains('x') {
                    self.rec.files[f as usize].code = true;
                }
                self.rec.spaces.map(mm, start, end - start, Some(f), off, 0);
            }
        }
    }

    /// Thread `tid`'s counters from the attach on, given its counters now.
    pub(super) fn since_attach(&mut self, tid: u32, io: [u64; 6]) -> [u64; 6] {
        match self.io_before.remove(&tid) {
            Some(b) => std::array::from_fn(|i| io[i].saturating_sub(b[i])),
            None => io,
        }
    }

    /// Threads still running at the end (those of the attach, and those started since): their
    /// counters now, less theirs at the attach, into the trace's kernel counts; each read
    /// before the ring is taken for the last time, and when noted ([`Convert::cut_to_readings`]).
    pub fn still_running(&mut self) {
        let mut left: Vec<u32> = self.born.keys().copied().collect();
        left.sort_unstable();
        for tid in left {
            let at = crate::sys::monotonic_ns();
            // /proc/TID/io is the thread's, whichever its process.
            let Some(k) = crate::trace::KernelIo::of_thread(tid, tid as i32) else {
                continue;
            };
            self.io_until.insert(tid, at);
            let io = self.since_attach(tid, io_array(&k));
            self.add_io(&io);
        }
    }

    /// Keeps each thread's calls that ended between the readings of its counters (at the
    /// attach and at the end): what the counters hold is what the trace holds, to a call in
    /// flight during a reading (read before the probes followed, or the ring taken before
    /// the end's reading, the calls in between were on one side only: milliseconds of a busy
    /// machine, 1% of dd's reads).
    pub fn cut_to_readings(&mut self) {
        if self.io_from.is_empty() && self.io_until.is_empty() {
            return;
        }
        let t0 = self.rec.t0;
        let (from, until) = (&self.io_from, &self.io_until);
        self.rec.ops.retain(|op| {
            let end = t0 + op.t + op.dur;
            from.get(&op.tid).is_none_or(|&f| end > f)
                && until.get(&op.tid).is_none_or(|&u| end <= u)
        });
    }

    pub(super) fn add_io(&mut self, io: &[u64; 6]) {
        let k = &mut self.rec.kernel;
        k.rchar += io[0];
        k.wchar += io[1];
        k.syscr += io[2];
        k.syscw += io[3];
        k.read_bytes += io[4];
        k.write_bytes += io[5];
        k.threads += 1;
    }
}
