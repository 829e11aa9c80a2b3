//! The repository's tests and benchmarks of `replyparse` that need more than the crate:
//! every fixture file of `tests/fixtures/` (`tests/fixtures.rs`), the model-table cases
//! of `tests/model_cases.json` (`tests/models.rs`), the per-chunk instruction count
//! under valgrind's callgrind (`tests/linear.rs`), and the criterion and timing
//! benchmarks of the top-level `benches/`. Not published: the `replyparse` crate itself
//! packages and tests without the repository around it.

use std::path::{Path, PathBuf};

/// The repository's root directory (where `tests/` and `benches/` are).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
