use super::procfs::read_small;
use super::*;

#[test]
fn parses_proc_stat_and_pressure() {
    let stat = "cpu  100 5 50 1000 20 3 2 7 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
    assert_eq!(parse_cpu_line(stat), Some((160, 7, 1187)));
    assert_eq!(parse_cpu_line("intr 1 2"), None);
    let psi = "some avg10=5.44 avg60=4.81 avg300=4.01 total=147648524\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
    assert_eq!(parse_psi_total(psi), Some(147_648_524));
    assert_eq!(parse_psi_total("garbage"), None);
}

fn sample(at: Instant, steal: u64, total: u64, procs: &[(u32, bool, u64)]) -> Sample {
    // The machine's busy ticks are those of the processes listed (this one used none).
    let busy = procs.iter().map(|p| p.2).sum();
    // Pids from 1000 are this process's child and grandchild; the others are init's.
    let ppid = |p: u32| match p {
        1000 => std::process::id(),
        1001 => 1000,
        _ => 1,
    };
    Sample {
        at,
        cpu: Some((busy, steal, total)),
        psi: [Some(0), None, Some(0)],
        procs: procs
            .iter()
            .map(|&(p, kthread, ticks)| {
                let ppid = ppid(p);
                (
                    p,
                    ProcStat {
                        kthread,
                        ticks,
                        ppid,
                        io_bytes: 0,
                        wait_ns: 0,
                    },
                )
            })
            .collect(),
        ivcsw: 0,
        own_us: 0,
        memory: (Some(8 << 30), Some(16 << 30)),
        own_limit: (false, 0),
    }
}

/// Memory pressure makes a busy machine and says so: stalls for memory, or little memory
/// left; stalls while iolab fills a memory group of its own (squeeze) do not.
#[test]
fn memory_pressure_makes_a_busy_machine_unless_it_is_our_own() {
    let stalled = judge(Interference {
        seconds: 2.0,
        psi_memory_pct: Some(25.0),
        ..Default::default()
    });
    assert!(stalled.busy && stalled.reasons[0].contains("waited for memory 25%"));
    let short = judge(Interference {
        seconds: 2.0,
        mem_available: Some(100 << 20),
        mem_total: Some(24 << 30),
        ..Default::default()
    });
    assert!(short.busy && short.reasons[0].contains("only 100 MiB of 24576 MiB"));
    let plenty = judge(Interference {
        seconds: 2.0,
        psi_memory_pct: Some(2.0),
        mem_available: Some(20 << 30),
        mem_total: Some(24 << 30),
        ..Default::default()
    });
    assert!(!plenty.busy, "{plenty:?}");
    // 2 s with memory stalls 1 s of it: busy, unless iolab's own limited group ran.
    let t0 = Instant::now();
    let mut a = sample(t0, 0, 0, &[]);
    let mut b = sample(t0 + std::time::Duration::from_secs(2), 0, 400, &[]);
    b.psi[2] = Some(1_000_000);
    assert!(between(&a, &b, 0.0, 100).busy);
    b.own_limit = (false, 1);
    let own = between(&a, &b, 0.0, 100);
    assert!(!own.busy && own.psi_memory_pct.is_none(), "{own:?}");
    a.own_limit = (true, 1);
    b.own_limit = (true, 1);
    assert!(!between(&a, &b, 0.0, 100).busy);
    // The least available memory of the windows is the one judged.
    let m = Interference::merge([&plenty, &short]);
    assert_eq!(m.mem_available, Some(100 << 20));
    {
        let _held = OwnMemoryLimit::hold();
        assert!(OWN_MEMORY_LIMITS.load(std::sync::atomic::Ordering::Relaxed) > 0);
    }
}

#[test]
fn other_processes_cpu_leaves_out_kernel_threads() {
    let text = "1234 (a (weird) name) S 1 1 1 0 -1 4194560 10 0 0 0 70 30 5 5 20 0 1 0";
    let p = |kthread, ticks, ppid| {
        Some(ProcStat {
            kthread,
            ticks,
            ppid,
            io_bytes: 0,
            wait_ns: 0,
        })
    };
    assert_eq!(parse_pid_stat(text), p(false, 110, 1));
    let kworker = "99 (kworker/0:1) I 2 0 0 0 -1 69238880 0 0 0 0 3 4 0 0 20 0 1 0";
    assert_eq!(parse_pid_stat(kworker), p(true, 7, 2));
    assert_eq!(parse_pid_stat("garbage"), None);
    let t0 = Instant::now();
    let t1 = t0 + std::time::Duration::from_secs(2);
    // 2 s at 100 ticks/s: pid 7 used 150 ticks, pid 8 (new) 50, a kernel thread 100.
    let a = sample(t0, 0, 0, &[(7, false, 1000), (99, true, 0)]);
    let b = sample(
        t1,
        0,
        400,
        &[(7, false, 1150), (8, false, 50), (99, true, 100)],
    );
    let i = between(&a, &b, 1.0, 100);
    assert!((i.other_cpu_cores - 1.0).abs() < 0.01, "{i:?}");
    assert!((i.kernel_cpu_cores - 0.5).abs() < 0.01, "{i:?}");
    assert!(i.busy && i.reasons[0].contains("ran on 1.00 of"), "{i:?}");
    assert_eq!(i.psi_io_pct, None);
    // Kernel threads alone (write-back of our own writes): quiet.
    let q = between(
        &a,
        &sample(t1, 0, 400, &[(7, false, 1000), (99, true, 150)]),
        1.0,
        100,
    );
    assert!(!q.busy && q.reasons.is_empty(), "{q:?}");
    // What this process started (an MPI singleton's daemon and its child) is its own work.
    let kids = between(
        &a,
        &sample(
            t1,
            0,
            400,
            &[(7, false, 1000), (1000, false, 150), (1001, false, 50)],
        ),
        1.0,
        100,
    );
    assert!(!kids.busy && kids.other_cpu_cores == 0.0, "{kids:?}");
    // Stolen time alone makes it busy.
    let s = between(&a, &sample(t1, 40, 400, &[(7, false, 1000)]), 0.0, 100);
    assert!(s.busy && s.reasons[0].contains("stole 10.0%"), "{s:?}");
    let m = Interference::merge([&q, &s]);
    assert!(m.busy && m.reasons.len() == 1, "{m:?}");
    assert!(m.reasons[0].starts_with("1 of 2 experiments"), "{m:?}");
    assert!(!Interference::merge([&q, &q]).busy);
    assert!(m.warning().unwrap().starts_with("Warning: "));
    assert!(m.warning().unwrap().contains("--wait-quiet"));
    let line = m.busy_line().unwrap();
    assert!(line.starts_with("the machine was busy") && !line.contains("--wait-quiet"));
    assert!(q.warning().is_none());
}

#[test]
fn kernel_threads_come_from_kthreadds_children_only_when_pid_2_is_kthreadd() {
    let dir = tempfile::tempdir().unwrap();
    let proc = dir.path();
    std::fs::create_dir_all(proc.join("2/task/2")).unwrap();
    let kthreadd = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0";
    std::fs::write(proc.join("2/stat"), kthreadd).unwrap();
    // No children list (a kernel without it): nothing is skipped.
    assert_eq!(kernel_threads(proc), None);
    std::fs::write(proc.join("2/task/2/children"), "3 4 99 ").unwrap();
    assert_eq!(
        kernel_threads(proc),
        Some([2, 3, 4, 99].into_iter().collect())
    );
    // In a PID namespace pid 2 is some process: its children are not kernel threads.
    let shell = "2 (sh) S 1 2 2 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0";
    std::fs::write(proc.join("2/stat"), shell).unwrap();
    assert_eq!(kernel_threads(proc), None);
    // A list that cannot be read whole is not trusted.
    std::fs::write(proc.join("2/stat"), kthreadd).unwrap();
    std::fs::write(proc.join("2/task/2/children"), "3 x 4").unwrap();
    assert_eq!(kernel_threads(proc), None);
    // On this machine: every pid it names that still runs is a kernel thread.
    if let Some(live) = kernel_threads(std::path::Path::new("/proc")) {
        for pid in live {
            if let Some(p) =
                read_small(&format!("/proc/{pid}/stat")).and_then(|t| parse_pid_stat(&t))
            {
                assert!(p.kthread, "pid {pid} is not a kernel thread");
            }
        }
    }
}

#[test]
fn storage_traffic_of_others_makes_it_busy_and_says_so() {
    let io = "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 1\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 4096\n";
    assert_eq!(parse_pid_io(io), Some(8192));
    assert_eq!(parse_pid_io("rchar: 1"), None);
    assert_eq!(parse_schedstat_wait("123 456 7\n"), Some(456));
    let busy = judge(Interference {
        seconds: 2.0,
        other_io_mib_s: 50.0,
        psi_io_pct: Some(80.0),
        ..Default::default()
    });
    assert!(busy.busy, "{busy:?}");
    assert!(
        busy.reasons[0].contains("50.0 MiB/s of file data")
            && busy.reasons[0].contains("I/O pressure 80%"),
        "{busy:?}"
    );
    // Our own I/O raises the pressure too: pressure alone is not someone else's traffic.
    let own = judge(Interference {
        seconds: 2.0,
        psi_io_pct: Some(90.0),
        ..Default::default()
    });
    assert!(!own.busy, "{own:?}");
    // CPU demand beyond the cores is said, not capped.
    let cpu = judge(Interference {
        seconds: 2.0,
        other_cpu_cores: 1.3,
        other_demand_cores: 2.1,
        ..Default::default()
    });
    assert!(cpu.reasons[0].contains("wanted 2.10 CPU cores"), "{cpu:?}");
}

#[test]
fn a_process_writing_a_file_makes_a_busy_machine() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("w");
    // Not this process's child: a shell starts the writer in the background and exits.
    // It rewrites 64 MiB with fsync over and over for at most three seconds.
    let cmd = format!(
        "(end=$(( $(date +%s) + 3 )); while [ $(date +%s) -lt $end ]; do dd if=/dev/zero of='{}' bs=1M count=64 conv=fsync; done) >/dev/null 2>&1 & echo $!",
        f.display()
    );
    let Ok(out) = std::process::Command::new("sh").args(["-c", &cmd]).output() else {
        return crate::testutil::skip(crate::testutil::Lack::Setup, "cannot start sh");
    };
    let pid = String::from_utf8_lossy(&out.stdout).trim().to_string();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let p = Probe::start();
    std::thread::sleep(std::time::Duration::from_millis(700));
    let i = p.finish();
    let _ = std::process::Command::new("kill").arg(&pid).status();
    assert!(i.busy, "a writer was not seen: {i:?}");
    assert!(i.other_io_mib_s > 4.0, "{i:?}");
    assert!(
        i.reasons.iter().any(|r| r.contains("of file data")),
        "{i:?}"
    );
}

#[test]
fn two_spinning_processes_make_a_busy_machine() {
    // Two CPU-bound processes for three seconds at most, started through a shell that exits
    // so that they are not this process's children (which would be its own work).
    let spin = || -> Option<String> {
        let out = std::process::Command::new("sh")
            .args([
                "-c",
                "(end=$(( $(date +%s) + 3 )); while [ $(date +%s) -lt $end ]; do :; done) >/dev/null 2>&1 & echo $!",
            ])
            .output()
            .ok()?;
        Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let (Some(a), Some(b)) = (spin(), spin()) else {
        return crate::testutil::skip(crate::testutil::Lack::Setup, "cannot start sh");
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    let p = Probe::start();
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let i = p.finish();
    let _ = std::process::Command::new("kill").args([&a, &b]).status();
    assert!(i.busy, "two spinners were not seen: {i:?}");
    assert!(i.other_cpu_cores > 0.5, "{i:?}");
    // Demand counts the waits beside the CPU used (the forked `date`s' waits are not seen:
    // a run queue is read per process, and they end within the window).
    assert!(i.other_demand_cores >= i.other_cpu_cores * 0.99, "{i:?}");
}

#[test]
fn a_wait_for_quiet_says_how_long_or_why_it_gave_up() {
    let quiet = Interference::default();
    let d = std::time::Duration::from_secs_f64(2.4);
    assert_eq!(
        waited_line("access", &quiet, d),
        "waited 2 s for a quiet machine before access"
    );
    let busy = Interference {
        busy: true,
        reasons: vec!["2.0 cores of CPU wanted by other processes".into()],
        ..Default::default()
    };
    let l = waited_line("access", &busy, d);
    assert!(
        l.starts_with(
            "gave up waiting for a quiet machine before access after 2 s: still busy (2.0 cores"
        ),
        "{l}"
    );
}
