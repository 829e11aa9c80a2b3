#![no_main]
//! Fuzz target `json_envelope`: see `replyparse_fuzz::check_json_envelope` for the input format and the
//! properties asserted.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    replyparse_fuzz::check_json_envelope(data);
});
