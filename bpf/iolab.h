// SPDX-License-Identifier: GPL-2.0
// The kernel types iolab.bpf.c reads, only the fields it reads: with preserve_access_index each
// access is relocated against the running kernel's own layout (CO-RE), so no vmlinux.h is needed.
// The events and map entries are read as the #[repr(C)] types of src/trace/ebpf/abi.rs; a test
// there fails when any of them differs from the BTF of the compiled object.
#ifndef IOLAB_H
#define IOLAB_H

typedef unsigned int pid_t;

struct pt_regs {
	unsigned long r10, r9, r8, dx, si, di;
} __attribute__((preserve_access_index));

struct super_block {
	unsigned int s_dev;
} __attribute__((preserve_access_index));

struct inode;

struct address_space {
	struct inode *host;
	unsigned long nrpages;
} __attribute__((preserve_access_index));

struct inode {
	unsigned short i_mode;
	unsigned int i_rdev;
	unsigned long i_ino;
	struct super_block *i_sb;
	struct address_space *i_mapping;
	long long i_size;
	long long i_mtime_sec;
	unsigned int i_mtime_nsec;
	unsigned int i_generation;
} __attribute__((preserve_access_index));

// struct qstr, read as its 16 bytes (its fields sit in anonymous unions).
struct qstr_raw {
	__u64 hash_len; // the name's length in the upper 32 bits (little-endian)
	const unsigned char *name;
};

struct dentry {
	struct dentry *d_parent;
	struct qstr_raw d_name;
} __attribute__((preserve_access_index));

struct vfsmount {
	struct dentry *mnt_root;
} __attribute__((preserve_access_index));

struct mount {
	struct mount *mnt_parent;
	struct dentry *mnt_mountpoint;
	struct vfsmount mnt;
} __attribute__((preserve_access_index));

struct path {
	struct vfsmount *mnt;
	struct dentry *dentry;
} __attribute__((preserve_access_index));

struct file {
	struct path f_path;
	struct inode *f_inode;
	long long f_pos;
	unsigned int f_flags;
} __attribute__((preserve_access_index));

struct fdtable {
	unsigned int max_fds;
	struct file **fd;
} __attribute__((preserve_access_index));

struct files_struct {
	struct fdtable *fdt;
} __attribute__((preserve_access_index));

struct task_io_accounting {
	__u64 rchar, wchar, syscr, syscw, read_bytes, write_bytes;
} __attribute__((preserve_access_index));

struct sched_entity {
	__u64 sum_exec_runtime;
} __attribute__((preserve_access_index));

struct sched_info {
	unsigned long long run_delay;
} __attribute__((preserve_access_index));

typedef struct {
	int counter;
} atomic_t;

struct signal_struct {
	atomic_t live;
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int flags;
	pid_t pid, tgid;
	struct files_struct *files;
	struct task_io_accounting ioac;
	struct sched_entity se;
	struct sched_info sched_info;
	struct signal_struct *signal;
	int exit_code;
	__u64 start_boottime;
	char comm[16];
} __attribute__((preserve_access_index));


struct linux_binprm;

#define PF_IO_WORKER 0x10

// A folio of the page cache: its first word (its flags, read raw: a struct in the kernel), the
// file it caches, its index there, and the order of a large one (in its second page's flags).
struct folio {
	struct address_space *mapping;
	unsigned long index;
	unsigned long _flags_1;
} __attribute__((preserve_access_index));

#define PG_HEAD 6

// io_uring (io_uring/*.h): a request, its read/write command, its completion.
struct io_cqe {
	__u64 user_data;
	__s32 res;
	__s32 fd; // at submission: the request's descriptor (or registered index)
};

struct io_kiocb {
	// its first word is the file (`file`, in a union with the command): read raw
	__u8 opcode;
	__u64 flags;
	struct io_cqe cqe;
} __attribute__((preserve_access_index));

struct kiocb {
	long long ki_pos;
} __attribute__((preserve_access_index));

struct io_rw {
	struct kiocb kiocb;
	__u64 addr;
	__u32 len;
} __attribute__((preserve_access_index));

struct io_ring_ctx;
struct io_uring_cqe;

#define REQ_F_FIXED_FILE 1
#define OP_READV 1
#define OP_WRITEV 2
#define OP_READ_FIXED 4
#define OP_WRITE_FIXED 5
#define OP_READ 22
#define OP_WRITE 23

// How a call's entry is read (the `wanted` map's values).
#define K_PLAIN 1    // the arguments are all
#define K_FD0 2      // the first argument is a descriptor: its file and position after
#define K_CLOSE 10   // close: the descriptor's file, read at the entry
#define K_IOV 3      // a descriptor and an iovec array: the bytes it asks for
#define K_MMAP 4     // mmap: the fifth argument's file
#define K_SENDFILE 5 // sendfile: the source (2nd) and destination (1st), the offset behind the 3rd
#define K_SPLICE 6   // splice, copy_file_range: source (1st), destination (3rd), both offsets
#define K_OPEN 7     // open, openat, creat: the path, the opened file
#define K_OPEN2 8    // openat2: also the flags behind the third argument
#define K_EXEC 9     // execve(at): rchar before and after (what the kernel read for it)
#define K_UNTIMED 11 // a call that never waits: neither timed nor recorded
#define K_RENAME 12  // rename(at,at2), unlink(at): when it succeeded, the names (EV_RENAME)
// 0 (the value of a call not in the table): timed only, summed per thread in `calltime`, and
// a span event when it lasts SPAN_NS or more.

#define SPAN_NS 1000000ULL

#define IOV_MAX_SEEN 64

#define SYS_OPEN 2
#define SYS_CREAT 85
#define SYS_RENAME 82
#define SYS_UNLINK 87
#define SYS_UNLINKAT 263
#define SYS_EXECVE 59
#define SYS_EXECVEAT 322

#define EV_CALL 1
#define EV_OPEN 2
#define EV_FORK 3
#define EV_EXEC 4
#define EV_EXIT 5
#define EV_FAULT 6
#define EV_URING 7
#define EV_SPAN 8
#define EV_RENAME 9 // a struct ev_open: `path` the old name, `kpath` the new (empty: an unlink)

// A descriptor's file as the kernel has it at a call's entry.
struct fileid {
	__u64 dev;     // the super block's dev_t (kernel encoding: major << 20 | minor)
	__u64 ino;
	__u64 pos;     // the descriptor's position
	__u64 size;    // the inode's size
	__u64 nrpages; // pages of the file in the page cache
	__s64 mtime_sec;
	__u32 mtime_nsec;
	__u32 generation; // the inode's generation: a new file that reuses a freed inode number has another
	__u32 mode;    // the inode's type and permissions
	__u32 flags;   // the open file's flags (O_APPEND, O_DIRECT, ...)
	__u64 reserved; // the inode's address (kept to tell a file from the one before)
	__u64 ok;      // FILE_FULL: every field read; FILE_KNOWN: only pos and flags (the rest
		       // as the thread's last call on the same open file had them)
};

#define FILE_FULL 1
#define FILE_KNOWN 2

// A thread's call between its entry and exit.
struct entry {
	__u64 nr;
	__u64 t;
	__u64 added; // pages brought into the page cache during the call
	__u64 cur;   // the call the thread is in (any call; NR_FAULT between calls)
	__u64 extra; // rchar at an exec's entry
	__u64 extra2; // read_bytes at an exec's entry
	__u64 live;  // entered and not yet left
	struct fileid f; // close: the descriptor's file
	__u64 last_file; // the open file of the thread's last call on one
	struct fileid last; // what describe found of it
	__u64 off;   // time off the CPU so far (from leaving it to running again), ns
	__u64 out_t; // when it last left the CPU (0: on it now)
	__u64 off0;  // `off` at the call's entry
	__u64 runq0; // run_delay (time runnable, waiting for a CPU) at the call's entry
};

// A call as its exit sees it: positions are those after the call.
struct pending {
	__u64 nr;
	__u64 t;
	__u64 args[6];
	__u64 extra;  // an iovec's sum; sendfile/splice's source offset; openat2's flags; rchar
	__u64 extra2; // the iovec was cut; splice's destination offset; read_bytes at an exec's entry
	struct fileid f;
	struct fileid g; // the destination of a copy
};

struct ev_call {
	__u32 kind, pid, tid;
	__u32 added; // pages the call brought into the page cache (read from storage, or made)
	__u64 t1;
	__s64 ret;
	__u64 pos_exit; // the descriptor's (a copy's destination's) position after the call
	__u64 rchar;    // execve: the thread's rchar at its exit
	__u64 off;      // time off the CPU during the call, ns
	__u64 runq;     // of it, runnable and waiting for a CPU
	struct pending p;
};

// A call timed only that lasted SPAN_NS or more.
struct ev_span {
	__u32 kind, pid, tid, nr;
	__u64 t0, t1;
	__u64 off, runq;
	__s64 ret;
};

// Calls timed only, per thread and call (`calltime` map).
struct call_key {
	__u32 tid, nr;
};

struct call_val {
	__u64 calls, errors, ns, off, runq;
};

// A thread's calls timed only, summed in its own storage (`sums`): TSLOTS calls, each slot
// its call's number + 1 (0: free) and sums as `call_val`'s.
#define TSLOTS 16

struct tslot {
	__u64 nr;
	struct call_val v;
};

struct tsums {
	struct tslot s[TSLOTS];
};

#define PATH_BYTES 256

struct ev_open {
	struct ev_call c;
	__u64 len; // bytes of the path as the program gave it, its NUL included
	char path[PATH_BYTES];
	__u64 klen; // bytes of the opened file's path as the kernel walked it (0: longer or lost)
	char kpath[PATH_BYTES];
};

struct ev_task {
	__u32 kind, pid, tid, pad;
	__u64 t;
	__u32 other_pid, other_tid; // fork: the child; exec: the former thread id
	__u32 group_dead;
	__s32 exit_code;
	__u64 rchar, wchar, syscr, syscw, read_bytes, write_bytes;
	__u64 cpu_ns, runq_ns;
	__u64 start; // fork: the child's birth, ns since boot (/proc/PID/stat's starttime)
	char comm[16];
};

struct ev_fault {
	__u32 kind, pid, tid;
	__u32 pad;
	__u64 t;
	__u64 addr; // the faulting address
};

// An io_uring read or write, from its submission to its completion.
struct ev_uring {
	__u32 kind, pid, tid, opcode;
	__u64 t0;    // submitted
	__u64 t1;    // completed
	__s64 res;   // the completion's result
	__s64 off;   // the request's offset (-1: the file's position)
	__u64 pos;   // the request's position at its completion
	__u64 len;   // bytes asked for (a vector's: summed at submission)
	__s64 fd;    // its descriptor, or registered file's index (`fixed`)
	__u64 fixed;
	struct fileid f; // its file, at the completion
};

// A submitted request, kept until its completion.
struct ureq {
	__u64 t, off, len, fixed;
	__s64 fd;
	__u32 pid, tid, opcode, pad;
};

// The page cache's work for the traced program, per file and per cause (`cache` map).
struct cache_key {
	__u64 dev, ino;
	__u64 nr; // the system call it happened in (NR_FAULT outside one, NR_URING in io_uring's
		  // workers), the inode's generation in the upper 32 bits
};

struct cache_val {
	__u64 added;   // pages brought into the cache (read from storage, or made by a write)
	__u64 dirtied; // pages dirtied
	__u64 mode;    // the inode's type and permissions
	__u64 rdev;    // a block device's number (its metadata pages)
};

#define NR_FAULT 0xffff
#define NR_URING 0xfffe

#endif
