//! The per-thread sample path: one `Registry::sample` of this process's threads (reading each
//! thread's `schedstat` and `stat` with `pread`, parsing, scaling).

use criterion::{criterion_group, criterion_main, Criterion};
use lull_ctl::Registry;

fn sample(c: &mut Criterion) {
    // Seven parked threads besides the main one: the seed's eight.
    let (r, _w) = lull_os::sys::pipe(false).expect("pipe");
    let r = std::sync::Arc::new(r);
    for _ in 0..7 {
        let r = std::sync::Arc::clone(&r);
        std::thread::spawn(move || {
            let mut b = [0u8; 1];
            let _ = lull_os::sys::read(std::os::fd::AsRawFd::as_raw_fd(&*r), &mut b);
        });
    }
    let mut reg = Registry::new(false);
    let pid = std::process::id() as i32;
    let threads = reg.register(pid).expect("register this process").len();
    let (mut out, mut changes) = (Vec::new(), Vec::new());
    c.bench_function(&format!("sample_{threads}_threads"), |b| {
        b.iter(|| {
            out.clear();
            changes.clear();
            reg.sample(&mut out, &mut changes);
        });
    });
}

criterion_group!(benches, sample);
criterion_main!(benches);
