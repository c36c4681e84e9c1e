//! How a worker's ring is made: fio's best settings where the kernel has them, registered buffers
//! and file, and the SQPOLL variant.

use super::*;

/// How a worker's ring was set up: what fio does at its best, where the kernel has it.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Tuning {
    /// `IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN`, created disabled: completions run only when
    /// this thread waits, in one batch; enabled by the thread that submits.
    pub(super) deferred: bool,
    /// The file is registered (index 0): no file reference taken per request.
    pub(super) fixed_file: bool,
    /// The buffer region is registered (index 0): no page pinning per request (regions under
    /// [`UNTOUCHED_FROM`] only).
    pub(super) fixed_buf: bool,
}

/// A ring tuned as fio's io_uring engine can be: single issuer with deferred task work where the
/// kernel has them (else cooperative task running, else a plain ring), with the file and (under
/// [`UNTOUCHED_FROM`]) the buffers registered when the kernel (and RLIMIT_MEMLOCK) allow. Each
/// refusal falls back.
pub(super) fn tuned_ring(
    depth: u32,
    name: &str,
    fd: i32,
    bufs: &mut AlignedBuf,
    sqpoll: bool,
) -> Result<(IoUring, Tuning)> {
    let depth = depth.max(1);
    let mut tuning = Tuning::default();
    if sqpoll {
        let ring = sqpoll_ring(depth, name)?;
        let tuning = register(&ring, fd, bufs, tuning);
        return Ok((ring, tuning));
    }
    let deferred = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_r_disabled()
        .build(depth);
    let ring = match deferred {
        Ok(r) => {
            tuning.deferred = true;
            r
        }
        Err(_) => match IoUring::builder().setup_coop_taskrun().build(depth) {
            Ok(r) => r,
            Err(_) => new_ring(depth, name)?,
        },
    };
    let tuning = register(&ring, fd, bufs, tuning);
    Ok((ring, tuning))
}

/// Registers the file and (under [`UNTOUCHED_FROM`]) the buffer region where the kernel lets it.
pub(super) fn register(
    ring: &IoUring,
    fd: i32,
    bufs: &mut AlignedBuf,
    mut tuning: Tuning,
) -> Tuning {
    tuning.fixed_file = ring.submitter().register_files(&[fd]).is_ok();
    let iov = libc::iovec {
        iov_base: bufs.as_mut_slice().as_mut_ptr().cast(),
        iov_len: bufs.len(),
    };
    // SAFETY: the region is owned by the worker next to the ring, and the worker's fields drop
    // the ring first, so the region outlives its registration.
    tuning.fixed_buf =
        bufs.len() < UNTOUCHED_FROM && unsafe { ring.submitter().register_buffers(&[iov]) }.is_ok();
    tuning
}

/// How long the kernel's polling thread spins without work before it sleeps (it is woken by
/// the next submission then).
pub(super) const SQPOLL_IDLE_MS: u32 = 1000;

/// A ring whose submission queue a kernel thread polls (`--sqpoll`): queuing needs no system
/// call while the thread is awake. Refused: unsupported, with the reason.
pub(super) fn sqpoll_ring(depth: u32, name: &str) -> Result<IoUring> {
    IoUring::builder()
        .setup_sqpoll(SQPOLL_IDLE_MS)
        .build(depth)
        .map_err(|e| {
            let why = match e.raw_os_error() {
                Some(libc::EPERM) => "the kernel refused a polling thread (SQPOLL needs Linux 5.11+ without CAP_SYS_NICE)".to_string(),
                _ => format!("io_uring_setup with SQPOLL failed: {}", describe_io(&e)),
            };
            Error::unsupported(format!("method {name} with --sqpoll unsupported"), why)
        })
}
