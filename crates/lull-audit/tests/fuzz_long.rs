//! A longer fuzz loop over every reader, without a fuzzing engine: deterministic pseudo-random
//! inputs built from valid seeds (bit flips, byte writes, truncations, splices, duplications)
//! and from noise. Every input must be answered with a value or a typed error, never a panic.
//!
//! `cargo test -p lull-audit --release --test fuzz_long -- --ignored --nocapture`
//! (`LULL_FUZZ_ITERATIONS` sets the inputs per reader; default 200,000).
//! A short run of the same loop is part of the normal suite.

use std::panic::{catch_unwind, AssertUnwindSafe};

use lull_audit::log::{decode, encode, CountedClass, CountedTask, LogSummary};
use lull_audit::ring::PerCpuRings;
use lull_audit::tracefs::{SchedFormatTexts, SchedLayout};
use lull_audit::{AuditEventKind, AuditLog, AuditRecord, Comm, LogHeader};

/// SplitMix64: a tiny, seedable generator.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(seed: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(6) {
            0 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            1 if !b.is_empty() => {
                let i = rng.below(b.len());
                b[i] = rng.next() as u8;
            }
            2 => b.truncate(rng.below(b.len() + 1)),
            3 if !b.is_empty() => {
                let i = rng.below(b.len());
                let j = i + rng.below(b.len() - i);
                let chunk = b[i..j].to_vec();
                let at = rng.below(b.len());
                b.splice(at..at, chunk);
            }
            4 => {
                let n = rng.below(64);
                b.extend((0..n).map(|_| rng.next() as u8));
            }
            _ => {
                if b.len() > 8 {
                    let i = rng.below(b.len() - 8);
                    b[i..i + 8].copy_from_slice(&rng.next().to_le_bytes());
                }
            }
        }
    }
    b
}

fn seed_log() -> Vec<u8> {
    let mut rings = PerCpuRings::new(2, 16);
    for i in 0..40u64 {
        let ring = (i % 2) as u16;
        let r = rings.ring_mut(usize::from(ring)).expect("ring");
        if i % 11 == 0 {
            r.note_lost(3);
        }
        let kind = AuditEventKind::ALL[(i % 5) as usize];
        r.push(AuditRecord {
            seq: 0,
            exec_ns: i * 7,
            tgid: 5,
            switches: i as u32,
            comm: Comm::new("fuzz"),
            ..AuditRecord::synthetic(i * 1000, ring, 5 + (i % 3) as u32, kind)
        });
    }
    let mut records = Vec::new();
    rings.drain_into(&mut records);
    encode(&AuditLog {
        header: LogHeader {
            rings: 2,
            ring_capacity: 16,
            start_ns: 0,
        },
        records,
        summary: LogSummary {
            rings: rings.counters(),
            counted: vec![CountedTask {
                tid: 9,
                tgid: 9,
                class: CountedClass::KernelWorker,
                comm: Comm::new("kworker/0:0"),
                events: 3,
                exec_ns: 1,
            }],
            counted_overflow_events: 0,
        },
    })
    .expect("encodes")
}

const SWITCH: &str = "name: sched_switch\nID: 372\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n";
const WAKE: &str = "name: sched_wakeup\nID: 374\nformat:\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n\tfield:int target_cpu;\toffset:32;\tsize:4;\tsigned:1;\n";
const EXIT: &str = "name: sched_process_exit\nID: 369\nformat:\n\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:int prio;\toffset:28;\tsize:4;\tsigned:1;\n";

fn layout() -> SchedLayout {
    let wkn = WAKE.replace("sched_wakeup\nID: 374", "sched_wakeup_new\nID: 373");
    SchedLayout::parse(SchedFormatTexts {
        sched_switch: SWITCH,
        sched_wakeup: WAKE,
        sched_wakeup_new: &wkn,
        sched_process_exit: EXIT,
        sched_stat_runtime: None,
    })
    .expect("layout")
}

fn seed_page() -> Vec<u8> {
    let mut data = Vec::new();
    for i in 0..20u32 {
        let mut p = vec![0u8; 64];
        p[0..2].copy_from_slice(&372u16.to_le_bytes());
        p[8..12].copy_from_slice(b"task");
        p[24..28].copy_from_slice(&(i + 1).to_le_bytes());
        p[56..60].copy_from_slice(&(i + 2).to_le_bytes());
        data.extend_from_slice(&((10 << 5) | 16u32).to_le_bytes());
        data.extend_from_slice(&p);
    }
    let mut page = Vec::new();
    page.extend_from_slice(&1000u64.to_le_bytes());
    page.extend_from_slice(&(data.len() as u64).to_le_bytes());
    page.extend_from_slice(&data);
    page.resize(4096, 0);
    page
}

const TEXT: &str = "# tracer: nop\n#P:2\n  a-1 [000] d..2. 1.000001: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b b next_pid=2 next_prio=120\n  b-2 [001] d..2. 1.000002: sched_wakeup: comm=a pid=1 prio=120 target_cpu=000\nCPU:1 [LOST 3 EVENTS]\n  b-2 [001] 1.000003: sched_switch: b b:2 [120] R+ ==> c:3 [120]\n  c-3 [001] 1.000004: sched_process_exit: comm=c pid=3 prio=120 group_dead=1\n";

/// Runs `n` inputs per reader; returns (inputs, panics). `LULL_FUZZ_ONLY=log|page|text|format`
/// restricts a run to one reader.
fn fuzz(n: u64, seed: u64) -> (u64, Vec<String>) {
    let mut rng = Rng(seed);
    let mut panics = Vec::new();
    let mut inputs = 0u64;
    let log = seed_log();
    let page = seed_page();
    let l = layout();
    let only = std::env::var("LULL_FUZZ_ONLY").unwrap_or_default();
    let on = |what: &str| only.is_empty() || only == what;
    let mut check = |what: &str, i: u64, f: &mut dyn FnMut()| {
        inputs += 1;
        if catch_unwind(AssertUnwindSafe(f)).is_err() {
            panics.push(format!("{what} input {i}"));
        }
    };
    for i in 0..n {
        let b = if i % 8 == 0 {
            (0..rng.below(300)).map(|_| rng.next() as u8).collect()
        } else {
            mutate(&log, &mut rng)
        };
        let p = mutate(&page, &mut rng);
        let t = mutate(TEXT.as_bytes(), &mut rng);
        let f = mutate(SWITCH.as_bytes(), &mut rng);
        if on("log") {
            check("log", i, &mut || {
                if let Ok(d) = decode(&b) {
                    let _ = lull_audit::log::stats(&d);
                    let _ = lull_audit::tlp::analyze(
                        &d.records,
                        d.header.rings,
                        &Default::default(),
                        1000,
                        0,
                    );
                    let _ = lull_audit::latency::analyze(&d.records, &Default::default());
                }
            });
        }
        if on("page") {
            check("page", i, &mut || {
                let _ = l.decode_page(&p, |_, _| {});
            });
        }
        if let (true, Ok(s)) = (on("text"), std::str::from_utf8(&t)) {
            check("text", i, &mut || {
                if let Ok((d, _)) = lull_audit::ftrace_text::read(s, &[]) {
                    let tlp = lull_audit::tlp::analyze(
                        &d.records,
                        d.header.rings,
                        &Default::default(),
                        1000,
                        0,
                    );
                    let _ = lull_audit::perfetto::export(&d.records, d.header.rings, &tlp);
                    let _ = lull_audit::latency::analyze(&d.records, &Default::default());
                }
            });
        }
        if let (true, Ok(s)) = (on("format"), std::str::from_utf8(&f)) {
            check("format", i, &mut || {
                let _ = lull_audit::tracefs::EventFormat::parse(s);
            });
        }
    }
    (inputs, panics)
}

#[test]
fn short_fuzz_loop() {
    let (inputs, panics) = fuzz(5_000, 1);
    assert!(
        panics.is_empty(),
        "{} of {inputs} inputs panicked: {:?}",
        panics.len(),
        &panics[..panics.len().min(5)]
    );
}

#[test]
#[ignore = "long fuzz run; see the module comment"]
fn long_fuzz_loop() {
    let n = std::env::var("LULL_FUZZ_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let (inputs, panics) = fuzz(n, 0x5eed);
    println!("fuzzed {inputs} inputs, {} panics", panics.len());
    assert!(panics.is_empty(), "{:?}", &panics[..panics.len().min(10)]);
}
