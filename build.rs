//! Records the git commit iolab is built from (when built from a checkout), so every result can
//! say exactly which code measured it, and the date its manual pages carry.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let o = Command::new("git").args(args).output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn main() {
    for p in [
        ".git/HEAD",
        ".git/index",
        ".git/refs/heads",
        ".git/packed-refs",
    ] {
        if Path::new(p).exists() {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).map(|c| {
        let dirty =
            git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        if dirty { format!("{c}-dirty") } else { c }
    });
    println!(
        "cargo:rustc-env=IOLAB_GIT_COMMIT={}",
        commit.unwrap_or_default()
    );
    // The manual pages' date: the commit's day, else the build's (`date`), else none.
    let date = git(&["log", "-1", "--format=%cs"])
        .filter(|d| !d.is_empty())
        .or_else(|| {
            let o = Command::new("date")
                .args(["-u", "+%Y-%m-%d"])
                .output()
                .ok()?;
            o.status
                .success()
                .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
        });
    println!(
        "cargo:rustc-env=IOLAB_PAGE_DATE={}",
        date.unwrap_or_default()
    );
}
