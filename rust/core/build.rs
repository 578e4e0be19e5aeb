//! Compiles `protos/*.proto` with prost. protox parses the files in pure Rust, so no
//! system `protoc` is needed.
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../protos");
    let files = [
        "file.proto",
        "file2.proto",
        "table.proto",
        "rowids.proto",
        "transaction.proto",
        "encodings_v2_0.proto",
        "encodings_v2_1.proto",
        "index.proto",
    ];
    for f in &files {
        println!("cargo:rerun-if-changed={}", proto_dir.join(f).display());
    }
    let descriptors = protox::compile(files, [&proto_dir])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
