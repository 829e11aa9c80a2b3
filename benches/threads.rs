//! Two threads against one, the engine alone: no Python, no GIL.
//!
//! The Python benchmark of two threads (`test_threads` in bench_python.py) mixes two
//! things: what the GIL hand-offs cost, and what this machine gives a second thread at
//! that moment. This runs the same shape of work with nothing shared between the
//! threads, so its ratio is the machine's own ceiling for this code:
//! - 256 parsers, split evenly between the threads, stepped in lock step (every parser
//!   gets its next 256-byte chunk, then the next chunk for all), as a server steps its
//!   requests; a 32 KB-argument JSON-envelope response each;
//! - the JSON scanner alone over the same arguments in 256-byte chunks: no allocation
//!   and no state but the scanner's, the purest control.
//!
//! One and two threads are timed back to back in each round, in alternating order (the
//! machine changes speed for seconds at a time), and the figure is the median of the
//! rounds' own ratios, with its quartiles. Every parser's output is checked before
//! anything is timed.
//!
//!     cargo bench -p replyparse --bench threads

mod engine_workloads;

use std::time::Instant;

use engine_workloads::{arguments, check, chunks, config, stream, workloads};
use replyparse::json_scan::{JsonValueScanner, ScanStatus};
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

/// Seconds for `threads` threads to run `work` on their shares of `STREAMS`; `setup`
/// builds each thread's share before the clock starts.
fn timed<S: Send>(
    threads: usize,
    setup: impl Fn(usize) -> S,
    work: impl Fn(S) -> usize + Sync,
) -> f64 {
    let shares: Vec<S> = (0..threads).map(|_| setup(STREAMS / threads)).collect();
    let work = &work;
    let t = Instant::now();
    std::thread::scope(|s| {
        for share in shares {
            s.spawn(move || std::hint::black_box(work(share)));
        }
    });
    t.elapsed().as_secs_f64()
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
    println!(
        "{name:34} 2 threads / 1: median {:.2}x (quartiles {:.2}-{:.2}), fastest rounds \
         {:.2} / {:.2} ms",
        ratios[ROUNDS / 2],
        ratios[ROUNDS / 4],
        ratios[3 * ROUNDS / 4],
        one * 1e3,
        two * 1e3,
    );
}

fn main() {
    // `cargo test --benches` runs bench targets with `--bench` absent: nothing to time.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
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

    // The check: one stream alone, then every parser of a lock-step group, reconstructs
    // the expected call.
    check(&w, &stream(&cfg, &pieces));
    let mut group = parsers(STREAMS / 2);
    let mut kept = vec![Vec::new(); group.len()];
    lock_step(&mut group, &pieces, Some(&mut kept));
    for items in &kept {
        check(
            &w,
            &ParsedResponse::from_deltas(items.iter().map(|(d, _)| d)),
        );
    }

    println!("{STREAMS} streams, {CHUNK}-byte chunks, {ROUNDS} rounds");
    paired("qwen 32 KB, lock-step stream_chunk", |threads| {
        timed(threads, parsers, |mut ps| lock_step(&mut ps, &pieces, None))
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
        timed(threads, |n| n, scan)
    });
}
