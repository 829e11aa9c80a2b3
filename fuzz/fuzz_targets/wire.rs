#![no_main]
//! Fuzz target `wire`: see `replyparse_fuzz::check_wire` for the properties asserted.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    replyparse_fuzz::check_wire(data);
});
