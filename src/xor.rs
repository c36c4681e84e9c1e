//! The XOR of a file (docs/methodology.md, "The XOR"): its bytes as consecutive little-endian `u32` words from offset 0,
//! XORed together, a final partial word zero-padded.
//!
//! A byte at file offset `o` lands in byte lane `o % 4` of the result, so the XOR of any piece of
//! the file can be computed on its own and placed with a rotation ([`xor_at`]). Pieces then combine
//! with plain `^` in any order, which is what lets every engine, block size and thread count agree.

/// XOR of `buf` as if it started at a file offset that is a multiple of 4.
#[inline]
pub fn xor_bytes(buf: &[u8]) -> u32 {
    let wide = xor_u64(buf);
    (wide as u32) ^ ((wide >> 32) as u32)
}

/// XOR of `buf` placed at file offset `offset`.
///
/// ```
/// use iolab::xor::{xor_at, xor_bytes};
/// let data = [1u8, 2, 3, 4, 5, 6, 7];
/// // Any split, combined with ^, gives the XOR of the whole.
/// assert_eq!(xor_at(0, &data[..3]) ^ xor_at(3, &data[3..]), xor_bytes(&data));
/// ```
#[inline]
pub fn xor_at(offset: u64, buf: &[u8]) -> u32 {
    xor_bytes(buf).rotate_left(8 * (offset % 4) as u32)
}

/// The plain, obviously correct definition: used by tests as the independent reference.
pub fn xor_reference(buf: &[u8]) -> u32 {
    let mut x = 0u32;
    for (i, b) in buf.iter().enumerate() {
        x ^= (*b as u32) << (8 * (i % 4));
    }
    x
}

/// Formats as every output prints it: 8 lowercase hex digits.
pub fn format_xor(x: u32) -> String {
    format!("{x:08x}")
}

/// Serde for an XOR as JSON carries it: the 8-digit hex string that every other output prints
/// (`"1c6f90aa"`). Reading also takes a plain number, as files written before this were.
pub mod hex {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    /// Either form a results file may hold.
    #[derive(Deserialize)]
    #[serde(untagged)]
    pub(crate) enum HexForm {
        Hex(String),
        Number(u32),
    }

    impl HexForm {
        pub(crate) fn value<E: Error>(self) -> Result<u32, E> {
            match self {
                HexForm::Number(n) => Ok(n),
                HexForm::Hex(h) => u32::from_str_radix(h.trim_start_matches("0x"), 16)
                    .map_err(|_| E::custom(format!("'{h}' is not an XOR in hex"))),
            }
        }
    }

    /// As `"%08x"`.
    pub fn serialize<S: Serializer>(x: &u32, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_xor(*x))
    }

    /// From hex (or a number).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
        HexForm::deserialize(d)?.value()
    }

    /// The same for an XOR that may be absent.
    pub mod option {
        use super::HexForm;
        use serde::{Deserialize, Deserializer, Serializer};

        /// As `"%08x"` or null.
        pub fn serialize<S: Serializer>(x: &Option<u32>, s: S) -> Result<S::Ok, S::Error> {
            match x {
                Some(x) => super::serialize(x, s),
                None => s.serialize_none(),
            }
        }

        /// From hex, a number or null.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
            Option::<HexForm>::deserialize(d)?
                .map(HexForm::value)
                .transpose()
        }
    }
}

/// Buffers from this size on use the AVX-512 kernel (where the CPU has it).
const AVX512_FROM: usize = 64 << 10;

/// XOR of `buf` as 64-bit little-endian words (tail zero-padded); folding it gives the u32 XOR
/// because a u64 word is two consecutive u32 words.
#[inline]
fn xor_u64(buf: &[u8]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // AVX-512 for large buffers, and for small ones only where the CPU runs it at full
        // width ([`wide_avx512`]): on an AMD EPYC that splits 512-bit work in two halves it
        // XORed 4 KiB blocks of a mapping at 6.5-6.9 GB/s where AVX2 did 7.2-9.1, the two level
        // from 16 KiB up; on one with full-width units (family 26) it XORs a cached 4 KiB
        // block in 9 ns where AVX2 takes 18.
        if std::arch::is_x86_feature_detected!("avx512f")
            && (buf.len() >= AVX512_FROM || wide_avx512())
        {
            // SAFETY: the CPU supports AVX-512F, checked at run time just above.
            return unsafe { xor_u64_avx512(buf) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked at run time just above.
            return unsafe { xor_u64_avx2(buf) };
        }
    }
    xor_u64_body(buf)
}

/// Whether this CPU XORs a small cached block with AVX-512 clearly faster (by a quarter or more)
/// than with AVX2: measured once per process on a 4 KiB buffer (best of 5 tries of 64 blocks
/// each, about 20 us in all). CPUs that run 512-bit instructions as two 256-bit halves come out
/// level, and keep AVX2 for small blocks.
#[cfg(target_arch = "x86_64")]
fn wide_avx512() -> bool {
    static WIDE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WIDE.get_or_init(|| {
        let block = [0x5au8; 4096];
        let best = |f: &dyn Fn(&[u8]) -> u64| {
            (0..5)
                .map(|_| {
                    let t = std::time::Instant::now();
                    for _ in 0..64 {
                        std::hint::black_box(f(std::hint::black_box(&block)));
                    }
                    t.elapsed()
                })
                .min()
                .unwrap_or_default()
        };
        if !std::arch::is_x86_feature_detected!("avx2") {
            return true;
        }
        // SAFETY: called only once AVX-512F was detected (the caller checks it first).
        let t512 = best(&|b| unsafe { xor_u64_avx512(b) });
        // SAFETY: AVX2 was detected just above.
        let t256 = best(&|b| unsafe { xor_u64_avx2(b) });
        t512.as_nanos() * 5 <= t256.as_nanos() * 4
    })
}

/// A vector kernel: four accumulators of one register width each, XORed over 4-register
/// chunks, then folded to 64 bits; the tail goes through the portable body.
macro_rules! xor_kernel {
    ($name:ident, $feature:literal, $width:literal, $zero:ident, $load:ident, $xor:ident, $fold:ident) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $feature)]
        fn $name(buf: &[u8]) -> u64 {
            use std::arch::x86_64::*;
            let mut acc = [$zero(); 4];
            let mut chunks = buf.chunks_exact(4 * $width);
            for c in &mut chunks {
                let p = c.as_ptr();
                for (i, a) in acc.iter_mut().enumerate() {
                    // SAFETY: p + width*i .. +width lies inside the 4-register chunk; loadu
                    // needs no alignment.
                    let v = unsafe { $load(p.add($width * i).cast()) };
                    *a = $xor(*a, v);
                }
            }
            let v = $xor($xor(acc[0], acc[1]), $xor(acc[2], acc[3]));
            // Folded in registers: a store of the register and loads of its lanes stalled on
            // store forwarding once per call, a cost that showed on 4 KiB blocks.
            $fold(v) ^ xor_u64_body(chunks.remainder())
        }
    };
}

/// XOR of the four 64-bit lanes of a 256-bit register.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn fold256(v: std::arch::x86_64::__m256i) -> u64 {
    use std::arch::x86_64::*;
    let x = _mm_xor_si128(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    (_mm_cvtsi128_si64(x) ^ _mm_extract_epi64::<1>(x)) as u64
}

/// XOR of the eight 64-bit lanes of a 512-bit register.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn fold512(v: std::arch::x86_64::__m512i) -> u64 {
    use std::arch::x86_64::*;
    let half = _mm256_xor_si256(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64::<1>(v));
    fold256(half)
}

xor_kernel!(
    xor_u64_avx512,
    "avx512f",
    64,
    _mm512_setzero_si512,
    _mm512_loadu_si512,
    _mm512_xor_si512,
    fold512
);
xor_kernel!(
    xor_u64_avx2,
    "avx2",
    32,
    _mm256_setzero_si256,
    _mm256_loadu_si256,
    _mm256_xor_si256,
    fold256
);

/// Portable body (and the tail of the vector paths): 8 independent 64-bit accumulators.
#[inline(always)]
fn xor_u64_body(buf: &[u8]) -> u64 {
    const LANES: usize = 8;
    let mut acc = [0u64; LANES];
    let mut chunks = buf.chunks_exact(LANES * 8);
    for chunk in &mut chunks {
        for (i, a) in acc.iter_mut().enumerate() {
            let mut w = [0u8; 8];
            w.copy_from_slice(&chunk[i * 8..i * 8 + 8]);
            *a ^= u64::from_le_bytes(w);
        }
    }
    let mut x = acc.iter().fold(0u64, |a, b| a ^ b);
    let mut words = chunks.remainder().chunks_exact(8);
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        x ^= u64::from_le_bytes(w);
    }
    let tail = words.remainder();
    let mut w = [0u8; 8];
    w[..tail.len()].copy_from_slice(tail);
    x ^ u64::from_le_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_xor_is_hex_and_old_numbers_still_read() {
        #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
        struct R {
            #[serde(with = "hex")]
            #[schemars(with = "String")]
            xor: u32,
            #[serde(default, with = "hex::option")]
            #[schemars(with = "Option<String>")]
            maybe: Option<u32>,
        }
        let v = serde_json::to_value(R {
            xor: 0x0efb_4b5f,
            maybe: None,
        })
        .unwrap();
        assert_eq!(v, serde_json::json!({"xor": "0efb4b5f", "maybe": null}));
        let r: R =
            serde_json::from_value(serde_json::json!({"xor": 251349855, "maybe": "ff"})).unwrap();
        assert_eq!((r.xor, r.maybe), (0x0efb_4b5f, Some(0xff)));
        let r: R = serde_json::from_value(serde_json::json!({"xor": "0efb4b5f"})).unwrap();
        assert_eq!((r.xor, r.maybe), (0x0efb_4b5f, None));
        assert!(serde_json::from_value::<R>(serde_json::json!({"xor": "zz"})).is_err());
    }

    fn bytes(n: usize) -> Vec<u8> {
        let mut s = 0x9e3779b97f4a7c15u64;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s as u8
            })
            .collect()
    }

    #[test]
    fn matches_reference_for_every_length() {
        let data = bytes(2000);
        for n in 0..data.len() {
            assert_eq!(xor_bytes(&data[..n]), xor_reference(&data[..n]), "len {n}");
        }
    }

    #[test]
    fn buffers_on_both_sides_of_the_kernel_switch_match_the_reference() {
        let data = bytes(AVX512_FROM * 2 + 13);
        for n in [AVX512_FROM - 1, AVX512_FROM, AVX512_FROM + 7, data.len()] {
            assert_eq!(xor_bytes(&data[..n]), xor_reference(&data[..n]), "len {n}");
        }
    }

    #[test]
    fn known_values() {
        assert_eq!(xor_bytes(&[]), 0);
        assert_eq!(xor_bytes(&[1]), 0x0000_0001);
        assert_eq!(xor_bytes(&[1, 2, 3, 4]), 0x0403_0201);
        assert_eq!(xor_bytes(&[1, 2, 3, 4, 5]), 0x0403_0204);
        assert_eq!(format_xor(0xab), "000000ab");
    }

    #[test]
    fn pieces_at_any_offset_combine_to_the_whole() {
        let data = bytes(10_000);
        let whole = xor_reference(&data);
        for piece in [1usize, 2, 3, 4, 5, 7, 64, 255, 256, 257, 4095, 4097] {
            let combined = data
                .chunks(piece)
                .enumerate()
                .fold(0u32, |x, (i, c)| x ^ xor_at((i * piece) as u64, c));
            assert_eq!(combined, whole, "piece {piece}");
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_kernel_this_cpu_has_matches_the_reference() {
        let data = bytes(3000);
        let fold = |w: u64| (w as u32) ^ ((w >> 32) as u32);
        for n in (0..data.len()).step_by(7) {
            let want = xor_reference(&data[n / 3..n]);
            let s = &data[n / 3..n];
            assert_eq!(fold(xor_u64_body(s)), want, "portable, len {}", s.len());
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2, checked just above.
                assert_eq!(fold(unsafe { xor_u64_avx2(s) }), want, "avx2");
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F, checked just above.
                assert_eq!(fold(unsafe { xor_u64_avx512(s) }), want, "avx512");
            }
        }
    }

    #[test]
    fn unaligned_slices_agree() {
        let data = bytes(5000);
        for start in 0..9 {
            let s = &data[start..];
            assert_eq!(xor_bytes(s), xor_reference(s));
        }
    }
}
