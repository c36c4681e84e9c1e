//! The machine's profile: what `fast`'s probes between its two candidates found on this machine,
//! kept between runs, so that the method for a part is decided at 95% over runs rather than by
//! one probe (which flipped between the two from run to run on the same file): for resident data
//! mapping against copying (one 32 MiB race), for data on the device O_DIRECT through io_uring
//! against buffered reads. Until the probes decide, the rule's candidate (the first: mmap,
//! uring-direct) reads every part, so the choice does not flip while the profile learns; once
//! they decide, no run probes that part any more.

use crate::engine::ReadMethod;
use crate::measure::decide::{Decided, Spend, Verdict, paired};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The profile's file name, in iolab's cache directory.
pub const FILE: &str = "fast-profile.json";
/// The races at which the profile looks (and the only ones): the first 8 decide when they can at
/// 95% over both looks, else 12; after 12 undecided races the rule stays and no run races again.
pub const LOOKS: [usize; 2] = [8, 12];
/// Machines (kernel, cores, device, part) a profile keeps, the latest used last.
const MACHINES: usize = 16;
/// The most a profile file may hold (16 machines of 12 races take about 10 KiB).
const MAX_BYTES: u64 = 1 << 20;

/// What a part is read by, once the profile has said.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProfileSays {
    /// Too few races yet: race this run too, and read with the rule's candidate.
    Learning {
        /// Races kept.
        have: usize,
        /// Races at the next look.
        need: usize,
    },
    /// One method is faster at 95%: every run takes it.
    Decided(ReadMethod, Verdict),
    /// Within 5%, or undecided after the last look: the rule's candidate, and no more races.
    Settled(Verdict),
}

/// What the profile decides from `races` (each `[first, second]` candidate's rate, of `pair`):
/// only at the looks, over exactly the first races of each look, so that looking after every run
/// does not spend more than the 5% the two looks share.
pub fn stage(races: &[[f64; 2]], pair: [ReadMethod; 2]) -> ProfileSays {
    for (i, &look) in LOOKS.iter().enumerate() {
        if races.len() < look {
            return ProfileSays::Learning {
                have: races.len(),
                need: look,
            };
        }
        // The first look that decides holds: later races are not taken (a decided profile is
        // raced no more), and a later look would only spend its share again.
        let (a, b): (Vec<f64>, Vec<f64>) = races[..look].iter().map(|r| (r[0], r[1])).unzip();
        let last = i + 1 == LOOKS.len();
        match paired(&a, &b, Spend::looks(LOOKS.len())) {
            Some(v) if v.decided == Decided::Winner => {
                let method = pair[usize::from(v.a_larger != Some(true))];
                return ProfileSays::Decided(method, v);
            }
            Some(v) if v.decided == Decided::Equivalent || last => return ProfileSays::Settled(v),
            _ => {}
        }
    }
    ProfileSays::Learning {
        have: races.len(),
        need: LOOKS[LOOKS.len() - 1],
    }
}

/// Which machine a profile entry is for: the kernel, the cores and the file's device (a warm
/// race's outcome depends on how the kernel maps and copies page-cache folios, not on the file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct MachineKey {
    kernel: String,
    cpus: usize,
    device: u64,
    /// The non-resident part's probes (else the resident part's).
    #[serde(default)]
    cold: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct MachineRaces {
    key: MachineKey,
    /// `[mmap, pread]` MiB per CPU second, one per conclusive race, oldest first.
    races: Vec<[f64; 2]>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ProfileFile {
    version: u32,
    machines: Vec<MachineRaces>,
}

/// What the profile said for this run, as the JSON keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Learned {
    /// The profile's file.
    pub path: PathBuf,
    /// Races this machine had in it before this run.
    pub races: usize,
    /// The method every run takes for this part, once decided (none while learning, or settled
    /// on the rule).
    pub method: Option<ReadMethod>,
    /// The first candidate against the second over the races of the last look, when one was
    /// taken.
    pub verdict: Option<Verdict>,
    /// This run's race was kept.
    pub kept: bool,
    /// Why the profile was not used or not kept, when it was not (else empty).
    pub note: String,
}

/// The profile as this run found it: its races for this machine, and whether it may be trusted
/// and written.
#[derive(Debug)]
pub struct MachineProfile {
    path: PathBuf,
    key: MachineKey,
    stored: ProfileFile,
    /// Why it is not used (read) or not written, if so.
    note: String,
    writable: bool,
    kept: bool,
    /// Races this machine had when the profile was opened.
    had: usize,
    /// A race of this run, to keep when the run is done.
    pending: Option<[f64; 2]>,
    /// The two candidates, the rule's first.
    pair: [ReadMethod; 2],
    /// A part of this run asked it.
    pub(super) asked: bool,
}

impl MachineProfile {
    /// The profile at `path` for the resident (`cold` false) or non-resident parts of files on
    /// `device`, whose candidates are `pair`: empty when there is none yet; not used (and left as
    /// it is) when it is not this user's alone (a profile another user can write would let them
    /// choose how this user's runs read) or cannot be read.
    pub fn open(path: &Path, device: u64, cold: bool, pair: [ReadMethod; 2]) -> MachineProfile {
        let key = MachineKey {
            kernel: crate::sys::kernel_release(),
            cpus: crate::sys::cpus(),
            device,
            cold,
        };
        let mut p = MachineProfile {
            path: path.to_path_buf(),
            key,
            stored: ProfileFile::default(),
            note: String::new(),
            writable: true,
            kept: false,
            had: 0,
            pending: None,
            pair,
            asked: false,
        };
        if let Err(note) = p.read() {
            p.note = note;
            p.writable = false;
            p.stored = ProfileFile::default();
        }
        p.had = p.races().len();
        p
    }

    fn read(&mut self) -> Result<(), String> {
        use std::io::Read;
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        // Opened without following a link, then judged by what was opened (not by its name, which
        // another user could swap between a look and the open), and read with a bound.
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&self.path)
        {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(format!("not used: {e}")),
            Ok(f) => f,
        };
        let meta = file.metadata().map_err(|e| format!("not used: {e}"))?;
        let me = crate::sys::euid();
        if !meta.is_file() {
            return Err("not used: not a regular file".into());
        }
        if meta.uid() != me {
            return Err(format!(
                "not used: owned by uid {}, not this user ({me})",
                meta.uid()
            ));
        }
        if meta.mode() & 0o022 != 0 {
            return Err(format!(
                "not used: writable by others (mode {:o})",
                meta.mode() & 0o7777
            ));
        }
        let mut text = Vec::new();
        file.take(MAX_BYTES + 1)
            .read_to_end(&mut text)
            .map_err(|e| format!("not used: {e}"))?;
        if text.len() as u64 > MAX_BYTES {
            return Err(format!(
                "not used (and left as it is): over {} KiB, not a profile",
                MAX_BYTES >> 10
            ));
        }
        self.stored = serde_json::from_slice(&text)
            .map_err(|e| format!("not used (and left as it is): not a profile ({e})"))?;
        Ok(())
    }

    fn races(&self) -> &[[f64; 2]] {
        self.stored
            .machines
            .iter()
            .find(|m| m.key == self.key)
            .map_or(&[], |m| &m.races)
    }

    /// What the races so far decide.
    pub fn stage(&mut self) -> ProfileSays {
        self.asked = true;
        stage(self.races(), self.pair)
    }

    /// Notes this run's race (`[first, second]` candidate's rate), to be kept by
    /// [`MachineProfile::save`] once the read is done (off its clock).
    pub fn keep(&mut self, race: [f64; 2]) {
        if race.iter().all(|r| r.is_finite() && *r > 0.0) {
            self.pending = Some(race);
        }
    }

    /// Keeps the race noted, if any: a temporary file renamed over the profile, so a reader never
    /// sees half of one. A failure to write is said in the run's note, not an error: the read
    /// itself is done. Then what the JSON keeps of the profile for this run.
    pub fn save(&mut self) -> Learned {
        if let Some(race) = self.pending.take() {
            self.add(race);
        }
        self.learned()
    }

    fn add(&mut self, race: [f64; 2]) {
        if !self.writable {
            return;
        }
        // Read again: another part of this run (or another run) may have kept a race since.
        if let Err(note) = self.read() {
            self.note = format!("this run's race not kept: {note}");
            return;
        }
        let key = self.key.clone();
        let mut m = match self.stored.machines.iter().position(|m| m.key == key) {
            Some(i) => self.stored.machines.remove(i),
            None => MachineRaces {
                key,
                races: Vec::new(),
            },
        };
        m.races.push(race);
        self.stored.machines.push(m);
        let over = self.stored.machines.len().saturating_sub(MACHINES);
        self.stored.machines.drain(..over);
        self.stored.version = 1;
        match self.write() {
            Ok(()) => self.kept = true,
            Err(e) => self.note = format!("this run's race not kept: {e}"),
        }
    }

    fn write(&self) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        let tmp = dir.join(format!(".{FILE}.{}", std::process::id()));
        let text = serde_json::to_vec(&self.stored).map_err(std::io::Error::other)?;
        let done = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(&text))
            .and_then(|()| std::fs::rename(&tmp, &self.path));
        if done.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        done
    }

    /// What the JSON keeps of it for this run.
    fn learned(&self) -> Learned {
        let had = self.had;
        let races = self.races();
        let (method, verdict) = match stage(&races[..had.min(races.len())], self.pair) {
            ProfileSays::Decided(m, v) => (Some(m), Some(v)),
            ProfileSays::Settled(v) => (None, Some(v)),
            ProfileSays::Learning { .. } => (None, None),
        };
        Learned {
            path: self.path.clone(),
            races: had,
            method,
            verdict,
            kept: self.kept,
            note: self.note.clone(),
        }
    }

    /// Races kept for this machine.
    pub fn count(&self) -> usize {
        self.races().len()
    }

    /// How a stage of this profile reads in a part's "why".
    pub fn words(&self, stage: &ProfileSays) -> String {
        words(stage, self.pair, self.key.cold, &self.path, &self.note)
    }
}

/// How a stage reads in a part's "why".
fn words(
    stage: &ProfileSays,
    pair: [ReadMethod; 2],
    cold: bool,
    path: &Path,
    note: &str,
) -> String {
    let [first, second] = pair.map(ReadMethod::name);
    let at = |v: &Verdict| {
        format!(
            "{first} {:.2}x {second}{}, {}",
            v.ratio,
            if cold { "" } else { " per CPU second" },
            v.interval_words().replace("rounds", "races")
        )
    };
    let mut s = match stage {
        ProfileSays::Decided(m, v) => format!(
            "this machine's profile ({}): {} faster ({}): no race",
            path.display(),
            m.name(),
            at(v)
        ),
        ProfileSays::Settled(v) => format!(
            "this machine's profile ({}): {} ({}): the rule's {first}, no race",
            path.display(),
            if v.decided == Decided::Equivalent {
                "within 5%"
            } else {
                "undecided at the last look"
            },
            at(v)
        ),
        ProfileSays::Learning { have, need } => format!(
            "learning this machine ({have} of {need} races kept in {}): the rule's {first} reads until they decide at 95%",
            path.display()
        ),
    };
    if !note.is_empty() {
        s.push_str(&format!(" (profile {note})"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: [ReadMethod; 2] = [ReadMethod::Mmap, ReadMethod::Pread];

    fn races(ratio: &[f64]) -> Vec<[f64; 2]> {
        ratio.iter().map(|r| [1000.0 * r, 1000.0]).collect()
    }

    #[test]
    fn the_profile_decides_only_at_its_looks_and_then_stays() {
        // Mapping clearly faster in every race: nothing before 8 races, mmap from the 8th on.
        let fast = races(&[
            1.8, 1.6, 2.0, 1.7, 1.9, 1.75, 1.85, 1.65, 1.0, 1.0, 1.0, 1.0, 1.0,
        ]);
        for n in 0..8 {
            assert_eq!(
                stage(&fast[..n], W),
                ProfileSays::Learning { have: n, need: 8 },
                "{n}"
            );
        }
        for n in 8..=13 {
            // Later races (here equal) change nothing: a decided profile is no longer raced,
            // and a look covers exactly its own races.
            let ProfileSays::Decided(m, v) = stage(&fast[..n], W) else {
                panic!("{n}: {:?}", stage(&fast[..n], W))
            };
            assert_eq!(m, ReadMethod::Mmap);
            assert!(v.ci[0] >= 1.05 && v.ratio > 1.5, "{v:?}");
        }
        // Copying faster: pread.
        let slow = races(&[0.6, 0.55, 0.62, 0.58, 0.61, 0.57, 0.6, 0.59]);
        assert!(matches!(
            stage(&slow, W),
            ProfileSays::Decided(ReadMethod::Pread, _)
        ));
    }

    #[test]
    fn a_coin_flip_is_not_a_winner() {
        // Races that swing either way by 1.4x: undecided at 8, still at 12, then settled on the
        // rule; never a winner.
        let flip: Vec<f64> = (0..12)
            .map(|i| if i % 2 == 0 { 1.4 } else { 1.0 / 1.4 })
            .collect();
        let r = races(&flip);
        assert!(matches!(
            stage(&r[..8], W),
            ProfileSays::Learning { have: 8, need: 12 }
        ));
        assert!(matches!(stage(&r[..11], W), ProfileSays::Learning { .. }));
        let ProfileSays::Settled(v) = stage(&r, W) else {
            panic!("{:?}", stage(&r, W))
        };
        assert_eq!(v.decided, Decided::Undecided);
        // Equal within 1%: within 5% at the first look, settled.
        let same = races(&[1.0, 1.01, 0.99, 1.0, 1.005, 0.995, 1.0, 1.01]);
        let ProfileSays::Settled(v) = stage(&same, W) else {
            panic!("{:?}", stage(&same, W))
        };
        assert_eq!(v.decided, Decided::Equivalent);
    }

    #[test]
    fn a_profile_is_kept_whole_and_read_back_and_others_are_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join(FILE);
        let mut p = MachineProfile::open(&path, 7, false, W);
        assert_eq!((p.count(), p.note.as_str()), (0, ""));
        p.keep([2000.0, 1000.0]);
        assert!(p.save().kept, "{}", p.note);
        p.keep([f64::NAN, 1000.0]);
        p.save();
        assert_eq!(p.count(), 1, "a race without a rate is not kept");
        let again = MachineProfile::open(&path, 7, false, W);
        assert_eq!(again.races(), &[[2000.0, 1000.0]]);
        // Another device is another entry.
        assert_eq!(MachineProfile::open(&path, 8, false, W).count(), 0);
        // No temporary file left beside it.
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from(FILE)]);
        // Writable by others: not used, and not written over.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let mut other = MachineProfile::open(&path, 7, false, W);
        assert_eq!(other.count(), 0);
        assert!(other.note.contains("writable by others"), "{}", other.note);
        other.keep([1.0, 2.0]);
        assert!(!other.save().kept);
        // Not a profile: left as it is.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&path, b"hello").unwrap();
        let mut bad = MachineProfile::open(&path, 7, false, W);
        assert!(bad.note.contains("not a profile"), "{}", bad.note);
        // A link in its place is not followed (the file it names could be anyone's).
        let link = path.with_extension("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let linked = MachineProfile::open(&link, 7, false, W);
        assert!(linked.note.starts_with("not used"), "{}", linked.note);
        bad.keep([1.0, 2.0]);
        bad.save();
        assert_eq!(std::fs::read(&path).unwrap(), b"hello");
    }
}
