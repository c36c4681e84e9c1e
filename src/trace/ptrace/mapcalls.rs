//! The exits of the mapping calls (mmap, munmap, mremap, madvise, msync): the address space
//! model follows them, and file mappings (and advice on them) are kept as calls.

use super::ops::{Pending, State, Task};
use crate::trace::Op;
use crate::trace::calls::Call;

/// mmap's failure values: -4095..-1 as an address.
const MAP_FAILED_MIN: u64 = (-4095i64) as u64;

impl State {
    /// Mappings made, unmapped, moved or advised: the address space follows; whether the op is
    /// kept (file mappings, and advice on them).
    pub(super) fn memory(
        &mut self,
        task: &Task,
        p: &Pending,
        ret: i64,
        t: u64,
        op: &mut Op,
    ) -> bool {
        use Call::*;
        let a = p.args;
        match p.call {
            Mmap => self.mapped(task, op, ret, t),
            Munmap => {
                if ret >= 0 {
                    self.rec.spaces.unmap(task.mm, a[0], a[1], t);
                }
                false
            }
            Mremap => {
                if (ret as u64) < MAP_FAILED_MIN {
                    let old = self.rec.spaces.at(task.mm, a[0]);
                    self.rec.spaces.unmap(task.mm, a[0], a[1], t);
                    if let Some(m) = old {
                        let off = m.off + (a[0] - m.start);
                        self.rec
                            .spaces
                            .map(task.mm, ret as u64, a[2], Some(m.file), off, t);
                    }
                }
                false
            }
            _ => match self.rec.spaces.at(task.mm, a[0]) {
                // Madvise and msync: kept only when they name a file mapping.
                Some(m) => {
                    op.file = Some(m.file);
                    op.off = Some(m.off + (a[0] - m.start));
                    true
                }
                None => false,
            },
        }
    }

    /// An mmap returned `ret`: a file mapping joins the address space (kept as an op); an
    /// anonymous one only clears what it covers.
    fn mapped(&mut self, task: &Task, op: &mut Op, ret: i64, t: u64) -> bool {
        let addr = ret as u64;
        if addr >= MAP_FAILED_MIN {
            return false;
        }
        let arg = op.arg.unwrap_or(0);
        let flags = arg & 0xffff_ffff;
        let prot = arg >> 32;
        let file = if flags & libc::MAP_ANONYMOUS as u64 == 0 && op.fd >= 0 {
            task.fds
                .borrow()
                .0
                .get(&op.fd)
                .map(|s| s.desc.borrow().file)
                .or_else(|| self.identify(task.pid, op.fd))
        } else {
            None
        };
        let off = op.off.unwrap_or(0);
        self.rec.spaces.map(task.mm, addr, op.len, file, off, t);
        let Some(f) = file else {
            return false;
        };
        if prot & libc::PROT_EXEC as u64 != 0 {
            self.rec.files[f as usize].code = true;
        }
        op.file = Some(f);
        true
    }
}
