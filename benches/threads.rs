//! Two threads against one, the engine alone: no Python, no GIL.
//!
//! The Python benchmark of two threads (`test_threads` in bench_python.py) mixes two
//! things: what the GIL hand-offs cost, and what this machine gives a second thread at
//! that moment. This runs the same shape of work with nothing shared between the
//! threads (each builds its own parsers), so its ratio is the machine's own ceiling for
//! this code:
//! - 256 parsers, split evenly between the threads, stepped in lock step (every parser
//!   gets its next 256-byte chunk, then the next chunk for all), as a server steps its
//!   requests; a 32 KB-argument JSON-envelope response each;
//! - the JSON scanner alone over the same arguments in 256-byte chunks: no allocation
//!   and no state but the scanner's, the purest control.
//!
//! One and two threads are timed back to back in each round, in alternating order (the
//! machine changes speed for seconds at a time), and the figure is the median of the
//! rounds' own ratios, with its quartiles. Before anything is timed, one stream alone
//! and a lock-step group of parsers (stepped as the timed ones are) are checked against
//! the expected call.
//!
//!     cargo bench -p replyparse-suite --bench threads

mod engine_workloads;

use std::sync::Barrier;
use std::time::Instant;

use engine_workloads::{arguments, check, chunks, config, stream, workloads};
use replyparse::internals::{JsonValueScanner, ScanStatus};
use replyparse::{ParsedResponse, ResponseParser, StreamItem};

const STREAMS: usize = 256;
const ROUNDS: usize = 25;
const CHUNK: usize = 256;

/// Steps `parsers` in lock step through `pieces`, then ends them; `keep` collects each
/// parser's deltas (for the check) or they are dropped chunk by chunk (timed runs).
fn lock_step(
    parsers: &mut [ResponseParser],
    pieces: &[&str],
    mut keep: Option<&mut Vec<Vec<StreamItem>>>,
) -> usize {
    let mut out = Vec::new();
    let mut n = 0;
    let steps = pieces.iter().map(|&p| (p, false)).chain([("", true)]);
    for (piece, final_) in steps {
        for (i, p) in parsers.iter_mut().enumerate() {
            p.stream_chunk_into(piece, None, final_, &mut out)
                .expect("a well-formed stream");
            n += out.len();
            match keep.as_deref_mut() {
                Some(k) => k[i].append(&mut out),
                None => out.clear(),
            }
        }
    }
    n
}

/// Seconds for `threads` threads to run `work` on their shares of `STREAMS`: from the
/// first thread's start to the last one's end. Each thread builds its own share
/// (`setup`, so its allocations come from its own malloc arena, as a server thread's
/// parsers would), waits for the others at a barrier, and reads the clock itself (the
/// spawning thread may get no CPU until the workers are done); the share is dropped
/// after the clock stops.
fn timed<S: Send>(
    threads: usize,
    setup: impl Fn(usize) -> S + Sync,
    work: impl Fn(&mut S) -> usize + Sync,
) -> f64 {
    let start = Barrier::new(threads);
    let (setup, work, start) = (&setup, &work, &start);
    let spans: Vec<(Instant, Instant, S)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || {
                    let mut share = setup(STREAMS / threads);
                    start.wait();
                    let t = Instant::now();
                    std::hint::black_box(work(&mut share));
                    (t, Instant::now(), share)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a bench thread"))
            .collect()
    });
    let first = spans.iter().map(|s| s.0).min().expect("a thread");
    let last = spans.iter().map(|s| s.1).max().expect("a thread");
    (last - first).as_secs_f64()
}

/// One and two threads back to back per round, alternating which goes first.
fn paired(name: &str, run: impl Fn(usize) -> f64) {
    let (mut ratios, mut one, mut two) = (Vec::new(), f64::MAX, f64::MAX);
    for round in 0..ROUNDS + 2 {
        let (a, b) = if round % 2 == 0 {
            let a = run(1);
            (a, run(2))
        } else {
            let b = run(2);
            (run(1), b)
        };
        if round < 2 {
            continue; // warm-up
        }
        one = one.min(a);
        two = two.min(b);
        ratios.push(a / b);
    }
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    println!(
        "{name:34} 2 threads / 1: median {:.2}x (quartiles {:.2}-{:.2}), fastest rounds \
         {:.2} / {:.2} ms",
        ratios[n / 2],
        ratios[n / 4],
        ratios[3 * n / 4],
        one * 1e3,
        two * 1e3,
    );
}

fn main() {
    let w = workloads(32 * 1024)
        .into_iter()
        .find(|w| w.name == "qwen")
        .expect("the qwen workload");
    let cfg = config(&w);
    let pieces = chunks(&w.text, CHUNK);
    let parsers = |n: usize| -> Vec<ResponseParser> {
        (0..n)
            .map(|_| ResponseParser::new(&cfg).expect("a valid config"))
            .collect()
    };

    // The check (also under `cargo test --benches`): one stream alone, then every parser
    // of a lock-step group (the timed runs step fresh parsers the same way), reconstructs
    // the expected call.
    check(&w, &stream(&cfg, &pieces));
    let mut group = parsers(8);
    let mut kept = vec![Vec::new(); group.len()];
    lock_step(&mut group, &pieces, Some(&mut kept));
    for items in &kept {
        check(
            &w,
            &ParsedResponse::from_deltas(items.iter().map(|(d, _)| d)),
        );
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: nothing to time.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }

    println!("{STREAMS} streams, {CHUNK}-byte chunks, {ROUNDS} rounds");
    paired("qwen 32 KB, lock-step stream_chunk", |threads| {
        timed(threads, parsers, |ps| lock_step(ps, &pieces, None))
    });

    let args = arguments(32 * 1024);
    let arg_pieces = chunks(&args, CHUNK);
    let scan = |streams: usize| -> usize {
        let mut total = 0;
        for _ in 0..streams {
            let mut s = JsonValueScanner::new();
            for p in &arg_pieces {
                let (n, status) = s.feed(p.as_bytes(), false);
                total += n;
                if status == ScanStatus::Complete {
                    break;
                }
            }
        }
        total
    };
    assert_eq!(scan(1), args.len(), "the scanner reads the whole value");
    paired("JSON scanner alone (control)", |threads| {
        timed(threads, |n| n, |n| scan(*n))
    });
}
