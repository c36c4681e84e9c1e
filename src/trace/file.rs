//! Reading a trace file: whole ([`TraceOf::load`]), or with its calls left in the file
//! ([`TraceFile`]): everything else is held, the calls are summed up by a type of the reader's
//! on a first pass and handed out one by one on each later pass. A trace of ten million reads
//! is about 1.9 GB of JSON and 1.1 GB as `Op`s; a replay needs a few bytes of each.

use super::{Op, SCHEMA, TraceOf};
use crate::error::{Error, Result};
use serde::Deserialize;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess};
use std::fs::File;
use std::io::{BufReader, Seek};
use std::path::{Path, PathBuf};

/// How much of the file is read at once.
const BUFFER: usize = 1 << 20;

/// Opens a trace: a regular file, opened without waiting (/dev/zero or a FIFO has no end to read
/// to, and a FIFO's open would wait for a writer).
fn open(path: &Path) -> Result<File> {
    Ok(crate::source::open_source(path)
        .map_err(|e| e.hint("a trace is the regular file `iolab trace --out` wrote"))?
        .file)
}

fn schema_error(path: &Path, schema: &str) -> Error {
    Error::usage(
        "not a trace file this iolab reads",
        format!("schema is {schema:?}, expected {SCHEMA:?}"),
    )
    .at(path)
}

impl<O: DeserializeOwned> TraceOf<O> {
    /// Reads a trace file written by `iolab trace --out`.
    pub fn load(path: &Path) -> Result<TraceOf<O>> {
        Self::read(&open(path)?, path)
    }

    /// Straight from the file into the typed trace, in one pass: neither the text nor a
    /// `serde_json::Value` tree is held. Only when that fails is the schema read on its own
    /// (every other field skipped), so that an older or foreign file gets that one line rather
    /// than a field-by-field complaint.
    fn read(mut file: &File, path: &Path) -> Result<TraceOf<O>> {
        let typed: std::result::Result<TraceOf<O>, _> =
            serde_json::from_reader(BufReader::with_capacity(BUFFER, file));
        match typed {
            Ok(t) if t.schema == SCHEMA => Ok(t),
            Ok(t) => Err(schema_error(path, &t.schema)),
            Err(e) => {
                #[derive(Deserialize)]
                struct Head {
                    #[serde(default)]
                    schema: String,
                    /// A profile has it (`iolab trace --format json`), a trace has not.
                    #[serde(default)]
                    wall_s: Option<f64>,
                }
                file.seek(std::io::SeekFrom::Start(0))
                    .map_err(|e| Error::io("cannot read the trace", path, &e))?;
                match serde_json::from_reader::<_, Head>(BufReader::with_capacity(BUFFER, file)) {
                    Ok(h) if h.schema.is_empty() && h.wall_s.is_some() => Err(Error::usage(
                        "a profile, not a trace",
                        "`iolab trace --format json` prints a profile; `--out FILE` keeps the trace itself",
                    )
                    .at(path)),
                    Ok(h) if h.schema != SCHEMA => Err(schema_error(path, &h.schema)),
                    Ok(_) => Err(Error::usage("not a trace file", e.to_string()).at(path)),
                    Err(j) => {
                        Err(Error::usage("not a trace file", format!("invalid JSON: {j}")).at(path))
                    }
                }
            }
        }
    }
}

/// A trace whose calls stay in the file: `trace.ops` is what type `O` summed up of them on the
/// first pass; [`TraceFile::calls`] reads them again, one at a time.
pub struct TraceFile<O> {
    file: File,
    path: PathBuf,
    /// Everything but the calls, and their summary.
    pub trace: TraceOf<O>,
}

impl<O: DeserializeOwned> TraceFile<O> {
    /// Reads `path` once: all but its calls, which `O` sums up as they pass.
    pub fn open(path: &Path) -> Result<TraceFile<O>> {
        let file = open(path)?;
        let trace = TraceOf::<O>::read(&file, path)?;
        Ok(TraceFile {
            file,
            path: path.to_path_buf(),
            trace,
        })
    }

    /// Hands every call to `each`, in the file's order, from the file opened at first (renamed
    /// or replaced since, it is still the one read); stops at `each`'s first error. Returns how
    /// many calls there were.
    pub fn calls(&self, each: &mut dyn FnMut(&Op) -> Result<()>) -> Result<u64> {
        let mut file = &self.file;
        file.seek(std::io::SeekFrom::Start(0))
            .map_err(|e| Error::io("cannot read the trace", &self.path, &e))?;
        let mut stopped = None;
        let mut count = 0;
        let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(BUFFER, file));
        let read = de::Deserializer::deserialize_map(
            &mut de,
            OnlyCalls {
                each,
                stopped: &mut stopped,
                count: &mut count,
            },
        )
        .and_then(|()| de.end());
        if let Some(e) = stopped {
            return Err(e);
        }
        read.map_err(|e| {
            Error::failed("the trace changed while it was read", e.to_string()).at(&self.path)
        })?;
        Ok(count)
    }
}

/// A visitor of the trace's top-level object that skips every field but `ops`.
struct OnlyCalls<'a> {
    each: &'a mut dyn FnMut(&Op) -> Result<()>,
    stopped: &'a mut Option<Error>,
    count: &'a mut u64,
}

impl<'de> de::Visitor<'de> for OnlyCalls<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a trace object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let mut seed = Some(self);
        while let Some(key) = map.next_key::<String>()? {
            match (key.as_str(), seed.take()) {
                ("ops", Some(calls)) => map.next_value_seed(calls)?,
                (_, s) => {
                    seed = s;
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for OnlyCalls<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(EachCall(self))
    }
}

/// The `ops` array, each call handed on as it is read.
struct EachCall<'a>(OnlyCalls<'a>);

impl<'de> de::Visitor<'de> for EachCall<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of calls")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        let OnlyCalls {
            each,
            stopped,
            count,
        } = self.0;
        while let Some(op) = seq.next_element::<Op>()? {
            *count += 1;
            if let Err(e) = each(&op) {
                *stopped = Some(e);
                return Err(de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;
    use crate::trace::fixture::{file, op, trace};
    use serde_json::json;

    /// What a first pass keeps of the calls here: their number.
    #[derive(Debug, PartialEq)]
    struct Counted(u64);

    impl<'de> Deserialize<'de> for Counted {
        fn deserialize<D: de::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
            Ok(Counted(Vec::<IgnoredAny>::deserialize(d)?.len() as u64))
        }
    }

    #[test]
    fn a_trace_file_hands_out_its_calls_in_order_and_stops_where_asked() {
        let t = trace(
            vec![file("/data/x", 8192, 0, 0)],
            (0..5)
                .map(|i| op(i * 10, 1, "read", Some(0), i * 100, 100))
                .collect(),
            json!([{"t": 3, "tid": 7, "file": 0, "off": 0}]),
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        std::fs::write(&path, serde_json::to_vec(&t).unwrap()).unwrap();
        let f = TraceFile::<Counted>::open(&path).unwrap();
        assert_eq!(f.trace.ops, Counted(5));
        assert_eq!(f.trace.faults, t.faults);
        assert_eq!(f.trace.files, t.files);
        // Twice, the same calls.
        for _ in 0..2 {
            let mut seen = Vec::new();
            let n = f
                .calls(&mut |o| {
                    seen.push(o.clone());
                    Ok(())
                })
                .unwrap();
            assert_eq!(n, 5);
            assert_eq!(seen, t.ops);
        }
        // The reader's error, not a JSON one.
        let e = f
            .calls(&mut |o| match o.t {
                20 => Err(Error::usage("no", "call at 20")),
                _ => Ok(()),
            })
            .unwrap_err();
        assert_eq!(e.cause, "call at 20");
        // Another schema is said in one line, whole or streamed.
        let mut v = serde_json::to_value(&t).unwrap();
        v["schema"] = json!("iolab-trace/0");
        std::fs::write(&path, v.to_string()).unwrap();
        for e in [
            Trace::load(&path).unwrap_err(),
            TraceFile::<Counted>::open(&path).err().unwrap(),
        ] {
            assert!(e.cause.contains("iolab-trace/0"), "{}", e.cause);
        }
    }
}
