//! `iolab ior`: one process without MPI; with the `mpi` feature and `mpirun` installed, 2 and 3
//! ranks in file-per-process and shared-file modes. Sizes, the XOR of every rank's part and the
//! files left behind are checked; the figures are IOR's aggregation, unit-tested in the library.

mod common;
use common::{Lack, skip};

use common::{iolab, plain_xor};
use std::path::Path;

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every phase of `v` verified on every rank, `ranks` ranks, each moving `per_rank` bytes.
fn check_phases(v: &serde_json::Value, ranks: usize, per_rank: u64, reorder: bool) {
    assert_eq!(v["ranks"], ranks, "{v}");
    let phases = v["phases"].as_array().unwrap();
    assert!(!phases.is_empty());
    for p in phases {
        let rs = p["ranks"].as_array().unwrap();
        assert_eq!(rs.len(), ranks);
        for (i, r) in rs.iter().enumerate() {
            assert_eq!(r["bytes"], per_rank, "{p}");
            assert_eq!(r["xor"], r["expected_xor"], "rank {i}: {p}");
            let of = r["data_of"].as_u64().unwrap() as usize;
            let want = if reorder && p["access"] == "read" {
                (i + 1) % ranks
            } else {
                i
            };
            assert_eq!(of, want, "{p}");
        }
        assert_eq!(p["xor"], p["expected_xor"]);
        assert!(p["mib_s"].as_f64().unwrap() > 0.0);
        let total = p["total_s"].as_f64().unwrap();
        assert!(p["xfer_s"].as_f64().unwrap() <= total + 1e-9, "{p}");
    }
}

fn xor_of(path: &Path) -> String {
    format!("{:08x}", plain_xor(&std::fs::read(path).unwrap()))
}

#[test]
fn one_process_writes_reads_and_verifies_both_modes() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t");
    for (fpp, api) in [
        (true, "posix"),
        (false, "mmap"),
        (false, "uring"),
        (true, "direct"),
    ] {
        let mut args = vec![
            "ior", "-a", api, "-b", "1m", "-t", "64k", "-s", "3", "-w", "-r", "-i", "2", "-k",
            "--force", "--format", "json", "-o",
        ];
        args.push(f.to_str().unwrap());
        if fpp {
            args.push("-F");
        }
        let v = json(&iolab().args(&args).output().unwrap());
        check_phases(&v, 1, 3 << 20, false);
        assert_eq!(
            v["phases"].as_array().unwrap().len(),
            4,
            "2 iterations x write, read"
        );
        // The file holds exactly what the XOR says was written.
        let file = if fpp {
            dir.path().join("t.00000000")
        } else {
            f.clone()
        };
        assert_eq!(std::fs::metadata(&file).unwrap().len(), 3 << 20, "{api}");
        assert_eq!(xor_of(&file), v["phases"][1]["xor"], "{api}");
        std::fs::remove_file(&file).unwrap();
    }
    // Without -k nothing is left; without -w and -r both run.
    let o = iolab()
        .args(["ior", "-b", "256k", "-t", "64k", "-o", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("Summary of all tests:") && text.contains("verified"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("write "))
            && text.lines().any(|l| l.starts_with("read "))
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "files removed"
    );
}

/// --no-verify: IOR's raw bandwidth; the XOR is absent, never claimed, in JSON and text.
#[test]
fn without_verification_nothing_is_claimed() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("nv");
    let args = ["ior", "-b", "512k", "-t", "64k", "--no-verify", "-o"];
    let v = json(
        &iolab()
            .args(args)
            .arg(&f)
            .args(["--format", "json"])
            .output()
            .unwrap(),
    );
    for p in v["phases"].as_array().unwrap() {
        assert!(p["xor"].is_null(), "{p}");
        assert!(p["ranks"][0]["xor"].is_null(), "{p}");
        assert_eq!(p["ranks"][0]["bytes"], 512 << 10);
    }
    let o = iolab().args(args).arg(&f).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("XOR not checked"), "{text}");
    assert!(
        !text.contains("verified") && text.contains("not checked"),
        "{text}"
    );
}

#[test]
fn someone_elses_file_is_refused_and_a_changed_file_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("data");
    std::fs::write(&f, b"someone's work").unwrap();
    let o = iolab()
        .args([
            "ior",
            "-w",
            "-b",
            "64k",
            "-t",
            "64k",
            "-o",
            f.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("--force"));
    assert_eq!(std::fs::read(&f).unwrap(), b"someone's work");
    // Written and kept, then one byte changed: reading back says so (exit 1).
    let w = iolab()
        .args([
            "ior",
            "-w",
            "-k",
            "--force",
            "-b",
            "256k",
            "-t",
            "64k",
            "-o",
            f.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(w.status.success());
    let mut bytes = std::fs::read(&f).unwrap();
    bytes[70_000] ^= 1;
    std::fs::write(&f, &bytes).unwrap();
    let r = iolab()
        .args([
            "ior",
            "-r",
            "-k",
            "-b",
            "256k",
            "-t",
            "64k",
            "-o",
            f.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        r.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&r.stdout)
    );
    assert!(String::from_utf8_lossy(&r.stderr).contains("XOR mismatch in read"));
    for bad in [["-t", "1000"], ["-b", "100k"]] {
        let o = iolab()
            .args(["ior", "-o", f.to_str().unwrap(), "--force"])
            .args(bad)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
    }
}

fn which(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
}

/// 2 and 3 ranks under mpirun, a file per rank and one shared file, read back reordered.
#[test]
fn ranks_under_mpirun_write_their_parts_once() {
    if !cfg!(feature = "mpi") {
        return skip(
            Lack::Machine,
            "built without the mpi feature (cargo test --features mpi)",
        );
    }
    if !which("mpirun") {
        return skip(Lack::Setup, "no mpirun here (Debian: openmpi-bin)");
    }
    let exe = assert_cmd::cargo::cargo_bin("iolab");
    for ranks in [2usize, 3] {
        for fpp in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let f = dir.path().join("f");
            let mut cmd = std::process::Command::new("mpirun");
            cmd.args(["-n", &ranks.to_string(), "--oversubscribe"])
                .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
                .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
                .arg(&exe)
                .args([
                    "ior", "-a", "posix", "-b", "1m", "-t", "256k", "-s", "2", "-w", "-r",
                ])
                .args(["-C", "--tasks-per-node", "1", "-k", "--format", "json"])
                .args(["-o", f.to_str().unwrap()]);
            if fpp {
                cmd.arg("-F");
            }
            let v = json(&cmd.output().unwrap());
            check_phases(&v, ranks, 2 << 20, true);
            assert!(v["notes"].as_array().unwrap().is_empty(), "{}", v["notes"]);
            let files: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            if fpp {
                assert_eq!(files.len(), ranks, "{files:?}");
                for r in 0..ranks {
                    let p = dir.path().join(format!("f.{r:08}"));
                    assert_eq!(std::fs::metadata(&p).unwrap().len(), 2 << 20);
                }
            } else {
                assert_eq!(files.len(), 1);
                assert_eq!(
                    std::fs::metadata(&f).unwrap().len(),
                    (ranks as u64) * (2 << 20)
                );
                // Every rank's part once: the file's XOR is the XOR of all parts written.
                assert_eq!(xor_of(&f), v["phases"][0]["xor"]);
            }
        }
        // As IOR: on one node -C shifts by all the ranks there, so each reads its own data, and
        // says so.
        let dir = tempfile::tempdir().unwrap();
        let out = std::process::Command::new("mpirun")
            .args(["-n", &ranks.to_string(), "--oversubscribe"])
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .arg(&exe)
            .args([
                "ior", "-b", "256k", "-t", "64k", "-C", "--format", "json", "-o",
            ])
            .arg(dir.path().join("g"))
            .output()
            .unwrap();
        let v = json(&out);
        check_phases(&v, ranks, 256 << 10, false);
        assert!(
            v["notes"][0].as_str().unwrap().contains("own data"),
            "{}",
            v["notes"]
        );
    }
}

/// Two hosts on one machine, as far as MPI and iolab can tell: a network namespace each, joined
/// by a veth pair, a host name each (UTS namespace) and a disk each (a mount namespace binds a
/// directory of its own at the same path). Deleted when dropped.
struct TwoHosts {
    ns: [String; 2],
    root: tempfile::TempDir,
}

impl TwoHosts {
    /// The hosts, or why they cannot be made here.
    fn new() -> Result<TwoHosts, String> {
        let id = std::process::id() % 100_000;
        let ns = [format!("iorA{id}"), format!("iorB{id}")];
        let veth = [format!("irA{id}"), format!("irB{id}")];
        let ip = |args: &[&str]| {
            std::process::Command::new("ip")
                .args(args)
                .output()
                .map_err(|e| format!("ip: {e}"))
                .and_then(|o| {
                    if o.status.success() {
                        Ok(())
                    } else {
                        Err(format!(
                            "ip {}: {}",
                            args.join(" "),
                            String::from_utf8_lossy(&o.stderr).trim()
                        ))
                    }
                })
        };
        ip(&["netns", "add", &ns[0]])?;
        let hosts = TwoHosts {
            ns: ns.clone(),
            root: tempfile::tempdir().map_err(|e| e.to_string())?,
        };
        ip(&["netns", "add", &ns[1]])?;
        ip(&[
            "link", "add", &veth[0], "type", "veth", "peer", "name", &veth[1],
        ])?;
        for i in 0..2 {
            ip(&["link", "set", &veth[i], "netns", &ns[i]])?;
            let addr = format!("10.97.0.{}/24", i + 1);
            ip(&["-n", &ns[i], "addr", "add", &addr, "dev", &veth[i]])?;
            ip(&["-n", &ns[i], "link", "set", &veth[i], "up"])?;
            ip(&["-n", &ns[i], "link", "set", "lo", "up"])?;
        }
        for d in ["a", "b", "disk", "shared"] {
            std::fs::create_dir(hosts.path(d)).map_err(|e| e.to_string())?;
        }
        // mpirun starts the second host's daemon through "ssh": [options] HOST COMMAND.
        let agent = format!(
            "#!/bin/sh\nwhile [ \"${{1#-}}\" != \"$1\" ]; do shift; done\nshift\n\
             exec ip netns exec {} unshare --uts --mount sh -c \
             \"hostname iolab-b && mount --bind {} {} && $*\"\n",
            ns[1],
            hosts.path("b").display(),
            hosts.path("disk").display()
        );
        std::fs::write(hosts.path("agent"), agent).map_err(|e| e.to_string())?;
        std::fs::write(
            hosts.path("hosts"),
            "10.97.0.1 slots=1\n10.97.0.2 slots=1\n",
        )
        .map_err(|e| e.to_string())?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(hosts.path("agent"), std::fs::Permissions::from_mode(0o755))
            .map_err(|e| e.to_string())?;
        Ok(hosts)
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.root.path().join(name)
    }

    /// `iolab ior ARGS` as one rank on each host, under mpirun on the first.
    fn ior(&self, args: &[&str]) -> std::process::Output {
        let exe = assert_cmd::cargo::cargo_bin("iolab");
        let (agent, hostfile) = (self.path("agent"), self.path("hosts"));
        std::process::Command::new("ip")
            .args(["netns", "exec", &self.ns[0], "unshare", "--uts", "--mount"])
            .args(["sh", "-c"])
            .arg("hostname iolab-a && mount --bind \"$1\" \"$2\" && shift 2 && exec \"$@\"")
            .arg("sh")
            .args([self.path("a"), self.path("disk")])
            .args(["timeout", "120", "mpirun", "-n", "2", "--map-by", "node"])
            .arg("--hostfile")
            .arg(hostfile)
            .args(["--mca", "plm_rsh_agent"])
            .arg(agent)
            .args(["--mca", "plm_rsh_no_tree_spawn", "1"])
            .args(["--mca", "btl", "tcp,self"])
            .args(["--mca", "btl_tcp_if_include", "10.97.0.0/24"])
            .args(["--mca", "oob_tcp_if_include", "10.97.0.0/24"])
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .arg(exe)
            .arg("ior")
            .args(args)
            .output()
            .unwrap()
    }
}

impl Drop for TwoHosts {
    fn drop(&mut self) {
        for ns in &self.ns {
            let _ = std::process::Command::new("ip")
                .args(["netns", "del", ns])
                .output();
        }
    }
}

/// Nothing assumes one host: two ranks on two hosts each write on their own host's disk, and
/// with -C each reads the other host's data back from a shared directory, the shift found
/// from the host names (no --tasks-per-node).
#[test]
fn two_ranks_on_two_hosts_in_network_namespaces() {
    if !cfg!(feature = "mpi") {
        return skip(
            Lack::Machine,
            "built without the mpi feature (cargo test --features mpi)",
        );
    }
    if !common::is_root() {
        return skip(Lack::Setup, "network and mount namespaces need root");
    }
    for tool in ["mpirun", "ip", "unshare", "timeout"] {
        if !which(tool) {
            return skip(Lack::Setup, &format!("no {tool} here"));
        }
    }
    let hosts = match TwoHosts::new() {
        Ok(h) => h,
        Err(why) => {
            return skip(Lack::Setup, &format!("cannot make two hosts here: {why}"));
        }
    };
    let common = ["-b", "1m", "-t", "256k", "-s", "2", "-w", "-r", "-k"];
    // A file per rank on each host's own disk, at the same path.
    let f = hosts.path("disk").join("f");
    let out = hosts.ior(
        &[
            &common[..],
            &["-F", "--format", "json", "-o", f.to_str().unwrap()],
        ]
        .concat(),
    );
    let v = json(&out);
    check_phases(&v, 2, 2 << 20, false);
    for (host, rank) in [("a", 0), ("b", 1)] {
        let names: Vec<String> = std::fs::read_dir(hosts.path(host))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let want = format!("f.{rank:08}");
        assert_eq!(names, std::slice::from_ref(&want), "host {host}");
        let p = hosts.path(host).join(&want);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 2 << 20);
        assert_eq!(xor_of(&p), v["phases"][0]["ranks"][rank]["xor"]);
    }
    assert!(
        std::fs::read_dir(hosts.path("disk")).unwrap().count() == 0,
        "the mount point itself stays empty"
    );
    // A shared directory, both modes, read back by the other host.
    for fpp in [true, false] {
        let f = hosts.path("shared").join(if fpp { "p" } else { "s" });
        let mut args = [
            &common[..],
            &["-C", "--format", "json", "-o", f.to_str().unwrap()],
        ]
        .concat();
        if fpp {
            args.push("-F");
        }
        let v = json(&hosts.ior(&args));
        check_phases(&v, 2, 2 << 20, true);
        assert!(v["notes"].as_array().unwrap().is_empty(), "{}", v["notes"]);
    }
}

/// `--force` replaces only regular files: a FIFO (as a device would be) and a link are refused
/// and left as they were, the link's target untouched; a size the file system cannot hold is
/// refused before anything is written.
#[test]
fn force_writes_over_files_only_and_sizes_are_checked_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    let target = dir.path().join("target");
    std::fs::write(&target, b"precious").unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let mut paths = vec![link.clone()];
    if made {
        paths.push(fifo.clone());
    }
    for p in &paths {
        let o = iolab()
            .args(["ior", "-w", "-b", "64k", "-t", "64k", "--force", "-o"])
            .arg(p)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", p.display());
        assert!(err.contains("not a regular file"), "{err}");
        assert!(p.symlink_metadata().is_ok(), "{} was removed", p.display());
    }
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    let big = dir.path().join("big");
    let o = iolab()
        .args(["ior", "-w", "-b", "1E", "-t", "1m", "-o"])
        .arg(&big)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(!big.exists(), "nothing written");
}
