//! Spec texts the tests of seed 003's two benchmarks share: interbench's and hackbench's specs
//! begin with the same header on the Tegra 250 and compare CFS with VT-CFS.

use crate::policy::ModelListError;
use crate::Problem;

/// A spec of `kind` on the Tegra 250 with seed 1: the header, then `body` (the kind's own keys,
/// a line each) and `models`.
pub(crate) fn spec_text(kind: &str, body: &str, models: &str) -> String {
    format!(
        r#"
kind = "{kind}"
experiment = "t"
description = "test"
platform = "tegra-250"
seed = 1
{body}{models}
"#
    )
}

/// One `[[models]]` entry, `vtcfs-<tick_ms>ms`: VT-CFS with that preemption tick, at the
/// performance governor.
pub(crate) fn vtcfs_model(tick_ms: u64) -> String {
    let tick_us = tick_ms * 1000;
    format!(
        r#"
[[models]]
name = "vtcfs-{tick_ms}ms"
policy = {{ scheduler = "vtcfs", preempt_tick_us = {tick_us}, governor = "performance" }}
"#
    )
}

/// Two `[[models]]`: `cfs`, then [`vtcfs_model`] with `tick_ms`, both at the performance
/// governor.
pub(crate) fn cfs_and_vtcfs(tick_ms: u64) -> String {
    let cfs = r#"
[[models]]
name = "cfs"
policy = { scheduler = "cfs", governor = "performance" }"#;
    format!("{cfs}{}", vtcfs_model(tick_ms))
}

/// Checks that a spec of either benchmark is refused for what both share: the header (an unknown
/// platform), the model list (none, one listed twice, a policy the platform cannot run, be it a
/// tick on a scheduler that has none or one that is not a whole number of the Tegra 250's 1 ms
/// ticks) and a key no kind knows. `spec(models)` is a valid spec of the kind with `models` for
/// its model list; `refused(text)` is the problem `text` was refused for.
pub(crate) fn assert_refuses_bad_headers_and_models(
    spec: impl Fn(&str) -> String,
    refused: impl Fn(String) -> Problem,
) {
    let valid = spec(&cfs_and_vtcfs(5));
    assert!(matches!(
        refused(valid.replace("tegra-250", "pdp-11")),
        Problem::UnknownPlatform(_)
    ));
    assert!(matches!(
        refused(spec("")),
        Problem::Syntax(_) | Problem::Models(ModelListError::Empty)
    ));
    assert!(matches!(
        refused(spec(&cfs_and_vtcfs(5).repeat(2))),
        Problem::Models(ModelListError::Duplicate(_))
    ));
    let eevdf_tick = r#"
[[models]]
name = "eevdf"
policy = { scheduler = "eevdf", preempt_tick_us = 5000 }
"#;
    let vtcfs_half_tick = r#"
[[models]]
name = "vtcfs"
policy = { scheduler = "vtcfs", preempt_tick_us = 2500 }
"#;
    for models in [eevdf_tick, vtcfs_half_tick] {
        let p = refused(spec(models));
        assert!(
            matches!(p, Problem::Models(ModelListError::Policy { .. })),
            "{models}: {p:?}"
        );
    }
    assert!(matches!(
        refused(valid + "\nwarmup_s = 3\n"),
        Problem::Syntax(_)
    ));
}
