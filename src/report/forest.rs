//! A forest plot of ratios: one row per comparison, the ratio as a dot and its interval as a bar
//! on a log axis, the "within 5%" band shaded and a line at 1, the verdict by colour. Rendered
//! as HTML (text stays text at any width: no scaled-down labels on a phone) and as text (a
//! terminal, a Markdown code block). Pure functions of typed rows.

use crate::measure::decide::MARGIN;

/// What a row's comparison concluded, for its colour and mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// A winner (in a baseline: a reversal or a move).
    Winner,
    /// Within 5% (in a baseline: held).
    Within,
    /// Undecided, with an interval.
    Undecided,
    /// Too few rounds for an interval: the ratio alone.
    Budget,
}

impl Mark {
    fn class(self) -> &'static str {
        match self {
            Mark::Winner => "w",
            Mark::Within => "e",
            Mark::Undecided => "u",
            Mark::Budget => "b",
        }
    }

    fn word(self) -> &'static str {
        match self {
            Mark::Winner => "a winner",
            Mark::Within => "within 5%",
            Mark::Undecided => "undecided",
            Mark::Budget => "undecided (budget), no interval",
        }
    }
}

/// One row: its label, the ratio and its interval (none: too few rounds), what it decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// The comparison's name (its key and sides).
    pub label: String,
    /// The ratio.
    pub ratio: f64,
    /// Its interval, when there is one.
    pub ci: Option<[f64; 2]>,
    /// What it decided.
    pub mark: Mark,
}

/// The axis: the ratios' and intervals' span, the band and 1 always in it, padded, at most
/// 1/1000..1000 (a wider interval is cut at the edge and says so by an arrow).
struct Axis {
    lo: f64,
    hi: f64,
}

impl Axis {
    fn of(rows: &[Estimate]) -> Axis {
        let mut lo = 1.0 / 1.2f64;
        let mut hi = 1.2f64;
        for r in rows {
            for x in std::iter::once(r.ratio).chain(r.ci.into_iter().flatten()) {
                if x > 0.0 && x.is_finite() {
                    lo = lo.min(x);
                    hi = hi.max(x);
                }
            }
        }
        Axis {
            lo: (lo / 1.15).max(1e-3),
            hi: (hi * 1.15).min(1e3),
        }
    }

    /// Where `x` falls, 0..=1 (clamped to the axis).
    fn at(&self, x: f64) -> f64 {
        if x <= 0.0 || !x.is_finite() {
            return 0.0;
        }
        ((x.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())).clamp(0.0, 1.0)
    }

    /// Tick values inside the axis: powers of ten, with 2 and 5 between when the axis spans
    /// under three decades.
    fn ticks(&self) -> Vec<f64> {
        let decades = (self.hi / self.lo).log10();
        let steps: &[f64] = if decades < 3.0 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        let mut out = Vec::new();
        for e in -3..=3 {
            for s in steps {
                let x = s * 10f64.powi(e);
                if x >= self.lo && x <= self.hi {
                    out.push(x);
                }
            }
        }
        out
    }
}

fn tick_word(x: f64) -> String {
    if x >= 1.0 {
        format!("{x:.0}x")
    } else {
        format!("{x}x")
    }
}

/// The plot in HTML: a row per comparison (label above its track), an axis below; the page's
/// style gives `.forest` its look ([`STYLE`]).
pub fn html(rows: &[Estimate], caption: &str) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let ax = Axis::of(rows);
    let pct = |x: f64| format!("{:.2}%", 100.0 * ax.at(x));
    let band = (ax.at(1.0 / MARGIN), ax.at(MARGIN));
    let mut out = format!(
        "<figure class=\"forest\"><figcaption>{}</figcaption>",
        esc(caption)
    );
    for r in rows {
        out.push_str(&format!(
            "<div class=\"fr\"><div class=\"fl\">{}</div><div class=\"ft\" title=\"{:.2}x{}: {}\">",
            esc(&r.label),
            r.ratio,
            r.ci.map(|c| format!(", interval {:.2}-{:.2}x", c[0], c[1]))
                .unwrap_or_default(),
            r.mark.word()
        ));
        out.push_str(&format!(
            "<span class=\"band\" style=\"left:{:.2}%;width:{:.2}%\"></span><span class=\"one\" style=\"left:{}\"></span>",
            100.0 * band.0,
            100.0 * (band.1 - band.0),
            pct(1.0)
        ));
        if let Some([lo, hi]) = r.ci {
            let (a, b) = (ax.at(lo), ax.at(hi));
            out.push_str(&format!(
                "<span class=\"ci {}\" style=\"left:{:.2}%;width:{:.2}%\"></span>",
                r.mark.class(),
                100.0 * a,
                (100.0 * (b - a)).max(0.4)
            ));
        }
        out.push_str(&format!(
            "<span class=\"dot {}\" style=\"left:{}\"></span></div></div>",
            r.mark.class(),
            pct(r.ratio)
        ));
    }
    out.push_str("<div class=\"fr\"><div class=\"fl\"></div><div class=\"fx\">");
    for t in ax.ticks() {
        out.push_str(&format!(
            "<span style=\"left:{}\">{}</span>",
            pct(t),
            tick_word(t)
        ));
    }
    out.push_str("</div></div><div class=\"fk\"><span class=\"dot w\"></span> a winner <span class=\"dot e\"></span> within 5% <span class=\"dot u\"></span> undecided <span class=\"dot b\"></span> too few rounds for an interval; shaded: 1/1.05..1.05</div></figure>");
    out
}

/// The look of [`html`]'s figure, for the page's style sheet.
pub const STYLE: &str = concat!(
    "figure.forest{max-width:none;margin:1rem 0;padding:.5rem;border:1px solid #ddd;border-radius:4px}",
    ".forest figcaption{font-weight:600;margin-bottom:.4rem}",
    ".fr{margin:.15rem 0}.fl{font-size:.85rem}",
    ".ft,.fx{position:relative;height:14px;margin:0 .5rem}",
    ".fx{height:1.2rem;font-size:.75rem;color:#555}",
    ".fx span{position:absolute;transform:translateX(-50%);white-space:nowrap}",
    ".ft span{position:absolute;top:0;height:14px}",
    ".ft .band{background:#e6e6e6}.ft .one{width:1px;background:#777}",
    ".ft .ci{top:6px;height:3px}",
    ".dot{display:inline-block;width:10px;height:10px;border-radius:50%;margin-left:-5px;top:2px}",
    ".fk .dot{margin:0 .2rem 0 .6rem;position:relative;top:1px}.fk{font-size:.75rem;color:#555;margin-top:.3rem}",
    ".w{background:#1f6fb2}.e{background:#3a8a2a}.u{background:#999}.b{background:#fff;border:2px solid #999}",
);

/// The plot as text, `width` characters of track: `[--o--]` on a line of `.` with `|` at 1
/// and `:` at the band's edges; a mark after it (`W` winner, `=` within 5%, `?` undecided, `-`
/// no interval), then the label.
pub fn text(rows: &[Estimate], width: usize) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let ax = Axis::of(rows);
    let w = width.max(20);
    let col = |x: f64| ((ax.at(x) * (w - 1) as f64).round() as usize).min(w - 1);
    let mut out = String::new();
    for r in rows {
        let mut line = vec!['.'; w];
        line[col(1.0 / MARGIN)] = ':';
        line[col(MARGIN)] = ':';
        line[col(1.0)] = '|';
        if let Some([lo, hi]) = r.ci {
            let (a, b) = (col(lo), col(hi));
            for c in line.iter_mut().take(b + 1).skip(a) {
                *c = '-';
            }
            line[a] = if lo < ax.lo { '<' } else { '[' };
            line[b] = if hi > ax.hi { '>' } else { ']' };
        }
        line[col(r.ratio)] = 'o';
        let mark = match r.mark {
            Mark::Winner => 'W',
            Mark::Within => '=',
            Mark::Undecided => '?',
            Mark::Budget => '-',
        };
        out.push_str(&format!(
            "{} {mark} {:>7} {}\n",
            line.iter().collect::<String>(),
            format!("{:.2}x", r.ratio),
            r.label
        ));
    }
    // The axis: each tick's word under its column, where it fits.
    let mut axis = vec![' '; w + 12];
    for t in ax.ticks() {
        let word = tick_word(t);
        let start = col(t).saturating_sub(word.len() / 2);
        if start + word.len() <= axis.len()
            && axis[start.saturating_sub(1)..start + word.len()]
                .iter()
                .all(|c| *c == ' ')
        {
            for (i, ch) in word.chars().enumerate() {
                axis[start + i] = ch;
            }
        }
    }
    out.push_str(axis.iter().collect::<String>().trim_end());
    out.push_str("\no ratio, [---] its interval at 95% (< > cut at the edge), | 1, : the 5% band; W a winner, = within 5%, ? undecided, - no interval (too few rounds)\n");
    out
}

/// A row per finding: its key and sides (first over second), its ratio and interval, its verdict.
pub fn of_findings(findings: &[crate::measure::finding::Finding]) -> Vec<Estimate> {
    use crate::measure::decide::Decided;
    findings
        .iter()
        .map(|f| {
            let ci = (f.ci[0] > 0.0 && f.ci[1] > 0.0).then_some(f.ci);
            let label = match f.sides.as_slice() {
                [a, b, ..] => format!("{}: {} / {}", f.key, a.name, b.name),
                _ => f.key.clone(),
            };
            Estimate {
                label,
                ratio: f.ratio,
                ci,
                mark: match (f.decided, ci) {
                    (Some(Decided::Winner), _) => Mark::Winner,
                    (Some(Decided::Equivalent), _) => Mark::Within,
                    (_, None) => Mark::Budget,
                    _ => Mark::Undecided,
                },
            }
        })
        .collect()
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(label: &str, ratio: f64, ci: Option<[f64; 2]>, mark: Mark) -> Estimate {
        Estimate {
            label: label.into(),
            ratio,
            ci,
            mark,
        }
    }

    #[test]
    fn each_row_is_placed_on_one_log_axis() {
        let rows = [
            row("a", 2.0, Some([1.5, 2.5]), Mark::Winner),
            row("b", 1.0, Some([0.98, 1.02]), Mark::Within),
            row("c", 0.5, None, Mark::Budget),
        ];
        let ax = Axis::of(&rows);
        // 1 sits where the log axis puts it; the ratios in order.
        assert!(ax.at(0.5) < ax.at(1.0) && ax.at(1.0) < ax.at(2.0));
        let mid = ax.at((ax.lo * ax.hi).sqrt());
        assert!((mid - 0.5).abs() < 1e-9);
        let t = text(&rows, 41);
        let lines: Vec<&str> = t.lines().collect();
        // The dot of a 2x ratio right of the line at 1, of 0.5x left of it.
        let one = lines[2].find('|').unwrap();
        assert!(lines[0].find('o').unwrap() > one, "{t}");
        assert!(lines[2].find('o').unwrap() < one, "{t}");
        assert!(lines[0].contains('[') && lines[0].contains(']') && lines[0].contains(" W "));
        assert!(!lines[2].contains('[') && lines[2].contains(" - "), "{t}");
        assert!(lines[3].contains("1x") && lines[3].contains("2x"), "{t}");
        let h = html(&rows, "Findings");
        assert_eq!(
            h.matches("class=\"fr\"").count(),
            4,
            "three rows and the axis"
        );
        assert_eq!(
            h.matches("class=\"ci ").count(),
            2,
            "no bar without an interval"
        );
        assert!(h.contains("dot b"));
        // An interval past the axis's end is cut there, and said.
        let wide = [row("x", 10.0, Some([2.58, 5e4]), Mark::Winner)];
        assert!(text(&wide, 30).lines().next().unwrap().contains('>'));
        assert!(html(&[], "none").is_empty() && text(&[], 30).is_empty());
        assert!(html(&[row("<b>", 1.0, None, Mark::Budget)], "t").contains("&lt;b&gt;"));
    }
}
