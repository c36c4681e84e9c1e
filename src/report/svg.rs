//! Line plots as self-contained SVG: log2 or linear x, error bars, and series told apart by
//! colour, dash and marker so they survive grey-scale print.

use std::fmt::Write;

mod bars;
pub use bars::{Bars, bar_chart};

/// A point with its spread.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// X.
    pub x: f64,
    /// Y (the median).
    pub y: f64,
    /// Error bar from `lo` to `hi` (equal to `y` for none).
    pub lo: f64,
    /// Top of the spread bar.
    pub hi: f64,
}

impl Point {
    /// A point with no spread bar.
    pub fn exact(x: f64, y: f64) -> Point {
        Point { x, y, lo: y, hi: y }
    }
}

/// A time series' points: `(x, y)` pairs, those without a `y` left out.
pub fn series_points(xy: impl IntoIterator<Item = (f64, Option<f64>)>) -> Vec<Point> {
    xy.into_iter()
        .filter_map(|(x, y)| y.map(|y| Point::exact(x, y)))
        .collect()
}

/// One line of a plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Its legend entry.
    pub name: String,
    /// Its points.
    pub points: Vec<Point>,
}

/// A line plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// The title.
    pub title: String,
    /// The x axis label.
    pub x_label: String,
    /// The y axis label.
    pub y_label: String,
    /// X on a log2 scale (block sizes).
    pub log2_x: bool,
    /// Log10 y axis (values must be positive).
    pub log_y: bool,
    /// The lines.
    pub series: Vec<Series>,
}

impl Plot {
    /// A plot against time: both axes linear.
    pub fn over_time(
        title: impl Into<String>,
        x_label: &str,
        y_label: &str,
        series: Vec<Series>,
    ) -> Plot {
        Plot {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            log2_x: false,
            log_y: false,
            series,
        }
    }
}

// Sized for a phone as much as a desk: 600 units shown 358 px wide on a 390 px screen keep the
// 15-unit text at 9 px; the legend goes under the plot, two entries a row, so the plot keeps the
// width.
const W: f64 = 600.0;
/// The plotting area's height.
const PH: f64 = 300.0;
/// Left of the plotting area: a y tick label of up to five characters ([`tick_label`]) and the
/// y axis title beside it.
const LEFT: f64 = 72.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 46.0;
/// Under a line plot's area: tick labels and the x axis label.
const BOTTOM: f64 = 58.0;
/// Under a bar chart's area: the slanted group names.
const BAR_BOTTOM: f64 = 86.0;
const LEGEND_ROW: f64 = 22.0;
const LEGEND_COLS: usize = 2;
/// The text size, in the SVG's own units.
pub const FONT: f64 = 15.0;
const TITLE_FONT: f64 = 17.0;

/// The height of a plot with `entries` legend entries under an area with `below` beneath it.
fn height(below: f64, entries: usize) -> f64 {
    TOP + PH + below + entries.div_ceil(LEGEND_COLS) as f64 * LEGEND_ROW + 8.0
}

/// Where legend entry `i` goes: `(x, y)` of its baseline's start.
fn legend_at(i: usize, below: f64) -> (f64, f64) {
    let col = (i % LEGEND_COLS) as f64;
    let row = (i / LEGEND_COLS) as f64;
    let pw = W - LEFT - RIGHT;
    (
        LEFT + col * pw / LEGEND_COLS as f64,
        TOP + PH + below + 6.0 + row * LEGEND_ROW,
    )
}
const COLORS: [&str; 8] = [
    "#1f4e9c", "#c0392b", "#1e8449", "#7d3c98", "#d68910", "#117a65", "#5d6d7e", "#922b21",
];
const DASHES: [&str; 4] = ["", "6,4", "2,3", "10,3,2,3"];
/// A linear x axis with more distinct values than this gets round, evenly spaced ticks.
const MAX_X_TICKS: usize = 12;

use super::escape_html as esc;

/// Short axis label for a byte count: 512, 4K, 1M.
fn bytes_label(v: f64) -> String {
    let v = v.round() as u64;
    for (unit, s) in [(1u64 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")] {
        if v >= unit && v.is_multiple_of(unit) {
            return format!("{}{s}", v / unit);
        }
    }
    v.to_string()
}

/// A y tick's label in at most five characters: `0`, `2.5`, `750`, `9000`, `15k`, `12.5k`, `3M`,
/// `0.001`; wider numbers ran into the axis title.
fn tick_label(y: f64) -> String {
    let trim = |v: String| {
        if v.contains('.') {
            v.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            v
        }
    };
    // Scaled to one of the suffixes, one decimal under 100 and none above.
    let short = |v: f64, suffix: &str| {
        let digits = if v.abs() >= 100.0 { 0 } else { 1 };
        format!("{}{suffix}", trim(format!("{v:.digits$}")))
    };
    let a = y.abs();
    if a >= 1e12 {
        short(y / 1e12, "T")
    } else if a >= 1e9 {
        short(y / 1e9, "G")
    } else if a >= 1e6 {
        short(y / 1e6, "M")
    } else if a >= 1e4 {
        short(y / 1e3, "k")
    } else if a >= 1.0 || a == 0.0 {
        short(y, "")
    } else {
        trim(format!("{y:.4}"))
    }
}

fn nice_step(range: f64) -> f64 {
    let raw = range / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    mag * if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    }
}

fn marker(out: &mut String, i: usize, x: f64, y: f64, color: &str) {
    let _ = match i % 4 {
        0 => write!(
            out,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="{color}"/>"#
        ),
        1 => write!(
            out,
            r#"<rect x="{:.1}" y="{:.1}" width="7" height="7" fill="{color}"/>"#,
            x - 3.5,
            y - 3.5
        ),
        2 => write!(
            out,
            r#"<path d="M{x:.1},{:.1} l4,7 h-8 z" fill="{color}"/>"#,
            y - 4.0
        ),
        _ => write!(
            out,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="3.5" fill="white" stroke="{color}" stroke-width="1.5"/>"#
        ),
    };
}

/// Renders the plot. Empty series are skipped; a plot with no points still renders its axes.
pub fn line_plot(p: &Plot) -> String {
    let pts = || p.series.iter().flat_map(|s| s.points.iter());
    let tx = |x: f64| {
        if p.log2_x {
            x.max(f64::MIN_POSITIVE).log2()
        } else {
            x
        }
    };
    let (mut x0, mut x1) = pts().fold((f64::MAX, f64::MIN), |(a, b), q| {
        (a.min(tx(q.x)), b.max(tx(q.x)))
    });
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if x0 == x1 {
        (x0, x1) = (x0 - 1.0, x1 + 1.0);
    }
    let ymax = pts().fold(0.0f64, |m, q| m.max(q.hi).max(q.y));
    let ymin_pos = pts()
        .map(|q| q.lo.min(q.y))
        .filter(|v| *v > 0.0)
        .fold(f64::MAX, f64::min);
    let step = nice_step(if ymax > 0.0 { ymax * 1.05 } else { 1.0 });
    let y1 = ((ymax * 1.05) / step).ceil().max(1.0) * step;
    let (l0, l1) = if ymax > 0.0 && ymin_pos < f64::MAX {
        (
            ymin_pos.log10().floor(),
            ymax.log10().ceil().max(ymin_pos.log10().floor() + 1.0),
        )
    } else {
        (0.0, 1.0)
    };
    let pw = W - LEFT - RIGHT;
    let ph = PH;
    let shown = p.series.iter().filter(|s| !s.points.is_empty()).count();
    let h = height(BOTTOM, shown);
    let sx = |x: f64| LEFT + (tx(x) - x0) / (x1 - x0) * pw;
    let sy = |y: f64| {
        if p.log_y {
            TOP + ph - (y.max(10f64.powf(l0)).log10() - l0) / (l1 - l0) * ph
        } else {
            TOP + ph - y / y1 * ph
        }
    };
    let mut o = String::new();
    let _ = write!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {h}" width="{W}" height="{h}" font-family="sans-serif" font-size="{FONT}" role="img" aria-label="{t}"><title>{t}</title><rect width="{W}" height="{h}" fill="white"/>"#,
        t = esc(&p.title)
    );
    let _ = write!(
        o,
        r#"<text x="{}" y="28" font-size="{TITLE_FONT}" text-anchor="middle">{}</text>"#,
        W / 2.0,
        esc(&p.title)
    );
    // Grid and y ticks.
    let yticks: Vec<f64> = if p.log_y {
        (l0 as i32..=l1 as i32).map(|e| 10f64.powi(e)).collect()
    } else {
        (0..=((y1 / step).round() as usize))
            .map(|i| i as f64 * step)
            .collect()
    };
    for y in yticks {
        let py = sy(y);
        let _ = write!(
            o,
            r##"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + pw,
            LEFT - 6.0,
            py + 4.0,
            tick_label(y)
        );
    }
    x_ticks(&mut o, p, (x0, x1), &sx);
    let _ = write!(
        o,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#333"/><text x="{}" y="{}" text-anchor="middle">{}</text><text transform="translate(18,{}) rotate(-90)" text-anchor="middle">{}</text>"##,
        LEFT + pw / 2.0,
        TOP + ph + 44.0,
        esc(&p.x_label),
        TOP + ph / 2.0,
        esc(&p.y_label)
    );
    for (i, s) in p.series.iter().filter(|s| !s.points.is_empty()).enumerate() {
        draw_series(&mut o, i, s, &sx, &sy);
    }
    o.push_str("</svg>\n");
    o
}

/// The x axis's ticks: each distinct x of the data, or, on a linear axis with many of them (a
/// time series), evenly spaced round values, so that labels do not run into each other.
fn x_ticks(o: &mut String, p: &Plot, (x0, x1): (f64, f64), sx: &dyn Fn(f64) -> f64) {
    let mut xs: Vec<f64> = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|q| q.x))
        .collect();
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.dedup();
    if !p.log2_x && xs.len() > MAX_X_TICKS {
        let step = nice_step(x1 - x0);
        let first = (x0 / step).ceil() as i64;
        let last = (x1 / step).floor() as i64;
        xs = (first..=last).map(|i| i as f64 * step).collect();
    }
    for x in xs {
        let px = sx(x);
        let label = if p.log2_x {
            bytes_label(x)
        } else {
            // Three significant digits at most: 1.0003 is "1", 0.25 stays.
            let v = format!("{:.3}", x);
            v.trim_end_matches('0').trim_end_matches('.').to_string()
        };
        let _ = write!(
            o,
            r##"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="#999"/><text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
            TOP + PH,
            TOP + PH + 5.0,
            TOP + PH + 21.0,
            esc(&label)
        );
    }
}

/// One series: its line, its points with their ranges, and its legend entry.
fn draw_series(
    o: &mut String,
    i: usize,
    s: &Series,
    sx: &dyn Fn(f64) -> f64,
    sy: &dyn Fn(f64) -> f64,
) {
    let color = COLORS[i % COLORS.len()];
    let dash = DASHES[(i / COLORS.len() + i) % DASHES.len()];
    let path: Vec<String> = s
        .points
        .iter()
        .map(|q| format!("{:.1},{:.1}", sx(q.x), sy(q.y)))
        .collect();
    let _ = write!(
        o,
        r#"<g class="series"><polyline points="{}" fill="none" stroke="{color}" stroke-width="2" stroke-dasharray="{dash}"/>"#,
        path.join(" ")
    );
    for q in &s.points {
        let px = sx(q.x);
        if q.hi > q.lo {
            let _ = write!(
                o,
                r#"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}" stroke="{color}"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}"/><line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}"/>"#,
                sy(q.lo),
                sy(q.hi),
                px - 4.0,
                sy(q.lo),
                px + 4.0,
                sy(q.lo),
                px - 4.0,
                sy(q.hi),
                px + 4.0,
                sy(q.hi)
            );
        }
        marker(o, i, px, sy(q.y), color);
    }
    let (lx, ly) = legend_at(i, BOTTOM);
    let _ = write!(
        o,
        r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="2" stroke-dasharray="{dash}"/>"#,
        lx + 30.0
    );
    marker(o, i, lx + 15.0, ly, color);
    let _ = write!(
        o,
        r#"<text x="{}" y="{}">{}</text></g>"#,
        lx + 38.0,
        ly + 4.0,
        esc(&s.name)
    );
}

/// Stacks SVG panels vertically into one SVG element.
pub fn stack(panels: &[String], label: &str) -> String {
    let size = |svg: &str, attr: &str| -> f64 {
        svg.split(&format!(" {attr}=\""))
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    let width = panels.iter().map(|p| size(p, "width")).fold(0.0, f64::max);
    let mut y = 0.0;
    let mut inner = String::new();
    for p in panels {
        let h = size(p, "height");
        // The panel's content, without its own <svg> element, shifted down: one <svg> in all,
        // as a page that inlines plots expects.
        let body = p
            .find("<svg")
            .and_then(|at| p[at..].find('>').map(|end| at + end + 1))
            .and_then(|start| p.rfind("</svg>").map(|end| &p[start..end]))
            .unwrap_or("");
        inner.push_str(&format!("<g transform=\"translate(0,{y})\">{body}</g>"));
        y += h;
    }
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {y}" width="{width}" height="{y}" font-family="sans-serif" font-size="{}" role="img" aria-label="{}">{inner}</svg>
"#,
        FONT,
        esc(label)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panels_stack_into_one_svg() {
        let a = r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 860 500" width="860" height="500"><rect/></svg>"#;
        let s = stack(&[a.to_string(), a.to_string()], "two");
        assert!(
            s.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 860 1000\"")
        );
        assert_eq!(s.matches("<svg").count(), 1, "one svg element: {s}");
        assert!(s.contains("<g transform=\"translate(0,500)\"><rect/></g>"));
        assert!(s.trim_end().ends_with("</g></svg>"));
    }

    #[test]
    fn a_long_time_series_gets_round_ticks() {
        let points: Vec<Point> = (1..=20)
            .map(|i| {
                let x = i as f64 + 0.0003 * i as f64;
                Point {
                    x,
                    y: 1.0,
                    lo: 1.0,
                    hi: 1.0,
                }
            })
            .collect();
        let svg = line_plot(&Plot {
            title: "t".into(),
            x_label: "seconds".into(),
            y_label: "KIOPS".into(),
            log2_x: false,
            log_y: false,
            series: vec![Series {
                name: "a".into(),
                points,
            }],
        });
        let labels: Vec<&str> = svg
            .split("text-anchor=\"middle\">")
            .skip(1)
            .filter_map(|t| t.split('<').next())
            .filter(|t| t.parse::<f64>().is_ok())
            .collect();
        assert!(
            labels.len() <= MAX_X_TICKS && labels.len() >= 3,
            "{labels:?}"
        );
        assert!(labels.iter().all(|l| !l.contains('.')), "round: {labels:?}");
        // Few distinct values keep one tick each, shortened.
        let few = line_plot(&Plot {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            log2_x: false,
            log_y: false,
            series: vec![Series {
                name: "a".into(),
                points: vec![
                    Point {
                        x: 1.0003,
                        y: 1.0,
                        lo: 1.0,
                        hi: 1.0,
                    },
                    Point {
                        x: 2.5,
                        y: 1.0,
                        lo: 1.0,
                        hi: 1.0,
                    },
                ],
            }],
        });
        assert!(few.contains(">1<") && few.contains(">2.5<"), "{few}");
    }

    #[test]
    fn renders_series_axes_and_escapes() {
        let p = Plot {
            title: "a < b".into(),
            x_label: "block size".into(),
            y_label: "MiB/s".into(),
            log2_x: true,
            log_y: false,
            series: vec![
                Series {
                    name: "read & warm".into(),
                    points: vec![
                        Point {
                            x: 512.0,
                            y: 10.0,
                            lo: 8.0,
                            hi: 12.0,
                        },
                        Point {
                            x: 4096.0,
                            y: 40.0,
                            lo: 40.0,
                            hi: 40.0,
                        },
                    ],
                },
                Series {
                    name: "empty".into(),
                    points: vec![],
                },
            ],
        };
        let svg = line_plot(&p);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert!(svg.contains("a &lt; b") && svg.contains("read &amp; warm"));
        assert!(svg.contains(">4K<") && svg.contains(">512<"));
        let empty = line_plot(&Plot {
            series: vec![],
            ..p
        });
        assert!(empty.contains("</svg>"));
    }
}

#[cfg(test)]
mod tick_tests {
    use super::tick_label;

    #[test]
    fn tick_labels_stay_short() {
        for (y, want) in [
            (0.0, "0"),
            (2.5, "2.5"),
            (750.0, "750"),
            (9000.0, "9000"),
            (15000.0, "15k"),
            (12500.0, "12.5k"),
            (3e6, "3M"),
            (0.001, "0.001"),
            (0.30000000000000004, "0.3"),
            (1e10, "10G"),
        ] {
            assert_eq!(tick_label(y), want, "{y}");
        }
        // 0.001 up to about 1e15.
        for i in 0..130 {
            let y = 1.37f64.powi(i) / 1000.0;
            assert!(tick_label(y).chars().count() <= 6, "{y}: {}", tick_label(y));
        }
    }
}
