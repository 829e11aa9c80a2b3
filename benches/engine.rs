//! Criterion benchmarks of the engine alone.
//!
//! Every workload checks its reconstruction against the expected result before it is
//! measured, and uses each dialect's real syntax.
//!
//!     cargo bench -p replyparse-suite --bench engine

mod engine_workloads;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use replyparse::internals::{JsonValueScanner, ScanStatus};

use engine_workloads::{arguments, check, chunks, config, stream, workloads};

fn bench_streaming(c: &mut Criterion) {
    for size in [2 * 1024, 32 * 1024, 1024 * 1024] {
        let mut g = c.benchmark_group(format!("stream/{}KB", size / 1024));
        g.sample_size(10);
        for w in workloads(size) {
            let cfg = config(&w);
            for chunk in [1usize, 4, 16, 256] {
                let pieces = chunks(&w.text, chunk);
                check(&w, &stream(&cfg, &pieces));
                g.throughput(Throughput::Elements(pieces.len() as u64));
                g.bench_with_input(BenchmarkId::new(w.name, chunk), &pieces, |b, pieces| {
                    b.iter(|| stream(&cfg, pieces))
                });
            }
        }
        g.finish();
    }
}

fn bench_scanner(c: &mut Criterion) {
    let text = arguments(4 * 1024 * 1024);
    let pieces = chunks(&text, 256);
    let scan = || {
        let mut s = JsonValueScanner::new();
        let mut total = 0;
        for p in &pieces {
            let (n, st) = s.feed(p.as_bytes(), false);
            total += n;
            if st == ScanStatus::Complete {
                break;
            }
        }
        total
    };
    assert_eq!(scan(), text.len());
    let mut g = c.benchmark_group("json_scan");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("string_heavy_256B_chunks", |b| b.iter(scan));
    g.finish();
}

criterion_group!(benches, bench_streaming, bench_scanner);
criterion_main!(benches);
