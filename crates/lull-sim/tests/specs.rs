//! Every shipped spec parses and runs; runs are byte-identical for the same spec and seed.

use lull_sim::{run_spec, FrameworkSpec};

fn load(name: &str) -> FrameworkSpec {
    let path = format!(
        "{}/../../experiments/marz/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("shipped spec exists");
    FrameworkSpec::parse(&text).expect("shipped spec is valid")
}

#[test]
fn same_spec_and_seed_give_byte_identical_json() {
    for n in ["tracking-10s", "messaging"] {
        let spec = load(n);
        let a = serde_json::to_string(&run_spec(&spec).expect("runs")).expect("serialises");
        let b = serde_json::to_string(&run_spec(&spec).expect("runs")).expect("serialises");
        assert_eq!(a, b, "{n} is not deterministic");
    }
}

#[test]
fn every_model_handles_every_event_and_reports_sane_figures() {
    for n in [
        "tracking-10s",
        "tracking-20s",
        "tracking-60s",
        "messaging",
        "video",
        "esm-alone",
    ] {
        let spec = load(n);
        let r = run_spec(&spec).expect("runs");
        assert_eq!(r.models.len(), spec.models.len());
        for (m, x) in &r.models {
            assert_eq!(
                x.events_handled + x.events_dropped + x.events_pending_at_end,
                x.events_injected,
                "{n}/{m}"
            );
            // The tail is long enough for every event to be handled.
            assert_eq!(x.events_pending_at_end, 0, "{n}/{m}");
            assert_eq!(x.events_dropped, 0, "{n}/{m}");
            // Board power can never fall below the fixed parts (rest of board + lit display).
            let floor =
                (spec.header.platform.board.rest_mw + spec.header.platform.display.on_mw) as f64;
            assert!(
                x.power_mw_mean >= floor,
                "{n}/{m}: {} < {floor}",
                x.power_mw_mean
            );
            let e_from_mean = x.power_mw_mean * x.duration_ms / 1000.0;
            assert!(
                (e_from_mean - x.energy_mj).abs() / x.energy_mj < 0.01,
                "{n}/{m}"
            );
            // Residency covers the whole run on every core.
            for (core, states) in &x.residency_ms {
                let total: f64 = states.values().sum();
                assert!(
                    (total - x.duration_ms).abs() < 1e-3,
                    "{n}/{m}/{core}: {total}"
                );
            }
        }
    }
}

#[test]
fn tracking_runs_under_eevdf_and_schedutil_with_every_event_handled() {
    let path = format!(
        "{}/../../experiments/marz/tracking-20s.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("shipped spec exists");
    let spec = FrameworkSpec::parse(&format!(
        "{text}\n[policy]\nscheduler = \"eevdf\"\ngovernor = \"schedutil\"\n"
    ))
    .expect("valid with a policy table");
    let r = run_spec(&spec).expect("runs");
    assert_eq!(r.models.len(), 5);
    for (m, x) in &r.models {
        assert_eq!(x.events_handled, x.events_injected, "{m}");
        assert_eq!(x.events_injected, 1614, "{m}");
    }
}

#[test]
fn a_different_seed_changes_the_messaging_workload() {
    let a = load("messaging");
    let mut b = a.clone();
    b.header.seed = 2;
    let ea = a.input_events().expect("builds");
    let eb = b.input_events().expect("builds");
    assert_ne!(ea, eb);
}

#[test]
fn runs_write_valid_audit_logs_that_match_the_run() {
    let spec = load("tracking-10s");
    for m in [
        lull_model::DeliveryModel::Pull16ms,
        lull_model::DeliveryModel::EsmKdsGuis,
    ] {
        let plain = lull_sim::run_model(&spec, m).expect("runs");
        let (r, log) = lull_sim::run_model_with_audit(&spec, m).expect("runs");
        // Recording does not perturb the simulation.
        assert_eq!(
            serde_json::to_string(&plain).ok(),
            serde_json::to_string(&r).ok()
        );
        let bytes = lull_audit::log::encode(&log).expect("encodes");
        let back =
            lull_audit::log::decode(&bytes).expect("the audit reader accepts simulated logs");
        assert_eq!(back.records.len(), log.records.len());
        assert!(!log.records.is_empty());
        let ins = log
            .records
            .iter()
            .filter(|r| r.kind == lull_audit::AuditEventKind::SwitchIn)
            .count();
        let outs = log
            .records
            .iter()
            .filter(|r| {
                matches!(
                    r.kind,
                    lull_audit::AuditEventKind::Block | lull_audit::AuditEventKind::Preempt
                )
            })
            .count();
        // Every switch-in ends in a block or preemption, except threads still on a core at the end.
        assert!(
            ins >= outs && ins - outs <= r.residency_ms.len(),
            "{ins} in, {outs} out"
        );
    }
}
