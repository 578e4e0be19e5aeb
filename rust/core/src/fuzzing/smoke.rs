//! A bounded, deterministic stand-in for the cargo-fuzz targets (`fuzz/`): every target's
//! seeds must decode, and thousands of mutations of them must not panic. A failure
//! prints the target and the input in hex; `fuzz/README.md` says how to replay it.
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::{run, seeds, TARGETS};

/// Mutated inputs per target.
const ROUNDS: usize = 30000;

/// xorshift64*: a few lines, and the same sequence on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

/// Values that tend to sit on boundaries: as bytes, and as little-endian u32s.
const BYTES: [u8; 8] = [0, 1, 2, 7, 0x7F, 0x80, 0xFE, 0xFF];
const WORDS: [u32; 9] = [
    0,
    1,
    8,
    255,
    4096,
    65535,
    0x7FFF_FFFF,
    0x8000_0000,
    0xFFFF_FFFF,
];

fn mutate(rng: &mut Rng, input: &mut Vec<u8>) {
    let len = input.len();
    match rng.below(8) {
        0 => input.truncate(rng.below(len + 1)),
        1 if len > 0 => {
            let i = rng.below(len);
            input[i] ^= 1 << rng.below(8);
        }
        2 if len > 0 => {
            let start = rng.below(len);
            let end = (start + 1 + rng.below(16)).min(len);
            input[start..end].fill(0);
        }
        3 if len > 0 => {
            let start = rng.below(len);
            let end = (start + 1 + rng.below(8)).min(len);
            for b in &mut input[start..end] {
                *b = rng.next() as u8;
            }
        }
        4 if len > 0 => {
            let i = rng.below(len);
            input[i] = BYTES[rng.below(BYTES.len())];
        }
        5 if len >= 4 => {
            let i = rng.below(len - 3);
            let w = WORDS[rng.below(WORDS.len())].to_le_bytes();
            input[i..i + 4].copy_from_slice(&w);
        }
        6 => {
            let at = rng.below(len + 1);
            let extra: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.next() as u8).collect();
            input.splice(at..at, extra);
        }
        _ if len > 0 => {
            // Drop a range: shifts everything after it, as a wrong length would.
            let start = rng.below(len);
            let end = (start + 1 + rng.below(8)).min(len);
            input.drain(start..end);
        }
        _ => input.push(rng.next() as u8),
    }
}

/// Save a failing input for replay (`cargo fuzz run <target> <file>` in fuzz/) and say
/// where it is, with its first bytes in hex.
fn keep(target: &str, input: &[u8]) -> String {
    let path = std::env::temp_dir().join(format!("fuzz_smoke-{target}.bin"));
    let saved = std::fs::write(&path, input).is_ok();
    let head: String = input.iter().take(64).map(|x| format!("{x:02x}")).collect();
    let place = match saved {
        true => format!("saved to {}", path.display()),
        false => "not saved".into(),
    };
    format!("{} bytes, {place}, starting {head}", input.len())
}

fn smoke(target: &str) {
    let seeds = seeds(target);
    assert!(!seeds.is_empty(), "{target}: no seeds");
    for (i, s) in seeds.iter().enumerate() {
        if !run(target, s) {
            panic!("{target}: seed {i} does not decode ({})", keep(target, s));
        }
    }
    // Seeded by the target's name, so each target sees its own sequence.
    let mut rng = Rng(target.bytes().fold(0x9E37_79B9_7F4A_7C15, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01B3)
    }));
    for _ in 0..ROUNDS {
        let mut input = seeds[rng.below(seeds.len())].clone();
        for _ in 0..1 + rng.below(4) {
            mutate(&mut rng, &mut input);
        }
        let outcome = catch_unwind(AssertUnwindSafe(|| run(target, &input)));
        if outcome.is_err() {
            panic!("{target} panicked on an input ({})", keep(target, &input));
        }
    }
}

macro_rules! smoke_tests {
    ($($name:ident),*) => {
        $(#[test] fn $name() { smoke(stringify!($name)); })*
        #[test]
        fn every_target_is_covered() {
            let mut names = vec![$(stringify!($name)),*];
            names.sort_unstable();
            let mut all = TARGETS.to_vec();
            all.sort_unstable();
            assert_eq!(names, all);
        }
    };
}

smoke_tests!(
    manifest,
    file_footer,
    miniblock,
    fullzip,
    constant_blob,
    compression,
    array20,
    legacy,
    levels,
    deletion_arrow,
    deletion_roaring,
    row_ids
);

/// Not a test: writes the fuzz corpus (see `fuzz/README.md`). Every target's seeds, and
/// inputs cut from the datasets below `$FUZZ_DATASETS` (as `fuzz/make_datasets.py` writes
/// them with pylance), go to `$FUZZ_CORPUS/<target>/`.
#[test]
#[ignore]
fn write_corpus() {
    let out = std::path::PathBuf::from(std::env::var("FUZZ_CORPUS").expect("set FUZZ_CORPUS"));
    let mut corpus = Corpus(out, 0);
    for t in TARGETS {
        for s in seeds(t) {
            corpus.put(t, &s);
        }
    }
    if let Ok(dir) = std::env::var("FUZZ_DATASETS") {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let mut dirs: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        dirs.sort();
        for d in dirs {
            rt.block_on(cut::dataset(&d, &mut corpus));
        }
    }
    // How many decode as a whole: the rest reach only part of their target.
    for t in TARGETS {
        let files: Vec<_> = std::fs::read_dir(corpus.0.join(t))
            .unwrap()
            .flatten()
            .collect();
        let ok = files
            .iter()
            .filter(|f| run(t, &std::fs::read(f.path()).unwrap()))
            .count();
        eprintln!("{t}: {} inputs, {ok} decode", files.len());
    }
}

struct Corpus(std::path::PathBuf, usize);

impl Corpus {
    fn put(&mut self, target: &str, data: &[u8]) {
        use std::hash::{Hash, Hasher};
        let dir = self.0.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        data.hash(&mut h);
        std::fs::write(dir.join(format!("{:016x}", h.finish())), data).unwrap();
        self.1 += 1;
    }
}

/// Cutting pylance's datasets into inputs: whole manifests, deletion files and small data
/// files; each page framed as its target reads it.
mod cut {
    use std::collections::HashMap;
    use std::path::Path;

    use crate::file::{FileReader, PageEncoding};
    use crate::fuzzing::Frame;
    use crate::proto::encodings21::page_layout::Layout;
    use crate::proto::table::data_fragment::RowIdSequence;
    use crate::table::schema::{logical_type_of, LanceField};
    use crate::Dataset;
    use arrow_schema::DataType;
    use prost::Message;

    use super::Corpus;

    /// The logical type a frame names for values of `dt` (None: not a leaf we can name).
    fn type_name(dt: &DataType) -> Option<String> {
        match dt {
            DataType::Struct(fields) => {
                let names: Option<Vec<String>> = fields
                    .iter()
                    .map(|f| logical_type_of(f.data_type()).ok())
                    .collect();
                Some(format!("struct:{}", names?.join(",")))
            }
            DataType::List(_) | DataType::LargeList(_) | DataType::Map(..) => Some("int64".into()),
            dt => logical_type_of(dt).ok(),
        }
    }

    fn types(fields: &[LanceField], out: &mut HashMap<i32, DataType>) {
        for f in fields {
            if let Ok(dt) = f.data_type() {
                out.insert(f.id, dt);
            }
            types(&f.children, out);
        }
    }

    pub async fn dataset(dir: &Path, corpus: &mut Corpus) {
        for (sub, target) in [("_versions", "manifest"), ("_deletions", "")] {
            for e in std::fs::read_dir(dir.join(sub))
                .into_iter()
                .flatten()
                .flatten()
            {
                let bytes = std::fs::read(e.path()).unwrap();
                let name = e.file_name().to_string_lossy().to_string();
                let target = match target {
                    "manifest" if !name.ends_with(".manifest") => continue,
                    "" if name.ends_with(".arrow") => "deletion_arrow",
                    "" if name.ends_with(".bin") => "deletion_roaring",
                    "" => continue,
                    t => t,
                };
                corpus.put(target, &bytes);
            }
        }
        let uri = dir.to_string_lossy().to_string();
        let ds = match Dataset::open(&uri, None, Default::default()).await {
            Ok(ds) => ds,
            Err(e) => return eprintln!("{uri}: {e}"),
        };
        let mut by_id = HashMap::new();
        types(&ds.schema.fields, &mut by_id);
        for frag in ds.fragments() {
            if let Some(RowIdSequence::InlineRowIds(b)) = &frag.row_id_sequence {
                corpus.put("row_ids", b);
            }
            for file in &frag.files {
                let Ok((storage, path)) = ds.data_file_location(file) else {
                    continue;
                };
                let Ok(mut reader) = FileReader::open(&storage, path.clone(), None).await else {
                    continue;
                };
                if reader.metadata.file_size <= 256 << 10 {
                    if let Ok(b) = storage.get(&path).await {
                        corpus.put("file_footer", &b);
                    }
                }
                let legacy = reader.metadata.legacy.is_some();
                let ids: Vec<i32> = file.fields.iter().copied().filter(|&f| f >= 0).collect();
                let columns: Vec<(usize, i32)> = if legacy {
                    let (Some(&min), Some(&max)) = (ids.iter().min(), ids.iter().max()) else {
                        continue;
                    };
                    let Ok(r) = reader.with_field_ids(min, max).await else {
                        continue;
                    };
                    reader = r;
                    ids.iter().map(|&id| ((id - min) as usize, id)).collect()
                } else {
                    file.fields
                        .iter()
                        .zip(&file.column_indices)
                        .filter(|(f, c)| **f >= 0 && **c >= 0)
                        .map(|(f, c)| (*c as usize, *f))
                        .collect()
                };
                for (column, id) in columns {
                    let Some(name) = by_id.get(&id).and_then(type_name) else {
                        continue;
                    };
                    let dt = by_id[&id].clone();
                    pages(&reader, column, &name, &dt, corpus).await;
                }
            }
        }
    }

    async fn pages(
        reader: &FileReader,
        column: usize,
        name: &str,
        dt: &DataType,
        corpus: &mut Corpus,
    ) {
        let Some(c) = reader.metadata.columns.get(column) else {
            return;
        };
        for (p, info) in c.pages.iter().enumerate().take(8) {
            match &info.encoding {
                PageEncoding::Legacy(group) => {
                    for page in group.iter().take(2) {
                        legacy_page(reader, page, name, dt, corpus).await;
                    }
                    continue;
                }
                _ if info.buffers.iter().map(|b| b.end - b.start).sum::<u64>() > 256 << 10 => {
                    continue
                }
                _ => {}
            }
            let Ok(data) = reader.read_page(column, p).await else {
                continue;
            };
            match &info.encoding {
                PageEncoding::Layout(layout) => {
                    let target = match layout.layout {
                        Some(Layout::MiniBlockLayout(_)) => "miniblock",
                        Some(Layout::FullZipLayout(_)) => "fullzip",
                        _ => "constant_blob",
                    };
                    let frame = Frame::new(name)
                        .u32(info.num_rows as u32)
                        .u8(0)
                        .u8(0)
                        .section(&layout.encode_to_vec())
                        .buffers(&data.buffers)
                        .finish();
                    corpus.put(target, &frame);
                }
                PageEncoding::Array(enc) => {
                    let frame = Frame::new(name)
                        .u32(info.num_rows as u32)
                        .section(&enc.encode_to_vec())
                        .buffers(&data.buffers)
                        .finish();
                    corpus.put("array20", &frame);
                }
                PageEncoding::Legacy(_) => {}
            }
        }
    }

    /// A legacy page as the `legacy` target reads it: values (op 0), list offsets (op 1)
    /// or string positions and bytes (op 2).
    async fn legacy_page(
        reader: &FileReader,
        page: &crate::file::legacy::LegacyPage,
        name: &str,
        dt: &DataType,
        corpus: &mut Corpus,
    ) {
        let n = page.length.min(4096);
        let at = page.position;
        let frame = |op: u8, n: u64, a: &[u8], b: &[u8]| {
            Frame::new(name)
                .u8(op)
                .u32(n as u32)
                .u8(0)
                .section(a)
                .section(b)
                .finish()
        };
        match dt {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
                let Ok(pos) = reader.read_range(at..at + 8 * (n + 1)).await else {
                    return;
                };
                let p = |i: usize| i64::from_le_bytes(pos[8 * i..8 * i + 8].try_into().unwrap());
                let (from, to) = (p(0), p(n as usize));
                if from < 0 || to < from || to - from > 256 << 10 {
                    return;
                }
                let Ok(bytes) = reader.read_range(from as u64..to as u64).await else {
                    return;
                };
                corpus.put("legacy", &frame(2 | 0x10, n, &pos, &bytes));
            }
            DataType::List(_) | DataType::LargeList(_) => {
                let w = if matches!(dt, DataType::LargeList(_)) {
                    8
                } else {
                    4
                };
                let Ok(b) = reader.read_range(at..at + w * (n + 1)).await else {
                    return;
                };
                let op = if w == 8 { 0x21 } else { 1 };
                corpus.put("legacy", &frame(op, n + 1, &b, &[]));
            }
            dt => {
                let Ok(bits) = crate::encoding::legacy::value_bits(dt) else {
                    return;
                };
                let Ok(b) = reader.read_range(at..at + (n * bits).div_ceil(8)).await else {
                    return;
                };
                corpus.put("legacy", &frame(0, n, &b, &[]));
            }
        }
    }
}

/// Not a test: scans every dataset below `$FUZZ_DATASETS` to its end, to show that the
/// decoders' checks accept what pylance writes (`fuzz/README.md`).
#[test]
#[ignore]
fn scan_datasets() {
    use futures::StreamExt;
    let dir = std::env::var("FUZZ_DATASETS").expect("set FUZZ_DATASETS");
    let mut dirs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut failed = Vec::new();
    for d in dirs {
        let uri = d.to_string_lossy().to_string();
        let outcome = rt.block_on(async {
            let ds = crate::Dataset::open(&uri, None, Default::default()).await?;
            let mut scan = crate::scan(std::sync::Arc::new(ds), Default::default())?;
            let mut rows = 0;
            while let Some(batch) = scan.batches.next().await {
                rows += batch?.num_rows();
            }
            Ok::<_, crate::Error>(rows)
        });
        match outcome {
            Ok(rows) => eprintln!("{uri}: {rows} rows"),
            Err(e) => failed.push(format!("{uri}: {e}")),
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
