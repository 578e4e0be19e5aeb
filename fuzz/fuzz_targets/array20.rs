#![no_main]
// Each target is one line over `lance_core::fuzzing::run`, shared with the smoke test (rust/core/src/fuzzing/smoke.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    lance_core::fuzzing::run("array20", data);
});
