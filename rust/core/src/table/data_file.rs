//! Facts about a fragment's data file that depend on which writer made it.
use crate::proto::table::{DataFile, Manifest};
use crate::table::features::{MIXED_FILE_VERSIONS, USE_V2_FORMAT};

/// Whether a data file is in the legacy (0.1) format: its version is below 0.3 (0.3 is
/// 2.0), or, for writers that left the version out, it lists fields but no columns.
pub fn is_legacy(file: &DataFile) -> bool {
    let unversioned = file.file_major_version == 0 && file.file_minor_version == 0;
    if unversioned {
        file.column_indices.is_empty() && !file.fields.is_empty()
    } else {
        file.file_major_version == 0 && file.file_minor_version < 3
    }
}

/// The file's size as the manifest records it, when it can be trusted: pylance 0.30 to
/// 4.x recorded the in-memory size of the data for legacy files, so for those the store
/// is asked instead (pylance's legacy reader never uses the field either).
pub fn recorded_size(file: &DataFile) -> Option<u64> {
    (file.file_size_bytes > 0 && !is_legacy(file)).then_some(file.file_size_bytes)
}

/// The data storage version a data file's recorded (major, minor) stands for, named as
/// pylance names it: 0.0–0.2 are legacy ("0.1"), 0.3 is the old name of 2.0.
pub fn file_version_name(major: u32, minor: u32) -> Option<&'static str> {
    Some(match (major, minor) {
        (0, 0..=2) => "0.1",
        (0, 3) | (2, 0) => "2.0",
        (2, 1) => "2.1",
        (2, 2) => "2.2",
        _ => return None,
    })
}

/// A data storage version as a manifest may record it, in the names above.
pub fn normalized_version(v: &str) -> &str {
    match v {
        "legacy" | "0.1" => "0.1",
        "stable" => "2.2",
        other => other,
    }
}

/// The one version all data files of `m` have (None: no data files). Files of several
/// versions are an error unless the dataset allows mixing them.
pub fn files_version(m: &Manifest) -> std::result::Result<Option<String>, String> {
    let mut found: Option<&str> = None;
    for file in m.fragments.iter().flat_map(|f| f.files.iter()) {
        let v = file_version_name(file.file_major_version, file.file_minor_version).ok_or_else(
            || {
                format!(
                    "unknown Lance storage version {}.{}",
                    file.file_major_version, file.file_minor_version
                )
            },
        )?;
        match found {
            None => found = Some(v),
            Some(f) if f != v && m.reader_feature_flags & MIXED_FILE_VERSIONS == 0 => {
                return Err(format!(
                    "all data files must have the same version; found both {f} and {v}"
                ))
            }
            Some(_) => {}
        }
    }
    Ok(found.map(String::from))
}

/// The data storage version of a dataset, by pylance's rules: what the manifest records;
/// else what its data files are; else (no files) 2.2 when an old writer marked the
/// dataset as v2, and 0.1 otherwise.
pub fn effective_version(m: &Manifest) -> std::result::Result<String, String> {
    if let Some(v) = m
        .data_format
        .as_ref()
        .map(|f| &f.version)
        .filter(|v| !v.is_empty())
    {
        return Ok(v.clone());
    }
    if let Some(v) = files_version(m)? {
        return Ok(v);
    }
    Ok(if m.writer_feature_flags & USE_V2_FORMAT != 0 {
        "2.2"
    } else {
        "0.1"
    }
    .into())
}
