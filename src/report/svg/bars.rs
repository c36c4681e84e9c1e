//! Grouped bar charts (access by method, pattern and cache; system-call costs): colour and
//! hatching per series, an upright note on each bar.

use super::*;
use std::fmt::Write;

/// A bar chart: groups along x, one bar per series in each group, an optional label on top.
#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    /// The title.
    pub title: String,
    /// The y axis label.
    pub y_label: String,
    /// One group of bars per entry (x axis).
    pub groups: Vec<String>,
    /// One bar per series in every group (legend).
    pub series: Vec<String>,
    /// `values[group][series]`; `None` leaves a gap.
    pub values: Vec<Vec<Option<f64>>>,
    /// Text above each bar (e.g. a p99), same shape as `values`.
    pub notes: Vec<Vec<Option<String>>>,
    /// Y on a log scale.
    pub log_y: bool,
}

const HATCH: [&str; 4] = ["", "url(#h1)", "url(#h2)", "url(#h3)"];
/// A bar's note: its text size, and the narrowest bar it is written on (upright, a line of
/// text is about this wide). The plot is scaled to its box: at a phone's 358 px, 600 units
/// are 0.6 of a pixel, and a note of 15 stays 10 px high.
const NOTE_FONT: f64 = 15.0;
const NOTE_MIN_BAR: f64 = 17.0;

/// Renders a grouped bar chart; series differ by colour and by hatching for grey-scale print.
pub fn bar_chart(b: &Bars) -> String {
    let pw = W - LEFT - RIGHT;
    let ph = PH;
    let h = height(BAR_BOTTOM, b.series.len());
    let vals = || b.values.iter().flatten().flatten().copied();
    let max = vals().fold(0.0f64, f64::max);
    let minpos = vals().filter(|v| *v > 0.0).fold(f64::MAX, f64::min);
    let (lo, hi) = if b.log_y && max > 0.0 {
        (
            minpos.log10().floor(),
            max.log10().ceil().max(minpos.log10().floor() + 1.0),
        )
    } else {
        (
            0.0,
            if max > 0.0 {
                (max * 1.1 / nice_step(max * 1.1)).ceil() * nice_step(max * 1.1)
            } else {
                1.0
            },
        )
    };
    let sy = |v: f64| {
        let t = if b.log_y {
            (v.max(10f64.powf(lo)).log10() - lo) / (hi - lo)
        } else {
            v / hi
        };
        TOP + ph - t * ph
    };
    let mut o = String::new();
    let _ = write!(
        o,
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {h}" width="{W}" height="{h}" font-family="sans-serif" font-size="{FONT}" role="img" aria-label="{t}"><title>{t}</title><defs><pattern id="h1" width="6" height="6" patternUnits="userSpaceOnUse"><path d="M0,6 l6,-6" stroke="white" stroke-width="1.5"/></pattern><pattern id="h2" width="6" height="6" patternUnits="userSpaceOnUse"><circle cx="3" cy="3" r="1.2" fill="white"/></pattern><pattern id="h3" width="6" height="6" patternUnits="userSpaceOnUse"><path d="M0,3 h6" stroke="white" stroke-width="1.5"/></pattern></defs><rect width="{W}" height="{h}" fill="white"/><text x="{}" y="28" font-size="{TITLE_FONT}" text-anchor="middle">{t}</text>"##,
        W / 2.0,
        t = esc(&b.title)
    );
    // y grid
    let ticks: Vec<f64> = if b.log_y {
        (lo as i32..=hi as i32).map(|e| 10f64.powi(e)).collect()
    } else {
        let step = nice_step(hi);
        (0..=((hi / step).round() as usize))
            .map(|i| i as f64 * step)
            .collect()
    };
    for y in ticks {
        let py = sy(y);
        let label = tick_label(y);
        let _ = write!(
            o,
            r##"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{label}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            py + 4.0
        );
    }
    let ng = b.groups.len().max(1) as f64;
    let gw = pw / ng;
    let ns = b.series.len().max(1) as f64;
    let bw = (gw * 0.8 / ns).min(60.0);
    for (g, name) in b.groups.iter().enumerate() {
        let gx = LEFT + g as f64 * gw + (gw - bw * ns) / 2.0;
        for (s, v) in b.values.get(g).into_iter().flatten().enumerate() {
            let Some(v) = v else { continue };
            let note = b
                .notes
                .get(g)
                .and_then(|n| n.get(s))
                .and_then(|n| n.as_deref());
            bar(&mut o, s, (gx + s as f64 * bw, sy(*v)), bw, note);
        }
        let _ = write!(
            o,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end" transform="rotate(-30 {:.1} {:.1})">{}</text>"#,
            LEFT + g as f64 * gw + gw / 2.0,
            TOP + ph + 16.0,
            LEFT + g as f64 * gw + gw / 2.0,
            TOP + ph + 16.0,
            esc(name)
        );
    }
    let _ = write!(
        o,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#333"/><text transform="translate(18,{}) rotate(-90)" text-anchor="middle">{}</text>"##,
        TOP + ph / 2.0,
        esc(&b.y_label)
    );
    legend(&mut o, &b.series);
    o.push_str("</svg>\n");
    unique_ids(&o, &b.title, &b.series.join("\u{1f}"))
}

/// Bar `s` of a group, its top left at `(x, y)`, `bw` wide, with its note above it (or inside
/// its top when there is no room above).
fn bar(o: &mut String, s: usize, (x, y): (f64, f64), bw: f64, note: Option<&str>) {
    let color = COLORS[s % COLORS.len()];
    let _ = write!(
        o,
        r#"<g class="bar"><rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{color}"/>"#,
        bw - 2.0,
        (TOP + PH - y).max(0.0)
    );
    let hatch = HATCH[s % HATCH.len()];
    if !hatch.is_empty() {
        let _ = write!(
            o,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{hatch}"/>"#,
            bw - 2.0,
            (TOP + PH - y).max(0.0)
        );
    }
    if let Some(note) = note
        && bw >= NOTE_MIN_BAR
    {
        // Upright, so that it is never wider than its bar: above the bar, or inside it from its
        // top when there is no room above; a white halo keeps it legible on the bar.
        let cx = x + bw / 2.0 + NOTE_FONT * 0.35 - 1.0;
        let len = note.chars().count() as f64 * NOTE_FONT * 0.62;
        let (ny, anchor) = if y - 3.0 - len >= TOP + 2.0 {
            (y - 3.0, "start")
        } else {
            (y + 3.0, "end")
        };
        let _ = write!(
            o,
            r#"<text x="{cx:.1}" y="{ny:.1}" font-size="{NOTE_FONT}" text-anchor="{anchor}" transform="rotate(-90 {cx:.1} {ny:.1})" paint-order="stroke" stroke="white" stroke-width="3">{}</text>"#,
            esc(note)
        );
    }
    o.push_str("</g>");
}

/// The hatch patterns' ids made this plot's own (`p1a2b3c4d-h1`), from its title and series:
/// several plots inline in one HTML page must not share ids, or each takes the first's.
fn unique_ids(svg: &str, title: &str, series: &str) -> String {
    // FNV-1a, 32 bits: stable across runs and builds, unlike the std hasher.
    let mut h: u32 = 0x811c_9dc5;
    for b in title.bytes().chain([0]).chain(series.bytes()) {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    let mut out = svg.to_string();
    for k in 1..HATCH.len() {
        out = out
            .replace(&format!("id=\"h{k}\""), &format!("id=\"p{h:08x}-h{k}\""))
            .replace(&format!("url(#h{k})"), &format!("url(#p{h:08x}-h{k})"));
    }
    out
}

/// The series' legend under the plot: a swatch (hatched as its bars) and the name.
fn legend(o: &mut String, series: &[String]) {
    for (s, name) in series.iter().enumerate() {
        let (lx, ly) = legend_at(s, BAR_BOTTOM);
        let color = COLORS[s % COLORS.len()];
        let hatch = HATCH[s % HATCH.len()];
        let _ = write!(
            o,
            r#"<rect x="{lx}" y="{:.1}" width="14" height="12" fill="{color}"/>"#,
            ly - 8.0
        );
        if !hatch.is_empty() {
            let _ = write!(
                o,
                r#"<rect x="{lx}" y="{:.1}" width="14" height="12" fill="{hatch}"/>"#,
                ly - 8.0
            );
        }
        let _ = write!(
            o,
            r#"<text x="{}" y="{:.1}">{}</text>"#,
            lx + 20.0,
            ly + 2.0,
            esc(name)
        );
    }
}

#[cfg(test)]
mod bar_tests {
    use super::*;

    #[test]
    fn bars_render_every_value_and_skip_gaps() {
        let b = Bars {
            title: "t".into(),
            y_label: "KIOPS".into(),
            groups: vec!["read".into(), "mmap".into()],
            series: vec!["seq".into(), "random".into()],
            values: vec![vec![Some(10.0), Some(2.0)], vec![None, Some(30.0)]],
            notes: vec![vec![Some("p99 3us".into()), None], vec![None, None]],
            log_y: false,
        };
        let svg = bar_chart(&b);
        assert_eq!(svg.matches(r#"<g class="bar">"#).count(), 3);
        assert!(svg.contains("p99 3us"));
        let log = bar_chart(&Bars { log_y: true, ..b });
        assert!(log.contains("</svg>"));
    }
}
