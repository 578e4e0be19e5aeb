//! NGRAM indices: for every trigram of a string column's values, the rows whose value
//! holds it, in `ngram_postings.lance` (one row per trigram token, ascending: `tokens`
//! u32 and `posting_list`, the rows as a 64-bit roaring treemap). Token 0 lists the rows
//! whose value is NULL.
//!
//! Values are folded before they are cut (lowercase, then accents and ligatures to
//! ASCII), so the index is blind to case and accents while LIKE is not: what it finds
//! are candidates that the filter checks again. A LIKE pattern's fixed runs must each
//! occur in a matching value, so the rows holding every trigram of those runs are a
//! superset of the matches.
use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use roaring::RoaringTreemap;

use futures::future::BoxFuture;
use serde_json::Value;

use super::kind::{BuildParams, IndexFileData, ScalarIndexKind};
use super::remap::AddressMap;
use super::selection::{Found, IdSet};
use crate::dataset::Dataset;
use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::table::index_segments::IndexSegment;

pub const FILE: &str = "ngram_postings.lance";

/// Candidate rows few enough to check directly rather than narrow down further.
const FEW_CANDIDATES: u64 = 16;

/// The token of NULL values.
const NULL_TOKEN: u32 = 0;

/// Tokens of trigrams of folded lowercase letters and digits: 37³ of them (a digit or
/// letter is 1..=36); folding can also leave uppercase letters, whose tokens lie above.
const DENSE_TOKENS: usize = 37 * 37 * 37;

pub struct NGram {
    shown: String,
    /// Ascending.
    tokens: UInt32Array,
    postings: BinaryArray,
}

impl NGram {
    pub async fn load(ds: &Dataset, segment: &IndexSegment) -> Result<Arc<NGram>> {
        super::load_whole(ds, segment, FILE, |whole| async move {
            let c = whole.columns();
            let tokens = c.primitive::<arrow_array::types::UInt32Type>("tokens")?;
            let postings = c.binary("posting_list")?;
            if tokens.null_count() > 0 || tokens.values().windows(2).any(|w| w[0] >= w[1]) {
                return Err(Error::corrupt(&whole.shown, "its tokens are not ascending"));
            }
            Ok(NGram {
                shown: whole.shown,
                tokens,
                postings,
            })
        })
        .await
    }

    /// The index file with every row id mapped by `map` (None: the row is gone); tokens
    /// left with no row are left out.
    pub fn remapped(&self, map: impl Fn(u64) -> Option<u64>) -> Result<RecordBatch> {
        let mut postings = BTreeMap::new();
        for &token in self.tokens.values().iter() {
            let mut rows = RoaringTreemap::new();
            for id in self.posting(token)?.iter() {
                if let Some(to) = map(id) {
                    rows.insert(to);
                }
            }
            if !rows.is_empty() {
                postings.insert(token, rows);
            }
        }
        file_batch(postings)
    }

    /// Distinct tokens (pylance's `num_ngrams`).
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// The stored size of the posting list of `token` (0 when it is not in the index).
    fn posting_len(&self, token: u32) -> usize {
        match self.tokens.values().binary_search(&token) {
            Ok(at) => self.postings.value_length(at) as usize,
            Err(_) => 0,
        }
    }

    /// The rows listed under `token` (none when it is not in the index).
    fn posting(&self, token: u32) -> Result<RoaringTreemap> {
        let Ok(at) = self.tokens.values().binary_search(&token) else {
            return Ok(RoaringTreemap::new());
        };
        if self.postings.is_null(at) {
            return Err(Error::corrupt(
                &self.shown,
                format!("token {token} has no posting list"),
            ));
        }
        RoaringTreemap::deserialize_from(self.postings.value(at)).map_err(|e| {
            Error::corrupt(
                &self.shown,
                format!("the posting list of token {token}: {e}"),
            )
        })
    }

    /// The rows that may pass `condition` on string column `name`: those holding every
    /// trigram of a `LIKE` pattern's fixed text (`contains`, `starts_with` and
    /// `ends_with` are such patterns). None when the condition is not one, or yields no
    /// trigram, or when its NULL rows are wanted too (candidates cannot be negated).
    pub fn search(
        &self,
        name: &str,
        value_type: &DataType,
        condition: &Expr,
        nulls: bool,
    ) -> Result<Option<Found>> {
        if nulls {
            return Ok(None);
        }
        let schema = Arc::new(Schema::new(vec![Field::new(
            name,
            value_type.clone(),
            true,
        )]));
        let Ok(bound) = crate::expr::bind_filter(condition, &schema) else {
            return Ok(None);
        };
        let Some(pattern) = crate::expr::ranges::like_pattern_on_column(&bound, 0) else {
            return Ok(None);
        };
        let mut tokens = Vec::new();
        for run in crate::expr::ranges::like_fixed_runs(&pattern) {
            trigram_tokens(&run, &mut tokens);
        }
        tokens.sort_unstable();
        tokens.dedup();
        // Shortest posting lists first: the rows left shrink fastest, and once they are
        // few the longest lists need not be read at all (the rows are candidates, which
        // the filter checks anyway).
        tokens.sort_by_key(|&t| self.posting_len(t));
        let Some((&first, rest)) = tokens.split_first() else {
            return Ok(None);
        };
        let mut rows = self.posting(first)?;
        for &t in rest {
            if rows.len() <= FEW_CANDIDATES {
                break;
            }
            rows &= self.posting(t)?;
        }
        let mut yes = IdSet::default();
        for (high, low) in rows.bitmaps() {
            yes.union_with(high, low);
        }
        Ok(Some(Found {
            yes,
            nulls: IdSet::default(),
            exact: false,
        }))
    }
}

/// The rows of every token of string `values` (rows `ids`), as the index file holds
/// them: tokens ascending, each posting list a serialized roaring treemap.
pub fn build(values: &ArrayRef, ids: &UInt64Array) -> Result<RecordBatch> {
    let postings = match values.data_type() {
        DataType::Utf8 => postings_of(values.as_string::<i32>(), ids),
        DataType::LargeUtf8 => postings_of(values.as_string::<i64>(), ids),
        DataType::Utf8View => postings_of(values.as_string_view(), ids),
        other => {
            return Err(Error::invalid(format!(
                "an NGRAM index needs a string column, not {other}"
            )))
        }
    };
    file_batch(postings)
}

/// The index file's rows: each token's posting list, serialized.
fn file_batch(postings: BTreeMap<u32, RoaringTreemap>) -> Result<RecordBatch> {
    let mut tokens = Vec::with_capacity(postings.len());
    let mut lists = arrow_array::builder::BinaryBuilder::new();
    let mut buf = Vec::new();
    for (token, rows) in postings {
        buf.clear();
        rows.serialize_into(&mut buf)
            .map_err(|e| Error::invalid(format!("NGRAM posting list: {e}")))?;
        tokens.push(token);
        lists.append_value(&buf);
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("tokens", DataType::UInt32, true),
        // pylance stores posting lists as they are: they are compressed already.
        Field::new("posting_list", DataType::Binary, false).with_metadata(
            std::collections::HashMap::from([(
                "lance-encoding:compression".to_string(),
                "none".to_string(),
            )]),
        ),
    ]));
    Ok(RecordBatch::try_new(
        schema,
        vec![
            Arc::new(UInt32Array::from(tokens)),
            Arc::new(lists.finish()),
        ],
    )?)
}

/// Token → rows, ascending by token. Rows are split among threads in contiguous runs
/// (each run's posting lists grow by appends), then joined.
fn postings_of<'a, S>(values: S, ids: &UInt64Array) -> BTreeMap<u32, RoaringTreemap>
where
    S: arrow_array::ArrayAccessor<Item = &'a str> + Sync + Copy,
{
    use rayon::prelude::*;
    let n = values.len();
    let runs = crate::threads::num_threads()
        .max(1)
        .min(n.div_ceil(16 * 1024).max(1));
    let per_run = n.div_ceil(runs.max(1)).max(1);
    let parts: Vec<Postings> = crate::threads::install(|| {
        (0..runs)
            .into_par_iter()
            .map(|r| {
                let mut p = Postings::new();
                let mut tokens = Vec::new();
                for i in r * per_run..((r + 1) * per_run).min(n) {
                    let id = ids.value(i);
                    if values.is_null(i) {
                        p.add(NULL_TOKEN, id);
                        continue;
                    }
                    tokens.clear();
                    trigram_tokens(values.value(i), &mut tokens);
                    tokens.sort_unstable();
                    tokens.dedup();
                    for &t in &tokens {
                        p.add(t, id);
                    }
                }
                p
            })
            .collect()
    });
    let mut out: BTreeMap<u32, RoaringTreemap> = BTreeMap::new();
    for part in parts {
        for (token, rows) in part.into_iter() {
            match out.entry(token) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(rows);
                }
                std::collections::btree_map::Entry::Occupied(mut o) => *o.get_mut() |= rows,
            }
        }
    }
    out
}

/// Posting lists being built: the common tokens by index, the rest in a map.
struct Postings {
    dense: Vec<Option<RoaringTreemap>>,
    sparse: BTreeMap<u32, RoaringTreemap>,
}

impl Postings {
    fn new() -> Self {
        Postings {
            dense: vec![None; DENSE_TOKENS],
            sparse: BTreeMap::new(),
        }
    }

    fn add(&mut self, token: u32, id: u64) {
        let rows = match self.dense.get_mut(token as usize) {
            Some(slot) => slot.get_or_insert_with(RoaringTreemap::new),
            None => self.sparse.entry(token).or_default(),
        };
        // Ids mostly come ascending, where appending is cheapest.
        if rows.try_push(id).is_err() {
            rows.insert(id);
        }
    }

    fn into_iter(self) -> impl Iterator<Item = (u32, RoaringTreemap)> {
        self.dense
            .into_iter()
            .enumerate()
            .filter_map(|(t, rows)| Some((t as u32, rows?)))
            .chain(self.sparse)
    }
}

/// Append the tokens of the trigrams of `text` (after folding) to `out`, duplicates
/// included. A trigram counts only when its three characters are ASCII letters or
/// digits: anything else breaks the text.
pub fn trigram_tokens(text: &str, out: &mut Vec<u32>) {
    if text.is_ascii() {
        // Folding ASCII is lowercasing it.
        let b = text.as_bytes();
        for w in b.windows(3) {
            if w.iter().all(u8::is_ascii_alphanumeric) {
                out.push(token(
                    w[0].to_ascii_lowercase(),
                    w[1].to_ascii_lowercase(),
                    w[2].to_ascii_lowercase(),
                ));
            }
        }
        return;
    }
    let mut folded: Vec<char> = Vec::with_capacity(text.len());
    for c in text.chars() {
        for lower in c.to_lowercase() {
            fold(lower, &mut |f| folded.push(f));
        }
    }
    for w in folded.windows(3) {
        if w.iter().all(char::is_ascii_alphanumeric) {
            out.push(token(w[0] as u8, w[1] as u8, w[2] as u8));
        }
    }
}

/// A trigram's token: its characters as base-37 digits, '0'..'9' being 1..10 and
/// 'a'..'z' 11..36. An uppercase letter (left by folding a character with no lowercase
/// form, as 'ℂ') takes the value the same formula gives it in 8-bit arithmetic, as
/// pylance's tokens do.
fn token(a: u8, b: u8, c: u8) -> u32 {
    let digit = |x: u8| -> u32 {
        let d = if x <= b'9' {
            x.wrapping_sub(b'0')
        } else {
            x.wrapping_sub(b'a' - 10)
        };
        d.wrapping_add(1) as u32
    };
    digit(a) * 37 * 37 + digit(b) * 37 + digit(c)
}

/// Fold one (lowercased) character towards ASCII: ASCII stays, a few letters have their
/// own spelling, others lose their accents and compatibility forms (NFKD) and keep what
/// is ASCII of that; a character that yields nothing stays as it is.
fn fold(c: char, emit: &mut impl FnMut(char)) {
    if c.is_ascii() {
        return emit(c);
    }
    if let Some(s) = spelled(c) {
        return s.chars().for_each(&mut *emit);
    }
    let mut any = false;
    unicode_normalization::char::decompose_compatible(c, |d| {
        if d.is_ascii() {
            emit(d);
            any = true;
        } else if let Some(s) = spelled(d) {
            s.chars().for_each(&mut *emit);
            any = true;
        }
    });
    if !any {
        emit(c);
    }
}

/// Letters NFKD does not take apart, and their ASCII spellings.
fn spelled(c: char) -> Option<&'static str> {
    Some(match c {
        'ß' => "ss",
        'ẞ' => "SS",
        'æ' => "ae",
        'Æ' => "AE",
        'œ' => "oe",
        'Œ' => "OE",
        'ø' => "o",
        'Ø' => "O",
        'ł' => "l",
        'Ł' => "L",
        'đ' | 'ð' => "d",
        'Đ' | 'Ð' => "D",
        'þ' => "th",
        'Þ' => "TH",
        'ħ' => "h",
        'Ħ' => "H",
        'ŧ' => "t",
        'Ŧ' => "T",
        'ŋ' => "n",
        'Ŋ' => "N",
        'ı' => "i",
        'ĸ' => "k",
        'ſ' => "s",
        _ => return None,
    })
}

/// NGRAM, as the registry lists it (`super::registry`).
#[derive(Debug)]
pub struct NGramKind;

impl ScalarIndexKind for NGramKind {
    fn name(&self) -> &'static str {
        "NGram"
    }

    fn user_names(&self) -> &'static [&'static str] {
        &["NGRAM"]
    }

    fn type_url(&self) -> &'static str {
        "/lance.table.NGramIndexDetails"
    }

    fn holds_row_ids(&self, _index_version: i32) -> bool {
        true
    }

    fn keyed_type<'a>(
        &self,
        column: &str,
        data_type: &'a DataType,
    ) -> std::result::Result<&'a DataType, String> {
        match data_type {
            DataType::Utf8 | DataType::LargeUtf8 => Ok(data_type),
            _ => Err(format!(
                "an NGRAM index needs a string column, and '{column}' is {data_type}"
            )),
        }
    }

    fn build(
        &self,
        values: &ArrayRef,
        ids: &UInt64Array,
        _params: &BuildParams,
    ) -> Result<Vec<IndexFileData>> {
        Ok(vec![IndexFileData::new(FILE, build(values, ids)?)])
    }

    fn search<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
        column: &'a str,
        e: &'a Expr,
        nulls: bool,
    ) -> BoxFuture<'a, Result<Option<Found>>> {
        Box::pin(async move {
            let Some(value_type) = super::column_type(ds, column) else {
                return Ok(None);
            };
            NGram::load(ds, segment)
                .await?
                .search(column, &value_type, e, nulls)
        })
    }

    fn remaps(&self) -> bool {
        true
    }

    fn remap<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
        map: &'a AddressMap,
    ) -> BoxFuture<'a, Result<Option<Vec<IndexFileData>>>> {
        Box::pin(async move {
            let index = NGram::load(ds, segment).await?;
            let batch = index.remapped(|id| map.map(id))?;
            Ok(Some(vec![IndexFileData::new(FILE, batch)]))
        })
    }

    fn statistics<'a>(
        &'a self,
        ds: &'a Dataset,
        segment: &'a IndexSegment,
    ) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let ngram = NGram::load(ds, segment).await?;
            Ok(serde_json::json!({ "num_ngrams": ngram.len() }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(s: &str) -> Vec<u32> {
        let mut out = Vec::new();
        trigram_tokens(s, &mut out);
        out
    }

    fn name(t: u32) -> String {
        let alphabet = b"0123456789abcdefghijklmnopqrstuvwxyz";
        [t / (37 * 37), t / 37 % 37, t % 37]
            .iter()
            .map(|&d| alphabet[d as usize - 1] as char)
            .collect()
    }

    #[test]
    fn trigrams_are_cut_within_runs_of_letters_and_digits() {
        let got: Vec<String> = tokens("Goodbye-Moon").into_iter().map(name).collect();
        assert_eq!(got, ["goo", "ood", "odb", "dby", "bye", "moo", "oon"]);
        assert_eq!(tokens("000"), [1407]);
        assert_eq!(tokens("zzz"), [50652]);
        assert!(tokens("ab").is_empty() && tokens("a b c").is_empty());
    }

    #[test]
    fn folding_drops_accents_and_spells_out_ligatures() {
        assert_eq!(tokens("Crème"), tokens("creme"));
        assert_eq!(tokens("ﬁsh"), tokens("fish"));
        assert_eq!(tokens("Straße"), tokens("strasse"));
        assert_eq!(tokens("①②③"), tokens("123"));
        assert_eq!(tokens("ŀlo"), tokens("llo"));
        // A character with nothing ASCII in it stays, and breaks trigrams.
        assert_eq!(tokens("aǂbcd").len(), 1);
    }

    #[test]
    fn uppercase_left_by_folding_gets_pylances_token() {
        // Values pylance 14 wrote for these strings.
        assert_eq!(tokens("ℂat"), [324890]);
        assert_eq!(tokens("𝐀bc"), [322172]);
    }

    #[test]
    fn postings_list_each_row_once_per_token_and_nulls_under_zero() {
        let values: ArrayRef = Arc::new(arrow_array::StringArray::from(vec![
            Some("abcabc"),
            None,
            Some("xabc"),
            Some("ab"),
        ]));
        let ids = UInt64Array::from(vec![0, 1, (1 << 32) | 5, (1 << 32) | 6]);
        let batch = build(&values, &ids).unwrap();
        let tokens = batch
            .column(0)
            .as_primitive::<arrow_array::types::UInt32Type>();
        let lists = batch.column(1).as_binary::<i32>();
        let rows = |t: u32| -> Vec<u64> {
            let at = tokens.values().iter().position(|&x| x == t).unwrap();
            RoaringTreemap::deserialize_from(lists.value(at))
                .unwrap()
                .iter()
                .collect()
        };
        assert_eq!(rows(0), [1]);
        assert_eq!(rows(tokens_of("abc")), [0, (1 << 32) | 5]);
        assert_eq!(rows(tokens_of("xab")), [(1 << 32) | 5]);
        assert!(tokens.values().windows(2).all(|w| w[0] < w[1]));
    }

    fn tokens_of(s: &str) -> u32 {
        tokens(s)[0]
    }
}
