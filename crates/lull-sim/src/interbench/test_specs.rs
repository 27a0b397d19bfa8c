//! Spec texts the tests of seed 003's two benchmarks share: interbench's and hackbench's specs
//! begin with the same header on the Tegra 250 and compare CFS with VT-CFS.

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
