#![no_main]
//! Fuzz target `framed`: see `replyparse_fuzz::check_framed` for the input format and the
//! properties asserted.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    replyparse_fuzz::check_framed(data);
});
