//! Replays the committed corpora and regression inputs through the fuzz checks, as
//! ordinary tests: no libFuzzer, no nightly flags. `fuzz/corpus/<target>/` holds the
//! seeds (from the test fixtures, `fuzz/seed_corpus.py`) and `fuzz/regressions/<target>/`
//! every minimised finding.

use std::path::Path;

fn replay(dir: &Path, check: fn(&[u8])) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if !path.is_file() {
            continue;
        }
        let data = std::fs::read(&path).unwrap();
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(outcome.is_ok(), "{} fails its check", path.display());
        n += 1;
    }
    n
}

#[test]
fn corpora_and_regressions_pass() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (name, check) in replyparse_fuzz::TARGETS {
        let seeds = replay(&root.join("corpus").join(name), check);
        let regressions = replay(&root.join("regressions").join(name), check);
        assert!(
            seeds > 0,
            "no seed corpus for {name}: run fuzz/seed_corpus.py"
        );
        eprintln!("{name}: {seeds} seeds, {regressions} regressions");
    }
}

/// Replays any directory through one target's check, without libFuzzer:
/// `FUZZ_TARGET=xml FUZZ_DIR=$PWD/fuzz/corpus-run/xml cargo test --release
/// --manifest-path fuzz/Cargo.toml -- --ignored replay_dir --nocapture` (an absolute
/// directory: tests run in `fuzz/`).
#[test]
#[ignore = "needs FUZZ_TARGET and FUZZ_DIR"]
fn replay_dir() {
    let target = std::env::var("FUZZ_TARGET").expect("FUZZ_TARGET");
    let dir = std::env::var("FUZZ_DIR").expect("FUZZ_DIR");
    let (_, check) = replyparse_fuzz::TARGETS
        .iter()
        .find(|(n, _)| *n == target)
        .expect("a target name");
    let n = replay(Path::new(&dir), *check);
    eprintln!("{target}: {n} inputs pass");
}
