fn main() {
    let n = 1usize << 30;
    let mut v = vec![0u8; n];
    iolab::workload::fill_random(&mut v, 1);
    for _ in 0..3 {
        let t = std::time::Instant::now();
        let x = iolab::xor::xor_bytes(&v);
        let s = t.elapsed().as_secs_f64();
        println!("{x:08x} {:.1} GiB/s", 1.0 / s);
    }
}
