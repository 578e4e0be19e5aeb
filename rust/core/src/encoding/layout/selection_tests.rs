//! Chunk selection on worked examples: a page is encoded, planned from its small buffers
//! alone (as a take plans it), and only the units that hold the wanted rows are read and
//! decoded. Each result is checked against the source data and against the same units
//! decoded from the whole page.
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float32Type;
use arrow_array::{
    Array, ArrayRef, BinaryArray, FixedSizeListArray, Float32Array, Int32Array, ListArray,
    StringArray,
};
use arrow_schema::{DataType, Field};
use bytes::Bytes;

use super::*;
use crate::encoding::encode::levels::{leaf_levels, Step};
use crate::encoding::encode::{encode_page, PageOptions};

/// An encoded page: its layout, buffers and rows.
struct Page {
    layout: PageLayout,
    buffers: Vec<Bytes>,
    rows: u64,
}

fn encode(array: ArrayRef, steps: &[Step], large_chunks: bool) -> Page {
    let levels = leaf_levels(&array, steps).unwrap();
    let opts = PageOptions {
        large_chunks,
        ..Default::default()
    };
    let page = encode_page(levels, &opts).unwrap();
    Page {
        layout: page.layout,
        buffers: page.buffers.into_iter().map(Bytes::from).collect(),
        rows: page.num_rows,
    }
}

/// Units as a take cuts them: single chunks, or `target_rows` full-zip rows.
fn sizing(target_rows: u64) -> UnitSizing {
    UnitSizing {
        target_rows,
        align_rows: 1,
        page_start: 0,
        rows_share_chunks: true,
    }
}

impl Page {
    fn bulk(&self) -> usize {
        bulk_buffer(&self.layout).expect("a page with a bulk buffer")
    }

    /// Planned without its bulk buffer, as a take does.
    fn plan_without_bulk(&self, dt: &DataType, target_rows: u64) -> PagePlan {
        let bulk = self.bulk();
        let mut small = self.buffers.clone();
        small[bulk] = Bytes::new();
        let len = self.buffers[bulk].len() as u64;
        plan_page_without_bulk(
            &self.layout,
            small,
            len,
            self.rows,
            dt,
            &sizing(target_rows),
        )
        .unwrap()
    }

    /// Planned with all its bytes, cut the same way.
    fn plan_whole(&self, dt: &DataType, target_rows: u64) -> PagePlan {
        plan_page(
            &self.layout,
            self.buffers.clone(),
            self.rows,
            dt,
            &sizing(target_rows),
        )
        .unwrap()
    }

    /// Units `units` selected, each given only its own bytes; also the bytes read.
    fn read_units(&self, plan: &PagePlan, units: &[usize]) -> (PagePlan, usize) {
        let bulk = &self.buffers[self.bulk()];
        let parts: Vec<Bytes> = units
            .iter()
            .map(|&u| {
                let r = plan.unit_bytes(u).unwrap();
                bulk.slice(r.start as usize..r.end as usize)
            })
            .collect();
        let read = parts.iter().map(|p| p.len()).sum();
        (plan.select(units, parts).unwrap(), read)
    }
}

/// The unit holding each page row of `rows` (sorted), without repeats.
fn units_holding(plan: &PagePlan, rows: &[u64]) -> Vec<usize> {
    let mut starts = vec![0u64];
    for r in plan.unit_rows() {
        starts.push(starts.last().unwrap() + r);
    }
    let mut units: Vec<usize> = rows
        .iter()
        .map(|&r| starts.partition_point(|&s| s <= r) - 1)
        .collect();
    units.dedup();
    units
}

fn first_row(plan: &PagePlan, unit: usize) -> u64 {
    plan.unit_rows()[..unit].iter().sum()
}

fn leaf_array(page: DecodedPage, dt: &DataType) -> ArrayRef {
    page.values.into_array(dt, None).unwrap()
}

/// Levels and values of two decoded units are the same.
fn assert_same(a: DecodedPage, b: DecodedPage, dt: &DataType) {
    assert_eq!(a.num_rows, b.num_rows);
    assert_eq!(a.rep, b.rep);
    assert_eq!(a.def, b.def);
    assert_eq!(leaf_array(a, dt).to_data(), leaf_array(b, dt).to_data());
}

#[test]
fn int_chunks_hold_the_wanted_rows() {
    // 10,000 increasing ints: mini-block chunks of a power of two of values each. Rows
    // 5, 5000 and 9999 lie in the first, a middle and the last chunk; only those three
    // chunks are read.
    for large_chunks in [false, true] {
        let values: ArrayRef = Arc::new(Int32Array::from_iter_values(0..10_000));
        let page = encode(values, &[], large_chunks);
        let plan = page.plan_without_bulk(&DataType::Int32, 1);
        let chunk = plan.unit_rows()[0];
        assert!(
            chunk.is_power_of_two() && chunk < 10_000,
            "chunk of {chunk} rows"
        );
        assert_eq!(plan.unit_rows().iter().sum::<u64>(), 10_000);
        let units = units_holding(&plan, &[5, 5000, 9999]);
        let last = plan.unit_rows().len() - 1;
        assert_eq!(units, vec![0, (5000 / chunk) as usize, last]);

        let (selected, read) = page.read_units(&plan, &units);
        let bulk = page.buffers[page.bulk()].len();
        assert!(read * 2 < bulk, "read {read} of {bulk} bytes");
        let whole = page.plan_whole(&DataType::Int32, 1);
        for (k, &u) in units.iter().enumerate() {
            let got = selected.decode_unit(k).unwrap();
            let start = first_row(&plan, u) as i32;
            let expect = Int32Array::from_iter_values(start..start + plan.unit_rows()[u] as i32);
            assert_eq!(
                leaf_array(selected.decode_unit(k).unwrap(), &DataType::Int32).to_data(),
                expect.to_data()
            );
            assert_same(got, whole.decode_unit(u).unwrap(), &DataType::Int32);
        }
    }
}

#[test]
fn plain_ints_are_addressed_value_by_value() {
    // Values too spread to bit-pack are stored plain: a take reads each value at
    // `start + row * width` of the bulk buffer without decoding a chunk.
    let values: Vec<i32> = (0..5000i32)
        .map(|i| i.wrapping_mul(1_000_003) ^ 0x5a5a_5a5a)
        .collect();
    let page = encode(Arc::new(Int32Array::from(values.clone())), &[], false);
    let plan = page.plan_without_bulk(&DataType::Int32, 1);
    let bulk = &page.buffers[page.bulk()];
    let mut starts = vec![0u64];
    for r in plan.unit_rows() {
        starts.push(starts.last().unwrap() + r);
    }
    for row in [0u64, 1, 2047, 2048, 4999] {
        let u = starts.partition_point(|&s| s <= row) - 1;
        let (width, start) = plan.plain_values(u).expect("plain values");
        assert_eq!(width, 4);
        let at = start + (row - starts[u]) as usize * width;
        let got = i32::from_le_bytes(bulk[at..at + 4].try_into().unwrap());
        assert_eq!(got, values[row as usize], "row {row}");
    }
}

#[test]
fn strings_decode_only_the_rows_asked_for() {
    let names: Vec<String> = (0..6000).map(|i| format!("name-{i:06}")).collect();
    let page = encode(Arc::new(StringArray::from(names.clone())), &[], false);
    let plan = page.plan_without_bulk(&DataType::Utf8, 1);
    assert!(plan.unit_rows().len() > 2);
    let rows = [17u64, 18, 3000, 5999];
    let units = units_holding(&plan, &rows);
    let (selected, read) = page.read_units(&plan, &units);
    assert!(read * 2 < page.buffers[page.bulk()].len());
    for (k, &u) in units.iter().enumerate() {
        let first = first_row(&plan, u);
        let end = first + plan.unit_rows()[u];
        let within: Vec<usize> = rows
            .iter()
            .filter(|&&r| r >= first && r < end)
            .map(|&r| (r - first) as usize)
            .collect();
        let page = selected
            .decode_unit_rows(k, &within)
            .unwrap()
            .expect("mini-block strings decode selected rows");
        assert_eq!(page.num_rows, within.len() as u64);
        let got = leaf_array(page, &DataType::Utf8);
        let expect: StringArray = within
            .iter()
            .map(|&r| Some(names[first as usize + r].clone()))
            .collect();
        assert_eq!(got.as_string::<i32>(), &expect);
    }
}

#[test]
fn list_rows_spanning_chunks_read_every_chunk_they_touch() {
    // Ten rows of 1,500 items: chunks hold a power of two of values, so rows cross chunk
    // boundaries and no chunk ends between rows. A take reads a row with the chunks from
    // the one it starts in to the one it ends in (the repetition index says which).
    let lens = 1500;
    let items = Int32Array::from_iter_values(0..10 * lens);
    let offsets = arrow_buffer::OffsetBuffer::from_lengths(std::iter::repeat_n(lens as usize, 10));
    let field = Arc::new(Field::new("item", DataType::Int32, false));
    let list: ArrayRef = Arc::new(ListArray::new(field, offsets, Arc::new(items), None));
    let page = encode(list, &[Step::ListItems], false);
    // A scan cuts only between rows: here that is the whole page.
    let mut scan = sizing(1);
    scan.rows_share_chunks = false;
    let whole_scan = plan_page(
        &page.layout,
        page.buffers.clone(),
        page.rows,
        &DataType::Int32,
        &scan,
    )
    .unwrap();
    assert_eq!(whole_scan.unit_rows(), &[10]);

    let plan = page.plan_without_bulk(&DataType::Int32, 1);
    assert_eq!(plan.unit_rows().iter().sum::<u64>(), 10);
    assert!(plan.unit_rows().len() >= 3, "{:?}", plan.unit_rows());

    let units = units_holding(&plan, &[3]);
    assert_eq!(units.len(), 1);
    let (selected, read) = page.read_units(&plan, &units);
    assert!(read * 2 < page.buffers[page.bulk()].len(), "read {read}");
    let got = selected.decode_unit(0).unwrap();
    let first = first_row(&plan, units[0]) as i32;
    let rows = plan.unit_rows()[units[0]] as i32;
    assert!(first <= 3 && 3 < first + rows);
    // Whole rows only: one row start (repetition level 1) per row.
    let rep = got.rep.clone().expect("list pages have repetition levels");
    assert_eq!(rep.iter().filter(|&&r| r == 1).count() as i32, rows);
    assert_eq!(rep[0], 1);
    let values = leaf_array(got, &DataType::Int32);
    let expect = Int32Array::from_iter_values(first * lens..(first + rows) * lens);
    assert_eq!(values.to_data(), expect.to_data());
    let whole = page.plan_whole(&DataType::Int32, 1);
    assert_same(
        selected.decode_unit(0).unwrap(),
        whole.decode_unit(units[0]).unwrap(),
        &DataType::Int32,
    );
}

#[test]
fn shared_chunk_units_partition_the_page() {
    // Lists of every kind (null, empty, short, longer than a chunk; null items): the
    // units a take cuts, decoded one by one, give back the page's levels and values.
    let mut lens: Vec<Option<usize>> = Vec::new();
    for i in 0..400usize {
        lens.push(match i % 7 {
            0 => None,
            1 => Some(0),
            2 => Some(5000 + i),
            _ => Some(i % 40),
        });
    }
    let total: usize = lens.iter().flatten().sum();
    let items: Int32Array = (0..total)
        .map(|i| (i % 13 != 0).then_some(i as i32))
        .collect();
    let offsets = arrow_buffer::OffsetBuffer::from_lengths(lens.iter().map(|l| l.unwrap_or(0)));
    let validity =
        arrow_buffer::NullBuffer::from(lens.iter().map(|l| l.is_some()).collect::<Vec<_>>());
    let field = Arc::new(Field::new("item", DataType::Int32, true));
    let list: ArrayRef = Arc::new(ListArray::new(
        field,
        offsets,
        Arc::new(items),
        Some(validity),
    ));
    for large_chunks in [false, true] {
        let page = encode(list.clone(), &[Step::ListItems], large_chunks);
        let plan = page.plan_without_bulk(&DataType::Int32, 1);
        assert!(plan.unit_rows().len() > 10, "{:?}", plan.unit_rows());
        let all: Vec<usize> = (0..plan.unit_rows().len()).collect();
        let (selected, _) = page.read_units(&plan, &all);
        let mut scan = sizing(u64::MAX);
        scan.rows_share_chunks = false;
        let expect = plan_page(
            &page.layout,
            page.buffers.clone(),
            page.rows,
            &DataType::Int32,
            &scan,
        )
        .unwrap()
        .decode_unit(0)
        .unwrap();
        let (mut rep, mut def, mut values) = (vec![], vec![], vec![]);
        for k in 0..all.len() {
            let p = selected.decode_unit(k).unwrap();
            assert_eq!(p.num_rows, plan.unit_rows()[k]);
            rep.extend(p.rep.clone().unwrap().iter().copied());
            def.extend(p.def.clone().unwrap().iter().copied());
            values.push(leaf_array(p, &DataType::Int32));
        }
        assert_eq!(&rep[..], &expect.rep.clone().unwrap()[..]);
        assert_eq!(&def[..], &expect.def.clone().unwrap()[..]);
        let refs: Vec<&dyn Array> = values.iter().map(|v| v.as_ref()).collect();
        let values = arrow_select::concat::concat(&refs).unwrap();
        assert_eq!(
            values.to_data(),
            leaf_array(expect, &DataType::Int32).to_data()
        );
    }
}

#[test]
fn fixed_width_full_zip_units_are_row_ranges_of_fixed_stride() {
    // Vectors of 100 floats (400 bytes) go to a full-zip page with no per-row header:
    // unit u of 64 rows is bytes 64 * 400 * u .. 64 * 400 * (u + 1).
    let n = 1000usize;
    let floats = Float32Array::from_iter_values((0..n * 100).map(|i| i as f32));
    let field = Arc::new(Field::new("item", DataType::Float32, false));
    let vectors: ArrayRef = Arc::new(FixedSizeListArray::new(
        field.clone(),
        100,
        Arc::new(floats),
        None,
    ));
    let page = encode(vectors, &[], false);
    let leaf = DataType::FixedSizeList(field, 100);
    let plan = page.plan_without_bulk(&leaf, 64);
    let mut expect_rows = vec![64u64; n / 64];
    expect_rows.push((n % 64) as u64);
    assert_eq!(plan.unit_rows(), &expect_rows[..]);
    assert_eq!(plan.unit_bytes(2), Some(2 * 64 * 400..3 * 64 * 400));

    let (selected, read) = page.read_units(&plan, &[2, 15]);
    assert_eq!(read, (64 + 40) * 400);
    let got = leaf_array(selected.decode_unit(0).unwrap(), &leaf);
    let got = got.as_fixed_size_list();
    assert_eq!(got.len(), 64);
    let row_130 = got.value(2);
    let row_130 = row_130.as_primitive::<Float32Type>();
    assert_eq!(row_130.value(0), 130.0 * 100.0);
    assert_eq!(row_130.value(99), 130.0 * 100.0 + 99.0);
    let last = leaf_array(selected.decode_unit(1).unwrap(), &leaf);
    assert_eq!(last.len(), 40);
}

#[test]
fn variable_width_full_zip_units_follow_the_repetition_index() {
    // Values of 300 to 599 bytes: full-zip with a length before each value; the
    // repetition index gives where each row starts, so a unit's bytes are known
    // without reading the page.
    let values: Vec<Vec<u8>> = (0..500u32)
        .map(|i| vec![(i % 251) as u8; 300 + (i as usize * 7) % 300])
        .collect();
    let array: ArrayRef = Arc::new(BinaryArray::from_iter_values(values.iter()));
    let page = encode(array, &[], false);
    assert!(matches!(
        page.layout.layout,
        Some(PbLayout::FullZipLayout(_))
    ));
    let plan = page.plan_without_bulk(&DataType::Binary, 64);
    let units = units_holding(&plan, &[200, 201, 499]);
    assert_eq!(units, vec![3, 7]);
    let (selected, read) = page.read_units(&plan, &units);
    let sizes: usize = (192..256).chain(448..500).map(|i| values[i].len()).sum();
    assert!(
        read >= sizes && read < sizes + 200 * 8,
        "read {read} for {sizes} value bytes"
    );
    let whole = page.plan_whole(&DataType::Binary, 64);
    for (k, &u) in units.iter().enumerate() {
        let got = leaf_array(selected.decode_unit(k).unwrap(), &DataType::Binary);
        let got = got.as_binary::<i32>();
        let first = first_row(&plan, u) as usize;
        for i in 0..got.len() {
            assert_eq!(got.value(i), &values[first + i][..]);
        }
        assert_same(
            selected.decode_unit(k).unwrap(),
            whole.decode_unit(u).unwrap(),
            &DataType::Binary,
        );
    }
}

#[test]
fn all_null_pages_need_no_bytes() {
    // A constant page: nothing to read, any row decodes from the layout alone.
    let nulls: ArrayRef = Arc::new(Int32Array::from(vec![None::<i32>; 3000]));
    let page = encode(nulls, &[], false);
    assert_eq!(bulk_buffer(&page.layout), None);
    let plan = plan_page(
        &page.layout,
        page.buffers.clone(),
        page.rows,
        &DataType::Int32,
        &sizing(1),
    )
    .unwrap();
    assert_eq!(plan.unit_bytes(0), None);
    let got = leaf_array(plan.decode_unit(0).unwrap(), &DataType::Int32);
    assert_eq!(got.null_count(), got.len());
}
