//! What to move: a byte range cut into blocks, split between threads, visited sequentially or in
//! a seeded random order. The random order is a keyed permutation (a Feistel network with cycle
//! walking), so it visits every block exactly once, needs no memory and is the same for a seed.

use serde::{Deserialize, Serialize};

mod permutation;
use permutation::Permutation;
pub use permutation::splitmix64;

crate::named_enum! {
    /// Order in which blocks are visited.
    pub enum Pattern {
        /// In file order.
        Seq = "seq" | "sequential",
        /// A seeded permutation: every block once, in an order that defeats readahead.
        Random = "random" | "rand",
    }
}

/// How blocks are visited and shared out: the order and its seed, the threads, and the requests
/// each io_uring thread keeps in flight. Configs embed it (flattened in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Shape {
    /// Sequential or seeded random order.
    pub pattern: Pattern,
    /// Seed of the random order (and of written data).
    pub seed: u64,
    /// Threads, each with its own contiguous part.
    pub threads: usize,
    /// io_uring requests in flight per thread.
    pub depth: u32,
    /// io_uring methods: a kernel thread polls the submission queue (IORING_SETUP_SQPOLL).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sqpoll: bool,
}

impl Shape {
    /// One thread, in order: what the classic programs do.
    pub const SEQUENTIAL: Shape = Shape {
        pattern: Pattern::Seq,
        seed: 1,
        threads: 1,
        depth: 32,
        sqpoll: false,
    };

    /// `len` bytes in blocks of `bs`, visited this way.
    pub fn workload(&self, bs: u64, len: u64) -> Workload {
        Workload {
            bs,
            len,
            pattern: self.pattern,
            seed: self.seed,
            threads: self.threads,
        }
    }

    /// Refuses zero threads.
    pub fn check(&self) -> crate::error::Result<()> {
        if self.threads == 0 {
            return Err(crate::error::Error::usage(
                "invalid thread count",
                "--threads must be at least 1",
            ));
        }
        Ok(())
    }
}

/// One block: `len` bytes at `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// Where it starts.
    pub offset: u64,
    /// Its length (the last block may be short).
    pub len: u64,
}

/// `len` bytes from offset 0 in blocks of `bs`, shared by `threads` threads.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    /// Block size.
    pub bs: u64,
    /// Bytes from offset 0.
    pub len: u64,
    /// Visiting order.
    pub pattern: Pattern,
    /// Seed of the random order.
    pub seed: u64,
    /// Threads, each with its own contiguous part.
    pub threads: usize,
}

impl Workload {
    /// Number of blocks (the last may be short).
    pub fn blocks(&self) -> u64 {
        if self.bs == 0 {
            0
        } else {
            self.len.div_ceil(self.bs)
        }
    }

    /// One part per thread: thread `t` owns a contiguous run of blocks, so threads never share a
    /// block and each part's bytes lie in one range of the file.
    pub fn parts(&self) -> Vec<Part> {
        let n = self.blocks();
        let t = self.threads.max(1) as u64;
        (0..t)
            .map(|i| {
                let first = n * i / t;
                let end = n * (i + 1) / t;
                Part {
                    order: match self.pattern {
                        Pattern::Seq => None,
                        Pattern::Random => {
                            Some(Order::new(Permutation::new(end - first, self.seed ^ i)))
                        }
                    },
                    ..Part::run(self.bs, self.len, first, end - first)
                }
            })
            .collect()
    }
}

impl Workload {
    /// One part per thread, as [`Workload::parts`], but each part's blocks drawn at random with
    /// replacement from the part's range (as many draws as the part has blocks): the order of
    /// mmapbench and of most larger-than-memory studies, where a block may be read again while
    /// still cached. `seed` makes a new set of draws (one per lap of a timed run).
    pub fn uniform_parts(&self, seed: u64) -> Vec<Part> {
        self.parts()
            .into_iter()
            .enumerate()
            .map(|(i, mut p)| {
                p.order = Some(Order::Uniform {
                    n: p.count.max(1),
                    seed: splitmix64(&mut (seed ^ (i as u64).wrapping_mul(0xa076_1d64_78bd_642f))),
                });
                p
            })
            .collect()
    }

    /// Sequential parts covering bytes `start..end` of the file (`start` a multiple of `bs`,
    /// `end` at most `len`), split between up to `threads` threads, each a contiguous run of
    /// whole blocks; parts without a block are left out.
    pub fn range_parts(&self, start: u64, end: u64) -> Vec<Part> {
        debug_assert!(start.is_multiple_of(self.bs.max(1)) && end <= self.len);
        let bs = self.bs.max(1);
        let (first, last) = (start / bs, end.div_ceil(bs));
        let n = last.saturating_sub(first);
        let t = self.threads.max(1) as u64;
        (0..t)
            .map(|i| Part::run(bs, end, first + n * i / t, n * (i + 1) / t - n * i / t))
            .filter(|p| p.count > 0)
            .collect()
    }

    /// Bytes `start..end` in order, handed out block by block to whichever of up to `threads`
    /// threads is free: each of the parts returned spans the whole range, and together they
    /// visit each block once. A thread that meets slower pages (small folios, a cold chunk) takes
    /// fewer blocks instead of holding the others up (halves of a warm file differed by 20 ms in
    /// 80 here). Same conditions as [`Workload::range_parts`].
    pub fn shared_parts(&self, start: u64, end: u64) -> Vec<Part> {
        debug_assert!(start.is_multiple_of(self.bs.max(1)) && end <= self.len);
        let bs = self.bs.max(1);
        let (first, last) = (start / bs, end.div_ceil(bs));
        let count = last.saturating_sub(first);
        let cursor = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let t = (self.threads.max(1) as u64).min(count);
        (0..t)
            .map(|_| Part {
                cursor: Some(cursor.clone()),
                ..Part::run(bs, end, first, count)
            })
            .collect()
    }

    /// [`Workload::shared_parts`] over several sorted, disjoint byte ranges in one pass: `None`
    /// when a range does not start on a block, one ends inside a block before the last, or the
    /// blocks are too many for a table (read them range by range then).
    pub fn shared_ranges(&self, ranges: &[(u64, u64)]) -> Option<Vec<Part>> {
        let bs = self.bs.max(1);
        let (&(first_start, _), &(_, end)) = (ranges.first()?, ranges.last()?);
        let first = first_start / bs;
        let mut blocks: Vec<u32> = Vec::new();
        for (k, &(s, e)) in ranges.iter().enumerate() {
            let inner_end = k + 1 < ranges.len() && !e.is_multiple_of(bs);
            if !s.is_multiple_of(bs) || inner_end || e > self.len || s > e {
                return None;
            }
            for b in s / bs..e.div_ceil(bs) {
                blocks.push(u32::try_from(b - first).ok()?);
                if blocks.len() as u64 > Order::TABLE_MAX {
                    return None;
                }
            }
        }
        let count = blocks.len() as u64;
        let order = Order::Listed(blocks.into());
        let cursor = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let t = (self.threads.max(1) as u64).min(count);
        Some(
            (0..t)
                .map(|_| Part {
                    order: Some(order.clone()),
                    cursor: Some(cursor.clone()),
                    ..Part::run(bs, end, first, count)
                })
                .collect(),
        )
    }
}

/// A random visiting order: looked up in a table made before the run (as a plain loop over a
/// shuffled array does, so computing the order costs nothing inside the timed window), or for
/// parts too large for a table, computed block by block.
#[derive(Debug, Clone)]
enum Order {
    Table(std::sync::Arc<[u32]>),
    Computed(Permutation),
    /// Draws with replacement, uniform over `0..n`: some blocks come twice, others never, as
    /// mmapbench's random reads do (`p[rnd(gen)]`).
    Uniform {
        n: u64,
        seed: u64,
    },
    /// Blocks of several ranges, in file order (relative to the part's first block): one pass
    /// over what a probe left, instead of a pass per range.
    Listed(std::sync::Arc<[u32]>),
    /// Blocks given one by one, any offset and length, in the order given (a replay's reads).
    Explicit(std::sync::Arc<[Block]>),
}

impl Order {
    /// Parts of up to this many blocks get a table (16 MiB of u32).
    const TABLE_MAX: u64 = 4 << 20;

    fn new(p: Permutation) -> Order {
        if p.n <= Self::TABLE_MAX {
            Order::Table((0..p.n).map(|i| p.apply(i) as u32).collect())
        } else {
            Order::Computed(p)
        }
    }

    #[inline]
    fn apply(&self, i: u64) -> u64 {
        match self {
            Order::Table(t) | Order::Listed(t) => t[i as usize] as u64,
            Order::Explicit(_) => i,
            Order::Computed(p) => p.apply(i),
            Order::Uniform { n, seed } => {
                let mut st = seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                // The high half of x * n: uniform over 0..n without the bias of `% n`.
                ((splitmix64(&mut st) as u128 * *n as u128) >> 64) as u64
            }
        }
    }
}

/// A thread's share of a workload.
#[derive(Debug, Clone)]
pub struct Part {
    bs: u64,
    len: u64,
    first: u64,
    count: u64,
    order: Option<Order>,
    /// Shared by the parts of [`Workload::shared_parts`]: the next block to hand out.
    cursor: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
    /// Nanoseconds to pause before each block (a replay keeping a program's compute time).
    gaps: Option<std::sync::Arc<[u64]>>,
}

impl Part {
    /// `count` blocks of `bs` from block `first` in order, of a file of `len` bytes.
    fn run(bs: u64, len: u64, first: u64, count: u64) -> Part {
        Part {
            bs,
            len,
            first,
            count,
            order: None,
            cursor: None,
            gaps: None,
        }
    }

    /// A part of `blocks` as given (any offsets and lengths, repeats allowed) of a `len`-byte
    /// file; `bs` is the largest block.
    pub fn explicit(blocks: std::sync::Arc<[Block]>, len: u64) -> Part {
        let bs = blocks.iter().map(|b| b.len).max().unwrap_or(1).max(1);
        let count = blocks.len() as u64;
        Part {
            order: Some(Order::Explicit(blocks)),
            ..Part::run(bs, len, 0, count)
        }
    }

    /// The same part pausing `gaps[i]` ns before block `i` (a missing entry: no pause).
    pub fn with_gaps(mut self, gaps: std::sync::Arc<[u64]>) -> Part {
        self.gaps = gaps.iter().any(|&g| g > 0).then_some(gaps);
        self
    }

    /// The pause before block `i`, ns.
    #[inline]
    pub fn gap(&self, i: u64) -> u64 {
        self.gaps
            .as_ref()
            .and_then(|g| g.get(i as usize).copied())
            .unwrap_or(0)
    }

    /// Whether it pauses before any block.
    pub fn has_gaps(&self) -> bool {
        self.gaps.is_some()
    }

    /// Blocks in the part.
    pub fn block_count(&self) -> u64 {
        self.count
    }

    /// Whether its blocks are handed out one by one from a counter shared with other parts
    /// ([`Workload::shared_parts`]) rather than taken by index.
    pub fn is_shared(&self) -> bool {
        self.cursor.is_some()
    }

    /// Keeps only the first `n` blocks of this part's order.
    pub fn limit(&mut self, n: u64) {
        self.count = self.count.min(n);
    }

    /// The byte range this part covers: `(start, end)` (for several ranges, from the first's
    /// start to the last's end, holes included).
    pub fn span(&self) -> (u64, u64) {
        let start = (self.first * self.bs).min(self.len);
        if matches!(self.order, Some(Order::Listed(_))) {
            return (start, self.len);
        }
        if let Some(Order::Explicit(b)) = &self.order {
            let s = b.iter().map(|b| b.offset).min().unwrap_or(0);
            let e = b.iter().map(|b| b.offset + b.len).max().unwrap_or(0);
            return (s.min(self.len), e.min(self.len));
        }
        let end = ((self.first + self.count) * self.bs).min(self.len);
        (start, end)
    }

    /// Bytes in the part.
    pub fn bytes(&self) -> u64 {
        let (s, e) = self.span();
        e - s
    }

    /// The `i`-th block in visiting order.
    #[inline]
    pub fn block(&self, i: u64) -> Block {
        if let Some(Order::Explicit(b)) = &self.order {
            return b[i as usize];
        }
        let idx = self.first
            + match &self.order {
                None => i,
                Some(p) => p.apply(i),
            };
        let offset = idx * self.bs;
        Block {
            offset,
            len: self.bs.min(self.len - offset),
        }
    }

    /// Folds `f` over the offsets of blocks `range` (by index) in visiting order, and counts
    /// the bytes those blocks hold: [`Part::each_block`] without a length per block, for a loop
    /// that touches one byte of each. Per block it is the classic C loop's work (a load of the
    /// next index, a multiply), so the CPU keeps as many blocks' page walks in flight as that
    /// loop does: with a length computed per block, warm sequential touches of a mapping ran at
    /// 0.85x the C loop. None for blocks given one by one (their lengths may be zero).
    #[inline]
    pub fn fold_offsets<A>(
        &self,
        range: std::ops::Range<u64>,
        init: A,
        mut f: impl FnMut(A, u64) -> A,
    ) -> Option<(A, u64)> {
        let (first, bs) = (self.first, self.bs);
        let acc = match &self.order {
            None => (first + range.start..first + range.end).fold(init, |a, idx| f(a, idx * bs)),
            Some(Order::Table(t) | Order::Listed(t)) => t[range.start as usize..range.end as usize]
                .iter()
                .fold(init, |a, &i| f(a, (first + i as u64) * bs)),
            Some(Order::Explicit(_)) => return None,
            Some(_) => range.clone().fold(init, |a, i| f(a, self.block(i).offset)),
        };
        // Every block is whole but the file's last, when the file ends inside it.
        if self.len.is_multiple_of(bs) {
            return Some((acc, (range.end - range.start) * bs));
        }
        let mut bytes = 0;
        self.each_block(range, |b| bytes += b.len);
        Some((acc, bytes))
    }

    /// Calls `f` with blocks `range` (by index) in visiting order, the same blocks as
    /// [`Part::block`] gives one by one, but with the order's kind looked at once, outside the
    /// loop (a mapping's XOR of whole blocks; a touch of one byte a block takes
    /// [`Part::fold_offsets`], which leaves the lengths out of the loop too).
    #[inline]
    pub fn each_block(&self, range: std::ops::Range<u64>, mut f: impl FnMut(Block)) {
        let (first, bs, len) = (self.first, self.bs, self.len);
        let at = move |idx: u64| {
            let offset = (first + idx) * bs;
            Block {
                offset,
                len: bs.min(len - offset),
            }
        };
        match &self.order {
            None => range.for_each(|i| f(at(i))),
            Some(Order::Table(t) | Order::Listed(t)) => t[range.start as usize..range.end as usize]
                .iter()
                .for_each(|&i| f(at(i as u64))),
            Some(_) => range.for_each(|i| f(self.block(i))),
        }
    }

    /// The part's blocks in visiting order (for a shared part: those this thread is handed).
    pub fn iter(&self) -> impl Iterator<Item = Block> + '_ {
        let mut own = 0..self.count;
        std::iter::from_fn(move || {
            let i = match &self.cursor {
                None => own.next()?,
                Some(c) => {
                    let i = c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    (i < self.count).then_some(i)?
                }
            };
            Some(self.block(i))
        })
    }
}

/// What iolab writes when it writes blocks of `bs` bytes with `seed`: seeded random bytes with a
/// period of `period` bytes (the writers' buffer, made once outside the timed window), restarting
/// at every block, except the first 8 bytes of every block, which are a tag derived from the seed
/// and the block's offset. Every block differs, so a file's XOR proves what was written (an even
/// number of equal blocks would XOR to zero, like a sparse file).
#[derive(Debug, Clone, Copy)]
pub struct WrittenData {
    seed: u64,
    bs: u64,
    period: u64,
}

impl WrittenData {
    /// The data of blocks of `bs` bytes (at least 1) with `seed`, repeating every `period` bytes
    /// (at least 1) within a block.
    pub fn new(seed: u64, bs: u64, period: u64) -> WrittenData {
        WrittenData {
            seed,
            bs: bs.max(1),
            period: period.max(1),
        }
    }

    /// The repeating part: one period.
    pub fn base(&self) -> Vec<u8> {
        let mut v = vec![0u8; self.period as usize];
        fill_random(&mut v, self.seed ^ 0x0057_5249_5445);
        v
    }

    /// The 8 bytes at the start of the block at `offset`.
    pub fn tag(&self, offset: u64) -> [u8; 8] {
        let mut s = self.seed ^ offset.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x0054_4147;
        splitmix64(&mut s).to_le_bytes()
    }

    /// Makes `buf` (holding the base) the bytes of file range `offset..offset+len`, which starts a
    /// period inside one block: the block's tag first when it starts the block, the base's own
    /// first bytes otherwise (`base_head`). Returns the bytes to write.
    pub fn place<'a>(
        &self,
        buf: &'a mut [u8],
        base_head: &[u8; 8],
        offset: u64,
        len: usize,
    ) -> &'a [u8] {
        let head = if offset.is_multiple_of(self.bs) {
            self.tag(offset)
        } else {
            *base_head
        };
        let n = len.min(8);
        buf[..n].copy_from_slice(&head[..n]);
        &buf[..len]
    }

    /// The XOR of the first `len` bytes of a file written this way, from the definition alone
    /// (period by period, independently of any write engine).
    pub fn expected_xor(&self, len: u64) -> u32 {
        let base = self.base();
        let mut x = 0u32;
        let mut block = 0u64;
        while block < len {
            let end = (block + self.bs).min(len);
            let mut at = block;
            while at < end {
                let n = (end - at).min(self.period) as usize;
                x ^= crate::xor::xor_at(at, &base[..n]);
                at += n as u64;
            }
            // The tag replaces the block's first bytes.
            let k = ((end - block) as usize).min(8);
            x ^= crate::xor::xor_at(block, &base[..k])
                ^ crate::xor::xor_at(block, &self.tag(block)[..k]);
            block = end;
        }
        x
    }
}

/// Writes a new file of `size` random bytes (seeded from `seed`, 8 MiB at a time).
pub fn write_random(path: &std::path::Path, size: u64, seed: u64) -> crate::error::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| crate::error::Error::io("cannot create", path, &e))?;
    let mut buf = vec![0u8; (8 << 20).min(size as usize)];
    let (mut left, mut seed) = (size, seed);
    while left > 0 {
        let n = left.min(buf.len() as u64) as usize;
        fill_random(&mut buf[..n], seed);
        seed += 1;
        f.write_all(&buf[..n])
            .map_err(|e| crate::error::Error::io("cannot write data", path, &e))?;
        left -= n as u64;
    }
    Ok(())
}

/// Fills `buf` with seeded pseudo-random bytes.
pub fn fill_random(buf: &mut [u8], seed: u64) {
    let mut s = seed;
    let mut chunks = buf.chunks_exact_mut(8);
    for c in &mut chunks {
        c.copy_from_slice(&splitmix64(&mut s).to_le_bytes());
    }
    let tail = chunks.into_remainder();
    let last = splitmix64(&mut s).to_le_bytes();
    let n = tail.len();
    tail.copy_from_slice(&last[..n]);
}

#[cfg(test)]
mod tests;
