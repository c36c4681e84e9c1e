//! The probes' records as Rust types: each `#[repr(C)]` struct here is the C struct of
//! `bpf/iolab.h` it names, field for field, read from the ring buffer's bytes and the maps'
//! entries by `bytemuck` (no unsafe: every field is plain data). A test reads the type
//! information (BTF) of the compiled `bpf/iolab.bpf.o` and fails when any struct's size, or any
//! field's name, offset or size, differs from the Rust one — without root, without loading it.

/// A struct that mirrors one of the C structs of `bpf/iolab.h`.
pub trait CLayout {
    /// The C struct's name.
    const C_NAME: &'static str;
    /// Its fields in order: name, byte offset, byte size.
    fn fields() -> Vec<Field>;
}

/// A `#[repr(C)]` plain-data struct and its [`CLayout`] (the field names are the C ones).
macro_rules! c_struct {
    ($(#[$m:meta])* $name:ident = $cname:literal {
        $($(#[$fm:meta])* $f:ident : $t:ty),* $(,)?
    }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
        pub struct $name {
            $($(#[$fm])* pub $f: $t),*
        }
        impl CLayout for $name {
            const C_NAME: &'static str = $cname;
            fn fields() -> Vec<Field> {
                vec![$((stringify!($f), std::mem::offset_of!($name, $f), std::mem::size_of::<$t>())),*]
            }
        }
    };
}

c_struct! {
    /// A descriptor's file as the kernel has it (`struct fileid`).
    RawFileId = "fileid" {
        /// The super block's dev_t, in the kernel's encoding.
        dev: u64,
        /// Inode number.
        ino: u64,
        /// The descriptor's position.
        pos: u64,
        /// The inode's size.
        size: u64,
        /// Pages of the file in the page cache.
        nrpages: u64,
        /// Modification time, s.
        mtime_sec: i64,
        /// Modification time, ns.
        mtime_nsec: u32,
        /// The inode's generation.
        generation: u32,
        /// Type and permission bits.
        mode: u32,
        /// The open file's flags.
        flags: u32,
        /// The inode's address (the probe's own use).
        reserved: u64,
        /// FILE_FULL, FILE_KNOWN, or 0: nothing read.
        ok: u64,
    }
}

c_struct! {
    /// A call between its entry and exit (`struct pending`).
    RawPending = "pending" {
        /// System-call number.
        nr: u64,
        /// When it was entered.
        t: u64,
        /// Its six arguments.
        args: [u64; 6],
        /// An iovec's sum, a copy's source offset, openat2's flags, rchar at an exec's entry.
        extra: u64,
        /// The iovec was cut; a copy's destination offset; read_bytes at an exec's entry.
        extra2: u64,
        /// Its descriptor's file (a copy's source).
        f: RawFileId,
        /// A copy's destination.
        g: RawFileId,
    }
}

c_struct! {
    /// A finished call (`struct ev_call`).
    RawCall = "ev_call" {
        /// EV_CALL or EV_OPEN.
        kind: u32,
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// Pages the call brought into the page cache.
        added: u32,
        /// When it returned.
        t1: u64,
        /// Its result.
        ret: i64,
        /// The descriptor's position after it.
        pos_exit: u64,
        /// rchar at an exec's return.
        rchar: u64,
        /// Time off the CPU during it, ns.
        off: u64,
        /// Of it, waiting for a CPU, ns.
        runq: u64,
        /// Its entry.
        p: RawPending,
    }
}

c_struct! {
    /// An open with its paths (`struct ev_open`).
    RawOpen = "ev_open" {
        /// The call.
        c: RawCall,
        /// Bytes of the path as the program gave it, its NUL included.
        len: u64,
        /// That path.
        path: [u8; 256],
        /// Bytes of the path as the kernel walked it (0: longer, or lost).
        klen: u64,
        /// That path.
        kpath: [u8; 256],
    }
}

c_struct! {
    /// A process or thread event (`struct ev_task`).
    RawTask = "ev_task" {
        /// EV_FORK, EV_EXEC or EV_EXIT.
        kind: u32,
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// Padding.
        pad: u32,
        /// When.
        t: u64,
        /// Fork: the child's process id.
        other_pid: u32,
        /// Fork: the child's thread id; exec: the thread id before.
        other_tid: u32,
        /// Exit: the last thread of its process.
        group_dead: u32,
        /// Exit: its exit code as wait gives it.
        exit_code: i32,
        /// I/O counters.
        rchar: u64,
        /// I/O counters.
        wchar: u64,
        /// I/O counters.
        syscr: u64,
        /// I/O counters.
        syscw: u64,
        /// I/O counters.
        read_bytes: u64,
        /// I/O counters.
        write_bytes: u64,
        /// Time on a CPU, ns.
        cpu_ns: u64,
        /// Time waiting for one, ns.
        runq_ns: u64,
        /// Fork: the child's birth, ns since boot.
        start: u64,
        /// Its name.
        comm: [u8; 16],
    }
}

c_struct! {
    /// A page fault (`struct ev_fault`).
    RawFault = "ev_fault" {
        /// EV_FAULT.
        kind: u32,
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// Padding.
        pad: u32,
        /// When.
        t: u64,
        /// The faulting address.
        addr: u64,
    }
}

c_struct! {
    /// An io_uring read or write (`struct ev_uring`).
    RawUring = "ev_uring" {
        /// EV_URING.
        kind: u32,
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// IORING_OP_*.
        opcode: u32,
        /// Submitted.
        t0: u64,
        /// Completed.
        t1: u64,
        /// The completion's result.
        res: i64,
        /// The request's offset (-1: the file's position).
        off: i64,
        /// Its position at its completion.
        pos: u64,
        /// Bytes asked for.
        len: u64,
        /// Its descriptor or registered file's index.
        fd: i64,
        /// `fd` is a registered file's index.
        fixed: u64,
        /// Its file.
        f: RawFileId,
    }
}

c_struct! {
    /// A long call timed only (`struct ev_span`).
    RawSpan = "ev_span" {
        /// EV_SPAN.
        kind: u32,
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// System-call number.
        nr: u32,
        /// Entered.
        t0: u64,
        /// Left.
        t1: u64,
        /// Time off the CPU, ns.
        off: u64,
        /// Of it, waiting for a CPU.
        runq: u64,
        /// Its result.
        ret: i64,
    }
}

c_struct! {
    /// The `calltime` map's key.
    CallKey = "call_key" {
        /// Thread id.
        tid: u32,
        /// System-call number.
        nr: u32,
    }
}

c_struct! {
    /// The `calltime` map's value.
    CallVal = "call_val" {
        /// Calls.
        calls: u64,
        /// Of them, failed.
        errors: u64,
        /// Their time, ns.
        ns: u64,
        /// Of it, off the CPU.
        off: u64,
        /// Of that, waiting for a CPU.
        runq: u64,
    }
}

c_struct! {
    /// The `cache` map's key.
    CacheKey = "cache_key" {
        /// Device (kernel encoding).
        dev: u64,
        /// Inode number.
        ino: u64,
        /// The call it happened in (low 32 bits), the inode's generation (high 32).
        nr: u64,
    }
}

c_struct! {
    /// One call of a thread's sums (`struct tslot`).
    TSlot = "tslot" {
        /// The call's number + 1; 0: a free slot.
        nr: u64,
        /// Its sums.
        v: CallVal,
    }
}

/// Calls one thread's sums hold (bpf/iolab.h's `TSLOTS`).
pub const TSLOTS: usize = 16;

c_struct! {
    /// A thread's calls timed only, summed in its own storage (the `sums` map's value).
    TSums = "tsums" {
        /// Its calls, the used slots first.
        s: [TSlot; TSLOTS],
    }
}

c_struct! {
    /// The `cache` map's value.
    CacheVal = "cache_val" {
        /// Pages brought into the cache.
        added: u64,
        /// Pages dirtied.
        dirtied: u64,
        /// The inode's type and permissions.
        mode: u64,
        /// A block device's number.
        rdev: u64,
    }
}

/// A field: its name, byte offset and byte size.
pub type Field = (&'static str, usize, usize);

/// A struct: its C name, its fields, its size.
pub type Layout = (&'static str, Vec<Field>, usize);

/// Every type above: what the test checks against the object.
pub fn layouts() -> Vec<Layout> {
    fn one<T: CLayout>() -> Layout {
        (T::C_NAME, T::fields(), std::mem::size_of::<T>())
    }
    vec![
        one::<RawFileId>(),
        one::<RawPending>(),
        one::<RawCall>(),
        one::<RawOpen>(),
        one::<RawTask>(),
        one::<RawFault>(),
        one::<RawUring>(),
        one::<RawSpan>(),
        one::<CallKey>(),
        one::<CallVal>(),
        one::<TSlot>(),
        one::<TSums>(),
        one::<CacheKey>(),
        one::<CacheVal>(),
    ]
}

/// The `T` at the start of `bytes`, or None when they are fewer than its size.
pub fn read<T: bytemuck::Pod>(bytes: &[u8]) -> Option<T> {
    bytes
        .get(..std::mem::size_of::<T>())
        .map(bytemuck::pod_read_unaligned)
}

#[cfg(test)]
mod tests;
