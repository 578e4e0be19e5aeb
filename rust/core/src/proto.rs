//! Protobuf messages generated from `protos/` at build time.
#![allow(clippy::all, missing_docs)]

pub mod file {
    include!(concat!(env!("OUT_DIR"), "/lance.file.rs"));
    pub mod v2 {
        include!(concat!(env!("OUT_DIR"), "/lance.file.v2.rs"));
    }
}
pub mod table {
    include!(concat!(env!("OUT_DIR"), "/lance.table.rs"));
}
pub mod index {
    include!(concat!(env!("OUT_DIR"), "/lance.index.pb.rs"));
}
pub mod encodings20 {
    include!(concat!(env!("OUT_DIR"), "/lance.encodings.rs"));
}
pub mod encodings21 {
    include!(concat!(env!("OUT_DIR"), "/lance.encodings21.rs"));
}
