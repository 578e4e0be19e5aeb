//! Row lineage: the dataset version each row of a fragment was created in, and the one it
//! was last updated in, kept by tables with stable row ids. A sequence is runs of equal
//! versions over consecutive physical rows (deleted rows included); a fragment without
//! one reads as version 1, as pylance reads it.
use prost::Message;

use crate::error::{corrupt, Result};
use crate::proto::table::data_fragment::{
    CreatedAtVersionSequence as CreatedSeq, LastUpdatedAtVersionSequence as UpdatedSeq,
};
use crate::proto::table::u64_segment::{Range, Segment};
use crate::proto::table::{
    DataFragment, ExternalFile, RowDatasetVersionRun, RowDatasetVersionSequence, U64Segment,
};

/// The version a row without lineage reads as.
pub const DEFAULT_VERSION: u64 = 1;

/// Which of a fragment's two lineage sequences.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lineage {
    CreatedAt,
    LastUpdatedAt,
}

/// Where a fragment keeps one of its sequences.
pub enum Stored<'a> {
    Inline(&'a [u8]),
    External(&'a ExternalFile),
}

impl Lineage {
    pub fn of(self, frag: &DataFragment) -> Option<Stored<'_>> {
        match self {
            Lineage::CreatedAt => frag.created_at_version_sequence.as_ref().map(|s| match s {
                CreatedSeq::InlineCreatedAtVersions(b) => Stored::Inline(b),
                CreatedSeq::ExternalCreatedAtVersions(f) => Stored::External(f),
            }),
            Lineage::LastUpdatedAt => {
                frag.last_updated_at_version_sequence
                    .as_ref()
                    .map(|s| match s {
                        UpdatedSeq::InlineLastUpdatedAtVersions(b) => Stored::Inline(b),
                        UpdatedSeq::ExternalLastUpdatedAtVersions(f) => Stored::External(f),
                    })
            }
        }
    }

    /// Store `versions` (one per physical row) inline in `frag`.
    pub fn set(self, frag: &mut DataFragment, versions: &[u64]) {
        let bytes = encode_versions(versions);
        match self {
            Lineage::CreatedAt => {
                frag.created_at_version_sequence = Some(CreatedSeq::InlineCreatedAtVersions(bytes))
            }
            Lineage::LastUpdatedAt => {
                frag.last_updated_at_version_sequence =
                    Some(UpdatedSeq::InlineLastUpdatedAtVersions(bytes))
            }
        }
    }

    pub fn is_set(self, frag: &DataFragment) -> bool {
        self.of(frag).is_some()
    }
}

/// Decode a serialized `RowDatasetVersionSequence` of a fragment of `rows` physical rows
/// into one version per row.
pub fn decode_versions(bytes: &[u8], rows: u64) -> Result<Vec<u64>> {
    let seq = RowDatasetVersionSequence::decode(bytes)
        .map_err(|e| corrupt(format!("bad row version sequence: {e}")))?;
    let mut out = Vec::with_capacity(rows as usize);
    for run in &seq.runs {
        let span = run
            .span
            .as_ref()
            .and_then(|s| s.segment.as_ref())
            .ok_or_else(|| corrupt("row version run without a span"))?;
        let len = super::rowids::segment_len(span)?;
        if out.len() as u64 + len > rows {
            return Err(corrupt(format!(
                "row version sequence covers more than the fragment's {rows} rows"
            )));
        }
        out.extend(std::iter::repeat_n(run.version, len as usize));
    }
    if (out.len() as u64) != rows {
        return Err(corrupt(format!(
            "row version sequence covers {} rows, the fragment has {rows}",
            out.len()
        )));
    }
    Ok(out)
}

/// Versions (one per physical row) as runs over row positions, as pylance writes them.
pub fn encode_versions(versions: &[u64]) -> Vec<u8> {
    let mut runs: Vec<RowDatasetVersionRun> = Vec::new();
    let mut start = 0usize;
    for (i, v) in versions.iter().enumerate() {
        if i + 1 == versions.len() || versions[i + 1] != *v {
            runs.push(RowDatasetVersionRun {
                span: Some(U64Segment {
                    segment: Some(Segment::Range(Range {
                        start: start as u64,
                        end: i as u64 + 1,
                    })),
                }),
                version: *v,
            });
            start = i + 1;
        }
    }
    RowDatasetVersionSequence { runs }.encode_to_vec()
}

/// Give a fragment about to be committed as `version` its lineage: rows new to the table
/// were created then; every row in it (moved rows too, whose creation the writer kept)
/// was last updated then.
pub fn stamp_new_fragment(frag: &mut DataFragment, version: u64) {
    let all = vec![version; frag.physical_rows as usize];
    if !Lineage::CreatedAt.is_set(frag) {
        Lineage::CreatedAt.set(frag, &all);
    }
    if !Lineage::LastUpdatedAt.is_set(frag) {
        Lineage::LastUpdatedAt.set(frag, &all);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_round_trip() {
        let v = vec![1, 1, 3, 3, 3, 2, 7];
        let bytes = encode_versions(&v);
        let seq = RowDatasetVersionSequence::decode(bytes.as_slice()).unwrap();
        assert_eq!(seq.runs.len(), 4);
        assert_eq!(decode_versions(&bytes, 7).unwrap(), v);
        assert!(decode_versions(&bytes, 6).is_err());
        assert!(decode_versions(&bytes, 8).is_err());
        assert_eq!(
            decode_versions(&encode_versions(&[]), 0).unwrap(),
            Vec::<u64>::new()
        );
        assert!(decode_versions(b"\xff\xff", 1).is_err());
    }
}
