//! What `transfer` concludes: the best sender and receiver pair.

use super::TransferResult;
use crate::measure::decide::{Decided, Spend};
use crate::measure::finding::{Better, Finding, Pairing, Side, compare};
use crate::transfer::{RecvMethod, SendMethod};

/// The fastest transfer pair (by median) against plain read:write; when read:write is itself the
/// fastest, against the runner-up. A pair is never compared with itself.
pub fn transfer_best(t: &TransferResult, spend: Spend) -> Option<Finding> {
    let name = |s: SendMethod, r: RecvMethod| format!("{}:{}", s.name(), r.name());
    let mut by_median: Vec<_> = t.pairs.iter().filter(|p| p.mib_s.n > 0).collect();
    by_median.sort_by(|a, b| b.mib_s.median.total_cmp(&a.mib_s.median));
    let base = by_median
        .iter()
        .find(|p| p.sender == SendMethod::Read && p.receiver == RecvMethod::Write)?;
    let best = by_median
        .iter()
        .find(|p| (p.sender, p.receiver) != (base.sender, base.receiver))?;
    let side = |p: &crate::experiments::transfer::PairResult| Side {
        name: name(p.sender, p.receiver),
        s: p.mib_s.clone(),
        cite: format!("transfer: {}", name(p.sender, p.receiver)),
    };
    let what = "moving the classic files over loopback, the best other pair against read:write";
    let mut f = compare(
        "transfer-best",
        what,
        "MiB/s",
        Better::Higher,
        Pairing::Paired(spend),
        side(best),
        side(base),
    )?;
    // The leader by median is named only when it is also told apart from the runner-up: two
    // pairs within noise of each other would otherwise take turns as "the best".
    let best_name = name(best.sender, best.receiver);
    let base_name = name(base.sender, base.receiver);
    let runner = by_median.iter().find(|p| {
        let n = name(p.sender, p.receiver);
        n != best_name && n != base_name
    });
    if f.winner.as_deref() == Some(best_name.as_str())
        && let Some(runner) = runner
    {
        let vs = compare(
            "",
            "",
            "MiB/s",
            Better::Higher,
            Pairing::Paired(spend),
            side(best),
            side(runner),
        )?;
        if vs.winner.as_deref() != Some(best_name.as_str()) {
            let runner_name = name(runner.sender, runner.receiver);
            f.text = format!(
                "{what}: {best_name} leads, but is not told apart from {runner_name} ({})",
                vs.text.trim_start_matches(": ")
            );
            f.winner = None;
            f.decided = Some(Decided::Undecided);
            f.cites.push(format!("transfer: {runner_name}"));
        }
    }
    Some(f)
}
