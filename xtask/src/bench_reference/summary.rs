//! Ratios, families and totals: what the per-case figures add up to.
//!
//! Every ratio is reference / ours (above 1: ours is faster). Averages of
//! ratios are geometric means, the only mean under which 2× faster and 2×
//! slower cancel out.

use super::rounds::Timing;

/// One case with its figure (or error) on each library.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Row {
    /// The full case name as the binary prints it.
    pub(super) case: String,
    /// On our library.
    pub(super) ours: Result<Timing, String>,
    /// On the published library.
    pub(super) reference: Result<Timing, String>,
}

impl Row {
    /// reference / ours, when the case ran on both.
    pub(super) fn ratio(&self) -> Option<f64> {
        ratio(&self.ours, &self.reference)
    }
}

/// reference / ours of a case's figures, when it ran on both.
pub(super) fn ratio(ours: &Result<Timing, String>, reference: &Result<Timing, String>) -> Option<f64> {
    match (ours, reference) {
        (Ok(o), Ok(r)) if o.median > 0.0 && r.median > 0.0 => Some(r.median / o.median),
        _ => None,
    }
}

/// A case's family: its name up to the first `/` (the benchmark function).
pub(super) fn family(case: &str) -> &str {
    case.split('/').next().unwrap_or(case)
}

/// A family name without the suite's `BM_OVStage_` prefix, for labels.
pub(super) fn short(family: &str) -> &str {
    family.strip_prefix("BM_OVStage_").or_else(|| family.strip_prefix("BM_")).unwrap_or(family)
}

/// The geometric mean of positive `values`; `None` when there are none.
pub(super) fn geomean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values {
        sum += v.ln();
        n += 1;
    }
    (n > 0).then(|| (sum / n as f64).exp())
}

/// One family's summary over its cases that ran on both libraries.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Family {
    /// The family name (see [`family`]).
    pub(super) name: String,
    /// How many of its cases ran on both.
    pub(super) cases: usize,
    /// Geometric mean of their ratios.
    pub(super) geomean: f64,
    /// The case with the lowest ratio, and that ratio.
    pub(super) worst_case: String,
    /// The lowest ratio.
    pub(super) worst: f64,
}

/// The families of `rows` in order of first appearance; a family none of
/// whose cases ran on both libraries is left out.
pub(super) fn families(rows: &[Row]) -> Vec<Family> {
    let mut order: Vec<&str> = Vec::new();
    for r in rows {
        let f = family(&r.case);
        if !order.contains(&f) {
            order.push(f);
        }
    }
    order
        .into_iter()
        .filter_map(|name| {
            let ratios: Vec<(&str, f64)> = rows
                .iter()
                .filter(|r| family(&r.case) == name)
                .filter_map(|r| r.ratio().map(|x| (r.case.as_str(), x)))
                .collect();
            let (worst_case, worst) = ratios.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1))?;
            Some(Family {
                name: name.to_owned(),
                cases: ratios.len(),
                geomean: geomean(ratios.iter().map(|r| r.1))?,
                worst_case: worst_case.to_owned(),
                worst,
            })
        })
        .collect()
}

/// The whole run in a few numbers.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Totals {
    /// Cases listed (after the filter and the GPU skip).
    pub(super) cases: usize,
    /// Cases that ran on both libraries.
    pub(super) both: usize,
    /// Of those, how many are slower on ours (ratio below 1).
    pub(super) slower: usize,
    /// Geometric mean of the ratios of the cases that ran on both.
    pub(super) geomean: Option<f64>,
    /// Cases that failed on ours only (a conformance bug of ours).
    pub(super) ours_only_errors: usize,
    /// Cases that failed on the published library only.
    pub(super) reference_only_errors: usize,
    /// Cases that failed on both.
    pub(super) both_errors: usize,
}

/// The totals of `rows`.
pub(super) fn totals(rows: &[Row]) -> Totals {
    let ratios: Vec<f64> = rows.iter().filter_map(Row::ratio).collect();
    let mut t = Totals {
        cases: rows.len(),
        both: ratios.len(),
        slower: ratios.iter().filter(|&&x| x < 1.0).count(),
        geomean: geomean(ratios.iter().copied()),
        ..Totals::default()
    };
    for r in rows {
        match (r.ours.is_err(), r.reference.is_err()) {
            (true, true) => t.both_errors += 1,
            (true, false) => t.ours_only_errors += 1,
            (false, true) => t.reference_only_errors += 1,
            (false, false) => {}
        }
    }
    t
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A row from two medians (`None`: an error).
    pub(crate) fn row(case: &str, ours: Option<f64>, reference: Option<f64>) -> Row {
        let t = |v: Option<f64>| {
            v.map(|median| Timing { median, spread: 0.0, rounds: 3 }).ok_or_else(|| "failed".to_owned())
        };
        Row { case: case.into(), ours: t(ours), reference: t(reference) }
    }

    #[test]
    fn families_are_names_up_to_the_first_slash() {
        assert_eq!(family("BM_OVStage_Clone_Fanout/16/iterations:100"), "BM_OVStage_Clone_Fanout");
        assert_eq!(family("BM_OVStage_ImmediateWriteWait"), "BM_OVStage_ImmediateWriteWait");
        assert_eq!(short("BM_OVStage_Clone_Fanout"), "Clone_Fanout");
        assert_eq!(short("BM_Other"), "Other");
        assert_eq!(short("Plain"), "Plain");
    }

    #[test]
    fn geometric_means() {
        assert!((geomean([2.0, 8.0]).unwrap() - 4.0).abs() < 1e-12);
        assert!((geomean([0.5, 2.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((geomean([3.0]).unwrap() - 3.0).abs() < 1e-12);
        assert_eq!(geomean([]), None);
    }

    #[test]
    fn families_group_in_order_with_their_worst_case() {
        let rows = vec![
            row("BM_A/1", Some(1.0), Some(4.0)),
            row("BM_B/1", Some(2.0), Some(1.0)),
            row("BM_A/2", Some(4.0), Some(4.0)),
            row("BM_A/3", None, Some(1.0)),
            row("BM_C_Gpu/1", None, None),
        ];
        let f = families(&rows);
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!((f[0].name.as_str(), f[0].cases), ("BM_A", 2));
        assert!((f[0].geomean - 2.0).abs() < 1e-12);
        assert_eq!((f[0].worst_case.as_str(), f[0].worst), ("BM_A/2", 1.0));
        assert_eq!((f[1].name.as_str(), f[1].worst), ("BM_B", 0.5));

        let t = totals(&rows);
        assert_eq!((t.cases, t.both, t.slower), (5, 3, 1));
        assert!((t.geomean.unwrap() - 2f64.powf(1.0 / 3.0)).abs() < 1e-12);
        assert_eq!((t.ours_only_errors, t.reference_only_errors, t.both_errors), (1, 0, 1));
    }
}
