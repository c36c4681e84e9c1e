//! The child side of `squeeze`: one method read for a while inside the group, a sample a
//! second (the `ReadSampler`) sent as JSON lines, and a CPU-bound companion thread whose work
//! shows what the method left of the CPU.

use super::*;

/// What the child is asked to run (passed as one JSON argument).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SqueezeWorker {
    /// The file.
    pub path: PathBuf,
    /// The method.
    pub method: ReadMethod,
    /// How it reads.
    #[serde(flatten)]
    pub reads: SqueezeReads,
    /// The group it runs in (for its memory figures), if any.
    pub group: Option<GroupFiles>,
}

/// The companion's unit of work: 10,000 rounds of `x = exp(ln(x))`, as in mmapbench.
fn companion_unit(x: f64) -> f64 {
    let mut x = std::hint::black_box(x.max(1.0));
    for _ in 0..10_000 {
        x = x.ln().exp();
    }
    x
}

/// Runs the companion until `stop`, counting units into `work`.
fn companion(stop: &AtomicBool, work: &AtomicU64) {
    let mut x = 1.5;
    while !stop.load(Ordering::Relaxed) {
        x = companion_unit(x);
        work.fetch_add(1, Ordering::Relaxed);
    }
    std::hint::black_box(x);
}

/// Units per second of the companion alone on an otherwise idle process, over `d`.
pub fn companion_alone(d: Duration) -> f64 {
    let start = Instant::now();
    let mut x = 1.5;
    let mut n = 0u64;
    while start.elapsed() < d {
        x = companion_unit(x);
        n += 1;
    }
    std::hint::black_box(x);
    n as f64 / start.elapsed().as_secs_f64()
}

/// Counters at one moment, in the child.
#[derive(Debug, Clone, Copy)]
struct ReadSnap {
    at: Instant,
    ops: u64,
    dev: Option<u64>,
    own: Option<u64>,
    tlb: Option<u64>,
    minflt: u64,
    majflt: u64,
    mem: Option<u64>,
    peak: Option<u64>,
    psi: Option<u64>,
    work: u64,
}

struct ReadSampler {
    ops: Arc<AtomicU64>,
    work: Arc<AtomicU64>,
    device: Option<(u32, u32)>,
    group: Option<GroupFiles>,
    bs: u64,
    start: Instant,
}

impl ReadSampler {
    fn psi(&self) -> Option<u64> {
        self.group
            .as_ref()
            .and_then(|g| g.pressure_us())
            .or_else(|| {
                std::fs::read_to_string("/proc/pressure/memory")
                    .ok()
                    .and_then(|t| crate::measure::interference::parse_psi_total(&t))
            })
    }

    fn snap(&self) -> ReadSnap {
        let u = crate::sys::rusage_self();
        ReadSnap {
            at: Instant::now(),
            ops: self.ops.load(Ordering::Relaxed),
            dev: self
                .device
                .and_then(|(ma, mi)| series::device_read_bytes(ma, mi)),
            own: crate::measure::proc_self_read_bytes(),
            tlb: series::tlb_shootdowns_now(),
            minflt: u.minflt,
            majflt: u.majflt,
            mem: self.group.as_ref().and_then(|g| g.usage()),
            peak: self.group.as_ref().and_then(|g| g.peak()),
            psi: self.psi(),
            work: self.work.load(Ordering::Relaxed),
        }
    }

    fn tick(&self, a: &ReadSnap, b: &ReadSnap) -> SqueezeTick {
        let secs = b.at.duration_since(a.at).as_secs_f64().max(1e-9);
        let ops = b.ops.saturating_sub(a.ops);
        let d = |x: Option<u64>, y: Option<u64>| Some(y?.saturating_sub(x?));
        SqueezeTick {
            t: b.at.duration_since(self.start).as_secs_f64(),
            secs,
            ops,
            kiops: ops as f64 / secs / 1e3,
            mib_s: (ops * self.bs) as f64 / secs / (1u64 << 20) as f64,
            dev_read_bytes: d(a.dev, b.dev),
            own_read_bytes: d(a.own, b.own),
            tlb_shootdowns: d(a.tlb, b.tlb),
            minor_faults: b.minflt.saturating_sub(a.minflt),
            major_faults: b.majflt.saturating_sub(a.majflt),
            mem_current: b.mem,
            mem_peak: b.peak,
            pressure_us: d(a.psi, b.psi),
            cpu_work: b.work.saturating_sub(a.work),
        }
    }
}

fn send(out: &mut dyn Write, m: &SqueezeMessage) -> Result<()> {
    crate::harness::child::send(out, m)
}

/// The child: waits for one line on `go` (the parent has moved it into the group by then), runs
/// the method for `cfg.reads.seconds`, and writes a [`SqueezeMessage`] per line to `out`: a
/// tick per second, then `done` (or `failed`).
pub fn run_worker(cfg: &SqueezeWorker, go: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
    crate::harness::child::serve::<SqueezeTick, SqueezeDone>(go, out, |out| work(cfg, out))
}

/// Reads lap after lap until the deadline (a new order each lap): what moved, the latencies and
/// the laps.
fn read_laps(
    cfg: &SqueezeWorker,
    w: &Workload,
    prepared: &mut engine::Prepared,
    deadline: Instant,
    ops: &Arc<AtomicU64>,
) -> Result<(Moved, Histogram, u64)> {
    let mut total = Moved::default();
    let mut hist = Histogram::default();
    let mut laps = 0u64;
    while Instant::now() < deadline {
        let lap_seed = cfg.reads.seed.wrapping_add(laps);
        let parts = match cfg.reads.pattern {
            SqueezePattern::Random => Workload {
                seed: lap_seed,
                ..*w
            }
            .parts(),
            SqueezePattern::Uniform => w.uniform_parts(lap_seed),
            SqueezePattern::Seq => w.parts(),
        };
        let limits = RunLimits {
            max_ops: None,
            deadline: Some(deadline),
            latencies: true,
            progress: Some(ops.clone()),
            progress_each: false,
        };
        let (m, h) = prepared.run_over_limited(&parts, limits)?;
        total.add(m);
        if let Some(h) = h {
            hist.merge(&h);
        }
        laps += 1;
    }
    Ok((total, hist, laps))
}

/// A sample every `tick` seconds, sent as it is taken; the last one when the reads have stopped
/// (at the deadline, after the requests still in flight), so every read is in some sample.
fn send_ticks(
    out: &mut dyn Write,
    sampler: &ReadSampler,
    tick: f64,
    deadline: Instant,
    done: &std::sync::mpsc::Receiver<()>,
    first: ReadSnap,
) -> Result<()> {
    let mut last = first;
    let mut k = 1u32;
    let mut sent: Result<()> = Ok(());
    loop {
        let next =
            (sampler.start + Duration::from_secs_f64(k as f64 * tick.max(0.05))).min(deadline);
        let finished = if next >= deadline {
            let _ = done.recv();
            true
        } else {
            let wait = next.saturating_duration_since(Instant::now());
            match done.recv_timeout(wait) {
                Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => true,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => false,
            }
        };
        let now = sampler.snap();
        let t = sampler.tick(&last, &now);
        if sent.is_ok() {
            sent = send(out, &SqueezeMessage::Tick(t));
        }
        last = now;
        k += 1;
        if finished {
            return sent;
        }
    }
}

fn work(cfg: &SqueezeWorker, out: &mut dyn Write) -> Result<()> {
    let src = engine::open_source(&cfg.path)?;
    let len = src.size - src.size % cfg.reads.bs.max(1);
    if len == 0 {
        return Err(Error::usage(
            "file too small",
            format!("smaller than one block of {} bytes", cfg.reads.bs),
        )
        .at(&cfg.path));
    }
    let meta = src
        .file
        .metadata()
        .map_err(|e| Error::io("cannot stat", &cfg.path, &e))?;
    let (ma, mi) = series::dev_numbers(std::os::unix::fs::MetadataExt::dev(&meta));
    let diskstats = std::fs::read_to_string("/proc/diskstats").unwrap_or_default();
    let device = series::diskstats_name(&diskstats, ma, mi);
    let w = Workload {
        bs: cfg.reads.bs,
        len,
        pattern: match cfg.reads.pattern {
            SqueezePattern::Seq => Pattern::Seq,
            _ => Pattern::Random,
        },
        seed: cfg.reads.seed,
        threads: cfg.reads.threads.max(1),
    };
    // One byte per block, no prefetch hint: what mmapbench's loop does (`sum += p[rnd(gen)]`);
    // a read copies the block into its buffer, as any read must.
    let opts = EngineOptions {
        work: Work::Touch,
        file_hint: true,
        prefetch: false,
        ..EngineOptions::with_depth(cfg.reads.depth)
    };
    let mut prepared = engine::prepare(cfg.method, &src, &w, &opts)?;
    let ops = Arc::new(AtomicU64::new(0));
    let work = Arc::new(AtomicU64::new(0));
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(cfg.reads.seconds.max(0.0));
    let sampler = ReadSampler {
        ops: ops.clone(),
        work: work.clone(),
        device: device.as_ref().map(|_| (ma, mi)),
        group: cfg.group.clone(),
        bs: cfg.reads.bs,
        start,
    };
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    // The first sample before any reading thread starts, so every read falls after it.
    let first = sampler.snap();
    let result = std::thread::scope(|s| {
        s.spawn(|| companion(&stop, &work));
        let io = s.spawn(|| {
            let r = read_laps(cfg, &w, &mut prepared, deadline, &ops);
            let _ = done_tx.send(());
            r
        });
        let sent = send_ticks(out, &sampler, cfg.reads.tick, deadline, &done_rx, first);
        stop.store(true, Ordering::Relaxed);
        let io = io
            .join()
            .unwrap_or_else(|_| Err(Error::failed("read failed", "a reading thread panicked")));
        sent.and(io)
    });
    let (moved, hist, laps) = result?;
    send(
        out,
        &SqueezeMessage::Done(SqueezeDone {
            moved,
            laps,
            latency: hist.summary(),
            device,
            pressure_scope: match (&cfg.group, sampler.psi()) {
                (_, None) => None,
                (Some(g), Some(_)) if g.pressure_us().is_some() => Some("group".into()),
                _ => Some("system".into()),
            },
        }),
    )
}
