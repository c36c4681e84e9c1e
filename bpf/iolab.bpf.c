// SPDX-License-Identifier: GPL-2.0
// iolab's kernel tracer (`iolab trace --tracer ebpf`): the file system calls, page faults on file
// mappings, and the process tree of one traced program, streamed to iolab through a ring buffer.
// Built by bpf/build into bpf/iolab.bpf.o (checked in; CI rebuilds it and fails on a
// difference). CO-RE: the kernel types below name only the fields read, and the loader
// relocates each access against the running kernel's BTF.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "iolab.h"

char LICENSE[] SEC("license") = "GPL";

// What the system-call probes do, set by iolab at load: 0 all of it; for measuring what they
// cost (`--tracer ebpf-attached`, `ebpf-sums`, bench/compare-trace), 1 nothing past finding
// the thread's slot but for an exec (the tracepoints' own cost), 2 every call timed only,
// summed per thread, and none recorded but an exec (what timing every call costs).
// Read-only: the verifier drops what a load leaves unreachable.
const volatile __u32 floor_mode = 0;

// Processes (thread-group ids) being traced: the program and what it starts.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} traced SEC(".maps");

// Which system calls to record, by number (iolab fills it from its table of calls).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 512);
	__type(key, __u32);
	__type(value, __u8);
} wanted SEC(".maps");

// A thread's call between its entry and its exit: when it was entered, and the little that
// must be read then (a closed descriptor's file, rchar before an exec). Task storage: a
// thread's own slot, found without a hash lookup.
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct entry);
} entries SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 32 << 20);
} events SEC(".maps");

// Each thread's room to build a path from its last component to its first, and the walk's
// state. The state lives in the map, not in registers: the verifier then sees every step alike
// and checks one, where forty steps of registers each a little different would be checked
// apart. Per thread, not per CPU: a probe can be preempted in the middle of a walk, and a
// thread opening a file on the same CPU meanwhile would write its path over this one's (rg's
// threads did: one file named as another).
#define SCRATCH 4096
struct walk {
	__u64 d, m;     // the dentry and its mount being walked
	__u64 off;      // where the path built so far starts in buf
	char buf[SCRATCH + PATH_BYTES];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct walk);
} pathbuf SEC(".maps");

// io_uring reads and writes submitted by the traced program, by request, until completed.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct ureq);
} ureqs SEC(".maps");

// The page cache's work for the traced program: pages brought in and dirtied, per file and
// per system call (read by iolab at the end).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct cache_key);
	__type(value, struct cache_val);
} cache SEC(".maps");

// The calls timed only (not recorded one by one), per thread and call: their count and time.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 262144);
	__type(key, struct call_key);
	__type(value, struct call_val);
} calltime SEC(".maps");

// Each thread's calls timed only, summed where only the thread writes (no hash lookup, no
// atomic add: an exit about 30 ns cheaper than `calltime`'s, by bpf_stats on this project's
// machine kind, 600,000 calls of two kinds: 163-174 ns against 185-213 ns). At the
// thread's exit they are added to `calltime`; a thread still running at the end of the trace
// is read by iolab through a pidfd. A thread's calls past TSLOTS distinct ones go to
// `calltime` directly.
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tsums);
} sums SEC(".maps");

// Counters: [0] events the ring buffer had no room for; [1] io_uring requests the program
// submitted, [2] of them neither reads nor writes, [3] reads and writes; [4] files the
// `cache` map had no room for; [5] calls the `calltime` map had no room for.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&counts, &which);
	if (c)
		__sync_fetch_and_add(c, 1);
}

// Waking the reader for every event costs more than the event: it is woken once a quarter of
// the buffer is waiting; otherwise it looks every few milliseconds by itself.
static __always_inline __u64 wakeup(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= (8 << 20) ? BPF_RB_FORCE_WAKEUP
									  : BPF_RB_NO_WAKEUP;
}

static __always_inline int is_traced(__u32 tgid)
{
	return bpf_map_lookup_elem(&traced, &tgid) != NULL;
}

// The file behind descriptor `fd` of the current task, or NULL. The kernel's pointers are
// followed by plain loads (the verifier knows their types from BTF and makes each a load that
// cannot fault), cheaper than a helper call per field; only the descriptor array, indexed by a
// variable, is read through bpf_probe_read_kernel.
static __always_inline struct file *fd_file(int fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct files_struct *files = task->files;
	struct fdtable *fdt;
	struct file *f = NULL;

	if (fd < 0 || !files)
		return NULL;
	fdt = files->fdt;
	if (!fdt || (unsigned int)fd >= fdt->max_fds)
		return NULL;
	if (bpf_probe_read_kernel(&f, sizeof(f), &fdt->fd[fd]))
		return NULL;
	return f;
}

// What the kernel has of inode `inode`: each field through bpf_probe_read_kernel.
static __always_inline void describe_inode(struct fileid *id, struct inode *inode)
{
	id->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	id->ino = BPF_CORE_READ(inode, i_ino);
	id->size = BPF_CORE_READ(inode, i_size);
	id->nrpages = BPF_CORE_READ(inode, i_mapping, nrpages);
	id->mtime_sec = BPF_CORE_READ(inode, i_mtime_sec);
	id->mtime_nsec = BPF_CORE_READ(inode, i_mtime_nsec);
	id->generation = BPF_CORE_READ(inode, i_generation);
	id->reserved = (__u64)inode;
	id->mode = BPF_CORE_READ(inode, i_mode);
	id->pos = 0;
	id->flags = 0;
	id->ok = FILE_FULL;
}

// What the kernel has of open file `f` (nothing when it is NULL), some 13 reads.
static __always_inline void describe(struct fileid *id, struct file *f)
{
	struct inode *inode;

	id->ok = 0;
	if (!f)
		return;
	inode = BPF_CORE_READ(f, f_inode);
	if (!inode)
		return;
	describe_inode(id, inode);
	id->pos = BPF_CORE_READ(f, f_pos);
	id->flags = BPF_CORE_READ(f, f_flags);
}

static __always_inline void identify_slow(struct fileid *id, int fd)
{
	describe(id, fd_file(fd));
}

// As describe, for the thread's calls: a thread that works on the same open file call after
// call (the common case) has its identity kept from the last call, and only the position and
// flags are read again (4 reads instead of 13). The open file and its inode are compared, so
// a descriptor closed and reopened on another file is described anew.
static __always_inline void identify(struct entry *en, struct fileid *id, int fd)
{
	struct file *f = fd_file(fd);
	struct inode *inode;

	id->ok = 0;
	if (!f)
		return;
	inode = BPF_CORE_READ(f, f_inode);
	if (f == (struct file *)en->last_file && (__u64)inode == en->last.reserved && inode) {
		*id = en->last;
		id->pos = BPF_CORE_READ(f, f_pos);
		id->flags = BPF_CORE_READ(f, f_flags);
		id->ok = FILE_KNOWN;
		return;
	}
	describe(id, f);
	if (id->ok) {
		en->last_file = (__u64)f;
		en->last = *id;
	}
}

struct kpath {
	char b[PATH_BYTES];
};

// The path of open file `file` from the root, as the kernel has it (its dentries up to the
// root of each mount, then the mount point in the parent mount): into `out`, its length with
// the NUL returned; 0 when it is longer than PATH_BYTES or deeper than 48 steps. A global
// function: the verifier checks it once, on its own, not inside every path of sys_exit.
__attribute__((noinline)) __u64 walk_path(__u64 file, struct kpath *out)
{
	__u32 len;
	struct dentry *d, *parent, *root;
	struct mount *m, *mp;
	__u64 hash_len, n, off;
	const unsigned char *name;
	struct walk *w = bpf_task_storage_get(&pathbuf, bpf_get_current_task_btf(), 0,
					      BPF_LOCAL_STORAGE_GET_F_CREATE);
	struct qstr_raw q;

	if (!w || !file || !out)
		return 0;
	w->d = (__u64)BPF_CORE_READ((struct file *)file, f_path.dentry);
	// The vfsmount is a member of its struct mount.
	w->m = (__u64)BPF_CORE_READ((struct file *)file, f_path.mnt) -
	       bpf_core_field_offset(struct mount, mnt);
	w->off = SCRATCH - 1;
	w->buf[SCRATCH - 1] = 0;
	for (int i = 0; i < 48; i++) {
		d = (struct dentry *)w->d;
		m = (struct mount *)w->m;
		parent = BPF_CORE_READ(d, d_parent);
		root = BPF_CORE_READ(m, mnt.mnt_root);
		if (d == root || d == parent) {
			mp = BPF_CORE_READ(m, mnt_parent);
			if (mp == m || !mp)
				goto whole;
			w->d = (__u64)BPF_CORE_READ(m, mnt_mountpoint);
			w->m = (__u64)mp;
			continue;
		}
		// The name (struct qstr) read whole: its length is the upper half of its first
		// word on a little-endian machine, its bytes behind the second.
		bpf_core_read(&q, sizeof(q), &d->d_name);
		hash_len = q.hash_len;
		name = q.name;
		len = (hash_len >> 32) & 255;
		off = w->off;
		if (off > SCRATCH - 1 || len + 1 > off)
			return 0;
		off -= len;
		bpf_probe_read_kernel(&w->buf[off & (SCRATCH - 1)], len, name);
		off--;
		w->buf[off & (SCRATCH - 1)] = '/';
		w->off = off;
		w->d = (__u64)parent;
	}
	return 0;
whole:
	off = w->off;
	if (off > SCRATCH - 1)
		return 0;
	if (off == SCRATCH - 1) {
		off--;
		w->buf[off & (SCRATCH - 1)] = '/';
	}
	n = SCRATCH - off;
	if (n >= PATH_BYTES)
		return 0;
	// The verifier must see the bound on the size itself.
	asm volatile("%0 &= 255" : "+r"(n));
	bpf_probe_read_kernel(out->b, n, &w->buf[off & (SCRATCH - 1)]);
	return n;
}

static __always_inline __u64 user_u64(__u64 addr)
{
	__u64 v = 0;

	if (addr)
		bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

// The bytes an iovec array asks for (its first IOV_MAX_SEEN entries; `extra2` says if cut).
static __always_inline __u64 iov_sum(__u64 addr, __u64 cnt, __u64 *cut)
{
	__u64 sum = 0;
	struct {
		__u64 base, len;
	} iov;

	for (int i = 0; i < IOV_MAX_SEEN; i++) {
		if (i >= cnt)
			break;
		if (bpf_probe_read_user(&iov, sizeof(iov), (void *)(addr + i * 16)))
			break;
		sum += iov.len;
	}
	*cut = cnt > IOV_MAX_SEEN;
	return sum;
}

static __always_inline __u64 rchar_now(void)
{
	struct task_struct *task = bpf_get_current_task_btf();

	return BPF_CORE_READ(task, ioac.rchar);
}

// A call's entry: only its time, and what its exit cannot see. Everything else is read at
// the exit, where the arguments are still in the thread's registers (the x86-64 system call
// preserves them) and the descriptor is still open: one visit to the descriptor table.
SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs *regs, long id)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 nr = id;
	struct entry *en;
	__u8 *want;

	// A traced thread has its slot from its first call on: the check costs one pointer
	// chase; only threads without one (every untraced thread, and a traced one's first
	// call) look their process up.
	en = bpf_task_storage_get(&entries, task, 0, 0);
	if (!en) {
		if (!is_traced(bpf_get_current_pid_tgid() >> 32))
			return 0;
		en = bpf_task_storage_get(&entries, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!en)
			return 0;
	}
	// (The program's exec is still timed: the trace starts there.)
	if (floor_mode == 1 && nr != SYS_EXECVE && nr != SYS_EXECVEAT)
		return 0;
	// Which call the thread is in, for the page cache's work during it.
	en->cur = nr;
	en->added = 0;
	want = bpf_map_lookup_elem(&wanted, &nr);
	if (want && *want == K_UNTIMED)
		return 0;
	en->nr = nr;
	en->t = bpf_ktime_get_ns();
	en->live = 1;
	en->off0 = en->off;
	en->runq0 = task->sched_info.run_delay;
	if (!want)
		return 0;
	if (*want == K_CLOSE) {
		identify_slow(&en->f, regs->di);
		en->last_file = 0;
	}
	else if (*want == K_EXEC) {
		en->extra = rchar_now();
		en->extra2 = BPF_CORE_READ(task, ioac.read_bytes);
	}
	return 0;
}

// Adds one call (`calls` 1) or a thread's sums to `calltime`'s entry for (tid, nr).
static __always_inline void calltime_add(__u32 tid, __u32 nr, struct call_val *d)
{
	struct call_key k = { .tid = tid, .nr = nr };
	struct call_val *v = bpf_map_lookup_elem(&calltime, &k);

	if (!v) {
		struct call_val z = {};

		bpf_map_update_elem(&calltime, &k, &z, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&calltime, &k);
	}
	if (!v) {
		count(5);
		return;
	}
	__sync_fetch_and_add(&v->calls, d->calls);
	__sync_fetch_and_add(&v->errors, d->errors);
	__sync_fetch_and_add(&v->ns, d->ns);
	__sync_fetch_and_add(&v->off, d->off);
	__sync_fetch_and_add(&v->runq, d->runq);
}

// A call timed only: added to its thread's sums, and an event when it lasted SPAN_NS or more.
static __always_inline void timed(__u32 tgid, __u32 tid, struct entry *en, __u64 t1, long ret,
				  __u64 off, __u64 runq)
{
	struct tsums *ts = bpf_task_storage_get(&sums, bpf_get_current_task_btf(), 0,
						BPF_LOCAL_STORAGE_GET_F_CREATE);
	__u64 dur = t1 - en->t, errors = ret < 0 && ret > -4096;
	struct call_val *v = NULL;
	struct ev_span *e;

	for (int i = 0; ts && i < TSLOTS; i++) {
		struct tslot *s = &ts->s[i];

		if (s->nr == en->nr + 1) {
			v = &s->v;
			break;
		}
		if (s->nr == 0) {
			s->nr = en->nr + 1;
			v = &s->v;
			break;
		}
	}
	if (v) {
		v->calls++;
		v->errors += errors;
		v->ns += dur;
		v->off += off;
		v->runq += runq;
	} else {
		struct call_val one = { .calls = 1, .errors = errors, .ns = dur, .off = off,
					.runq = runq };

		calltime_add(tid, en->nr, &one);
	}
	if (dur < SPAN_NS)
		return;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(0);
		return;
	}
	e->kind = EV_SPAN;
	e->pid = tgid;
	e->tid = tid;
	e->nr = en->nr;
	e->t0 = en->t;
	e->t1 = t1;
	e->off = off;
	e->runq = runq;
	e->ret = ret;
	bpf_ringbuf_submit(e, wakeup());
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct task_struct *task = bpf_get_current_task_btf();
	struct ev_open *o = NULL;
	__u64 t1, off, runq;
	struct pending *p;
	struct ev_call *e;
	struct entry *en;
	__u8 *want;
	__u32 kind, nr;

	en = bpf_task_storage_get(&entries, task, 0, 0);
	if (!en)
		return 0;
	en->cur = NR_FAULT;
	if (!en->live)
		return 0;
	en->live = 0;
	t1 = bpf_ktime_get_ns();
	// On the CPU now: every stretch off it during the call is in `off`.
	off = en->off - en->off0;
	runq = task->sched_info.run_delay - en->runq0;
	nr = en->nr;
	want = bpf_map_lookup_elem(&wanted, &nr);
	kind = want ? *want : 0;
	if (kind == 0 || (floor_mode == 2 && kind != K_EXEC)) {
		timed(tgid, tid, en, t1, ret, off, runq);
		return 0;
	}
	if (kind == K_OPEN || kind == K_OPEN2 || (kind == K_RENAME && ret == 0)) {
		o = bpf_ringbuf_reserve(&events, sizeof(*o), 0);
		e = o ? &o->c : NULL;
	} else {
		e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	}
	if (!e) {
		count(0);
		return 0;
	}
	e->kind = !o ? EV_CALL : kind == K_RENAME ? EV_RENAME : EV_OPEN;
	e->pid = tgid;
	e->tid = tid;
	e->added = en->added;
	e->t1 = t1;
	e->ret = ret;
	e->pos_exit = 0;
	e->rchar = 0;
	e->off = off;
	e->runq = runq;
	p = &e->p;
	p->nr = nr;
	p->t = en->t;
	p->args[0] = regs->di;
	p->args[1] = regs->si;
	p->args[2] = regs->dx;
	p->args[3] = regs->r10;
	p->args[4] = regs->r8;
	p->args[5] = regs->r9;
	p->extra = 0;
	p->extra2 = 0;
	p->f.ok = 0;
	p->g.ok = 0;
	switch (kind) {
	case K_FD0:
		identify(en, &p->f, p->args[0]);
		break;
	case K_CLOSE:
		p->f = en->f;
		break;
	case K_IOV:
		identify(en, &p->f, p->args[0]);
		p->extra = iov_sum(p->args[1], p->args[2], &p->extra2);
		break;
	case K_MMAP:
		identify(en, &p->f, p->args[4]);
		break;
	case K_SENDFILE:
		identify(en, &p->f, p->args[1]);
		identify_slow(&p->g, p->args[0]);
		p->extra = user_u64(p->args[2]);
		break;
	case K_SPLICE:
		identify(en, &p->f, p->args[0]);
		identify_slow(&p->g, p->args[2]);
		p->extra = user_u64(p->args[1]);
		p->extra2 = user_u64(p->args[3]);
		break;
	case K_OPEN:
	case K_OPEN2:
		if (kind == K_OPEN2)
			p->extra = user_u64(p->args[2]);
		if (o) {
			o->len = 0;
			o->klen = 0;
			if (ret >= 0) {
				// The path as the program gave it (openat's second argument,
				// open's first).
				__u64 name = nr == SYS_OPEN || nr == SYS_CREAT ? p->args[0] : p->args[1];
				long n = bpf_probe_read_user_str(o->path, sizeof(o->path), (void *)name);

				o->len = n > 0 ? n : 0;
				identify_slow(&p->f, ret);
				o->klen = walk_path((__u64)fd_file(ret), (struct kpath *)o->kpath);
			}
		}
		break;
	case K_RENAME:
		if (o) {
			// Both names as the program gave them (each relative to its directory
			// descriptor, args[0] and args[2]; rename's to the working directory).
			// An unlink's name is its only one (kpath left empty).
			int one = nr == SYS_RENAME || nr == SYS_UNLINK;
			__u64 from = one ? p->args[0] : p->args[1];
			__u64 to = nr == SYS_RENAME ? p->args[1] : p->args[3];
			long n = bpf_probe_read_user_str(o->path, sizeof(o->path), (void *)from);

			o->len = n > 0 && n < PATH_BYTES ? n : 0;
			o->klen = 0;
			if (nr != SYS_UNLINK && nr != SYS_UNLINKAT) {
				n = bpf_probe_read_user_str(o->kpath, sizeof(o->kpath), (void *)to);
				o->klen = n > 0 && n < PATH_BYTES ? n : 0;
			}
		}
		break;
	case K_EXEC:
		p->extra = en->extra;
		p->extra2 = en->extra2;
		e->rchar = rchar_now();
		break;
	}
	bpf_ringbuf_submit(e, wakeup());
	return 0;
}

// A context switch: a traced thread leaving the CPU starts a stretch off it, and its return
// ends one (`off`: so a call's time splits into on and off the CPU, and off it into waiting
// for a CPU, the kernel's run_delay, and blocked). Every switch of the machine comes here;
// for threads not traced it is two pointer loads.
SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch, _Bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct entry *out = bpf_task_storage_get(&entries, prev, 0, 0);
	struct entry *in = bpf_task_storage_get(&entries, next, 0, 0);
	__u64 now;

	if (out) {
		now = bpf_ktime_get_ns();
		out->out_t = now;
		if (in && in->out_t) {
			in->off += now - in->out_t;
			in->out_t = 0;
		}
		return 0;
	}
	if (in && in->out_t) {
		now = bpf_ktime_get_ns();
		in->off += now - in->out_t;
		in->out_t = 0;
	}
	return 0;
}

// A process or thread event of thread `tid` of process `tgid`, zeroed, or NULL (counted).
static __always_inline struct ev_task *task_event(__u32 kind, __u32 tgid, __u32 tid)
{
	struct ev_task *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		count(0);
		return NULL;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->pid = tgid;
	e->tid = tid;
	e->t = bpf_ktime_get_ns();
	return e;
}

// Task `p`'s I/O counters so far (`/proc/PID/task/TID/io`'s).
static __always_inline void task_io(struct ev_task *e, struct task_struct *p)
{
	e->rchar = BPF_CORE_READ(p, ioac.rchar);
	e->wchar = BPF_CORE_READ(p, ioac.wchar);
	e->syscr = BPF_CORE_READ(p, ioac.syscr);
	e->syscw = BPF_CORE_READ(p, ioac.syscw);
	e->read_bytes = BPF_CORE_READ(p, ioac.read_bytes);
	e->write_bytes = BPF_CORE_READ(p, ioac.write_bytes);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(sched_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid), ctgid = BPF_CORE_READ(child, tgid);
	struct ev_task *e;
	__u8 one = 1;

	if (!is_traced(ptgid))
		return 0;
	bpf_map_update_elem(&traced, &ctgid, &one, BPF_ANY);
	e = task_event(EV_FORK, ptgid, BPF_CORE_READ(parent, pid));
	if (!e)
		return 0;
	e->other_pid = ctgid;
	e->other_tid = BPF_CORE_READ(child, pid);
	// Its birth: with its pid, what names this process and no later one of that pid.
	e->start = BPF_CORE_READ(child, start_boottime);
	bpf_ringbuf_submit(e, wakeup());
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(sched_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct ev_task *e;

	if (!is_traced(tgid))
		return 0;
	e = task_event(EV_EXEC, tgid, BPF_CORE_READ(p, pid));
	if (!e)
		return 0;
	e->other_tid = old_pid;
	// The counters so far (the launcher's, at the program's exec).
	task_io(e, p);
	bpf_ringbuf_submit(e, wakeup());
	return 0;
}

// A thread's sums (`sums`) added to `calltime` as it exits, under its id then.
static __always_inline void flush_sums(struct task_struct *p)
{
	struct tsums *ts = bpf_task_storage_get(&sums, p, 0, 0);
	__u32 tid = BPF_CORE_READ(p, pid);

	for (int i = 0; ts && i < TSLOTS; i++) {
		struct tslot *s = &ts->s[i];

		if (s->nr == 0)
			break;
		calltime_add(tid, s->nr - 1, &s->v);
		s->nr = 0;
	}
	if (ts)
		bpf_task_storage_delete(&sums, p);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_exit, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct ev_task *e;
	int live;

	flush_sums(p);
	if (!is_traced(tgid))
		return 0;
	live = BPF_CORE_READ(p, signal, live.counter);
	if (live == 0)
		bpf_map_delete_elem(&traced, &tgid);
	e = task_event(EV_EXIT, tgid, BPF_CORE_READ(p, pid));
	if (!e)
		return 0;
	e->group_dead = live == 0;
	e->exit_code = BPF_CORE_READ(p, exit_code);
	task_io(e, p);
	e->cpu_ns = BPF_CORE_READ(p, se.sum_exec_runtime);
	e->runq_ns = BPF_CORE_READ(p, sched_info.run_delay);
	bpf_probe_read_kernel_str(e->comm, sizeof(e->comm), p->comm);
	bpf_ringbuf_submit(e, wakeup());
	return 0;
}

// A page fault of a traced thread: its address and time, resolved to a file and an offset
// by iolab from the mappings the program made (as the ptrace tracer's perf samples are).
// Looking the mapping up here (bpf_find_vma) cost 13 us a fault: interrupts are off at this
// tracepoint, so it defers its unlock to an interrupt. The filemap tracepoints, which have the
// file at hand, do not fire when fault-around maps a whole 2 MiB folio: faults go unseen.
SEC("tp_btf/page_fault_user")
int BPF_PROG(page_fault, unsigned long address, struct pt_regs *regs, unsigned long error_code)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct ev_fault *e;

	if (!is_traced(pid_tgid >> 32))
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(0);
		return 0;
	}
	e->kind = EV_FAULT;
	e->pid = pid_tgid >> 32;
	e->tid = (__u32)pid_tgid;
	e->t = bpf_ktime_get_ns();
	e->addr = address;
	bpf_ringbuf_submit(e, wakeup());
	return 0;
}

// Pages of folio `folio` (a large folio's order is in its second page's flags).
static __always_inline __u64 folio_pages(struct folio *folio)
{
	__u64 flags = 0;

	bpf_probe_read_kernel(&flags, sizeof(flags), folio);
	if (!(flags & (1UL << PG_HEAD)))
		return 1;
	return 1UL << (BPF_CORE_READ(folio, _flags_1) & 63);
}

// The page cache's work for a traced thread on `mapping`: `pages` brought in (`dirtied` 0) or
// dirtied (1), under the call the thread is in (NR_FAULT outside one: a fault; NR_URING: one
// of io_uring's workers).
static __always_inline void cache_note(struct address_space *mapping, __u64 pages, int dirtied)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct entry *en = bpf_task_storage_get(&entries, task, 0, 0);
	struct cache_key k = {};
	struct cache_val *v;
	struct inode *host;

	if (!mapping)
		return;
	if (en) {
		k.nr = en->cur;
		if (!dirtied && k.nr != NR_FAULT)
			en->added += pages;
	} else {
		if (!is_traced(bpf_get_current_pid_tgid() >> 32))
			return;
		k.nr = task->flags & PF_IO_WORKER ? NR_URING : NR_FAULT;
	}
	host = BPF_CORE_READ(mapping, host);
	if (!host)
		return;
	k.dev = BPF_CORE_READ(host, i_sb, s_dev);
	k.ino = BPF_CORE_READ(host, i_ino);
	k.nr |= (__u64)BPF_CORE_READ(host, i_generation) << 32;
	v = bpf_map_lookup_elem(&cache, &k);
	if (!v) {
		struct cache_val z = {};

		z.mode = BPF_CORE_READ(host, i_mode);
		z.rdev = BPF_CORE_READ(host, i_rdev);
		bpf_map_update_elem(&cache, &k, &z, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&cache, &k);
		if (!v) {
			count(4);
			return;
		}
	}
	if (dirtied)
		__sync_fetch_and_add(&v->dirtied, pages);
	else
		__sync_fetch_and_add(&v->added, pages);
}

// A folio added to a file's page cache by a traced thread: read from storage (or made by a
// write, told apart by the call it happened in).
SEC("tp_btf/mm_filemap_add_to_page_cache")
int BPF_PROG(cache_add, struct folio *folio)
{
	cache_note(BPF_CORE_READ(folio, mapping), folio_pages(folio), 0);
	return 0;
}

// A folio of a file dirtied by a traced thread (the kernel counts its pages in write_bytes).
SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(cache_dirty, struct folio *folio, struct address_space *mapping)
{
	cache_note(mapping, folio_pages(folio), 1);
	return 0;
}

// An io_uring request the traced program submitted: a read or write is kept until its
// completion (its file is known then: a registered file's too).
SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(uring_submit, struct io_kiocb *req)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), key = (__u64)req, cut = 0;
	struct io_rw *rw = (struct io_rw *)req;
	struct io_cqe c = {};
	struct ureq u = {};
	__u8 op;

	if (!is_traced(pid_tgid >> 32))
		return 0;
	count(1);
	op = BPF_CORE_READ(req, opcode);
	if (op != OP_READ && op != OP_READV && op != OP_READ_FIXED && op != OP_WRITE &&
	    op != OP_WRITEV && op != OP_WRITE_FIXED) {
		count(2);
		return 0;
	}
	count(3);
	bpf_core_read(&c, sizeof(c), &req->cqe);
	u.t = bpf_ktime_get_ns();
	u.off = BPF_CORE_READ(rw, kiocb.ki_pos);
	u.len = BPF_CORE_READ(rw, len);
	if (op == OP_READV || op == OP_WRITEV)
		u.len = iov_sum(BPF_CORE_READ(rw, addr), u.len, &cut);
	u.fd = c.fd;
	u.fixed = BPF_CORE_READ(req, flags) & REQ_F_FIXED_FILE;
	u.pid = pid_tgid >> 32;
	u.tid = (__u32)pid_tgid;
	u.opcode = op;
	bpf_map_update_elem(&ureqs, &key, &u, BPF_ANY);
	return 0;
}

// A request's completion: one event with its submission, its file and its result.
SEC("tp_btf/io_uring_complete")
int BPF_PROG(uring_complete, struct io_ring_ctx *ring, void *req, struct io_uring_cqe *cqe)
{
	__u64 key = (__u64)req;
	struct ureq *u = bpf_map_lookup_elem(&ureqs, &key);
	struct io_cqe c = {};
	struct file *f = NULL;
	struct ev_uring *e;

	if (!u)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(0);
		bpf_map_delete_elem(&ureqs, &key);
		return 0;
	}
	bpf_probe_read_kernel(&c, sizeof(c), cqe);
	bpf_probe_read_kernel(&f, sizeof(f), req);
	e->kind = EV_URING;
	e->pid = u->pid;
	e->tid = u->tid;
	e->opcode = u->opcode;
	e->t0 = u->t;
	e->t1 = bpf_ktime_get_ns();
	e->res = c.res;
	e->off = u->off;
	e->pos = BPF_CORE_READ((struct io_rw *)req, kiocb.ki_pos);
	e->len = u->len;
	e->fd = u->fd;
	e->fixed = u->fixed;
	describe(&e->f, f);
	bpf_map_delete_elem(&ureqs, &key);
	bpf_ringbuf_submit(e, wakeup());
	return 0;
}

// Never called: its signature puts every record iolab reads into the object's BTF (the events
// above are reached only through locals, whose types the stripped object would not keep), so a
// test checks src/trace/ebpf/abi.rs against them without loading anything.
__attribute__((noinline)) int iolab_records(struct ev_call *a, struct ev_open *b, struct ev_task *c,
					    struct ev_fault *d, struct ev_uring *e)
{
	return a && b && c && d && e;
}

__attribute__((noinline)) int iolab_records2(struct ev_span *a, struct pending *b, struct fileid *c,
					     struct tsums *d)
{
	return a && b && c && d;
}
