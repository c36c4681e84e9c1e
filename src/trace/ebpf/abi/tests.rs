//! The Rust records against the type information (BTF) of the compiled probes: a field of
//! another name, offset or size, or a struct of another size, fails here without root.

use super::*;
use object::{Object, ObjectSection};
use std::collections::HashMap;

/// A struct of the object's BTF: its size and its members (name, byte offset, byte size).
struct BtfStruct {
    size: usize,
    members: Vec<(String, usize, usize)>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn name_at(strings: &[u8], off: u32) -> String {
    let s = &strings[off as usize..];
    let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
    String::from_utf8_lossy(&s[..end]).into_owned()
}

/// The named structs of the `.BTF` section `btf` (the format of the kernel's
/// Documentation/bpf/btf.rst: a header, the types from id 1 on, then the strings).
fn btf_structs(btf: &[u8]) -> HashMap<String, BtfStruct> {
    assert_eq!(u16::from_le_bytes([btf[0], btf[1]]), 0xeb9f, "not BTF");
    let hdr = u32_at(btf, 4) as usize;
    let (type_off, type_len) = (u32_at(btf, 8) as usize, u32_at(btf, 12) as usize);
    let (str_off, str_len) = (u32_at(btf, 16) as usize, u32_at(btf, 20) as usize);
    let types = &btf[hdr + type_off..hdr + type_off + type_len];
    let strings = &btf[hdr + str_off..hdr + str_off + str_len];
    // Per type id: kind, name, size-or-type, extra words.
    struct T {
        kind: u32,
        name: u32,
        size_or_type: u32,
        kind_flag: bool,
        extra: Vec<u32>,
    }
    let mut all = vec![T {
        kind: 0,
        name: 0,
        size_or_type: 0,
        kind_flag: false,
        extra: Vec::new(),
    }];
    let mut at = 0;
    while at < types.len() {
        let (name, info, st) = (
            u32_at(types, at),
            u32_at(types, at + 4),
            u32_at(types, at + 8),
        );
        at += 12;
        let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
        let words = match kind {
            1 | 14 | 17 => 1,
            3 => 3,
            4 | 5 | 15 | 19 => 3 * vlen,
            6 | 13 => 2 * vlen,
            _ => 0,
        };
        let extra = (0..words).map(|i| u32_at(types, at + 4 * i)).collect();
        at += 4 * words;
        all.push(T {
            kind,
            name,
            size_or_type: st,
            kind_flag: info >> 31 == 1,
            extra,
        });
    }
    fn size_of(all: &[T], id: u32) -> usize {
        let t = &all[id as usize];
        match t.kind {
            2 => 8,
            3 => size_of(all, t.extra[0]) * t.extra[2] as usize,
            8..=11 | 18 => size_of(all, t.size_or_type),
            _ => t.size_or_type as usize,
        }
    }
    let mut out = HashMap::new();
    for t in &all {
        if t.kind != 4 || t.name == 0 {
            continue;
        }
        let members = t
            .extra
            .chunks(3)
            .map(|m| {
                let bits = if t.kind_flag { m[2] & 0xff_ffff } else { m[2] };
                (
                    name_at(strings, m[0]),
                    bits as usize / 8,
                    size_of(&all, m[1]),
                )
            })
            .collect();
        out.insert(
            name_at(strings, t.name),
            BtfStruct {
                size: t.size_or_type as usize,
                members,
            },
        );
    }
    out
}

fn object_structs() -> HashMap<String, BtfStruct> {
    let obj = object::File::parse(crate::trace::ebpf::OBJECT).expect("bpf/iolab.bpf.o is ELF");
    let btf = obj
        .section_by_name(".BTF")
        .expect("bpf/iolab.bpf.o has BTF")
        .data()
        .unwrap();
    btf_structs(btf)
}

/// What differs between the Rust layouts and the object's structs, one line each.
fn differences(layouts: &[Layout], btf: &HashMap<String, BtfStruct>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, fields, size) in layouts {
        let Some(c) = btf.get(*name) else {
            out.push(format!("struct {name}: not in bpf/iolab.bpf.o's BTF"));
            continue;
        };
        if c.size != *size {
            out.push(format!(
                "struct {name}: {} bytes in C, {size} in Rust",
                c.size
            ));
        }
        let c_fields: Vec<(&str, usize, usize)> = c
            .members
            .iter()
            .map(|(n, o, s)| (n.as_str(), *o, *s))
            .collect();
        for i in 0..c_fields.len().max(fields.len()) {
            let (c, r) = (c_fields.get(i), fields.get(i));
            if c != r {
                out.push(format!("struct {name}, field {i}: C {c:?}, Rust {r:?}"));
            }
        }
    }
    out
}

#[test]
fn the_rust_records_are_the_probes_structs_field_for_field() {
    let btf = object_structs();
    let d = differences(&layouts(), &btf);
    assert!(
        d.is_empty(),
        "the Rust records differ from bpf/iolab.h:\n{}",
        d.join("\n")
    );
    // Every struct the probes send or keep in a map is checked (a new one must be added here).
    for c in [
        "ev_call", "ev_open", "ev_task", "ev_fault", "ev_uring", "ev_span",
    ] {
        assert!(
            layouts().iter().any(|(n, _, _)| *n == c),
            "{c} not mirrored"
        );
    }
}

#[test]
fn a_field_out_of_step_is_caught() {
    let btf = object_structs();
    // Planted: ev_fault with two fields swapped, then ev_span one field short and a byte
    // smaller, then a struct the object does not have.
    let mut swapped = RawFault::fields();
    swapped.swap(4, 5);
    let mut short = RawSpan::fields();
    short.pop();
    let planted = vec![
        ("ev_fault", swapped, std::mem::size_of::<RawFault>()),
        ("ev_span", short, std::mem::size_of::<RawSpan>() - 1),
        ("ev_nothing", Vec::new(), 8),
    ];
    let d = differences(&planted, &btf);
    assert!(
        d.iter().any(|l| l.starts_with("struct ev_fault, field 4")),
        "{d:?}"
    );
    assert!(
        d.iter().any(|l| l.contains("ev_span: 56 bytes in C, 55")),
        "{d:?}"
    );
    assert!(
        d.iter().any(|l| l.starts_with("struct ev_span, field 8")),
        "{d:?}"
    );
    assert!(d.iter().any(|l| l.contains("ev_nothing: not in")), "{d:?}");
}
