"""Shared helpers of the bench/ scripts: build iolab, make a data file, run fio and iolab."""
import atexit, json, os, shutil, signal, statistics, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IOLAB = os.path.join(ROOT, "target", "release", "iolab")
UNITS = {"K": 2**10, "M": 2**20, "G": 2**30}


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def parse_size(text):
    t = text.upper().rstrip("IB")
    return int(t[:-1]) * UNITS[t[-1]] if t[-1] in UNITS else int(t)


REPORTING = "/sys/module/page_reporting/parameters"


def hold_freed_memory():
    """Keeps memory that runs free in the guest for the bench's duration, and says so.

    On a VM with free page reporting (virtio-balloon), pages the guest frees are handed back to
    the host within moments, and touching them again costs a host fault each: on this machine
    kind writing 512 MiB ran at 330-1300 MiB/s after a pause of 2 s and 4700-5400 MiB/s without
    one, so a tool's write bandwidth depended on how long ago the last run freed its pages.
    Reporting is limited to the largest blocks (page_reporting_order) and, where the kernel has
    it, to memory free for a minute (min_free_ms); both are restored at exit. Without root
    or reporting, nothing changes. With IOLAB_BENCH_REPORTING=as-is (a bench's `--reporting
    as-is`) nothing is held back: the machine runs as a user's does."""
    if os.environ.get("IOLAB_BENCH_REPORTING") == "as-is":
        if os.path.isdir(REPORTING):
            print("free page reporting left as it is (--reporting as-is): freed memory goes back "
                  "to the host as on a user's machine", file=sys.stderr)
        return
    wanted = {"page_reporting_order": "10", "min_free_ms": "60000"}
    old = {}
    for name, value in wanted.items():
        path = os.path.join(REPORTING, name)
        try:
            with open(path) as f:
                before = f.read().strip()
            with open(path, "w") as f:
                f.write(value)
            old[path] = before
        except OSError:
            continue
    if not old:
        if os.path.isdir(REPORTING):
            print("free page reporting is on and cannot be held back (not root): writes to "
                  "freshly freed memory may be slow in some rounds", file=sys.stderr)
        return

    def restore():
        for path, value in old.items():
            try:
                with open(path, "w") as f:
                    f.write(value)
            except OSError:
                pass

    atexit.register(restore)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    changes = ", ".join(f"{os.path.basename(p)} {v} -> {wanted[os.path.basename(p)]}" for p, v in old.items())
    print(f"free page reporting held back while the bench runs ({changes}; restored at exit)", file=sys.stderr)


def reporting_arg(ap):
    """Adds `--reporting held|as-is|both` to a bench's arguments."""
    ap.add_argument("--reporting", choices=["held", "as-is", "both"], default="held",
                    help="free page reporting held back for the run (the default), left as it is "
                         "(a user's machine), or both: the whole bench once each, held first")


def run_reporting(a):
    """Acts on `--reporting`: for `both`, runs this bench again once held and once as-is (each
    printing its own results under a heading) and exits; otherwise sets what
    `hold_freed_memory` does and returns."""
    if a.reporting != "both":
        os.environ["IOLAB_BENCH_REPORTING"] = a.reporting
        return
    argv = [x for x in sys.argv[1:] if not x.startswith("--reporting")]
    # `--reporting both` may have been given as two words.
    if "both" in argv:
        argv.remove("both")
    rc = 0
    for mode in ("held", "as-is"):
        print(f"\n=== free page reporting {mode} ===", flush=True)
        rc |= subprocess.run([sys.executable, sys.argv[0], *argv, "--reporting", mode]).returncode
    sys.exit(rc)


def ensure(packages):
    """Installs Debian packages whose command is missing (needs root)."""
    missing = [p for cmd, p in packages if shutil.which(cmd) is None]
    if missing:
        if os.geteuid() != 0:
            sys.exit(f"missing {' '.join(missing)} and installing needs root: apt-get install {' '.join(missing)}")
        # apt's talk goes to stderr: stdout carries only the bench's results.
        subprocess.run(["apt-get", "update", "-qq"], check=False, stdout=sys.stderr)
        subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True, stdout=sys.stderr,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    hold_freed_memory()
    sh(["cargo", "build", "--release", "--locked", "--bins", "--examples"], cwd=ROOT)


def make_file(directory, size):
    """A random file of `size` bytes in a new temporary directory; returns (dir, path)."""
    d = tempfile.mkdtemp(dir=directory, prefix="iolab-bench.")
    path = os.path.join(d, "data.bin")
    print(f"making {size >> 20} MiB in {path}", file=sys.stderr)
    with open(path, "wb") as f:
        left = size
        while left:
            n = min(left, 64 << 20)
            f.write(os.urandom(n))
            left -= n
    return d, path


def evict(path):
    sh([IOLAB, "cache", "evict", path])


def load(path):
    sh([IOLAB, "cache", "load", path])


HUGE_FOR_FIO = 128  # 2 MiB pages reserved for fio's buffers: depth 32 x 1 MiB for 2 jobs, rounded up
_fio_mem = None


def fio_mem():
    """fio's buffers at their best: on huge pages (mem=shmhuge) when hugetlb pages can be
    reserved (root), else page-aligned mmap. On 4 KiB pages a 1 MiB O_DIRECT read needs 256
    segments, more than this virtio disk takes (254), and went out as two requests: fio ran at
    0.87 GiB/s with mem=mmap against 2.6-2.8 with mem=shmhuge, same file, same minute."""
    global _fio_mem
    if _fio_mem:
        return _fio_mem
    path = "/proc/sys/vm/nr_hugepages"
    try:
        with open(path) as f:
            before = int(f.read())
        with open(path, "w") as f:
            f.write(str(before + HUGE_FOR_FIO))
        with open("/proc/meminfo") as f:
            free = next(int(l.split()[1]) for l in f if l.startswith("HugePages_Free:"))

        def restore():
            with open(path, "w") as f:
                f.write(str(before))

        atexit.register(restore)
        if free < HUGE_FOR_FIO:
            restore()
            raise OSError(f"only {free} huge pages could be reserved")
        _fio_mem = "shmhuge"
        print(f"fio's buffers on {HUGE_FOR_FIO} reserved huge pages (mem=shmhuge; nr_hugepages "
              f"{before} restored at exit)", file=sys.stderr)
    except (OSError, StopIteration, ValueError) as e:
        _fio_mem = "mmap"
        print(f"fio's buffers on 4 KiB pages (mem=mmap): huge pages could not be reserved ({e}); "
              "its O_DIRECT figures may be low", file=sys.stderr)
    return _fio_mem


def fio(path, size, rw, bs, engine, jobs=1, direct=0, depth=1, cold=False, runtime=None):
    """fio at its best: buffers on huge pages where possible (fio_mem), no eviction unless cold
    is meant. Returns (MiB/s, KIOPS)."""
    per_job = size // jobs
    cmd = ["fio", "--name=b", f"--filename={path}", f"--rw={rw}", f"--bs={bs}",
           f"--ioengine={engine}", f"--numjobs={jobs}", f"--direct={direct}", f"--iodepth={depth}",
           f"--size={per_job}", f"--mem={fio_mem()}", f"--invalidate={1 if cold else 0}",
           "--group_reporting", "--output-format=json"]
    if jobs > 1:
        cmd.append(f"--offset_increment={per_job}")
    if runtime:
        cmd += [f"--runtime={runtime}", "--time_based"]
    r = json.loads(sh(cmd).stdout)["jobs"][0]["read"]
    return r["bw_bytes"] / 2**20, r["iops"] / 1000


def iolab_json(args):
    return json.loads(sh([IOLAB, *args, "--format", "json"]).stdout)


def pair(rows, label, unit, peer_name, peer, ours, n):
    """Runs peer and ours n times, interleaved, and records the medians and their ratio."""
    pv, ov = [], []
    for _ in range(n):
        pv.append(peer())
        ov.append(ours())
    p, o = statistics.median(pv), statistics.median(ov)
    ratio = o / p if p else float("nan")
    rows.append((label, unit, p, o, ratio))
    print(f"{label:46s} {peer_name} {p:10.1f}  iolab {o:10.1f} {unit:6s} ratio {ratio:5.2f}", file=sys.stderr)


def print_rows(title, peer_name, rows):
    print(f"\n{title}")
    for label, unit, p, o, ratio in rows:
        print(f"  {label:46s} {peer_name} {p:10.1f} iolab {o:10.1f} {unit:6s} ratio {ratio:.2f}")
