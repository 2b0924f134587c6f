//! The order of the runs and how a case's rounds become one figure.
//!
//! The case list is cut into chunks of a few cases. Every round runs every
//! chunk once on each library, one after the other, so the two libraries
//! alternate every chunk (reference, ours, ours, reference, reference,
//! ours, ...: which goes first flips from chunk to chunk and from round to
//! round). A slow drift of the machine (another build starting, thermal or
//! frequency changes) then falls on both libraries about equally instead of
//! on whichever ran second, as when the whole suite ran on one and then on
//! the other.
//!
//! A case's figure is the **median** over its rounds, not the minimum. On
//! this shared machine interference mostly adds time, which argues for the
//! minimum, but the minimum rewards one lucky round: cases with one or a few
//! iterations (`iterations:1`), cases whose time depends on where threads
//! land, and allocator or page-cache effects give single rounds well below
//! the typical time, for either library, and a ratio of two minima compounds
//! two such draws. The median discards the worst and the best round alike
//! (with three rounds, it is the middle one), so one disturbed round of
//! either library moves nothing, and it is what a repeated run would
//! typically show. The spread printed beside it (the largest deviation of a
//! round from the median) says how far to trust it.
//!
//! Near parity one round's noise decides which side of 1x a case lands
//! on, so chunks holding a case close to it run more rounds afterwards
//! (confirmation rounds, in the same alternating order: see
//! `CONFIRM_BELOW` in the module above): those cases' figures are medians
//! over all their rounds, and their cells say how many.

use super::gbench::Outcome;

/// Which library a run uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Lib {
    /// The published library shipped beside the binary.
    Reference,
    /// Ours, copied beside the binary as `libovstage.so`.
    Ours,
}

/// The runs in order: (round, chunk, library), each chunk once per library
/// per round, the library that goes first alternating with `round + chunk`.
pub(super) fn schedule(chunks: usize, rounds: usize) -> Vec<(usize, usize, Lib)> {
    let mut out = Vec::with_capacity(chunks * rounds * 2);
    for round in 0..rounds {
        for chunk in 0..chunks {
            let (first, second) =
                if (round + chunk) % 2 == 0 { (Lib::Reference, Lib::Ours) } else { (Lib::Ours, Lib::Reference) };
            out.push((round, chunk, first));
            out.push((round, chunk, second));
        }
    }
    out
}

/// A case's figure on one library: the median time per iteration over the
/// rounds, in nanoseconds, and the largest deviation of a round from it as
/// a fraction of it.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(super) struct Timing {
    /// Median over the rounds (the mean of the middle two for an even count).
    pub(super) median: f64,
    /// `max |round - median| / median`.
    pub(super) spread: f64,
    /// How many rounds the figure is over.
    pub(super) rounds: usize,
}

/// The rounds of one case on one library.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Samples {
    times: Vec<f64>,
    errors: Vec<String>,
}

impl Samples {
    /// Records one round's outcome.
    pub(super) fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Time(ns) => self.times.push(ns),
            Outcome::Error(e) => self.errors.push(e),
        }
    }

    /// The case's figure, or its error: a case that failed in any round is
    /// reported as failed (with the first message and how many rounds
    /// failed), since a flaky failure is worth seeing.
    pub(super) fn result(&self) -> Result<Timing, String> {
        if let Some(first) = self.errors.first() {
            let rounds = self.errors.len() + self.times.len();
            return Err(if self.errors.len() == rounds {
                first.clone()
            } else {
                format!("{first} (in {} of {rounds} rounds)", self.errors.len())
            });
        }
        let median = median(&self.times).ok_or("no result")?;
        let spread =
            if median > 0.0 { self.times.iter().map(|t| (t - median).abs() / median).fold(0.0, f64::max) } else { 0.0 };
        Ok(Timing { median, spread, rounds: self.times.len() })
    }
}

/// The median of `values`; the mean of the middle two for an even count.
pub(super) fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_chunk_runs_once_per_library_per_round_and_the_first_alternates() {
        let s = schedule(3, 2);
        assert_eq!(s.len(), 12);
        for round in 0..2 {
            for chunk in 0..3 {
                let libs: Vec<Lib> = s.iter().filter(|r| r.0 == round && r.1 == chunk).map(|r| r.2).collect();
                assert_eq!(libs.len(), 2);
                assert_ne!(libs[0], libs[1]);
            }
        }
        let firsts: Vec<Lib> = s.iter().step_by(2).map(|r| r.2).collect();
        use Lib::{Ours, Reference};
        assert_eq!(firsts, vec![Reference, Ours, Reference, Ours, Reference, Ours]);
        // Adjacent runs of different chunks share a library, so each
        // library runs twice in a row: ref, ours, ours, ref, ref, ours.
        assert_eq!(s[1].2, s[2].2);
    }

    #[test]
    fn medians_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn samples_give_the_median_and_spread_or_the_error() {
        let mut s = Samples::default();
        for t in [100.0, 90.0, 130.0] {
            s.add(Outcome::Time(t));
        }
        let t = s.result().unwrap();
        assert_eq!(t.median, 100.0);
        assert_eq!(t.rounds, 3);
        assert!((t.spread - 0.3).abs() < 1e-12);

        s.add(Outcome::Error("boom".into()));
        assert_eq!(s.result(), Err("boom (in 1 of 4 rounds)".into()));

        let mut all = Samples::default();
        all.add(Outcome::Error("CUDA device is unavailable".into()));
        assert_eq!(all.result(), Err("CUDA device is unavailable".into()));
        assert_eq!(Samples::default().result(), Err("no result".into()));
    }
}
