//! In-memory XOR bandwidth of iolab's kernel on a resident buffer, 1 and N threads, for
//! bench/compare-read: the best of PASSES passes (5 unless told), then the first pass's.
//! Usage: xor_bandwidth [SIZE_MIB] [THREADS] [PASSES] [FILE]
//!
//! With FILE, the passes go over a shared mapping of the file's first SIZE_MIB (its whole
//! length if shorter) instead of a buffer of the program's own: the same memory `iolab fast`
//! reads when the file is cached, so a slower figure there is the memory's, not fast's.
use std::time::Instant;

/// The bytes the passes go over: a buffer of the program's own or a mapping of FILE.
enum Memory {
    Own(iolab::sys::buf::AlignedBuf),
    File(iolab::sys::map::Mapping),
}

impl Memory {
    fn as_slice(&self) -> &[u8] {
        match self {
            Memory::Own(b) => b.as_slice(),
            Memory::File(m) => m.as_slice(),
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mib: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1024);
    let threads: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1).max(1);
    let passes: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(5).max(1);
    let memory = match args.get(4) {
        Some(path) => {
            let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let len = file.metadata().map(|m| m.len() as usize).unwrap_or(0);
            let len = len.min(mib << 20);
            assert!(len > 0, "{path} is empty");
            // Mapped as `fast`'s `mmap` maps it: shared, read-only, no hint.
            let map = iolab::sys::map::Mapping::range(&file, 0, len, false)
                .unwrap_or_else(|e| panic!("cannot map {path}: {e}"));
            Memory::File(map)
        }
        None => {
            // On huge pages, as a page cache of large folios is mapped: the best case for the XOR.
            let mut buf = iolab::sys::buf::AlignedBuf::new(mib << 20);
            iolab::workload::fill_random(buf.as_mut_slice(), 1);
            Memory::Own(buf)
        }
    };
    let v = memory.as_slice();
    let chunk = v.len().div_ceil(threads);
    let mut best = f64::MAX;
    let mut first = 0.0;
    let mut x = 0u32;
    for pass in 0..passes {
        let t = Instant::now();
        let here = iolab::sys::current_cpu().unwrap_or(0);
        x = std::thread::scope(|s| {
            let hs: Vec<_> = v
                .chunks(chunk)
                .enumerate()
                .map(|(i, c)| {
                    s.spawn(move || {
                        // Each thread on a CPU of its own, as iolab's workers start.
                        iolab::sys::start_apart(here, i);
                        iolab::xor::xor_at((i * chunk) as u64, c)
                    })
                })
                .collect();
            hs.into_iter().fold(0, |a, h| a ^ h.join().unwrap())
        });
        let took = t.elapsed().as_secs_f64();
        if pass == 0 {
            first = took;
        }
        best = best.min(took);
    }
    let gib = v.len() as f64 / (1u64 << 30) as f64;
    println!(
        "{:.2} GiB/s xor={x:08x} threads={threads} first={:.2}",
        gib / best,
        gib / first
    );
}
