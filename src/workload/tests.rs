#[test]
fn uniform_parts_draw_with_replacement_inside_each_part() {
    let w = Workload {
        bs: 4096,
        len: 4096 * 1000,
        pattern: Pattern::Random,
        seed: 1,
        threads: 2,
    };
    let parts = w.uniform_parts(7);
    assert_eq!(parts.len(), 2);
    let mut hits = vec![0u32; 1000];
    for p in &parts {
        let (start, end) = p.span();
        assert_eq!(p.iter().count() as u64, p.block_count());
        for b in p.iter() {
            assert!(b.offset >= start && b.offset < end && b.len == 4096);
            hits[(b.offset / 4096) as usize] += 1;
        }
    }
    // 1000 draws over 1000 blocks: about 1/e of them never drawn, some drawn twice or more.
    let never = hits.iter().filter(|h| **h == 0).count();
    assert!((280..460).contains(&never), "{never} blocks never drawn");
    assert!(hits.iter().any(|h| *h >= 2));
    // Another seed, other draws; the same seed, the same draws.
    let again: Vec<u64> = w.uniform_parts(7)[0].iter().map(|b| b.offset).collect();
    let other: Vec<u64> = w.uniform_parts(8)[0].iter().map(|b| b.offset).collect();
    let first: Vec<u64> = parts[0].iter().map(|b| b.offset).collect();
    assert_eq!(first, again);
    assert_ne!(first, other);
}

#[test]
fn range_parts_cover_a_range_once_in_whole_blocks() {
    let w = Workload {
        bs: 4096,
        len: 100_000,
        pattern: Pattern::Random,
        seed: 1,
        threads: 3,
    };
    for (start, end) in [
        (0u64, 100_000u64),
        (8192, 50_000),
        (4096, 8192),
        (98_304, 100_000),
    ] {
        let parts = w.range_parts(start, end);
        let mut blocks: Vec<Block> = parts
            .iter()
            .flat_map(|p| p.iter().collect::<Vec<_>>())
            .collect();
        blocks.sort_by_key(|b| b.offset);
        let mut at = start;
        for b in &blocks {
            assert_eq!(b.offset, at, "{start}..{end}: contiguous and in order");
            at += b.len;
        }
        assert_eq!(at, end, "{start}..{end}: ends at the range's end");
        assert!(parts.len() <= 3 && parts.iter().all(|p| p.block_count() > 0));
    }
    assert!(w.range_parts(4096, 4096).is_empty());
}

#[test]
fn shared_parts_hand_out_each_block_once_between_threads() {
    let w = Workload {
        bs: 4096,
        len: 1_000_000,
        pattern: Pattern::Seq,
        seed: 0,
        threads: 3,
    };
    let parts = w.shared_parts(8192, 1_000_000);
    assert_eq!(parts.len(), 3);
    let got: Vec<Vec<Block>> = std::thread::scope(|s| {
        let hs: Vec<_> = parts
            .iter()
            .map(|p| s.spawn(move || p.iter().collect::<Vec<_>>()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<Block> = got.into_iter().flatten().collect();
    all.sort_by_key(|b| b.offset);
    let mut at = 8192;
    for b in &all {
        assert_eq!(b.offset, at, "each block once, none missing");
        at += b.len;
    }
    assert_eq!(at, 1_000_000);
    assert_eq!(
        w.shared_parts(0, 4096).len(),
        1,
        "no more parts than blocks"
    );
}

#[test]
fn shared_ranges_visit_every_block_of_every_range_once_and_nothing_between() {
    let w = Workload {
        bs: 4096,
        len: 1_000_000,
        pattern: Pattern::Seq,
        seed: 0,
        threads: 2,
    };
    let ranges = [(8192, 40960), (65536, 81920), (98304, 1_000_000)];
    let parts = w.shared_ranges(&ranges).unwrap();
    assert_eq!(parts.len(), 2);
    assert_eq!(
        parts[0].span(),
        (8192, 1_000_000),
        "first start to last end"
    );
    let mut all: Vec<Block> = std::thread::scope(|s| {
        let hs: Vec<_> = parts
            .iter()
            .map(|p| s.spawn(move || p.iter().collect::<Vec<_>>()))
            .collect();
        hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    all.sort_by_key(|b| b.offset);
    let mut want = Vec::new();
    for (s, e) in ranges {
        let mut at = s;
        while at < e {
            let len = 4096.min(e - at);
            want.push(Block { offset: at, len });
            at += len;
        }
    }
    assert_eq!(all, want);
    // A range that starts or (before the last) ends inside a block is read range by range.
    assert!(w.shared_ranges(&[(100, 4096)]).is_none());
    assert!(w.shared_ranges(&[(0, 5000), (8192, 12288)]).is_none());
    assert!(w.shared_ranges(&[(0, 4096), (8192, 9000)]).is_some());
}

use super::*;

#[test]
fn a_table_order_is_the_computed_order() {
    for n in [1u64, 2, 7, 2049, 65_536] {
        let p = Permutation::new(n, 42);
        let Order::Table(t) = Order::new(p.clone()) else {
            panic!("small parts get a table");
        };
        assert!((0..n).all(|i| t[i as usize] as u64 == p.apply(i)), "n {n}");
    }
}
use std::collections::HashSet;

fn all_blocks(w: &Workload) -> Vec<Block> {
    w.parts()
        .iter()
        .flat_map(|p| p.iter().collect::<Vec<_>>())
        .collect()
}

#[test]
fn written_data_differs_in_every_block_and_its_xor_is_known() {
    // 4 equal blocks used to XOR to zero; with tags they cannot, and the definition's XOR is
    // the XOR of the bytes it defines.
    for (bs, period, len) in [
        (4096u64, 4096u64, 4 * 4096u64),
        (1000, 1000, 3500),
        (8192, 4096, 20000),
        (3, 3, 10),
    ] {
        let d = WrittenData::new(7, bs, period);
        let base = d.base();
        let head: [u8; 8] = std::array::from_fn(|i| base.get(i).copied().unwrap_or(0));
        let mut file = Vec::new();
        let mut block = 0u64;
        while block < len {
            let end = (block + bs).min(len);
            let mut at = block;
            while at < end {
                let n = (end - at).min(period) as usize;
                let mut buf = base.clone();
                file.extend_from_slice(d.place(&mut buf, &head, at, n));
                at += n as u64;
            }
            block = end;
        }
        assert_eq!(file.len() as u64, len);
        assert_eq!(
            d.expected_xor(len),
            crate::xor::xor_reference(&file),
            "bs {bs} period {period} len {len}"
        );
        if len >= 2 * bs && bs >= 8 {
            assert_ne!(file[..bs as usize], file[bs as usize..2 * bs as usize]);
        }
    }
    assert_ne!(WrittenData::new(1, 4096, 4096).expected_xor(4 * 4096), 0);
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

#[test]
fn each_block_gives_the_blocks_block_gives_for_every_kind_of_order() {
    // A file whose last block is short, so the lengths are checked too, and one of whole blocks.
    for len in [4096 * 300 + 100, 4096 * 300] {
        blocks_of_every_order_agree(len);
    }
}

/// [`Part::each_block`] and [`Part::fold_offsets`] give what [`Part::block`] gives one by one,
/// for every kind of order over a file of `len` bytes.
fn blocks_of_every_order_agree(len: u64) {
    let w = |pattern| Workload {
        bs: 4096,
        len,
        pattern,
        seed: 5,
        threads: 2,
    };
    let mut parts = w(Pattern::Seq).parts();
    parts.extend(w(Pattern::Random).parts());
    parts.extend(w(Pattern::Random).uniform_parts(3));
    parts.extend(
        w(Pattern::Seq)
            .shared_ranges(&[(0, 8192), (40960, len)])
            .unwrap(),
    );
    parts.push(Part::explicit(
        vec![
            Block { offset: 10, len: 7 },
            Block {
                offset: 0,
                len: 4096,
            },
        ]
        .into(),
        len,
    ));
    for (k, p) in parts.iter().enumerate() {
        let n = p.block_count();
        for range in [0..n, 1..n.min(5), n / 2..n, 0..0] {
            let mut got = Vec::new();
            p.each_block(range.clone(), |b| got.push(b));
            let want: Vec<Block> = range.clone().map(|i| p.block(i)).collect();
            assert_eq!(got, want, "part {k}");
            // Offsets alone, and the bytes the blocks hold; none for blocks given one by one.
            let folded = p.fold_offsets(range, Vec::new(), |mut v, off| {
                v.push(off);
                v
            });
            let explicit = k == parts.len() - 1;
            match folded {
                None => assert!(explicit, "part {k}: offsets refused"),
                Some((offsets, bytes)) => {
                    assert!(!explicit, "part {k}: explicit blocks may be empty");
                    let want_offsets: Vec<u64> = want.iter().map(|b| b.offset).collect();
                    assert_eq!(offsets, want_offsets, "part {k}");
                    assert_eq!(bytes, want.iter().map(|b| b.len).sum::<u64>(), "part {k}");
                }
            }
        }
    }
}
