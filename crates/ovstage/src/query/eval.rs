//! Evaluating a filter against the latest committed state, column-wise:
//! a `HAS` test on a recorded attribute locks each of its columns once and
//! takes its live rows as a bitset over prim indices, instead of a family
//! lookup, a column lock and a row lookup per prim. Tests on the hierarchy
//! run per candidate under one lock of the prim table; value tests last,
//! on what is left.

use std::collections::HashMap;

use ovstage_types::{PrimPath, Result, Token};

use crate::family::prim_bit;
use crate::metadata::Reserved;
use crate::prims::PrimTable;
use crate::stage::{StageInner, lock};
use crate::state::{Resolved, Test};
use crate::store::rows::RowSet;

/// The prims carrying each attribute looked at so far (one evaluation).
#[derive(Default)]
struct Carriers {
    by_name: HashMap<Token, RowSet>,
}

impl Carriers {
    /// The prims with a live cell of `name` at the newest version.
    fn of(&mut self, stage: &StageInner, name: Token) -> &RowSet {
        self.by_name.entry(name).or_insert_with(|| {
            let mut bits = RowSet::new();
            if let Some(family) = stage.existing_family(name) {
                for column in family.columns() {
                    column.lock().add_live_prims(&mut bits);
                }
            }
            bits
        })
    }
}

fn prim_of_bit(bit: u32) -> PrimPath {
    PrimPath::from_raw(u64::from(bit) + 1).expect("bit + 1 is never 0")
}

impl StageInner {
    /// Evaluates a filter against the latest committed state: the matching
    /// live prims in path-index order, and which attributes (of `scope`, or
    /// all when empty) any of them carries.
    pub(super) fn evaluate(&self, tests: &[Test], scope: &[Token]) -> Result<Resolved> {
        let mut carriers = Carriers::default();
        // Tests answered by a bitset narrow the candidates first.
        let mut narrowed: Option<RowSet> = None;
        for t in tests {
            let bits = match t {
                Test::Has(name, None | Some(Reserved::PrimType | Reserved::Schemas | Reserved::AncestorTypes)) => {
                    carriers.of(self, *name).clone()
                }
                Test::PathIn(paths) => {
                    let mut bits = RowSet::new();
                    paths.iter().for_each(|p| bits.insert(prim_bit(*p)));
                    bits
                }
                _ => continue,
            };
            match &mut narrowed {
                Some(n) => n.intersect_with(&bits),
                None => narrowed = Some(bits),
            }
        }
        let mut matched: Vec<PrimPath> = {
            let table = lock(&self.prims);
            let keep = |p: &PrimPath| table.is_live(*p) && tests.iter().all(|t| self.hierarchy_test(t, *p, &table));
            match &narrowed {
                Some(bits) => bits.iter().map(prim_of_bit).filter(keep).collect(),
                None => table.live_prims().filter(keep).collect(),
            }
        };
        if tests.iter().any(|t| matches!(t, Test::TokensAny(..) | Test::Value(..))) {
            matched.retain(|p| tests.iter().all(|t| self.value_test(t, *p)));
        }
        let mut matched_bits = RowSet::new();
        matched.iter().for_each(|p| matched_bits.insert(prim_bit(*p)));
        let attributes = self.discovered(tests, scope, &matched_bits, &mut carriers);
        let list = self.paths.create_path_list(&matched)?;
        Ok(Resolved::new(list, matched.into(), attributes))
    }

    /// The attributes a query reports: with a scope, the scoped names that
    /// exist (matched or not); without one, the recorded attributes any
    /// matched prim carries (built-in metadata left out), and every name
    /// the filter tests (carried or not, built-in or not), as the reference
    /// does. A filter of nothing but `HAS usd-path` reports `usd-path`
    /// alone (the reference's answer too).
    fn discovered(&self, tests: &[Test], scope: &[Token], matched: &RowSet, carriers: &mut Carriers) -> Vec<Token> {
        let path = || self.paths.lookup_token(Reserved::Path.name());
        if scope.is_empty()
            && !tests.is_empty()
            && tests.iter().all(|t| matches!(t, Test::Has(_, Some(Reserved::Path))))
        {
            return path().into_iter().collect();
        }
        let mut attributes = Vec::new();
        for f in &self.all_families() {
            if !scope.is_empty() && !scope.contains(&f.name) {
                continue;
            }
            // Built-in metadata is listed only when requested (as the
            // reference does): derived names never, recorded ones
            // (`usd-prim-type`, `usd-schemas`, ...) only through `scope`.
            match self.reserved.lookup(f.name) {
                Some(r) if r.is_derived() || scope.is_empty() => continue,
                _ => {}
            }
            // Requested attributes are reported whether or not a matched
            // prim carries them (as the reference does); otherwise, those
            // the matched prims carry.
            if !scope.is_empty() || carriers.of(self, f.name).intersects(matched) {
                attributes.push(f.name);
            }
        }
        if scope.is_empty() {
            for t in tests {
                let named = match t {
                    Test::Has(name, _) | Test::TokensAny(name, _) | Test::Value(name, ..) => Some(*name),
                    Test::PathIn(_) | Test::PathPrefix(_) => path(),
                    Test::ParentIn(_) => self.paths.lookup_token(Reserved::Parent.name()),
                    Test::ChildrenContain(_) => self.paths.lookup_token(Reserved::Children.name()),
                };
                if let Some(name) = named.filter(|n| !attributes.contains(n)) {
                    attributes.push(name);
                }
            }
        }
        attributes
    }

    /// A test on the prim itself or the hierarchy (others pass here).
    fn hierarchy_test(&self, t: &Test, p: PrimPath, table: &PrimTable) -> bool {
        match t {
            Test::Has(_, Some(Reserved::Parent)) => table.parent(p).is_some(),
            Test::Has(_, Some(Reserved::Children)) => !table.children(p).is_empty(),
            Test::PathPrefix(prefixes) => {
                let text = self.paths.path_text(p).unwrap_or_default();
                prefixes.iter().any(|pre| text.as_bytes().starts_with(pre.as_bytes()))
            }
            Test::ParentIn(set) => table.parent(p).is_some_and(|par| set.binary_search(&par).is_ok()),
            Test::ChildrenContain(set) => table.children(p).iter().any(|c| set.binary_search(c).is_ok()),
            // `usd-path` HAS holds for every live prim; bitset tests were
            // applied to the candidates; value tests run afterwards.
            Test::Has(..) | Test::PathIn(_) | Test::TokensAny(..) | Test::Value(..) => true,
        }
    }

    /// A test on recorded values (others pass here).
    fn value_test(&self, t: &Test, p: PrimPath) -> bool {
        match t {
            Test::TokensAny(name, set) => self.tokens_of(*name, p).iter().any(|t| set.binary_search(t).is_ok()),
            Test::Value(name, op, values) => {
                let Some(op) = ovstage_types::FilterOp::from_raw(*op) else { return false };
                let Some(family) = self.existing_family(*name) else { return false };
                // The prim's latest committed value, in whichever column
                // (schema) holds it.
                family.columns().iter().any(|c| {
                    let g = c.lock();
                    g.row_of(p)
                        .and_then(|r| g.latest_row(r))
                        .is_some_and(|bytes| super::values::matches(op, values, &bytes, c.storage, c.semantic()))
                })
            }
            _ => true,
        }
    }

    /// The token ids held now by a recorded token-id attribute of `p`.
    fn tokens_of(&self, name: Token, p: PrimPath) -> Vec<u64> {
        let Some(family) = self.existing_family(name) else { return Vec::new() };
        for c in family.columns() {
            let g = c.lock();
            if let Some(bytes) = g.row_of(p).and_then(|r| g.latest_row(r)) {
                return bytes.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).collect();
            }
        }
        Vec::new()
    }
}
