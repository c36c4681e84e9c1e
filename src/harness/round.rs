//! One round of the harness: each active cell run once, in rotated order, through its cell's
//! protocol, its XOR checked against the others that read the same bytes.

use super::cell::CellRun;
use super::{CellWork, Cells, Live, XorCheck, cell};
use crate::error::{Error, ErrorKind, Result};
use std::time::{Duration, Instant};

/// One round over the active cells, in an order rotated by `round`; their runs are kept as
/// counted or as warm-ups. A cell the method does not suit is skipped from then on; `tick`
/// follows each cell. False when `deadline` (a start and a cap) stopped it before a run that
/// would have ended past the cap (by its cell's last run's time, or the longest run so far):
/// then none of its runs is kept (a comparison pairs runs round by round).
#[allow(clippy::too_many_arguments)]
pub(super) fn one_round<C: Cells>(
    cells: &mut C,
    live: &mut [Live<C::Extra>],
    round: usize,
    counted: bool,
    xors: &mut Vec<Agreed>,
    deadline: Option<(Instant, Duration)>,
    tick: &mut dyn FnMut(),
) -> Result<bool> {
    // Only whole rounds are kept: one cut short takes back the runs it made.
    let kept: Vec<usize> = live.iter().map(|l| l.runs.len()).collect();
    let cut = |live: &mut [Live<C::Extra>]| {
        for (l, &n) in live.iter_mut().zip(&kept) {
            l.runs.truncate(n);
        }
        false
    };
    let order: Vec<usize> = (0..live.len()).filter(|&i| live[i].active).collect();
    for k in 0..order.len() {
        let i = order[(k + round) % order.len()];
        tick();
        if live[i].skipped.is_some() {
            continue;
        }
        if let Some((started, cap)) = deadline {
            let longest = live.iter().map(|l| l.cost).max().unwrap_or_default();
            let expect = if live[i].cost.is_zero() {
                longest
            } else {
                live[i].cost
            };
            if started.elapsed() + expect > cap {
                return Ok(cut(live));
            }
        }
        let t = Instant::now();
        match run_one(cells, i) {
            Ok((r, check)) => {
                live[i].cost = t.elapsed();
                if let Some((check, writes)) = check
                    && check.bytes.is_none_or(|b| b == r.moved.bytes)
                {
                    agree(xors, cells, check.group, r.moved.xor, i, writes)?;
                }
                if counted {
                    live[i].runs.push(r);
                } else {
                    live[i].warmups.push(r);
                }
            }
            // A run the cap cut short: the measurement ends here, not the cell.
            Err(e)
                if matches!(e.kind, ErrorKind::Unsupported | ErrorKind::Unsuited)
                    && deadline.is_some_and(|(s, cap)| s.elapsed() >= cap) =>
            {
                return Ok(cut(live));
            }
            Err(e) if matches!(e.kind, ErrorKind::Unsupported | ErrorKind::Unsuited) => {
                live[i].skipped = Some(e);
                live[i].active = false;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// One run of cell `i`, and its XOR check (with whether it wrote its bytes).
type Checked<E> = (CellRun<E>, Option<(XorCheck, bool)>);

/// Runs cell `i` once through the protocol of [`mod@cell`].
fn run_one<C: Cells>(cells: &mut C, i: usize) -> Result<Checked<C::Extra>> {
    let declared = cells.cell(i);
    let check = declared
        .xor
        .map(|x| (x, matches!(declared.work, CellWork::Write { .. })));
    if matches!(declared.work, CellWork::Own) {
        // The declaration borrows the cells; its state is prepared before the work of its own.
        let cache = declared.cache.map(|c| cell::prepare(&c)).transpose()?;
        return cell::finish(cache, cells.own(i)?).map(|r| (r, check));
    }
    cell::run_cell(declared).map(|r| (r, check))
}

/// The first XOR seen in a group: (group, XOR, cell).
pub(super) type Agreed = (u64, u32, usize);

/// The one XOR check: every run in a group moved the same bytes, so their XORs agree; a
/// mismatch names the two cells (or the one cell whose runs disagree) and fails the run.
fn agree<C: Cells>(
    seen: &mut Vec<Agreed>,
    cells: &C,
    group: u64,
    x: u32,
    i: usize,
    writes: bool,
) -> Result<()> {
    let Some(&(_, y, j)) = seen.iter().find(|(g, _, _)| *g == group) else {
        seen.push((group, x, i));
        return Ok(());
    };
    if x == y {
        return Ok(());
    }
    let f = crate::xor::format_xor;
    let why = match (i == j, writes) {
        (true, true) => format!(
            "runs of {} wrote different data ({} vs {})",
            cells.name(i),
            f(y),
            f(x)
        ),
        (true, false) => format!(
            "runs of {} disagree ({} vs {}): the file changed while measuring",
            cells.name(i),
            f(y),
            f(x)
        ),
        (false, _) => format!(
            "{} read the same bytes as {} but got XOR {}, not {}",
            cells.name(i),
            cells.name(j),
            f(x),
            f(y)
        ),
    };
    Err(Error::failed("checksum mismatch", why))
}
