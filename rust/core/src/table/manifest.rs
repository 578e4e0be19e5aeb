//! Manifest files: `[other sections] | u32 length | Manifest protobuf | footer`, where
//! the 16-byte footer is the i64 position of the manifest's length prefix, two u16
//! version numbers and the magic "LANC".
use bytes::Bytes;
use prost::Message;

use crate::error::{Error, Result};
use crate::proto::table::Manifest;

const FOOTER: usize = 16;

/// Decode the manifest held in `bytes`, the whole manifest file called `name`.
pub fn decode_manifest(bytes: &Bytes, name: &str) -> Result<Manifest> {
    decode_manifest_as(bytes, name)
}

/// Decode a manifest file's body as `M`: the whole `Manifest`, or a message declaring only
/// some of its fields (the others, fragments included, are skipped without decoding).
pub fn decode_manifest_as<M: prost::Message + Default>(bytes: &Bytes, name: &str) -> Result<M> {
    let size = bytes.len();
    if size < FOOTER {
        return Err(Error::corrupt(
            name,
            format!("manifest file is {size} bytes, too short"),
        ));
    }
    if &bytes[size - 4..] != b"LANC" {
        return Err(Error::corrupt(
            name,
            "not a Lance manifest (no LANC magic at the end)",
        ));
    }
    let pos = i64::from_le_bytes(bytes[size - FOOTER..size - 8].try_into().unwrap());
    if pos < 0 || pos as usize + 4 > size - FOOTER {
        return Err(Error::corrupt(
            name,
            format!("manifest position {pos} outside the file ({size} bytes)"),
        ));
    }
    let pos = pos as usize;
    let len = u32::from_le_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
    let body = bytes
        .get(pos + 4..pos + 4 + len)
        .filter(|_| pos + 4 + len <= size - FOOTER)
        .ok_or_else(|| {
            Error::corrupt(
                name,
                format!(
                    "manifest of {len} bytes at {pos} runs past the footer (file is {size} bytes)"
                ),
            )
        })?;
    M::decode(body).map_err(|e| Error::corrupt(name, format!("bad manifest protobuf: {e}")))
}

/// Commit time of a manifest, in nanoseconds since the epoch (0 when absent).
pub fn timestamp_nanos(m: &Manifest) -> i64 {
    m.timestamp
        .as_ref()
        .map(|t| {
            t.seconds
                .saturating_mul(1_000_000_000)
                .saturating_add(t.nanos as i64)
        })
        .unwrap_or(0)
}

/// The index section of a manifest file (`bytes`), found at `m.index_section`: None when the
/// manifest has none, an error when it cannot be read.
pub fn index_section(
    m: &Manifest,
    bytes: &Bytes,
    name: &str,
) -> Result<Option<crate::proto::table::IndexSection>> {
    let Some(pos) = m.index_section.map(|p| p as usize) else {
        return Ok(None);
    };
    bytes
        .get(pos..pos + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        .and_then(|len| bytes.get(pos + 4..pos.checked_add(4 + len)?))
        .and_then(|b| crate::proto::table::IndexSection::decode(b).ok())
        .map(Some)
        .ok_or_else(|| Error::corrupt(name, "the index section cannot be read"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file_with(manifest: &Manifest, prefix: &[u8]) -> Bytes {
        let mut b = prefix.to_vec();
        let pos = b.len() as i64;
        let body = manifest.encode_to_vec();
        b.extend((body.len() as u32).to_le_bytes());
        b.extend(body);
        b.extend(pos.to_le_bytes());
        b.extend(0u16.to_le_bytes());
        b.extend(2u16.to_le_bytes());
        b.extend(b"LANC");
        Bytes::from(b)
    }

    #[test]
    fn decodes_and_rejects_damage() {
        let m = Manifest {
            version: 7,
            ..Default::default()
        };
        let f = file_with(&m, b"some transaction bytes");
        assert_eq!(decode_manifest(&f, "m").unwrap().version, 7);
        // Truncated: the footer is gone.
        let err = decode_manifest(&f.slice(..f.len() - 3), "m")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("m: corrupt file") && err.contains("magic"),
            "{err}"
        );
        // Cut in the middle of the protobuf, footer kept.
        let mut cut = f[..26].to_vec();
        cut.extend_from_slice(&f[f.len() - 16..]);
        assert!(decode_manifest(&Bytes::from(cut), "m").is_err());
        assert!(decode_manifest(&Bytes::from_static(b"LANC"), "m")
            .unwrap_err()
            .to_string()
            .contains("too short"));
    }
}
