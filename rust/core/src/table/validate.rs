//! Checks that a decoded manifest holds together before anything trusts it: a damaged
//! manifest can still parse as protobuf (a zeroed range reads as an empty message), and
//! what it says decides which files are read and what a commit writes next.
use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::proto::table::{DataFile, Manifest};
use crate::table::features::STABLE_ROW_IDS;

/// File format versions a data file may claim: 0.1/0.2 (legacy), 0.3 (2.0 under its
/// old name), 2.0, 2.1 and 2.2; 0.0 is what writers before versioned files left.
pub fn known_file_version(major: u32, minor: u32) -> bool {
    matches!((major, minor), (0, 0..=3) | (2, 0..=2))
}

/// Refuse a manifest (called `name`, found as version `version`) whose parts do not
/// agree: its version, its schema's field ids, its fragments and their files.
pub fn validate_manifest(m: &Manifest, name: &str, version: u64) -> Result<()> {
    let bad = |message: String| Error::corrupt(name, message);
    if m.version != version {
        return Err(bad(format!(
            "the manifest says it is version {}, but its file name is version {version}",
            m.version
        )));
    }
    if m.fields.is_empty() && !m.fragments.is_empty() {
        return Err(bad(format!(
            "the manifest lists {} fragments but no schema",
            m.fragments.len()
        )));
    }
    for f in &m.fields {
        if f.id < 0 {
            return Err(bad(format!(
                "field '{}' has a negative id {}",
                f.name, f.id
            )));
        }
        if f.parent_id < -1 {
            return Err(bad(format!(
                "field '{}' (id {}) has parent id {}, which no field has",
                f.name, f.id, f.parent_id
            )));
        }
    }
    let bases: HashSet<u32> = m.base_paths.iter().map(|b| b.id).collect();
    let mut fragment_ids = HashSet::new();
    for frag in &m.fragments {
        if !fragment_ids.insert(frag.id) {
            return Err(bad(format!("fragment id {} is used twice", frag.id)));
        }
        let what = |file: &DataFile| format!("data file {} of fragment {}", file.path, frag.id);
        for file in &frag.files {
            if file.path.is_empty() {
                return Err(bad(format!(
                    "fragment {} has a data file with no path",
                    frag.id
                )));
            }
            if !known_file_version(file.file_major_version, file.file_minor_version) {
                return Err(Error::unsupported(
                    name,
                    format!(
                        "{} has file format version {}.{}, which this reader does not know \
                         (it reads 0.1, 2.0, 2.1 and 2.2)",
                        what(file),
                        file.file_major_version,
                        file.file_minor_version
                    ),
                ));
            }
            if !crate::table::data_file::is_legacy(file)
                && file.column_indices.len() != file.fields.len()
            {
                return Err(bad(format!(
                    "{} lists {} fields but {} column indices",
                    what(file),
                    file.fields.len(),
                    file.column_indices.len()
                )));
            }
            let mut seen = HashSet::new();
            for &id in file.fields.iter().filter(|&&id| id >= 0) {
                if !seen.insert(id) {
                    return Err(bad(format!("{} lists field id {id} twice", what(file))));
                }
            }
            if let Some(b) = file.base_id.filter(|b| !bases.contains(b)) {
                return Err(bad(format!(
                    "{} is under base path {b}, which the manifest does not list",
                    what(file)
                )));
            }
        }
        if let Some(d) = &frag.deletion_file {
            // Without a writer version the recorded physical rows may be the rows left
            // after deletions (pylance 0.8.0–0.8.12); the reader asks the file instead.
            let trusted = m.writer_version.is_some() && frag.physical_rows > 0;
            if trusted && d.num_deleted_rows > frag.physical_rows {
                return Err(bad(format!(
                    "fragment {} deletes {} rows of {}",
                    frag.id, d.num_deleted_rows, frag.physical_rows
                )));
            }
            if let Some(b) = d.base_id.filter(|b| !bases.contains(b)) {
                return Err(bad(format!(
                    "the deletion file of fragment {} is under base path {b}, which the \
                     manifest does not list",
                    frag.id
                )));
            }
        }
        if m.reader_feature_flags & STABLE_ROW_IDS != 0 && frag.row_id_sequence.is_none() {
            return Err(bad(format!(
                "the dataset has stable row ids but fragment {} has no row id sequence",
                frag.id
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::file::Field;
    use crate::proto::table::DataFragment;

    fn manifest() -> Manifest {
        Manifest {
            version: 3,
            writer_version: Some(Default::default()),
            fields: vec![Field {
                id: 0,
                parent_id: -1,
                name: "a".into(),
                logical_type: "int64".into(),
                ..Default::default()
            }],
            fragments: vec![DataFragment {
                id: 0,
                physical_rows: 10,
                files: vec![DataFile {
                    path: "x.lance".into(),
                    fields: vec![0],
                    column_indices: vec![0],
                    file_major_version: 2,
                    file_minor_version: 1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn refused(m: &Manifest, needle: &str) {
        let err = validate_manifest(m, "m", 3).unwrap_err().to_string();
        assert!(err.contains(needle), "{err}");
    }

    #[test]
    fn accepts_a_good_manifest() {
        validate_manifest(&manifest(), "m", 3).unwrap();
    }

    #[test]
    fn refuses_what_does_not_hold_together() {
        // A zeroed manifest decodes as an empty message: version 0.
        refused(&Manifest::default(), "says it is version 0");
        let mut m = manifest();
        m.fields.clear();
        refused(&m, "no schema");
        let mut m = manifest();
        m.fields[0].parent_id = -7;
        refused(&m, "parent id -7");
        let mut m = manifest();
        m.fragments[0].files[0].file_minor_version = 6;
        refused(&m, "version 2.6");
        let mut m = manifest();
        m.fragments[0].files[0].fields = vec![0, 0];
        m.fragments[0].files[0].column_indices = vec![0, 1];
        refused(&m, "field id 0 twice");
        let mut m = manifest();
        m.fragments.push(m.fragments[0].clone());
        refused(&m, "fragment id 0 is used twice");
        let mut m = manifest();
        m.fragments[0].files[0].base_id = Some(4);
        refused(&m, "base path 4");
    }
}
