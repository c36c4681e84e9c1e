//! `iolab run`'s outputs: the course program's lines and a table.

use super::{ClassicResult, RunOp};
use crate::report::{Document, Shown, Table, Value};
use crate::size::mib_per_s;
use crate::xor::format_xor;

/// `iolab run` output: the NYU course program's lines, its numbers as C++'s `cout` printed a
/// double (six significant digits), its MB being MiB; the XOR of what was written too.
pub fn run_lines(r: &ClassicResult) -> String {
    let secs = r.seconds();
    let mb = g6(r.bytes as f64 / 1_048_576.0);
    let rate = g6(mib_per_s(r.bytes, secs));
    let mut out = match r.op {
        RunOp::Read => format!(
            "Reading {} in chunks of {} .....\nNumber of blocks read: {} blocks\nSize of the file read: {mb} MB\nTime taken: {} seconds\nRate at which file was read: {rate} MiB/sec\n",
            crate::shown::path(&r.path),
            r.bs,
            r.blocks,
            g6(secs),
        ),
        RunOp::Write => format!(
            "Size of the file that was written: {mb} MB\nTime taken: {} seconds\nRate at which file was written: {rate} MiB/sec\n",
            g6(secs),
        ),
    };
    out.push_str(&format!("Xor value is {}\n", format_xor(r.xor)));
    out
}

/// A number as C++'s `cout << double` prints it by default (`%g`, six significant digits):
/// `0.00390625`, `256`, `4893.71`, `1.5e+07`.
pub fn g6(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    // The exponent after rounding to six digits decides the form, as %g does.
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |t: &str| {
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t.to_string()
        }
    };
    if (-4..6).contains(&exp) {
        trim(&format!("{v:.*}", (5 - exp) as usize))
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    }
}

/// `iolab run`: the course program's lines in text, one table row otherwise.
pub fn run_document(r: &ClassicResult) -> Document {
    let secs = r.seconds();
    let mut t = Table::titled(&["op", "method", "blocks", "bytes", "secs", "MiB/s", "xor"]);
    t.row(vec![
        Value::text(match r.op {
            RunOp::Read => "read",
            RunOp::Write => "write",
        }),
        Value::text(&r.method),
        Value::Count(r.blocks),
        Value::Count(r.bytes),
        Value::Fixed(secs, 6),
        Value::Fixed(mib_per_s(r.bytes, secs), 2),
        if r.op == RunOp::Read {
            Value::text(format_xor(r.xor))
        } else {
            Value::Missing
        },
    ]);
    Document::new()
        .table(t)
        .only(Shown::Markdown)
        .lines(run_lines(r))
        .only(Shown::Text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_cout_printed_them() {
        // printf("%g") of each, as C++'s cout prints a double by default.
        for (v, want) in [
            (256.0, "256"),
            (0.00390625, "0.00390625"),
            (4893.7123, "4893.71"),
            (0.052312, "0.052312"),
            (123456.7, "123457"),
            (1234567.0, "1.23457e+06"),
            (999999.7, "1e+06"),
            (0.0000123, "1.23e-05"),
            (0.0001, "0.0001"),
            (1.0, "1"),
            (0.0, "0"),
        ] {
            assert_eq!(g6(v), want, "{v}");
        }
    }
}
