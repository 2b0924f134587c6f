//! Snapshot reads through a path list whose prims lie scattered over the
//! column (rows out of order, with gaps): every element reads its own
//! value, fixed-size and array alike, before and after a prim in the span
//! loses its value, and the index map views the rows without copying them.

mod common;

use common::*;
use ovstage::{OrdinalRange, Tensor, WriteData};

/// 300 prims written in order, so prim `k` is row `k` of the column.
fn populated(s: &ovstage::Stage) -> Vec<String> {
    let paths = prim_paths(300);
    let all: Vec<&str> = paths.iter().map(String::as_str).collect();
    let q = query(s, &all);
    wait(s, write(s, q, "x", 1, scalars(&(0..300).map(|k| k as f32).collect::<Vec<_>>())));
    let rows = (0..300).map(|k| Tensor::from_vec(vec![k as f32; k % 4], &[(k % 4) as u64]).unwrap()).collect();
    wait(s, write(s, q, "w", 1, WriteData::array_rows(rows)));
    wait(s, seal(s, 1));
    paths
}

/// Every third prim from 290 down, then a few low ones: out of row order,
/// with gaps.
fn scattered(paths: &[String]) -> (Vec<&str>, Vec<usize>) {
    let picked: Vec<usize> = (0..96).map(|i| 290 - 3 * i).chain([4, 0, 1]).collect();
    (picked.iter().map(|k| paths[*k].as_str()).collect(), picked)
}

#[test]
fn scattered_prims_read_their_own_values_through_an_index_map() {
    let s = stage(2);
    let paths = populated(&s);
    let (list, picked) = scattered(&paths);
    let q = query(&s, &list);
    for _ in 0..2 {
        // The second read reuses the query's maps.
        let groups = read_groups(&s, q, "x", OrdinalRange::LATEST).unwrap();
        assert_eq!(groups.len(), 1);
        let map = groups[0].data().unwrap().index_map().expect("scattered rows are viewed through an index map");
        assert_eq!(map.len(), picked.len());
        let (values, tombstones) = read_f32(&s, q, "x", OrdinalRange::LATEST).unwrap();
        assert!(tombstones.is_empty());
        let want: Vec<(u32, Vec<f32>)> = picked.iter().enumerate().map(|(i, k)| (i as u32, vec![*k as f32])).collect();
        assert_eq!(values, want);
        let got = arrays_f32(&read_groups(&s, q, "w", OrdinalRange::LATEST).unwrap());
        let want: Vec<(u32, Vec<f32>)> =
            picked.iter().enumerate().map(|(i, k)| (i as u32, vec![*k as f32; k % 4])).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn a_prim_of_the_span_without_a_value_is_left_out_and_the_rest_still_read() {
    let s = stage(2);
    let paths = populated(&s);
    let (list, picked) = scattered(&paths);
    let q = query(&s, &list);
    // Warm the query's maps, then delete the value of a queried prim (290)
    // and of an unqueried one inside the span (100).
    read_groups(&s, q, "x", OrdinalRange::LATEST).unwrap();
    let gone = query(&s, &[paths[290].as_str(), paths[100].as_str()]);
    for attr in ["x", "w"] {
        wait(&s, s.delete_attributes(gone, &[attr.into()], 2).unwrap());
    }
    wait(&s, seal(&s, 2));
    let (values, _) = read_f32(&s, q, "x", OrdinalRange::LATEST).unwrap();
    let want: Vec<(u32, Vec<f32>)> =
        picked.iter().enumerate().filter(|(_, k)| **k != 290).map(|(i, k)| (i as u32, vec![*k as f32])).collect();
    assert_eq!(values, want);
    let got = arrays_f32(&read_groups(&s, q, "w", OrdinalRange::LATEST).unwrap());
    let want: Vec<(u32, Vec<f32>)> = picked
        .iter()
        .enumerate()
        .filter(|(_, k)| **k != 290)
        .map(|(i, k)| (i as u32, vec![*k as f32; k % 4]))
        .collect();
    assert_eq!(got, want);
    // The snapshot before the delete still reads every prim.
    let (before, _) = read_f32(&s, q, "x", OrdinalRange::snapshot(1)).unwrap();
    assert_eq!(before.len(), picked.len());
}
