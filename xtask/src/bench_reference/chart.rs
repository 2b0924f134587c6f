//! The SVG chart of `docs/bench-reference.svg`, written as text: one
//! horizontal bar per family from the 1× line to the family's geometric
//! mean of reference / ours on a log axis (right of the line: ours faster;
//! left, in another colour: ours slower), a tick at the family's worst case,
//! and the numbers in a column on the right.

use std::fmt::Write as _;

use super::summary::{Family, short};

/// Width of the plot area (the log axis).
const PLOT_WIDTH: f64 = 520.0;
/// Width of the numbers column right of the plot.
const NUMBERS: f64 = 190.0;
/// Margin left of the labels.
const MARGIN: f64 = 10.0;
/// About the width of one character of a 12-pixel label.
const CHAR: f64 = 6.9;
/// Space above the first bar (title, legend, axis labels).
const TOP: f64 = 92.0;
/// Height of one family's row.
const ROW: f64 = 18.0;
/// Height of a bar inside its row.
const BAR: f64 = 12.0;
/// Space below the last bar (axis labels, the 1× label).
const BOTTOM: f64 = 46.0;
/// Colour of a bar where ours is faster (ratio at least 1).
const FASTER: &str = "#2b7bba";
/// Colour of a bar where ours is slower (ratio below 1).
const SLOWER: &str = "#d95f02";

/// The log-scale axis: whole decades from `10^lo` to `10^hi` over
/// `left..right` pixels.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(super) struct Axis {
    lo: i32,
    hi: i32,
    left: f64,
    right: f64,
}

impl Axis {
    /// The decades that hold every ratio of `families` (means and worst
    /// cases) and 1, drawn from `left` over [`PLOT_WIDTH`] pixels.
    pub(super) fn for_families(families: &[Family], left: f64) -> Axis {
        let values = families.iter().flat_map(|f| [f.geomean, f.worst]).filter(|v| v.is_finite() && *v > 0.0);
        let (min, max) = values.fold((1.0f64, 1.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let lo = min.log10().floor() as i32;
        let mut hi = max.log10().ceil() as i32;
        if hi <= lo {
            hi = lo + 1;
        }
        Axis { lo, hi, left, right: left + PLOT_WIDTH }
    }

    /// The x coordinate of `ratio`.
    pub(super) fn x(&self, ratio: f64) -> f64 {
        let t = (ratio.log10() - f64::from(self.lo)) / f64::from(self.hi - self.lo);
        self.left + t * (self.right - self.left)
    }
}

/// `text` with the XML special characters escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// A ratio for a label: two significant decimals below 10, fewer above.
pub(super) fn ratio_label(r: f64) -> String {
    if r >= 100.0 {
        format!("{r:.0}×")
    } else if r >= 10.0 {
        format!("{r:.1}×")
    } else {
        format!("{r:.2}×")
    }
}

/// A decade's label: 0.01×, 0.1×, 1×, 10×, ...
fn decade_label(k: i32) -> String {
    let v = 10f64.powi(k);
    format!("{:.*}×", usize::try_from(-k).unwrap_or(0), v)
}

/// Where the plot starts: right of the longest family label.
fn plot_left(families: &[Family]) -> f64 {
    let longest = families.iter().map(|f| short(&f.name).chars().count()).max().unwrap_or(0);
    MARGIN + (longest as f64 * CHAR).max(120.0) + 10.0
}

/// The chart of `families`; `subtitle` says where the numbers come from.
pub(super) fn svg(families: &[Family], subtitle: &str) -> String {
    let left = plot_left(families);
    let axis = Axis::for_families(families, left);
    let width = (axis.right + NUMBERS).max(820.0);
    let height = TOP + ROW * families.len() as f64 + BOTTOM;
    let (top, bottom) = (TOP - 4.0, TOP + ROW * families.len() as f64 + 2.0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="10" y="20" font-size="15" font-weight="bold">Published library time / ovstage time, per benchmark family (log scale; right of 1×: ovstage faster)</text>"#
    );
    let _ = writeln!(s, r##"<text x="10" y="38" fill="#555">{}</text>"##, escape(subtitle));
    // Legend.
    let _ = writeln!(s, r#"<rect x="10" y="47" width="12" height="10" fill="{FASTER}"/>"#);
    let _ = writeln!(s, r#"<text x="27" y="56">ovstage faster (geometric mean of the family's cases)</text>"#);
    let _ = writeln!(s, r#"<rect x="360" y="47" width="12" height="10" fill="{SLOWER}"/>"#);
    let _ = writeln!(s, r#"<text x="377" y="56">ovstage slower</text>"#);
    let _ = writeln!(s, r##"<line x1="500" y1="46" x2="500" y2="58" stroke="#111" stroke-width="2"/>"##);
    let _ = writeln!(s, r#"<text x="507" y="56">the family's worst case</text>"#);
    // Grid: decades (labelled, top and bottom) and 2× and 5× within them.
    for k in axis.lo..=axis.hi {
        let x = axis.x(10f64.powi(k));
        let _ = writeln!(s, r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="#ccc"/>"##);
        for y in [top - 5.0, bottom + 14.0] {
            let _ = writeln!(
                s,
                r##"<text x="{x:.1}" y="{y:.1}" text-anchor="middle" fill="#444">{}</text>"##,
                decade_label(k)
            );
        }
        if k < axis.hi {
            for m in [2.0, 5.0] {
                let x = axis.x(m * 10f64.powi(k));
                let _ =
                    writeln!(s, r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="#eee"/>"##);
            }
        }
    }
    // Bars.
    let one = axis.x(1.0);
    for (i, f) in families.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        let mid = y + ROW / 2.0;
        let end = axis.x(f.geomean);
        let (x, w) = if end >= one { (one, end - one) } else { (end, one - end) };
        let colour = if f.geomean >= 1.0 { FASTER } else { SLOWER };
        let name = escape(short(&f.name));
        let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{name}</text>"#, left - 8.0, mid + 4.0);
        let _ = writeln!(
            s,
            r#"<rect class="bar" x="{x:.1}" y="{:.1}" width="{:.1}" height="{BAR:.1}" fill="{colour}"><title>{name}: {} over {} cases</title></rect>"#,
            y + (ROW - BAR) / 2.0,
            w.max(1.0),
            ratio_label(f.geomean),
            f.cases
        );
        let wx = axis.x(f.worst);
        let _ = writeln!(
            s,
            r##"<line class="worst" x1="{wx:.1}" y1="{:.1}" x2="{wx:.1}" y2="{:.1}" stroke="#111" stroke-width="2"><title>worst: {} {}</title></line>"##,
            y + 1.0,
            y + ROW - 1.0,
            escape(&f.worst_case),
            ratio_label(f.worst)
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{} <tspan fill="{}">(worst {})</tspan></text>"#,
            axis.right + 10.0,
            mid + 4.0,
            ratio_label(f.geomean),
            if f.worst >= 1.0 { "#555" } else { SLOWER },
            ratio_label(f.worst)
        );
    }
    // The 1× line, over the bars, and its label under the axis labels.
    let _ = writeln!(
        s,
        r##"<line id="parity" x1="{one:.1}" y1="{top:.1}" x2="{one:.1}" y2="{bottom:.1}" stroke="#000" stroke-width="2"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{one:.1}" y="{:.1}" text-anchor="middle" font-weight="bold">1× = parity</text>"#,
        bottom + 32.0
    );
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn family(name: &str, geomean: f64, worst: f64) -> Family {
        Family { name: name.into(), cases: 3, geomean, worst_case: format!("{name}/1"), worst }
    }

    /// Checks that `xml` is well formed as far as this chart needs: every
    /// tag closed in order, attributes quoted, `&` only in entities, one root.
    fn assert_well_formed(xml: &str) {
        let mut stack: Vec<String> = Vec::new();
        let mut roots = 0;
        let mut rest = xml;
        while let Some(open) = rest.find('<') {
            let text = &rest[..open];
            for (i, _) in text.match_indices('&') {
                let entity = &text[i..];
                assert!(
                    ["&amp;", "&lt;", "&gt;", "&quot;"].iter().any(|e| entity.starts_with(e)),
                    "bare & in {text:?}"
                );
            }
            assert!(!stack.is_empty() || text.trim().is_empty(), "text outside the root: {text:?}");
            let close = rest[open..].find('>').expect("unterminated tag") + open;
            let tag = &rest[open + 1..close];
            assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes in <{tag}>");
            assert!(!tag.contains('<'), "< inside a tag: {tag}");
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop().as_deref(), Some(name.trim()), "mismatched </{name}>");
            } else {
                let name: String = tag.chars().take_while(|c| !c.is_whitespace() && *c != '/').collect();
                assert!(!name.is_empty(), "empty tag");
                if stack.is_empty() {
                    roots += 1;
                }
                if !tag.ends_with('/') {
                    stack.push(name);
                }
            }
            rest = &rest[close + 1..];
        }
        assert!(rest.trim().is_empty(), "text after the root");
        assert!(stack.is_empty(), "unclosed: {stack:?}");
        assert_eq!(roots, 1);
    }

    /// The value of attribute `name` in the first tag containing `marker`.
    fn attribute(xml: &str, marker: &str, name: &str) -> String {
        let at = xml.find(marker).expect("marker");
        let start = xml[..at].rfind('<').expect("tag start");
        let tag = &xml[start..start + xml[start..].find('>').expect("tag end")];
        let key = format!(" {name}=\"");
        let from = tag.find(&key).expect("attribute") + key.len();
        tag[from..from + tag[from..].find('"').expect("closing quote")].to_owned()
    }

    #[test]
    fn one_bar_per_family_and_the_parity_line_at_1x() {
        let families = vec![
            family("BM_OVStage_Fast", 30.0, 2.0),
            family("BM_OVStage_Slow<&>", 0.2, 0.04),
            family("BM_OVStage_Even", 1.0, 0.9),
        ];
        let svg = svg(&families, "2 cores & \"quoted\"");
        assert_well_formed(&svg);
        assert_eq!(svg.matches(r#"<rect class="bar""#).count(), 3);
        assert_eq!(svg.matches(r#"<line class="worst""#).count(), 3);
        assert!(svg.contains("Slow&lt;&amp;&gt;"));

        let axis = Axis::for_families(&families, plot_left(&families));
        assert_eq!((axis.lo, axis.hi), (-2, 2));
        let x: f64 = attribute(&svg, r#"id="parity""#, "x1").parse().unwrap();
        assert!((x - axis.x(1.0)).abs() < 0.06, "{x} vs {}", axis.x(1.0));
        // 1× is in the middle of 0.01×..100×.
        assert!((axis.x(1.0) - (axis.left + axis.right) / 2.0).abs() < 1e-9);

        // The slow family's bar ends at 1× and is in the other colour.
        let slow = svg.find("Slow&lt;&amp;&gt;:").unwrap();
        let start = svg[..slow].rfind("<rect").unwrap();
        let bar = &svg[start..slow];
        assert!(bar.contains(SLOWER));
        let bx: f64 = attribute(&svg[start..], "class=\"bar\"", "x").parse().unwrap();
        let bw: f64 = attribute(&svg[start..], "class=\"bar\"", "width").parse().unwrap();
        assert!((bx + bw - axis.x(1.0)).abs() < 0.2);
        assert!((bx - axis.x(0.2)).abs() < 0.06);
    }

    #[test]
    fn the_axis_always_spans_a_decade_around_1x() {
        let a = Axis::for_families(&[family("A", 1.0, 1.0)], 0.0);
        assert_eq!((a.lo, a.hi), (0, 1));
        let b = Axis::for_families(&[family("A", 3.0, 1.5)], 0.0);
        assert_eq!((b.lo, b.hi), (0, 1));
        let c = Axis::for_families(&[], 0.0);
        assert_eq!((c.lo, c.hi), (0, 1));
        assert_well_formed(&svg(&[], ""));
    }

    #[test]
    fn long_labels_push_the_plot_right() {
        let short_names = [family("BM_OVStage_A", 2.0, 2.0)];
        let long_names = [family(&format!("BM_OVStage_{}", "X".repeat(60)), 2.0, 2.0)];
        assert!(plot_left(&long_names) > 60.0 * CHAR);
        assert!(plot_left(&short_names) < plot_left(&long_names));
    }

    #[test]
    fn labels() {
        assert_eq!(decade_label(-2), "0.01×");
        assert_eq!(decade_label(0), "1×");
        assert_eq!(decade_label(3), "1000×");
        assert_eq!(ratio_label(0.0412), "0.04×");
        assert_eq!(ratio_label(12.34), "12.3×");
        assert_eq!(ratio_label(432.7), "433×");
    }
}
