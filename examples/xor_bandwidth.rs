//! In-memory XOR bandwidth of iolab's kernel on a resident buffer, 1 and N threads, for
//! bench/compare-read. Usage: xor_bandwidth [SIZE_MIB] [THREADS]
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mib: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1024);
    let threads: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1).max(1);
    let mut v = vec![0u8; mib << 20];
    iolab::workload::fill_random(&mut v, 1);
    let chunk = v.len().div_ceil(threads);
    let mut best = f64::MAX;
    let mut x = 0u32;
    for _ in 0..5 {
        let t = Instant::now();
        x = std::thread::scope(|s| {
            let hs: Vec<_> = v
                .chunks(chunk)
                .enumerate()
                .map(|(i, c)| s.spawn(move || iolab::xor::xor_at((i * chunk) as u64, c)))
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
