//! Runs in a child process inside a fresh memory cgroup, one after another (`squeeze`,
//! `pollute`): the one runner for "interrupted? → the files out of the cache, verified → a
//! group → the child with progress → the group's peak → the group removed", so that every
//! experiment that needs a memory limit runs it the same way and leaves no group behind.

use super::Observer;
use super::cell::{CacheSpec, prepare};
use super::child::{Message, run_in_group};
use crate::cache::cgroup::{Controller, GroupFiles, MemoryGroup};
use crate::cache::{CacheMode, CacheState};
use crate::error::{Error, Result};
use crate::source::Source;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::Path;

/// Where and how the children run.
pub struct Groups<'a> {
    /// The iolab program the children run.
    pub exe: &'a Path,
    /// Its subcommand that serves one run ([`super::child::serve`]).
    pub subcommand: &'a str,
    /// The memory controller the groups are made under.
    pub controller: &'a Controller,
    /// Each group's memory limit, bytes.
    pub memory: u64,
    /// Files every run starts with out of the page cache (evicted and verified).
    pub cold: Vec<&'a Source>,
}

/// One child's run, as the runner kept it.
#[derive(Debug)]
pub struct GroupRun<T, D> {
    /// Its samples, in order.
    pub ticks: Vec<T>,
    /// The message that ended it: done, or failed (unsupported or not).
    pub end: Message<T, D>,
    /// The group's limit as the kernel set it.
    pub limit: u64,
    /// The group's peak memory, where the kernel keeps it.
    pub peak: Option<u64>,
    /// The state of the `cold` files when the child started.
    pub cache: CacheState,
}

impl<T, D> GroupRun<T, D> {
    /// Whether it ended because its method cannot run here (the kernel or file system lacks it).
    pub fn unsupported(&self) -> bool {
        matches!(
            self.end,
            Message::Failed {
                unsupported: true,
                ..
            }
        )
    }
}

/// Whether one of the runs `before` that `same` picks (by index: the same method as the run
/// about to start) ended unsupported: a method that cannot run here is not tried again.
pub fn unsupported_before<T, D>(
    before: &[Option<GroupRun<T, D>>],
    same: impl Fn(usize) -> bool,
) -> bool {
    before
        .iter()
        .enumerate()
        .any(|(i, r)| same(i) && r.as_ref().is_some_and(GroupRun::unsupported))
}

impl Groups<'_> {
    /// `n` runs, one after another: run `i` is named by `name(i, runs so far)` (`None` skips
    /// it), its child gets the config `config(i, group)` makes for its group, and `tick` turns
    /// the run's k-th sample (from 1) into progress (done, total). Each run's group is removed before the next
    /// begins, and on any failure (a signal's handler removes it too).
    pub fn run<C, T, D>(
        &self,
        n: usize,
        obs: &dyn Observer,
        mut name: impl FnMut(usize, &[Option<GroupRun<T, D>>]) -> Option<String>,
        mut config: impl FnMut(usize, &GroupFiles) -> C,
        tick: impl Fn(usize, &T) -> (usize, usize),
    ) -> Result<Vec<Option<GroupRun<T, D>>>>
    where
        C: Serialize,
        T: DeserializeOwned,
        D: DeserializeOwned,
    {
        let mut runs: Vec<Option<GroupRun<T, D>>> = Vec::with_capacity(n);
        for i in 0..n {
            let Some(what) = name(i, &runs) else {
                runs.push(None);
                continue;
            };
            if crate::sys::interrupted() {
                return Err(Error::failed("interrupted", "stopped by a signal"));
            }
            let cache = prepare(&CacheSpec {
                mode: CacheMode::Cold,
                drop_all: false,
                files: self.cold.iter().map(|s| (*s, s.size)).collect(),
                incidental: Vec::new(),
            })?;
            let group = MemoryGroup::create(self.controller, self.memory)?;
            let limit = group.files().limit().unwrap_or(self.memory);
            let wc = config(i, group.files());
            let mut k = 0;
            let (ticks, end) = run_in_group(self.exe, self.subcommand, &wc, &group, |t| {
                k += 1;
                let (done, total) = tick(k, t);
                obs.progress(&what, done, total);
            })?;
            let peak = group.files().peak();
            group.remove()?;
            runs.push(Some(GroupRun {
                ticks,
                end,
                limit,
                peak,
                cache,
            }));
        }
        Ok(runs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(unsupported: Option<bool>) -> Option<GroupRun<u32, u32>> {
        let end = match unsupported {
            None => Message::Done(0),
            Some(unsupported) => Message::Failed {
                error: "no".into(),
                unsupported,
            },
        };
        Some(GroupRun {
            ticks: Vec::new(),
            end,
            limit: 0,
            peak: None,
            cache: CacheState {
                asked: CacheMode::Cold,
                residency: crate::cache::Residency {
                    resident_pages: 0,
                    total_pages: 1,
                    page_size: 4096,
                },
                verified: true,
                dropped_all: false,
                note: None,
                visible: true,
            },
        })
    }

    #[test]
    fn only_the_same_methods_unsupported_end_keeps_it_from_running_again() {
        // Runs 0 and 2 are method A, 1 is B; B ended unsupported, A failed otherwise.
        let before = [ended(Some(false)), ended(Some(true)), ended(None), None];
        let method = |i: usize| if i == 1 { 'B' } else { 'A' };
        assert!(unsupported_before(&before, |i| method(i) == 'B'));
        assert!(!unsupported_before(&before, |i| method(i) == 'A'));
        // A run skipped (None) or not yet run says nothing.
        assert!(!unsupported_before(&before[..1], |i| method(i) == 'B'));
    }
}
