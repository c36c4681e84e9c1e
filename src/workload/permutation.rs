//! The random order's keyed permutation: a Feistel network over the bits that cover `0..n`,
//! with cycle walking, so every block is visited once, with no table, the same for a seed.

/// A seeded bijection of `0..n`.
#[derive(Debug, Clone)]
pub(super) struct Permutation {
    pub(super) n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    pub(super) fn new(n: u64, seed: u64) -> Self {
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

    pub(super) fn apply(&self, i: u64) -> u64 {
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
