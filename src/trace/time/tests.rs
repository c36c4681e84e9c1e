//! The time model, the wall clock and the verdict on traces whose causes are known, made by
//! hand as the kernel tracer records them (no stop cost).

use super::*;
use crate::trace::fixture;
use serde_json::{Value, json};

const MS: u64 = 1_000_000;

/// A thread of process 1: its life, CPU, run-queue time and timed calls `(name, calls, ns)`.
fn thread(tid: u32, born: u64, end: u64, cpu: u64, calls: &[(&str, u64, u64)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|&(c, n, ns)| json!({"call": c, "calls": n, "ns": ns, "cpu_ns": 0, "runq_ns": 0}))
        .collect();
    json!({"pid": 1, "tid": tid, "name": format!("t{tid}"), "born": born, "end": end,
           "cpu_ns": cpu, "runq_ns": 0, "calls": calls})
}

/// A call of thread `tid` on file 0 from `t` for `dur`, `cpu` of it on a CPU.
fn op(tid: u32, t: u64, dur: u64, call: &str, cpu: u64) -> Value {
    json!({"t": t, "dur": dur, "pid": 1, "tid": tid, "call": call, "fd": 3, "file": 0,
           "off": 0, "len": 4096, "ret": 4096, "cpu": cpu})
}

fn span(tid: u32, t: u64, dur: u64, call: &str) -> Value {
    json!({"t": t, "dur": dur, "tid": tid, "call": call})
}

fn trace(wall: u64, threads: Vec<Value>, ops: Vec<Value>, spans: Vec<Value>) -> Trace {
    let mut t = fixture::trace(
        vec![fixture::file("/d/data", 1 << 30, 0, 0)],
        vec![],
        json!([]),
    );
    t.wall_ns = wall;
    t.root = Some(1);
    t.thread_times = serde_json::from_value(Value::Array(threads)).unwrap();
    t.ops = serde_json::from_value(Value::Array(ops)).unwrap();
    t.spans = serde_json::from_value(Value::Array(spans)).unwrap();
    t.tracer = Some(crate::trace::Tracer::Ebpf);
    t
}

/// Every cause of every thread adds up to its life, and the wall clock to the main thread's.
fn adds_up(p: &TimeProfile) {
    for m in &p.threads {
        let sum: u64 = m.causes.iter().map(|c| c.ns).sum();
        assert!(sum <= m.alive_ns && sum + 1000 >= m.alive_ns, "{m:?}");
    }
    let w = p.wall.as_ref().unwrap();
    let sum: u64 = w.causes.iter().map(|c| c.ns).sum();
    assert!(sum <= w.wall_ns + 1000 && sum + 1000 >= w.wall_ns, "{w:?}");
    // Nobody is named for more than it spent in the cause, nor for more than its life.
    for c in &w.causes {
        for s in &c.threads {
            let m = p.threads.iter().find(|m| m.tid == s.tid).unwrap();
            assert!(s.ns <= m.ns(c.cause) + 1000, "{s:?} {m:?}");
            assert!(s.ns <= m.alive_ns, "{s:?}");
        }
    }
}

#[test]
fn an_idle_pool_never_headlines_and_the_reader_it_waited_on_does() {
    // A main thread that joins a reader (futex for 900 ms), the reader in 4 KiB preads for
    // 800 ms of its 900, and 30 threads waiting on a condition variable all along.
    let mut threads = vec![
        thread(1, 0, 1000 * MS, 50 * MS, &[("futex", 1, 900 * MS)]),
        thread(2, 50 * MS, 950 * MS, 100 * MS, &[]),
    ];
    for i in 0..30 {
        threads.push(thread(
            10 + i,
            10 * MS,
            990 * MS,
            MS / 10,
            &[("futex", 1, 979 * MS)],
        ));
    }
    let ops: Vec<Value> = (0..800)
        .map(|i| op(2, 60 * MS + i * MS, MS, "pread", 0))
        .collect();
    let mut spans = vec![span(1, 50 * MS, 900 * MS, "futex")];
    spans.extend((0..30).map(|i| span(10 + i, 10 * MS, 979 * MS, "futex")));
    let t = trace(1000 * MS, threads, ops, spans);
    let p = time_profile(&t).unwrap();
    adds_up(&p);
    assert_eq!(
        p.threads.iter().filter(|m| m.role == Role::Idle).count(),
        30
    );
    let v = &p.verdict;
    assert_eq!(v.decided, Decision::Bound, "{}", v.text);
    assert_eq!(v.cause, Some(Cause::FileData), "{}", v.text);
    assert!(v.text.contains("30 idle thread(s)"), "{}", v.text);
    assert!(v.text.contains("pread x800"), "{}", v.text);
    // The reader made it, not the threads added up: 800 ms of a 1 s wall clock.
    let w = p.wall.as_ref().unwrap();
    let files = w
        .causes
        .iter()
        .find(|c| c.cause == Cause::FileData)
        .unwrap();
    assert!(
        files.ns <= 800 * MS + MS && files.ns >= 790 * MS,
        "{files:?}"
    );
    assert_eq!(files.threads[0].tid, 2);
    assert!(v.ns <= v.wall_ns);
}

#[test]
fn a_sync_per_record_is_durability_and_a_sleep_is_sleep() {
    let ops: Vec<Value> = (0..500)
        .map(|i| op(1, i * 2 * MS, 18 * MS / 10, "fdatasync", MS / 10))
        .collect();
    let t = trace(
        1000 * MS,
        vec![thread(1, 0, 1000 * MS, 150 * MS, &[])],
        ops,
        vec![],
    );
    let p = time_profile(&t).unwrap();
    adds_up(&p);
    assert_eq!(
        p.verdict.cause,
        Some(Cause::Durability),
        "{}",
        p.verdict.text
    );
    assert_eq!(p.verdict.decided, Decision::Bound);
    assert!(
        p.verdict.text.contains("fdatasync x500"),
        "{}",
        p.verdict.text
    );
    let t = trace(
        1000 * MS,
        vec![thread(
            1,
            0,
            1000 * MS,
            20 * MS,
            &[("clock_nanosleep", 1, 950 * MS)],
        )],
        vec![],
        vec![span(1, 30 * MS, 950 * MS, "clock_nanosleep")],
    );
    let p = time_profile(&t).unwrap();
    adds_up(&p);
    assert_eq!(p.verdict.cause, Some(Cause::Sleep), "{}", p.verdict.text);
}

#[test]
fn a_wait_on_a_socket_nobody_traced_answers_stays_a_socket_wait() {
    let t = trace(
        1000 * MS,
        vec![thread(
            1,
            0,
            1000 * MS,
            20 * MS,
            &[("recvfrom", 3, 900 * MS)],
        )],
        vec![],
        vec![span(1, 50 * MS, 900 * MS, "recvfrom")],
    );
    let p = time_profile(&t).unwrap();
    adds_up(&p);
    assert_eq!(p.verdict.cause, Some(Cause::Sockets), "{}", p.verdict.text);
    assert_eq!(p.wall.as_ref().unwrap().handed_ns, 0);
}

#[test]
fn close_causes_are_mixed_and_a_wait_is_put_to_the_child_that_worked() {
    // A shell waits for a child that computes for 400 ms and reads for 350 ms.
    let mut child = thread(2, 100 * MS, 900 * MS, 400 * MS, &[]);
    child["pid"] = json!(2);
    let ops: Vec<Value> = (0..350)
        .map(|i| {
            let mut o = op(2, 500 * MS + i * MS, MS, "read", 0);
            o["pid"] = json!(2);
            o
        })
        .collect();
    let t = trace(
        1000 * MS,
        vec![
            thread(1, 0, 1000 * MS, 20 * MS, &[("wait4", 1, 820 * MS)]),
            child,
        ],
        ops,
        vec![span(1, 90 * MS, 820 * MS, "wait4")],
    );
    let p = time_profile(&t).unwrap();
    adds_up(&p);
    assert_eq!(p.verdict.decided, Decision::Mixed, "{}", p.verdict.text);
    let w = p.wall.as_ref().unwrap();
    assert!(w.ns(Cause::Children) < 100 * MS, "{w:?}");
    assert!(
        w.ns(Cause::Cpu) > 300 * MS && w.ns(Cause::FileData) > 300 * MS,
        "{w:?}"
    );
}

#[test]
fn a_trace_without_per_thread_times_has_no_verdict() {
    let mut t = trace(MS, vec![], vec![], vec![]);
    t.thread_times.clear();
    assert!(time_profile(&t).is_none());
}

#[test]
fn the_ptrace_tracers_share_leaves_a_verdict_only_when_it_does_not_decide_it() {
    // 20,000 calls of 50 us under ptrace, whose stops cost 40 us: whether they were metadata
    // or the tracer depends on what a stop really cost.
    let ops: Vec<Value> = (0..20_000)
        .map(|i| op(1, i * 50_000, 50_000, "stat", 0))
        .collect();
    let mut t = trace(
        1000 * MS,
        vec![thread(1, 0, 1000 * MS, 100 * MS, &[])],
        ops,
        vec![],
    );
    t.tracer = Some(crate::trace::Tracer::Ptrace);
    t.stop_cost = Some(crate::trace::StopCost {
        calls: 200,
        wall_ns: 40_000,
        cpu_ns: 0,
        runq_ns: 0,
    });
    let p = time_profile(&t).unwrap();
    assert_eq!(p.verdict.decided, Decision::Undecided, "{}", p.verdict.text);
    assert!(p.verdict.text.contains("stop"), "{}", p.verdict.text);
}

#[test]
fn a_thread_blocked_in_a_call_at_the_end_is_in_that_call_not_in_page_faults() {
    // Attached to a server whose worker sleeps in one call entered before the attach: no
    // exit seen, 990 ms of its 1 s unaccounted for by calls or CPU.
    let mut sleeper = thread(2, 0, 1000 * MS, 10 * MS, &[]);
    sleeper["in_call"] = json!("clock_nanosleep");
    let mut waiter = thread(3, 0, 1000 * MS, 10 * MS, &[]);
    waiter["in_call"] = json!("epoll_wait");
    let t = trace(
        1000 * MS,
        vec![thread(1, 0, 1000 * MS, 990 * MS, &[]), sleeper, waiter],
        vec![],
        vec![],
    );
    let p = time_profile(&t).unwrap();
    adds_up(&p);
    let m = |tid: u32| p.threads.iter().find(|m| m.tid == tid).unwrap();
    assert_eq!(m(2).ns(Cause::Sleep), 990 * MS, "{:?}", m(2));
    assert_eq!(m(2).ns(Cause::Faults), 0, "{:?}", m(2));
    assert_eq!(m(3).ns(Cause::Faults), 0, "{:?}", m(3));
    assert_eq!(m(3).role, Role::Idle, "{:?}", m(3));
}

#[test]
fn a_thread_stopped_by_the_tracer_for_its_many_calls_is_busy_not_idle() {
    let cause = |cause, ns| CauseTime {
        cause,
        ns,
        cpu_ns: 0,
        runq_ns: 0,
        calls: Vec::new(),
    };
    let model = |causes| ThreadModel {
        pid: 1,
        tid: 2,
        name: "tar".into(),
        role: Role::Working,
        born_ns: 0,
        alive_ns: 100_000_000,
        running: false,
        causes,
        polls_as: None,
    };
    // 90 ms stopped by ptrace over 6,500 calls, 8 ms reading, 2 ms in a poll: busy.
    let tar = model(vec![
        cause(Cause::Tracer, 90_000_000),
        cause(Cause::FileData, 8_000_000),
        cause(Cause::Polls, 2_000_000),
    ]);
    assert!(!tar.is_idle());
    // A pool thread: 99 ms on a lock, 1 ms of CPU: idle.
    let pool = model(vec![
        cause(Cause::Locks, 99_000_000),
        cause(Cause::Cpu, 1_000_000),
    ]);
    assert!(pool.is_idle());
}
