//! Page faults of the traced program, with their addresses: a perf software event (page faults,
//! every one sampled, user space only, which perf_event_paranoid 2 allows for one's own
//! processes) per CPU, inherited by the program's threads and children, enabled while it is
//! stopped right after its exec. A
//! thread drains the ring buffers while the program runs.

use perf_event::events::Software;
use perf_event::{Builder, SampleFlag, Sampler};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// One sampled page fault.
#[derive(Debug, Clone, Copy)]
pub struct FaultSample {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// CLOCK_MONOTONIC, ns.
    pub t: u64,
    /// The faulting address.
    pub addr: u64,
}

/// What the sampling thread collected.
#[derive(Debug, Default)]
pub struct Samples {
    /// Every fault, in no particular order across CPUs.
    pub samples: Vec<FaultSample>,
    /// Faults the kernel dropped because a buffer was full.
    pub lost: u64,
}

/// Sampling under way.
pub struct Sampling {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Samples>,
}

/// Data bytes of each CPU's ring buffer: 512 KiB, what an unprivileged user may lock per CPU by
/// default (perf_event_mlock_kb 516).
const RING: usize = 512 << 10;

fn online_cpus() -> Vec<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
            cpus.extend(a..=b);
        }
    }
    if cpus.is_empty() {
        cpus.push(0);
    }
    cpus
}

/// Starts sampling the page faults of child `pid`, stopped right after its exec.
pub fn start(pid: i32) -> Result<Sampling, String> {
    let mut samplers = Vec::new();
    for cpu in online_cpus() {
        let counter = Builder::new(Software::PAGE_FAULTS)
            .observe_pid(pid)
            .one_cpu(cpu)
            .sample_period(1)
            .sample(SampleFlag::TID | SampleFlag::TIME | SampleFlag::ADDR)
            .inherit(true)
            .enabled(true)
            .exclude_kernel(true)
            .exclude_hv(true)
            .clockid(perf_event::Clock::MONOTONIC)
            .build()
            .map_err(|e| format!("perf_event_open (page faults, CPU {cpu}): {e}"))?;
        samplers.push(
            counter
                .sampled(RING)
                .map_err(|e| format!("mapping the perf ring buffer: {e}"))?,
        );
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::Builder::new()
        .name("iolab-faults".into())
        .spawn(move || drain(samplers, &flag))
        .map_err(|e| format!("cannot start the sampling thread: {e}"))?;
    Ok(Sampling { stop, handle })
}

impl Sampling {
    /// Stops sampling (the program has ended) and returns what was collected.
    pub fn finish(self) -> Samples {
        self.stop.store(true, Ordering::SeqCst);
        // Woken from its wait at once, not at the end of it.
        self.handle.thread().unpark();
        self.handle.join().unwrap_or_default()
    }
}

fn drain_one(s: &mut Sampler, out: &mut Samples) -> usize {
    let mut n = 0;
    while let Some(rec) = s.next_record() {
        n += 1;
        match rec.parse_record() {
            Ok(perf_event::data::Record::Sample(sample)) => {
                if let (Some(pid), Some(tid), Some(t), Some(addr)) =
                    (sample.pid(), sample.tid(), sample.time(), sample.addr())
                {
                    out.samples.push(FaultSample { pid, tid, t, addr });
                }
            }
            Ok(perf_event::data::Record::Lost(l)) => out.lost += l.lost,
            _ => {}
        }
    }
    n
}

fn drain(mut samplers: Vec<Sampler>, stop: &AtomicBool) -> Samples {
    let mut out = Samples::default();
    loop {
        let done = stop.load(Ordering::SeqCst);
        let n: usize = samplers.iter_mut().map(|s| drain_one(s, &mut out)).sum();
        if done {
            return out;
        }
        // Waking often costs the traced program (measured: waking every 0.5 ms made ripgrep
        // under trace 40% slower); a buffer holds 16 K samples, so at 10 ms a loss needs more
        // than 1.6 M faults/s per CPU, and a drain that found a quarter buffer goes again at once.
        if n < 4096 {
            std::thread::park_timeout(Duration::from_millis(10));
        }
    }
}
