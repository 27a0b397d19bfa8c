//! Hackbench in the simulator: message counts, the spec's checks, the overhead's origin.

use super::*;
use crate::interbench::test_specs;

/// The spec, or the problem it was refused for.
fn parse(text: &str) -> Result<HackbenchSpec, crate::Problem> {
    HackbenchSpec::parse(text).map_err(|e| e.problem)
}

use crate::Problem;

fn spec_text(transports: &str, pairs: &str, loops: u64, models: &str) -> String {
    test_specs::spec_text(
        "hackbench",
        &format!("transports = {transports}\npairs = {pairs}\nloops = {loops}\n"),
        models,
    )
}

/// CFS and VT-CFS with the seed's 5 ms preemption tick.
fn cfs_and_vtcfs() -> String {
    test_specs::cfs_and_vtcfs(5)
}

#[test]
fn every_message_arrives_and_the_counts_are_hackbench_s() {
    let spec = parse(&spec_text(
        r#"["pipe", "socket"]"#,
        "[20, 40]",
        3,
        &cfs_and_vtcfs(),
    ))
    .unwrap();
    let r = run_hackbench_spec(&spec).unwrap();
    assert_eq!(r.runs.len(), 2 * 2 * 2);
    for run in &r.runs {
        // groups × fds senders × fds receivers × loops.
        let groups = u64::from(run.pairs / 20);
        assert_eq!(run.messages, groups * 20 * 20 * 3);
        assert!(run.elapsed_s > 0.0);
        assert!(run.context_switches >= 2 * u64::from(run.pairs));
    }
    // Twice the groups, about twice the work on the same two cores (less with start-up costs
    // shared; the seed's own pipes went from 4.05 to 5.39 s).
    let t = |p| {
        r.runs
            .iter()
            .find(|x| x.model == "cfs" && x.transport == Transport::Pipe && x.pairs == p)
            .unwrap()
            .elapsed_s
    };
    let ratio = t(40) / t(20);
    assert!((1.2..=2.4).contains(&ratio), "{ratio}");
    assert_eq!(r.overheads.len(), 2 * 2);
    assert_eq!(r.mean_overheads.len(), 2);
}

#[test]
fn the_per_message_costs_bound_the_elapsed_time_from_below() {
    // One group, pipes: 20 × 20 × 5 = 2000 messages, each a write and a read; two cores can
    // at best overlap the two halves.
    let spec = parse(&spec_text(r#"["pipe"]"#, "[20]", 5, &cfs_and_vtcfs())).unwrap();
    let r = run_hackbench_spec(&spec).unwrap();
    let run = &r.runs[0];
    let cycles = run.messages * (PIPE_WRITE_CYCLES + PIPE_READ_CYCLES);
    let floor_s = cycles as f64 / 1.2e9 / 2.0;
    assert!(run.elapsed_s > floor_s, "{} vs {floor_s}", run.elapsed_s);
    assert!(
        run.elapsed_s < 20.0 * floor_s,
        "{} vs {floor_s}",
        run.elapsed_s
    );
}

#[test]
fn bad_specs_are_refused_with_the_field_named() {
    let err = |t: String| parse(&t).unwrap_err();
    // (transports, pairs, loops) refused naming the field.
    for (transports, pairs, loops, field) in [
        (r#"["pipe"]"#, "[30]", 10, "pairs"),
        (r#"["pipe"]"#, "[]", 10, "pairs"),
        (r#"["pipe"]"#, "[20, 20]", 10, "pairs"),
        (r#"["pipe"]"#, "[4000]", 10, "pairs"),
        (r#"["pipe"]"#, "[20]", 0, "loops"),
        (r#"["pipe", "pipe"]"#, "[20]", 10, "transports"),
    ] {
        let e = err(spec_text(transports, pairs, loops, &cfs_and_vtcfs()));
        assert!(
            matches!(e, Problem::Invalid { field: f, .. } if f == field),
            "{transports} {pairs} {loops}: {e:?}"
        );
    }
    assert!(matches!(
        err(spec_text(r#"["fifo"]"#, "[20]", 10, &cfs_and_vtcfs())),
        Problem::Syntax(_)
    ));
    test_specs::assert_refuses_bad_headers_and_models(
        |models| spec_text(r#"["pipe"]"#, "[20]", 10, models),
        err,
    );
    let text = spec_text(r#"["pipe"]"#, "[20]", 10, &cfs_and_vtcfs());
    let mut spec = parse(&text).unwrap();
    spec.seed_size();
    assert_eq!(spec.loops, 100);
}
