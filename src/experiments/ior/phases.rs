//! One rank's write phase and read phase: open, transfers, sync and close timed, every byte XORed
//! and checked against what was written.

use super::*;

pub(super) fn seconds(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64()
}

/// A phase's clock and the counters at its start; [`PhaseClock::finish`] makes its record.
struct PhaseClock {
    before: Snapshot,
    t0: Instant,
    open_start: f64,
}

/// What a phase moved, and what it should have.
struct PhaseMoved {
    bytes: u64,
    transfers: u64,
    xor: Option<u32>,
    expected_xor: u32,
    /// Fraction resident before a read; -1 for writes.
    resident_before: f64,
    data_of: usize,
}

impl PhaseClock {
    fn start() -> PhaseClock {
        let before = Snapshot::now();
        let t0 = Instant::now();
        PhaseClock {
            before,
            t0,
            open_start: seconds(t0),
        }
    }

    fn now(&self) -> f64 {
        seconds(self.t0)
    }

    /// Closed now: the record, with the counters' change since the start.
    fn finish(&self, open_end: f64, xfer_end: f64, m: PhaseMoved) -> RankPhase {
        let close_end = self.now();
        let c = diff(&self.before, &Snapshot::now(), self.t0.elapsed());
        RankPhase {
            open_start: self.open_start,
            open_end,
            xfer_end,
            close_end,
            bytes: m.bytes,
            transfers: m.transfers,
            xor: m.xor,
            expected_xor: m.expected_xor,
            resident_before: m.resident_before,
            minor_faults: c.minor_faults,
            major_faults: c.major_faults,
            device_read_bytes: c.device_read_bytes.unwrap_or(0),
            data_of: m.data_of,
        }
    }
}

/// The expected XOR of rank `of`'s first `count` transfers.
pub(super) fn expected(cfg: &IorConfig, of: usize, n: usize, count: u64) -> u32 {
    let data = cfg.data(of);
    let base = data.base();
    // Offsets are multiples of 8, so a transfer's words sit the same way wherever it is: only
    // its tag differs.
    let body = xor_at(0, &base) ^ xor_at(0, &base[..8.min(base.len())]);
    cfg.offsets(of, n)
        .take(count as usize)
        .fold(0, |x, o| x ^ body ^ xor_at(o, &data.tag(o)))
}

pub(super) fn open_for_write(cfg: &IorConfig, path: &Path) -> Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true).create(true);
    // Never through a link; never into a device or a FIFO.
    let direct = if cfg.api == IorApi::Direct {
        libc::O_DIRECT
    } else {
        0
    };
    o.custom_flags(direct | libc::O_NOFOLLOW);
    let f = o
        .open(path)
        .map_err(|e| Error::io("cannot open for writing", path, &e))?;
    match f.metadata() {
        Ok(m) if m.file_type().is_file() => Ok(f),
        _ => Err(Error::usage("refusing to write into it", "it is not a regular file").at(path)),
    }
}

pub(super) fn write_phase(cfg: &IorConfig, r: usize, n: usize) -> Result<RankPhase> {
    let path = cfg.file_of(r);
    let data = cfg.data(r);
    let t = cfg.transfer as usize;
    let mut buf = crate::sys::buf::AlignedBuf::new(t);
    let base = data.base();
    buf.as_mut_slice().copy_from_slice(&base);
    let head: [u8; 8] = base[..8].try_into().unwrap_or([0; 8]);
    let clock = PhaseClock::start();
    let t0 = clock.t0;
    let file = open_for_write(cfg, &path)?;
    let len = cfg.file_len(n);
    let mut map = None;
    if cfg.api == IorApi::Mmap {
        // Every rank makes the file its full size (growing only), then maps its own range.
        let now = file.metadata().map(|m| m.len()).unwrap_or(0);
        if now < len {
            file.set_len(len)
                .map_err(|e| Error::io("cannot size the file", &path, &e))?;
        }
        // Blocks reserved before the mapping is written: a full file system is an error here,
        // not zero pages mapped over failed faults.
        match crate::sys::fallocate(&file, len) {
            Ok(()) => {}
            // Without fallocate the SIGBUS guard's count below still catches it.
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
            Err(e) => return Err(Error::io("write failed", &path, &e)),
        }
        map = Some(
            crate::sys::map::WritableMapping::new(&file, len as usize)
                .map_err(|e| Error::io("cannot map for writing", &path, &e))?,
        );
    }
    let open_end = seconds(t0);
    let deadline = cfg.stonewall.and_then(|d| t0.checked_add(d));
    let (mut bytes, mut transfers, mut x) = (0u64, 0u64, 0u32);
    for o in cfg.offsets(r, n) {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let chunk = data.place(buf.as_mut_slice(), &head, o, t);
        match map.as_mut() {
            Some(m) => {
                let stored = &mut m.as_mut_slice()[o as usize..o as usize + t];
                stored.copy_from_slice(chunk);
                // What the mapping holds now (a page lost to SIGBUS reads as zeros).
                if cfg.verify {
                    x ^= xor_at(o, stored);
                }
            }
            None => {
                if cfg.verify {
                    x ^= xor_at(o, chunk);
                }
                file.write_all_at(chunk, o)
                    .map_err(|e| Error::io("write failed", &path, &e))?
            }
        }
        bytes += t as u64;
        transfers += 1;
    }
    let xfer_end = seconds(t0);
    if let Some(m) = &map
        && m.sigbus_hits() > 0
    {
        return Err(Error::failed(
            "write failed",
            "the mapping lost its backing (SIGBUS: no space left, or the file was truncated)",
        )
        .at(&path));
    }
    if cfg.fsync {
        if let Some(m) = &map {
            m.sync(0, m.len())
                .map_err(|e| Error::io("msync failed", &path, &e))?;
        }
        file.sync_all()
            .map_err(|e| Error::io("fsync failed", &path, &e))?;
    }
    drop(map);
    drop(file);
    Ok(clock.finish(
        open_end,
        xfer_end,
        PhaseMoved {
            bytes,
            transfers,
            xor: cfg.verify.then_some(x),
            expected_xor: expected(cfg, r, n, transfers),
            resident_before: -1.0,
            data_of: r,
        },
    ))
}

pub(super) fn read_phase(cfg: &IorConfig, n: usize, from: usize, count: u64) -> Result<RankPhase> {
    let path = cfg.file_of(from);
    let resident = File::open(&path)
        .ok()
        .and_then(|f| crate::cache::residency_of(&f, cfg.file_len(n), &path).ok())
        .map(|res| res.fraction())
        .unwrap_or(0.0);
    let clock = PhaseClock::start();
    let t0 = clock.t0;
    let src = open_source(&path)?;
    let w = Workload {
        bs: cfg.transfer,
        len: src.size,
        pattern: Pattern::Seq,
        seed: cfg.seed,
        threads: 1,
    };
    let work = if cfg.verify {
        crate::engine::Work::Xor
    } else {
        crate::engine::Work::Copy
    };
    let opts = EngineOptions {
        work,
        ..EngineOptions::default()
    };
    let mut prepared = prepare(cfg.api.read_method(), &src, &w, &opts)?;
    let open_end = seconds(t0);
    // Rank `from`'s part: a contiguous range per segment (or less, after a stonewall), each
    // read transfer by transfer.
    let per = cfg.block / cfg.transfer;
    let mut left = count;
    let mut moved = crate::engine::Moved::default();
    for seg in 0..cfg.segments {
        if left == 0 {
            break;
        }
        let take = left.min(per);
        let start = cfg.offsets(from, n).nth((seg * per) as usize).unwrap_or(0);
        moved.add(prepared.run_over(&w.range_parts(start, start + take * cfg.transfer))?);
        left -= take;
    }
    let xfer_end = seconds(t0);
    drop(prepared);
    drop(src);
    Ok(clock.finish(
        open_end,
        xfer_end,
        PhaseMoved {
            bytes: moved.bytes,
            transfers: count,
            xor: cfg.verify.then_some(moved.xor),
            expected_xor: expected(cfg, from, n, count),
            resident_before: resident,
            data_of: from,
        },
    ))
}
