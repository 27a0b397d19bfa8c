//! Throughput of the audit hot paths: entry encoding, log decoding, TLP.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use lull_audit::log::{decode, encode};
use lull_audit::ring::PerCpuRings;
use lull_audit::tlp::{analyze, TaskFilter, DEFAULT_WINDOW_NS};
use lull_audit::{AuditEventKind, AuditLog, AuditRecord, Comm, LogHeader, LogSummary};

fn records(n: u64) -> Vec<AuditRecord> {
    (0..n)
        .map(|i| AuditRecord {
            seq: i,
            ts_ns: i * 1_000,
            exec_ns: i * 10,
            tgid: 100,
            tid: 100 + (i % 4) as u32,
            switches: i as u32,
            comm: Comm::new("bench"),
            cpu: (i % 2) as u16,
            ring: 0,
            rq_len: 1,
            prio: 120,
            kind: [AuditEventKind::SwitchIn, AuditEventKind::Preempt][(i % 2) as usize],
            flags: 0,
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let n = 100_000u64;
    let recs = records(n);
    let mut g = c.benchmark_group("audit");
    g.throughput(Throughput::Elements(n));
    g.bench_function("ring_push_100k", |b| {
        b.iter(|| {
            let mut rings = PerCpuRings::new(2, 35_000);
            for r in &recs {
                rings.ring_mut(usize::from(r.cpu)).expect("cpu").push(*r);
            }
            rings
        })
    });
    let log = AuditLog {
        header: LogHeader {
            rings: 2,
            ring_capacity: 35_000,
            start_ns: 0,
        },
        records: recs.iter().map(|r| AuditRecord { ring: 0, ..*r }).collect(),
        summary: LogSummary {
            rings: vec![Default::default(), Default::default()],
            ..Default::default()
        },
    };
    let mut log = log;
    log.summary.rings[0].next_seq = n;
    g.bench_function("encode_100k", |b| b.iter(|| encode(&log).expect("encodes")));
    let bytes = encode(&log).expect("encodes");
    g.bench_function("decode_100k", |b| {
        b.iter(|| decode(&bytes).expect("decodes"))
    });
    g.bench_function("tlp_100k", |b| {
        b.iter(|| analyze(&recs, 2, &TaskFilter::all(), DEFAULT_WINDOW_NS, 0))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
