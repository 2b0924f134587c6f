//! Value predicates on recorded attributes: `IN`, `CONTAINS`, `PREFIX`,
//! `LT`, `LE`, `GT`, `GE` against a prim's latest committed value.
//!
//! The published library refuses every value predicate (`NOT_SUPPORTED`);
//! ours evaluates them, as the contract describes the operators. Values are
//! the predicate's strings, parsed per column (the dtype is the column's);
//! a value that does not parse for it matches nothing, as a path value that
//! names no prim does. Every test is "any of the values":
//!
//! - scalar columns (one lane): `IN` is equality, `LT`/`LE`/`GT`/`GE` compare;
//! - tuples (several lanes) and arrays: `IN` is equality of the whole value,
//!   given as numbers separated by commas or spaces; `CONTAINS` holds when
//!   one of its elements equals a value;
//! - `STRING` (UTF-8 bytes): `IN` equality, `CONTAINS` substring, `PREFIX`
//!   prefix, comparisons lexicographic by bytes.
//!
//! Anything else (a comparison on a tuple, `PREFIX` on numbers) matches
//! nothing. Floats compare as IEEE values (NaN matches no test).

use std::cmp::Ordering;

use ovstage_types::{DType, DTypeCode, FilterOp, Semantic};

use crate::schema::{Storage, ValueKind};

/// One element of a stored value.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Number {
    Int(i128),
    Float(f64),
}

impl Number {
    fn cmp(self, other: Number) -> Option<Ordering> {
        match (self, other) {
            (Number::Int(a), Number::Int(b)) => Some(a.cmp(&b)),
            (a, b) => a.float().partial_cmp(&b.float()),
        }
    }

    fn float(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::Float(f) => f,
        }
    }
}

/// The elements of a stored value of scalar type `dtype` (lanes ignored).
fn elements(bytes: &[u8], dtype: DType) -> Option<Vec<Number>> {
    let width = usize::from(dtype.bits / 8);
    if width == 0 || !bytes.len().is_multiple_of(width) {
        return None;
    }
    bytes
        .chunks_exact(width)
        .map(|b| {
            let mut w = [0u8; 8];
            w[..width].copy_from_slice(b);
            let raw = u64::from_le_bytes(w);
            Some(match (dtype.code, dtype.bits) {
                (DTypeCode::Int, 32) => Number::Int(i128::from(raw as u32 as i32)),
                (DTypeCode::Int, 64) => Number::Int(i128::from(raw as i64)),
                (DTypeCode::UInt | DTypeCode::Bool, _) => Number::Int(i128::from(raw)),
                (DTypeCode::Float, 16) => Number::Float(ovstage_types::f16_to_f64(raw as u16)),
                (DTypeCode::Float, 32) => Number::Float(f64::from(f32::from_bits(raw as u32))),
                (DTypeCode::Float, 64) => Number::Float(f64::from_bits(raw)),
                _ => return None,
            })
        })
        .collect()
}

/// A predicate value as a number of `dtype`'s kind.
fn parse(text: &str, dtype: DType) -> Option<Number> {
    let t = text.trim();
    match dtype.code {
        DTypeCode::Float => t.parse::<f64>().ok().map(Number::Float),
        DTypeCode::Bool => match t {
            "true" | "1" => Some(Number::Int(1)),
            "false" | "0" => Some(Number::Int(0)),
            _ => None,
        },
        DTypeCode::Int | DTypeCode::UInt => t.parse::<i128>().ok().map(Number::Int),
        _ => None,
    }
}

/// A predicate value as a tuple of `dtype` numbers.
fn parse_tuple(text: &str, dtype: DType) -> Option<Vec<Number>> {
    text.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()).map(|s| parse(s, dtype)).collect()
}

fn equal(a: Number, b: Number) -> bool {
    a.cmp(b) == Some(Ordering::Equal)
}

fn compare(op: FilterOp, ord: Option<Ordering>) -> bool {
    matches!(
        (op, ord),
        (FilterOp::Lt, Some(Ordering::Less))
            | (FilterOp::Le, Some(Ordering::Less | Ordering::Equal))
            | (FilterOp::Gt, Some(Ordering::Greater))
            | (FilterOp::Ge, Some(Ordering::Greater | Ordering::Equal))
    )
}

/// Whether a stored value (`bytes`, of a column with `storage` and
/// `semantic`) passes `op` for any of `values`.
pub(crate) fn matches(op: FilterOp, values: &[String], bytes: &[u8], storage: Storage, semantic: Semantic) -> bool {
    if semantic == Semantic::String && storage.kind == ValueKind::Array {
        let Ok(text) = std::str::from_utf8(bytes) else { return false };
        return values.iter().any(|v| match op {
            FilterOp::In => text == v,
            FilterOp::Contains => text.contains(v.as_str()),
            FilterOp::Prefix => text.starts_with(v.as_str()),
            _ => compare(op, Some(text.as_bytes().cmp(v.as_bytes()))),
        });
    }
    let scalar = storage.dtype.scalar();
    let Some(elems) = elements(bytes, scalar) else { return false };
    let single = storage.kind == ValueKind::Fixed && storage.dtype.lanes == 1;
    match op {
        FilterOp::In if single => values.iter().filter_map(|v| parse(v, scalar)).any(|x| equal(elems[0], x)),
        FilterOp::In => values
            .iter()
            .filter_map(|v| parse_tuple(v, scalar))
            .any(|t| t.len() == elems.len() && t.iter().zip(&elems).all(|(a, b)| equal(*a, *b))),
        FilterOp::Contains if !single => {
            values.iter().filter_map(|v| parse(v, scalar)).any(|x| elems.iter().any(|e| equal(*e, x)))
        }
        FilterOp::Lt | FilterOp::Le | FilterOp::Gt | FilterOp::Ge if single => {
            values.iter().filter_map(|v| parse(v, scalar)).any(|x| compare(op, elems[0].cmp(x)))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(dtype: DType) -> Storage {
        Storage { dtype, kind: ValueKind::Fixed }
    }

    fn v(values: &[&str]) -> Vec<String> {
        values.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn scalars_compare_by_value_and_type() {
        let i = (-5i32).to_le_bytes();
        let s = fixed(DType::I32);
        assert!(matches(FilterOp::In, &v(&["3", "-5"]), &i, s, Semantic::None));
        assert!(!matches(FilterOp::In, &v(&["x", "-5.5"]), &i, s, Semantic::None), "unparsable values match nothing");
        assert!(matches(FilterOp::Lt, &v(&["0"]), &i, s, Semantic::None));
        assert!(matches(FilterOp::Le, &v(&["-5"]), &i, s, Semantic::None));
        assert!(!matches(FilterOp::Gt, &v(&["-5"]), &i, s, Semantic::None));
        assert!(matches(FilterOp::Ge, &v(&["-5"]), &i, s, Semantic::None));
        let u = u64::MAX.to_le_bytes();
        assert!(matches(FilterOp::Gt, &v(&["18446744073709551614"]), &u, fixed(DType::U64), Semantic::None));
        let f = 0.5f32.to_le_bytes();
        assert!(matches(FilterOp::In, &v(&["0.5"]), &f, fixed(DType::F32), Semantic::None));
        assert!(matches(FilterOp::Lt, &v(&["1e9"]), &f, fixed(DType::F32), Semantic::None));
        let nan = f64::NAN.to_le_bytes();
        for op in [FilterOp::In, FilterOp::Lt, FilterOp::Le, FilterOp::Gt, FilterOp::Ge] {
            assert!(!matches(op, &v(&["nan", "0", "inf", "-inf"]), &nan, fixed(DType::F64), Semantic::None));
        }
        let half = 0x3c00u16.to_le_bytes(); // 1.0
        assert!(matches(FilterOp::In, &v(&["1"]), &half, fixed(DType::new(DTypeCode::Float, 16, 1)), Semantic::None));
        assert!(matches(FilterOp::In, &v(&["true"]), &[1], fixed(DType::BOOL), Semantic::None));
        assert!(!matches(FilterOp::Contains, &v(&["-5"]), &i, s, Semantic::None), "CONTAINS needs a composite");
    }

    #[test]
    fn tuples_and_arrays_match_whole_or_by_element() {
        let bytes: Vec<u8> = [1.0f32, 2.0, 3.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let f3 = fixed(DType::F32.with_lanes(3));
        assert!(matches(FilterOp::In, &v(&["1, 2, 3"]), &bytes, f3, Semantic::None));
        assert!(matches(FilterOp::In, &v(&["1 2 3"]), &bytes, f3, Semantic::None));
        assert!(!matches(FilterOp::In, &v(&["1, 2"]), &bytes, f3, Semantic::None));
        assert!(matches(FilterOp::Contains, &v(&["2"]), &bytes, f3, Semantic::None));
        assert!(!matches(FilterOp::Lt, &v(&["9"]), &bytes, f3, Semantic::None), "no order on tuples");
        let array = Storage { dtype: DType::F32, kind: ValueKind::Array };
        assert!(matches(FilterOp::Contains, &v(&["7", "3"]), &bytes, array, Semantic::None));
        assert!(matches(FilterOp::In, &v(&["1,2,3"]), &bytes, array, Semantic::None));
        assert!(!matches(FilterOp::Contains, &v(&["7"]), &[], array, Semantic::None), "an empty row holds nothing");
    }

    #[test]
    fn strings_match_as_text() {
        let s = Storage { dtype: DType::U8, kind: ValueKind::Array };
        let text = b"robot_arm";
        assert!(matches(FilterOp::In, &v(&["robot_arm"]), text, s, Semantic::String));
        assert!(matches(FilterOp::Contains, &v(&["bot"]), text, s, Semantic::String));
        assert!(matches(FilterOp::Prefix, &v(&["x", "robot"]), text, s, Semantic::String));
        assert!(!matches(FilterOp::Prefix, &v(&["arm"]), text, s, Semantic::String));
        assert!(matches(FilterOp::Lt, &v(&["s"]), text, s, Semantic::String));
        assert!(matches(FilterOp::Ge, &v(&["robot"]), text, s, Semantic::String));
    }
}
