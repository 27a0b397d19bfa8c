//! The small framework spec that replays seed 000's stylus spiral, scaled down: the one spec the
//! tests and examples of every crate (the simulator's, the lab's, the Python binding's) build
//! from, as the TOML text a user would write, so each checks the real spec boundary.

use super::{FrameworkSpec, SpecError};

/// A `kind = "framework"` spec of the stylus-spiral trace with every field a test varies named.
/// [`Default`] is the smallest run of seed 000's tracking app: two main cores of the Jetson TK1
/// model, the app's seed-000 costs, the trace scaled to 300 ms, the ESM model only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StylusSpec<'a> {
    pub experiment: &'a str,
    pub platform: &'a str,
    pub seed: u64,
    /// Model names, as the spec's `models` list spells them.
    pub models: &'a [&'a str],
    pub tail_ms: u64,
    pub main_cores: u32,
    pub companion: bool,
    pub handler_cycles: u64,
    pub draw_cycles: u64,
    pub cache_kib: u64,
    /// The trace is stretched or squeezed to this length.
    pub scale_to_ms: u64,
}

impl Default for StylusSpec<'_> {
    fn default() -> Self {
        Self {
            experiment: "stylus",
            platform: "jetson-tk1",
            seed: 1,
            models: &["esm"],
            tail_ms: 50,
            main_cores: 2,
            companion: false,
            // The tracking app's costs in `experiments/marz/tracking-*.toml` (seed 000 §6).
            handler_cycles: 150_000,
            draw_cycles: 400_000,
            cache_kib: 256,
            scale_to_ms: 300,
        }
    }
}

impl StylusSpec<'_> {
    /// The spec's TOML text.
    #[must_use]
    pub fn toml(&self) -> String {
        let models: Vec<String> = self.models.iter().map(|m| format!("{m:?}")).collect();
        format!(
            r#"kind = "framework"
experiment = "{experiment}"
description = "the stylus spiral scaled to {scale_to_ms} ms"
platform = "{platform}"
seed = {seed}
models = [{models}]
tail_ms = {tail_ms}
[cpu]
main_cores = {main_cores}
companion = {companion}
[app]
handler_cycles = {handler_cycles}
draw_cycles = {draw_cycles}
cache_kib = {cache_kib}
[workload]
kind = "trace"
trace = "stylus-spiral"
scale_to_ms = {scale_to_ms}
"#,
            experiment = self.experiment,
            platform = self.platform,
            seed = self.seed,
            models = models.join(", "),
            tail_ms = self.tail_ms,
            main_cores = self.main_cores,
            companion = self.companion,
            handler_cycles = self.handler_cycles,
            draw_cycles = self.draw_cycles,
            cache_kib = self.cache_kib,
            scale_to_ms = self.scale_to_ms,
        )
    }

    /// The spec parsed, as a spec file's text is.
    ///
    /// # Errors
    /// [`SpecError`] when a field is out of its range (e.g. more main cores than the platform).
    pub fn parse(&self) -> Result<FrameworkSpec, SpecError> {
        FrameworkSpec::parse(&self.toml())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_parses_to_its_fields() {
        let s = StylusSpec::default().parse().expect("valid");
        assert_eq!(s.header.experiment, "stylus");
        assert_eq!(s.header.seed, 1);
        assert_eq!(s.models, vec![lull_model::DeliveryModel::Esm]);
        assert_eq!(s.tail_ms, 50);
    }

    #[test]
    fn a_field_out_of_range_is_a_spec_error() {
        let too_many = StylusSpec {
            main_cores: 99,
            ..StylusSpec::default()
        };
        let e = too_many.parse().expect_err("refused").to_string();
        assert!(e.contains("cpu.main_cores"), "{e}");
    }
}
