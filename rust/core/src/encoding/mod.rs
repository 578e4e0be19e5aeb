//! Encodings: pure functions from page bytes to Arrow arrays. No I/O happens here.
//!
//! `layout` splits a page into levels and values according to its page layout
//! (mini-block, full-zip, constant, blob); `compression` decodes the values;
//! `levels` turns repetition/definition levels into Arrow validity and offsets;
//! `values` holds the builders decoded values are appended to. `array20` decodes the
//! pages of format 2.0 files, which have array encodings instead of layouts, and `legacy`
//! those of legacy (0.1) files, which are laid out by type alone.
pub mod array20;
pub mod bytes;
pub mod compression;
pub mod encode;
pub mod layout;
pub mod legacy;
pub mod levels;
pub mod values;
