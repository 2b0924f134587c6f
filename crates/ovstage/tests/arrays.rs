//! Array attributes: per-row and packed writes, empty rows, strings, token
//! ids, sparse updates, deletes and the one-tensor-per-prim read layout.

mod common;

use common::*;
use ovstage::{
    ArrayRows, DType, GroupKind, HostRows, OrdinalRange, PrimMode, Selection, Semantic, Status, Tensor, WriteData,
};

fn f32_rows(rows: &[&[f32]]) -> WriteData {
    WriteData::array_rows(rows.iter().map(|r| Tensor::from_vec(r.to_vec(), &[r.len() as u64]).unwrap()).collect())
}

#[test]
fn per_row_tensors_with_empty_rows() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B", "/C"]);
    write(&s, q, "w", 1, f32_rows(&[&[1., 2., 3.], &[], &[4.]]));
    wait(&s, seal(&s, 1));
    let groups = read_groups(&s, q, "w", OrdinalRange::LATEST).unwrap();
    assert_eq!(groups.len(), 1);
    let data = groups[0].data().unwrap();
    assert_eq!(data.tensor(0).shape(), &[3]);
    assert_eq!(data.tensor(1).shape(), &[0]);
    assert_eq!(data.tensor(2).strides(), &[1]);
    assert_eq!(arrays_f32(&groups), vec![(0, vec![1., 2., 3.]), (1, vec![]), (2, vec![4.])]);
}

/// Rows as ranges of one vector of floats.
struct Ranges {
    values: Vec<f32>,
    ranges: Vec<std::ops::Range<usize>>,
}

impl HostRows for Ranges {
    fn row_count(&self) -> usize {
        self.ranges.len()
    }

    fn row_bytes(&self, i: usize) -> &[u8] {
        bytemuck::cast_slice(&self.values[self.ranges[i].clone()])
    }
}

#[test]
fn described_rows_over_one_buffer() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B", "/C"]);
    // Rows out of order in the buffer, one of them empty.
    let data = Ranges { values: (0..8).map(|v| v as f32).collect(), ranges: vec![6..8, 0..0, 0..6] };
    let mut rows = ArrayRows::builder(3);
    rows.push(DType::F32, &[2]).unwrap();
    rows.push(DType::F32, &[0]).unwrap();
    rows.push(DType::F32, &[6]).unwrap();
    let rows = rows.over(data).unwrap();
    assert_eq!(rows.len(), 3);
    write(&s, q, "w", 1, WriteData::array_row_set(rows).with_selection(Selection::IndexMap(vec![2, 0, 1])));
    wait(&s, seal(&s, 1));
    let groups = read_groups(&s, q, "w", OrdinalRange::LATEST).unwrap();
    assert_eq!(arrays_f32(&groups), vec![(0, (0..6).map(|v| v as f32).collect()), (1, vec![6., 7.]), (2, vec![])]);
    // A row count that does not match the description is refused at once.
    let short = Ranges { values: vec![1., 2.], ranges: vec![0..1, 1..2] };
    assert!(ArrayRows::builder(0).over(short).is_err());
}

#[test]
fn packed_rows_with_an_index_map_and_tuple_elements() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    // Three rows of two float3 points each; A takes row 2, B row 0.
    let flat: Vec<f32> = (0..18).map(|v| v as f32).collect();
    let packed = Tensor::new(flat, DType::F32.with_lanes(3), &[6]).unwrap();
    let data =
        WriteData::array_packed(packed).with_selection(Selection::IndexMap(vec![2, 0])).with_semantic(Semantic::Point);
    write(&s, q, "points", 1, data);
    wait(&s, seal(&s, 1));
    let groups = read_groups(&s, q, "points", OrdinalRange::LATEST).unwrap();
    let g = &groups[0];
    assert_eq!(g.semantic(), Semantic::Point);
    let data = g.data().unwrap();
    assert_eq!(data.tensor(0).shape(), &[2, 3], "two points of three components");
    assert_eq!(data.tensor(0).values::<f32>().unwrap(), &[12., 13., 14., 15., 16., 17.]);
    assert_eq!(data.tensor(1).values::<f32>().unwrap(), &[0., 1., 2., 3., 4., 5.]);
}

#[test]
fn strings_and_token_id_arrays() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    write(&s, q, "label", 1, WriteData::strings(&["hello", ""]));
    let t = s.paths().intern_tokens(&["Xform", "Mesh", "Camera"]).unwrap();
    let ids = vec![
        Tensor::from_vec(vec![t[0].get(), t[1].get()], &[2]).unwrap(),
        Tensor::from_vec(vec![t[2].get()], &[1]).unwrap(),
    ];
    write(&s, q, "tags", 1, WriteData::array_rows(ids).with_semantic(Semantic::TokenId));
    wait(&s, seal(&s, 1));
    let labels = read_groups(&s, q, "label", OrdinalRange::LATEST).unwrap();
    assert_eq!(labels[0].semantic(), Semantic::String);
    let data = labels[0].data().unwrap();
    assert_eq!((data.row(0), data.row(1)), (&b"hello"[..], &b""[..]));
    let tags = read_groups(&s, q, "tags", OrdinalRange::LATEST).unwrap();
    let row: Vec<u64> = tags[0].data().unwrap().tensor(0).values::<u64>().unwrap().to_vec();
    assert_eq!(row, vec![t[0].get(), t[1].get()]);
    // The ID and string semantics require their element types.
    let wrong = WriteData::array_rows((0..2).map(|_| Tensor::from_vec(vec![1u32], &[1]).unwrap()).collect())
        .with_semantic(Semantic::TokenId);
    let err = s.write_attribute(q, "bad", 2u64, wrong, PrimMode::Upsert).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument, "{err}");
}

#[test]
fn sparse_updates_keep_versions_exact() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B", "/C"]);
    write(&s, q, "w", 1, f32_rows(&[&[1.], &[2., 2.], &[3., 3., 3.]]));
    seal(&s, 1);
    let masked = f32_rows(&[&[], &[20.], &[]]).with_selection(Selection::Mask { count: 3, bits: vec![0b010] });
    write(&s, q, "w", 2, masked);
    wait(&s, seal(&s, 2));
    let at = |t: u64| arrays_f32(&read_groups(&s, q, "w", OrdinalRange::snapshot(t)).unwrap());
    assert_eq!(at(1), vec![(0, vec![1.]), (1, vec![2., 2.]), (2, vec![3., 3., 3.])]);
    assert_eq!(at(2), vec![(0, vec![1.]), (1, vec![20.]), (2, vec![3., 3., 3.])]);
    let changes = read_groups(&s, q, "w", OrdinalRange::changes(2u64, 2u64).unwrap()).unwrap();
    assert_eq!(arrays_f32(&changes), vec![(1, vec![20.])]);
}

#[test]
fn array_deletes_and_kind_conflicts() {
    let s = stage(2);
    let q = query(&s, &["/A", "/B"]);
    let qa = query(&s, &["/A"]);
    write(&s, q, "w", 1, f32_rows(&[&[1.], &[2.]]));
    wait(&s, seal(&s, 1));
    s.delete_attributes(qa, &["w".into()], 2u64).unwrap();
    wait(&s, seal(&s, 2));
    assert_eq!(arrays_f32(&read_groups(&s, q, "w", OrdinalRange::LATEST).unwrap()), vec![(1, vec![2.])]);
    let changes = read_groups(&s, q, "w", OrdinalRange::changes(2u64, 2u64).unwrap()).unwrap();
    assert!(changes.iter().all(|g| g.kind() == GroupKind::Tombstones && g.is_array()));
    // A fixed write to prims carrying the array is a schema change.
    let err = s.write_attribute(q, "w", 3u64, scalars(&[1., 1.]), PrimMode::Upsert).unwrap_err();
    assert_eq!(err.status(), Status::InvalidArgument);
    assert!(err.to_string().contains("f32 array"), "{err}");
    // Once deleted, a prim may take another schema.
    wait(&s, s.write_attribute(qa, "w", 3u64, scalars(&[5.]), PrimMode::Upsert).unwrap());
}
