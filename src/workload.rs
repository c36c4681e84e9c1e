//! What to move: a byte range cut into blocks, split between threads, visited sequentially or in
//! a seeded random order. The random order is a keyed permutation (a Feistel network with cycle
//! walking), so it visits every block exactly once, needs no memory and is the same for a seed.

use serde::{Deserialize, Serialize};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    /// Sequential or seeded random order.
    pub pattern: Pattern,
    /// Seed of the random order (and of written data).
    pub seed: u64,
    /// Threads, each with its own contiguous part.
    pub threads: usize,
    /// io_uring requests in flight per thread.
    pub depth: u32,
}

impl Shape {
    /// One thread, in order: what the classic programs do.
    pub const SEQUENTIAL: Shape = Shape {
        pattern: Pattern::Seq,
        seed: 1,
        threads: 1,
        depth: 32,
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
                    bs: self.bs,
                    len: self.len,
                    first,
                    count: end - first,
                    order: match self.pattern {
                        Pattern::Seq => None,
                        Pattern::Random => Some(Permutation::new(end - first, self.seed ^ i)),
                    },
                }
            })
            .collect()
    }
}

/// A thread's share of a workload.
#[derive(Debug, Clone)]
pub struct Part {
    bs: u64,
    len: u64,
    first: u64,
    count: u64,
    order: Option<Permutation>,
}

impl Part {
    /// Blocks in the part.
    pub fn block_count(&self) -> u64 {
        self.count
    }

    /// Keeps only the first `n` blocks of this part's order.
    pub fn limit(&mut self, n: u64) {
        self.count = self.count.min(n);
    }

    /// The byte range this part covers: `(start, end)`.
    pub fn span(&self) -> (u64, u64) {
        let start = (self.first * self.bs).min(self.len);
        let end = ((self.first + self.count) * self.bs).min(self.len);
        (start, end)
    }

    /// Bytes in the part.
    pub fn bytes(&self) -> u64 {
        let (s, e) = self.span();
        e - s
    }

    /// The `i`-th block in visiting order.
    pub fn block(&self, i: u64) -> Block {
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

    /// The part's blocks in visiting order.
    pub fn iter(&self) -> impl Iterator<Item = Block> + '_ {
        (0..self.count).map(move |i| self.block(i))
    }
}

/// A seeded bijection of `0..n`.
#[derive(Debug, Clone)]
struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    fn new(n: u64, seed: u64) -> Self {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut s = seed;
        let keys = [
            splitmix64(&mut s),
            splitmix64(&mut s),
            splitmix64(&mut s),
            splitmix64(&mut s),
        ];
        Permutation { n, half_bits, keys }
    }

    fn apply(&self, i: u64) -> u64 {
        let mut x = i;
        // Cycle walking: the network permutes 0..4^half_bits; re-apply until inside 0..n.
        loop {
            x = self.round_trip(x);
            if x < self.n {
                return x;
            }
        }
    }

    fn round_trip(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let mut s = r ^ k;
            let f = splitmix64(&mut s) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }
}

/// SplitMix64 step: a small, well-mixed generator for seeds and data.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
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
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn all_blocks(w: &Workload) -> Vec<Block> {
        w.parts()
            .iter()
            .flat_map(|p| p.iter().collect::<Vec<_>>())
            .collect()
    }

    #[test]
    fn random_visits_every_block_once_and_is_reproducible() {
        for n in [0u64, 1, 2, 3, 5, 17, 1000, 4097] {
            for threads in [1, 2, 3] {
                let w = Workload {
                    bs: 10,
                    len: n * 10 - n.min(3),
                    pattern: Pattern::Random,
                    seed: 7,
                    threads,
                };
                let blocks = all_blocks(&w);
                let offsets: HashSet<u64> = blocks.iter().map(|b| b.offset).collect();
                assert_eq!(offsets.len() as u64, w.blocks(), "n={n} t={threads}");
                assert_eq!(blocks.iter().map(|b| b.len).sum::<u64>(), w.len);
                assert_eq!(blocks, all_blocks(&w));
            }
        }
    }

    #[test]
    fn random_differs_from_sequential_and_by_seed() {
        let w = Workload {
            bs: 1,
            len: 1000,
            pattern: Pattern::Random,
            seed: 1,
            threads: 1,
        };
        let a: Vec<u64> = all_blocks(&w).iter().map(|b| b.offset).collect();
        assert_ne!(a, (0..1000).collect::<Vec<_>>());
        let b: Vec<u64> = all_blocks(&Workload { seed: 2, ..w })
            .iter()
            .map(|b| b.offset)
            .collect();
        assert_ne!(a, b);
    }

    #[test]
    fn parts_are_contiguous_and_cover_the_range() {
        let w = Workload {
            bs: 4096,
            len: 10 * 4096 + 3,
            pattern: Pattern::Seq,
            seed: 0,
            threads: 4,
        };
        let parts = w.parts();
        let mut at = 0;
        for p in &parts {
            let (s, e) = p.span();
            assert_eq!(s, at);
            at = e;
        }
        assert_eq!(at, w.len);
        let last = all_blocks(&w).pop().unwrap();
        assert_eq!(last.len, 3);
    }

    #[test]
    fn more_threads_than_blocks_leaves_empty_parts() {
        let w = Workload {
            bs: 4096,
            len: 5,
            pattern: Pattern::Seq,
            seed: 0,
            threads: 4,
        };
        assert_eq!(all_blocks(&w), vec![Block { offset: 0, len: 5 }]);
    }
}
