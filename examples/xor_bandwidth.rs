//! In-memory XOR bandwidth of iolab's kernel on a resident buffer, 1 and N threads, for
//! bench/compare-read: the best of PASSES passes (5 unless told). Usage: xor_bandwidth [SIZE_MIB]
//! [THREADS] [PASSES]
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mib: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1024);
    let threads: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1).max(1);
    let passes: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(5).max(1);
    // On huge pages, as a page cache of large folios is mapped: the best case for the XOR.
    let mut buf = iolab::sys::buf::AlignedBuf::new(mib << 20);
    iolab::workload::fill_random(buf.as_mut_slice(), 1);
    let v = buf.as_slice();
    let chunk = v.len().div_ceil(threads);
    let mut best = f64::MAX;
    let mut x = 0u32;
    for _ in 0..passes {
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
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "{:.2} GiB/s xor={x:08x} threads={threads}",
        mib as f64 / 1024.0 / best
    );
}
