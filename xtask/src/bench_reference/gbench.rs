//! Google Benchmark's side of the conversation: its CSV report
//! (`--benchmark_format=csv`), its case listing (`--benchmark_list_tests`)
//! and a filter that selects exactly a given list of cases.

/// One case's outcome in one run: time per iteration in nanoseconds, or the
/// error the case stopped with.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Outcome {
    /// The case ran: its `real_time` per iteration, in nanoseconds.
    Time(f64),
    /// The case stopped with `SkipWithError` (or produced no result).
    Error(String),
}

/// Splits one CSV line (fields may be quoted, with `""` for a quote).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    out.push(field);
    out
}

/// `value` in `unit` (Google Benchmark's `time_unit` column) as nanoseconds.
fn nanos(value: f64, unit: &str) -> f64 {
    match unit {
        "s" => value * 1e9,
        "ms" => value * 1e6,
        "us" => value * 1e3,
        _ => value,
    }
}

/// The cases of a Google Benchmark CSV report, in order. Lines before the
/// header (`name,...`) are skipped; so are rows without a usable time that
/// are not errors (aggregates of repetitions have no such rows here).
pub(super) fn parse_csv(csv: &str) -> Vec<(String, Outcome)> {
    let mut lines = csv.lines().skip_while(|l| !l.starts_with("name,"));
    let Some(header) = lines.next() else { return Vec::new() };
    let cols = csv_fields(header);
    let at = |name: &str| cols.iter().position(|c| c == name);
    let (Some(name), Some(real), Some(unit)) = (at("name"), at("real_time"), at("time_unit")) else {
        return Vec::new();
    };
    let (err, msg) = (at("error_occurred"), at("error_message"));
    let mut out = Vec::new();
    for line in lines {
        let f = csv_fields(line);
        let Some(case) = f.get(name) else { continue };
        let failed = err.and_then(|i| f.get(i)).is_some_and(|v| v == "true");
        let outcome = if failed {
            Outcome::Error(msg.and_then(|i| f.get(i)).cloned().unwrap_or_default())
        } else {
            match (f.get(real).and_then(|v| v.parse::<f64>().ok()), f.get(unit)) {
                (Some(v), Some(u)) => Outcome::Time(nanos(v, u)),
                _ => continue,
            }
        };
        out.push((case.clone(), outcome));
    }
    out
}

/// The case names `--benchmark_list_tests` printed, one a line.
pub(super) fn parse_listing(text: &str) -> Vec<String> {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect()
}

/// Whether a case needs a GPU (its name says `Gpu`); skipped by default,
/// since without one they stop with an error on both libraries.
pub(super) fn needs_gpu(case: &str) -> bool {
    case.contains("Gpu")
}

/// A `--benchmark_filter` (POSIX extended regex, searched in the full case
/// name) that selects exactly `cases`: each name escaped and anchored.
pub(super) fn exact_filter(cases: &[String]) -> String {
    let mut out = String::new();
    for (i, case) in cases.iter().enumerate() {
        if i > 0 {
            out.push('|');
        }
        out.push('^');
        for c in case.chars() {
            if "\\.[](){}*+?|^$".contains(c) {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('$');
    }
    out
}

/// A time for a table cell: ns, µs or ms with two decimals.
pub(super) fn show_time(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_reports_parse_with_quotes_errors_and_units() {
        let csv = "noise\nname,iterations,real_time,cpu_time,time_unit,error_occurred,error_message\n\
                   \"BM_A/1/min_time:0.050\",10,1.5,1.4,us,,\n\
                   \"BM_B/x,y\",,,,,true,\"CUDA device is unavailable\"\n\
                   \"BM_C\",3,2,2,ms,,\n\
                   \"BM_D\",3,7,7,ns,,\n\
                   \"BM_E\",3,0.25,0.25,s,,\n\
                   \"BM_F\",,,,,,\n";
        let got = parse_csv(csv);
        assert_eq!(got.len(), 5, "{got:?}");
        assert_eq!(got[0], ("BM_A/1/min_time:0.050".into(), Outcome::Time(1500.0)));
        assert_eq!(got[1], ("BM_B/x,y".into(), Outcome::Error("CUDA device is unavailable".into())));
        assert_eq!(got[2].1, Outcome::Time(2e6));
        assert_eq!(got[3].1, Outcome::Time(7.0));
        assert_eq!(got[4].1, Outcome::Time(2.5e8));
    }

    #[test]
    fn csv_without_a_header_or_time_columns_is_empty() {
        assert!(parse_csv("").is_empty());
        assert!(parse_csv("just some text\n").is_empty());
        assert!(parse_csv("name,iterations\n\"BM_A\",3\n").is_empty());
    }

    #[test]
    fn a_quoted_quote_stays_in_its_field() {
        assert_eq!(csv_fields(r#"a,"b ""c"", d",e"#), vec!["a", "b \"c\", d", "e"]);
    }

    #[test]
    fn listing_gpu_cases_and_exact_filters() {
        let listed = parse_listing("BM_A/1/min_time:0.050\n\nBM_B_Gpu/4\n  BM_C/x:1/real_time  \n");
        assert_eq!(listed, vec!["BM_A/1/min_time:0.050", "BM_B_Gpu/4", "BM_C/x:1/real_time"]);
        let cpu: Vec<String> = listed.into_iter().filter(|c| !needs_gpu(c)).collect();
        assert_eq!(cpu.len(), 2);
        assert_eq!(exact_filter(&cpu), r"^BM_A/1/min_time:0\.050$|^BM_C/x:1/real_time$");
        assert_eq!(exact_filter(&["a(b)*|c".into()]), r"^a\(b\)\*\|c$");
    }

    #[test]
    fn times_show_in_a_readable_unit() {
        assert_eq!(show_time(1500.0), "1.50 µs");
        assert_eq!(show_time(418.4), "418 ns");
        assert_eq!(show_time(2.5e7), "25.00 ms");
    }
}
