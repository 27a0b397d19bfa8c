//! Framework-model specs (`kind = "framework"`, `experiments/marz/*.toml`): which framework
//! models, which workload and which application costs, after the header every kind shares
//! (`load`). Specs are a boundary: every problem is a [`SpecError`].

use serde::Deserialize;

use lull_model::time::NS_PER_MS;
use lull_model::{DeliveryModel, RawEvent, Screen, Stacking, TouchPhase};
use lull_workload::messaging::{messaging_session, MessagingParams};
use lull_workload::{TimedEvent, Trace};

use crate::costs::FrameworkCosts;
use crate::header::Header;
pub use crate::policy::PolicySpec;
use crate::policy::RunPolicies;
pub use crate::spec_error::SpecError;
use crate::spec_error::{invalid, Problem};

mod stylus;
pub use stylus::StylusSpec;

/// The shipped stylus-spiral recording (seed 000, figure 30).
pub const STYLUS_SPIRAL_TRACE: &str = include_str!("../../../traces/stylus-spiral.trace");

/// A workload's length in ms must be 1..=[`MAX_DURATION_MS`].
/// Most cycles one piece of the app's work (an event's handler, a frame's drawing or decoding)
/// may take: 10 G cycles, four seconds on a 2.5 GHz core, far past any frame or handler; it also
/// keeps `cycles × 1e9` (the cycle-to-time conversions) inside `u64`.
pub const MAX_WORK_CYCLES: u64 = 10_000_000_000;

/// Largest video side, px: 8K's 7680 rounded up to the display server's own limit (`lulld
/// --screen`).
pub const MAX_VIDEO_SIDE_PX: u32 = 8192;

fn check_work_cycles(field: &'static str, cycles: u64) -> Result<(), Problem> {
    if cycles > MAX_WORK_CYCLES {
        return Err(invalid(
            field,
            format!(
                "{cycles} cycles is more than the {MAX_WORK_CYCLES} one piece of work may take"
            ),
        ));
    }
    Ok(())
}

fn check_workload_ms(field: &'static str, ms: u64) -> Result<(), Problem> {
    if ms == 0 || ms > MAX_DURATION_MS {
        return Err(invalid(field, format!("must be 1..={MAX_DURATION_MS}")));
    }
    Ok(())
}

/// The workload of an experiment.
#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// Replay a recorded trace, its times scaled so the last event falls at `scale_to_ms`.
    Trace { trace: String, scale_to_ms: u64 },
    /// Seed 000's text-messaging test: type a message on a simulated keyboard, send it, get an
    /// immediate reply, read for `read_pause_ms`, repeat until `duration_ms`.
    Messaging {
        duration_ms: u64,
        read_pause_ms: u64,
        chars_min: u32,
        chars_max: u32,
        key_interval_ms: u64,
        key_hold_ms: u64,
        reply_delay_ms: u64,
    },
    /// Seed 000's video test: decode and show `duration_ms` of video at `fps_milli`/1000 frames per
    /// second; no input.
    Video {
        duration_ms: u64,
        fps_milli: u64,
        width: u32,
        height: u32,
        decode_cycles_per_frame: u64,
    },
}

/// Costs of the application that all models run.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    /// Cycles of the app's handler for one event.
    pub handler_cycles: u64,
    /// Cycles to draw one frame.
    pub draw_cycles: u64,
    /// The app's hot cache set, KiB (what another task's run evicts and it must reload).
    pub cache_kib: u64,
}

pub use crate::soc::CpuSpec;

/// The tables of a framework-model spec after its header.
#[derive(Clone, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFramework {
    models: Vec<String>,
    /// Simulated time after the workload's last event, so its handling completes.
    tail_ms: u64,
    cpu: CpuSpec,
    app: AppSpec,
    workload: WorkloadSpec,
    /// Window-manager changes during the run (none: the app stays in front, visible, screen on).
    #[serde(default)]
    window: Vec<WindowChange>,
    /// Overrides of the framework path costs (`costs.rs` defaults).
    #[serde(default)]
    framework: FrameworkCosts,
    /// The kernel's policies by name (each defaults to what the platform runs).
    #[serde(default)]
    policy: PolicySpec,
}

/// A change of the app's window state at a time (the window manager's foreground/background and
/// screen changes, seed 000 figures 26–28).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowChange {
    pub at_ms: u64,
    pub stacking: Stacking,
    #[serde(default = "screen_on")]
    pub screen: Screen,
}

fn screen_on() -> Screen {
    Screen::On
}

/// A checked framework-model spec.
#[derive(Clone, PartialEq, Debug)]
pub struct FrameworkSpec {
    pub header: Header,
    pub models: Vec<DeliveryModel>,
    pub tail_ms: u64,
    pub cpu: CpuSpec,
    pub app: AppSpec,
    pub workload: WorkloadSpec,
    /// Window changes in time order.
    pub window: Vec<WindowChange>,
    /// Framework path costs (the `costs.rs` defaults unless the spec overrides them).
    pub framework: FrameworkCosts,
    /// The kernel's policies as the spec names them.
    pub policy: PolicySpec,
}

/// Upper bound on simulated time per run, so a typo cannot ask for a year.
pub const MAX_DURATION_MS: u64 = 3_600_000;

/// The models a spec's `models` key names, in its order: at least one, each one of `all` (read
/// by `from_name`), none twice.
///
/// # Errors
/// The first [`Problem`].
pub(crate) fn named_models<M: Copy + PartialEq, const N: usize>(
    names: &[String],
    from_name: fn(&str) -> Option<M>,
    all: [M; N],
    name: fn(M) -> &'static str,
) -> Result<Vec<M>, Problem> {
    if names.is_empty() {
        return Err(invalid("models", "no model to run"));
    }
    let mut models = Vec::new();
    for n in names {
        let m = from_name(n).ok_or_else(|| Problem::UnknownModel {
            name: n.clone(),
            known: all.map(name).join(", "),
        })?;
        if models.contains(&m) {
            return Err(invalid("models", format!("`{n}` listed twice")));
        }
        models.push(m);
    }
    Ok(models)
}

impl FrameworkSpec {
    /// Checks a framework-model spec's tables after its header.
    ///
    /// # Errors
    /// The first [`Problem`].
    pub(crate) fn from_parts(header: Header, raw: RawFramework) -> Result<FrameworkSpec, Problem> {
        let platform = &header.platform;
        let models = named_models(
            &raw.models,
            DeliveryModel::from_name,
            DeliveryModel::ALL,
            DeliveryModel::name,
        )?;
        let main = &platform.clusters[platform.main_cluster()];
        if raw.cpu.main_cores == 0 || raw.cpu.main_cores > main.cores {
            return Err(invalid(
                "cpu.main_cores",
                format!("must be 1..={}", main.cores),
            ));
        }
        if raw.cpu.companion && platform.companion_cluster().is_none() {
            return Err(invalid(
                "cpu.companion",
                "the platform has no companion core",
            ));
        }
        if raw.app.draw_cycles == 0 || raw.app.handler_cycles == 0 {
            return Err(invalid(
                "app",
                "handler_cycles and draw_cycles must be positive",
            ));
        }
        for (field, cycles) in [
            ("app.handler_cycles", raw.app.handler_cycles),
            ("app.draw_cycles", raw.app.draw_cycles),
        ] {
            check_work_cycles(field, cycles)?;
        }
        // The model reloads at most the L2 (`kernel::exec`): a larger hot set would run exactly
        // as one of the L2's size, so the spec would not mean what it says.
        if raw.app.cache_kib > platform.costs.l2_kib {
            return Err(invalid(
                "app.cache_kib",
                format!(
                    "{} KiB is more than {}'s {} KiB L2, the largest cache the model reloads",
                    raw.app.cache_kib, platform.name, platform.costs.l2_kib
                ),
            ));
        }
        if raw.tail_ms > MAX_DURATION_MS {
            return Err(invalid("tail_ms", format!("at most {MAX_DURATION_MS}")));
        }
        match &raw.workload {
            WorkloadSpec::Trace { trace, scale_to_ms } => {
                if trace != "stylus-spiral" {
                    return Err(Problem::UnknownTrace(trace.clone()));
                }
                check_workload_ms("workload.scale_to_ms", *scale_to_ms)?;
            }
            WorkloadSpec::Messaging {
                duration_ms,
                chars_min,
                chars_max,
                key_interval_ms,
                key_hold_ms,
                ..
            } => {
                check_workload_ms("workload.duration_ms", *duration_ms)?;
                if chars_min > chars_max || *chars_min == 0 {
                    return Err(invalid(
                        "workload.chars_min",
                        "need 1 <= chars_min <= chars_max",
                    ));
                }
                if key_hold_ms >= key_interval_ms {
                    return Err(invalid(
                        "workload.key_hold_ms",
                        "a key must be released before the next is pressed",
                    ));
                }
            }
            WorkloadSpec::Video {
                duration_ms,
                fps_milli,
                decode_cycles_per_frame,
                width,
                height,
            } => {
                for (field, px) in [("workload.width", width), ("workload.height", height)] {
                    if !(1..=MAX_VIDEO_SIDE_PX).contains(px) {
                        return Err(invalid(field, format!("must be 1..={MAX_VIDEO_SIDE_PX}")));
                    }
                }
                check_work_cycles("workload.decode_cycles_per_frame", *decode_cycles_per_frame)?;
                check_workload_ms("workload.duration_ms", *duration_ms)?;
                if !(1..=240_000).contains(fps_milli) {
                    return Err(invalid("workload.fps_milli", "must be 1..=240000"));
                }
                if *decode_cycles_per_frame == 0 {
                    return Err(invalid(
                        "workload.decode_cycles_per_frame",
                        "must be positive",
                    ));
                }
            }
        }
        if raw.window.windows(2).any(|w| w[1].at_ms < w[0].at_ms) {
            return Err(invalid("window", "changes must be in time order"));
        }
        if raw.window.iter().any(|w| w.at_ms > MAX_DURATION_MS) {
            return Err(invalid(
                "window.at_ms",
                format!("at most {MAX_DURATION_MS}"),
            ));
        }
        if raw.framework.poll_interval_ns == 0 {
            return Err(invalid("framework.poll_interval_ns", "must be positive"));
        }
        let spec = FrameworkSpec {
            policy: raw.policy,
            window: raw.window,
            framework: raw.framework,
            header,
            models,
            tail_ms: raw.tail_ms,
            cpu: raw.cpu,
            app: raw.app,
            workload: raw.workload,
        };
        // Every policy name resolves and fits the platform before anything runs.
        spec.policies()?;
        Ok(spec)
    }

    /// Names the policy of one `[policy]` slot (`scheduler`, `governor`, `idle`, `cores`,
    /// `placement`, `base_slice_us`, `preempt_tick_us`), as a command line overrides a spec; the spec is checked
    /// again as a whole.
    ///
    /// # Errors
    /// [`Problem::Invalid`] for an unknown slot or a base slice that is not a number;
    /// whatever [`FrameworkSpec::parse`] would say of the resulting `[policy]` table.
    pub fn set_policy(&mut self, slot: &str, name: &str) -> Result<(), Problem> {
        let mut p = self.policy.clone();
        p.set(slot, name)?;
        let before = std::mem::replace(&mut self.policy, p);
        if let Err(e) = self.policies() {
            self.policy = before;
            return Err(e);
        }
        Ok(())
    }

    /// The policies this spec's runs use, built from its `[policy]` table.
    ///
    /// # Errors
    /// As [`FrameworkSpec::parse`] for the `[policy]` table.
    pub(crate) fn policies(&self) -> Result<RunPolicies, Problem> {
        Ok(RunPolicies::build(
            &self.policy,
            &self.header.platform,
            self.cpu.main_cores,
            self.cpu.companion,
        )?)
    }

    /// The timed input events of the workload (empty for video), deterministic in the seed.
    ///
    /// # Errors
    /// [`Problem::Trace`] if the shipped trace cannot be read or scaled;
    /// [`Problem::Invalid`] for messaging parameters `lull_workload::messaging` refuses.
    pub fn input_events(&self) -> Result<Vec<TimedEvent>, SpecError> {
        match &self.workload {
            WorkloadSpec::Trace { scale_to_ms, .. } => {
                let t = Trace::parse(STYLUS_SPIRAL_TRACE).map_err(Problem::from)?;
                Ok(t.scaled_to(scale_to_ms * NS_PER_MS)
                    .map_err(Problem::from)?
                    .events)
            }
            WorkloadSpec::Messaging {
                duration_ms,
                read_pause_ms,
                chars_min,
                chars_max,
                key_interval_ms,
                key_hold_ms,
                reply_delay_ms,
            } => {
                let params = MessagingParams {
                    duration_ms: *duration_ms,
                    read_pause_ms: *read_pause_ms,
                    chars_min: *chars_min,
                    chars_max: *chars_max,
                    key_interval_ms: *key_interval_ms,
                    key_hold_ms: *key_hold_ms,
                    reply_delay_ms: *reply_delay_ms,
                };
                let session = messaging_session(&params, self.header.seed)
                    .map_err(|e| invalid("workload", e.to_string()))?;
                Ok(session.events_with_replies())
            }
            WorkloadSpec::Video { .. } => Ok(Vec::new()),
        }
    }

    /// Simulated duration of a run: the workload's length plus the tail.
    ///
    /// # Errors
    /// As [`FrameworkSpec::input_events`].
    pub fn duration_ns(&self) -> Result<u64, SpecError> {
        let body = match &self.workload {
            WorkloadSpec::Trace { scale_to_ms, .. } => scale_to_ms * NS_PER_MS,
            WorkloadSpec::Messaging { duration_ms, .. }
            | WorkloadSpec::Video { duration_ms, .. } => duration_ms * NS_PER_MS,
        };
        Ok(body + self.tail_ms * NS_PER_MS)
    }
}

/// Whether a raw event is a touch press or release (sent at once by the vsync-batched hub).
#[must_use]
pub fn is_discrete(raw: &RawEvent) -> bool {
    !matches!(
        raw,
        RawEvent::Touch {
            phase: TouchPhase::Move,
            ..
        } | RawEvent::Mouse { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::StylusSpec;
    use super::*;

    /// A valid spec the tests change one field of at a time.
    fn good() -> String {
        StylusSpec {
            experiment: "t",
            models: &["pull-16ms", "esm-kds-guis"],
            tail_ms: 100,
            main_cores: 4,
            companion: true,
            handler_cycles: 1000,
            draw_cycles: 1000,
            cache_kib: 16,
            scale_to_ms: 10_000,
            ..StylusSpec::default()
        }
        .toml()
    }

    /// The problem of a refused spec, or the spec.
    fn parse(text: &str) -> Result<FrameworkSpec, Problem> {
        FrameworkSpec::parse(text).map_err(|e| e.problem)
    }

    fn with(from: &str, to: &str) -> Result<FrameworkSpec, Problem> {
        assert!(good().contains(from), "{from}");
        parse(&good().replace(from, to))
    }

    #[test]
    fn the_good_spec_parses() {
        let s = parse(&good()).expect("valid");
        assert_eq!(
            s.models,
            vec![DeliveryModel::Pull16ms, DeliveryModel::EsmKdsGuis]
        );
        let ev = s.input_events().expect("trace");
        assert_eq!(ev.len(), 1614);
        assert_eq!(ev.last().map(|e| e.at_ns), Some(10_000_000_000));
        assert_eq!(s.duration_ns().ok(), Some(10_100_000_000));
    }

    #[test]
    fn model_names_round_trip() {
        for m in DeliveryModel::ALL {
            assert_eq!(DeliveryModel::from_name(m.name()), Some(m));
        }
        assert_eq!(DeliveryModel::from_name("pull"), None);
    }

    #[test]
    fn bad_specs_get_typed_errors() {
        assert_eq!(
            with("\"esm-kds-guis\"", "\"esm-kds\"").err(),
            Some(Problem::UnknownModel {
                name: "esm-kds".into(),
                known: "pull-16ms, vsync-batched, blocking-middleware, esm, esm-kds-guis".into()
            })
        );
        assert!(
            matches!(with("seed = 1\n", ""), Err(Problem::Syntax(m)) if m.contains("missing field"))
        );
        assert!(matches!(
            with("seed = 1\n", "seed = -1\n"),
            Err(Problem::Syntax(_))
        ));
        assert!(matches!(
            with("seed = 1\n", "seed = 1\ncolour = 2\n"),
            Err(Problem::Syntax(_))
        ));
        assert_eq!(
            with("jetson-tk1", "pixel-9").err(),
            Some(Problem::UnknownPlatform("pixel-9".into()))
        );
        assert_eq!(
            with("\"stylus-spiral\"", "\"doodle\"").err(),
            Some(Problem::UnknownTrace("doodle".into()))
        );
        assert!(matches!(
            with("main_cores = 4", "main_cores = 5"),
            Err(Problem::Invalid {
                field: "cpu.main_cores",
                ..
            })
        ));
        assert!(matches!(
            with("main_cores = 4", "main_cores = 0"),
            Err(Problem::Invalid { .. })
        ));
        assert!(matches!(
            with("scale_to_ms = 10000", "scale_to_ms = 0"),
            Err(Problem::Invalid { .. })
        ));
        assert!(matches!(
            with("draw_cycles = 1000", "draw_cycles = 0"),
            Err(Problem::Invalid { field: "app", .. })
        ));
        assert!(matches!(
            with("models = [\"pull-16ms\", \"esm-kds-guis\"]", "models = []"),
            Err(Problem::Invalid {
                field: "models",
                ..
            })
        ));
        assert!(matches!(
            with(
                "models = [\"pull-16ms\", \"esm-kds-guis\"]",
                "models = [\"esm\", \"esm\"]"
            ),
            Err(Problem::Invalid {
                field: "models",
                ..
            })
        ));
        assert!(matches!(
            with("kind = \"trace\"", "kind = \"radio\""),
            Err(Problem::Syntax(_))
        ));
        assert!(matches!(parse("experiment = "), Err(Problem::Syntax(_))));
    }

    #[test]
    fn framework_cost_overrides_are_checked() {
        let s = parse(&good()).expect("valid");
        assert_eq!(s.framework, FrameworkCosts::default());
        let over = parse(&format!(
            "{}\n[framework]\napp_poll_cycles = 600000\n",
            good()
        ))
        .expect("valid override");
        assert_eq!(over.framework.app_poll_cycles, 600_000);
        assert_eq!(
            over.framework.hub_poll_cycles,
            FrameworkCosts::default().hub_poll_cycles
        );
        assert!(matches!(
            parse(&format!("{}\n[framework]\npoll_cycles = 1\n", good())),
            Err(Problem::Syntax(_))
        ));
        assert!(matches!(
            parse(&format!("{}\n[framework]\npoll_interval_ns = 0\n", good())),
            Err(Problem::Invalid {
                field: "framework.poll_interval_ns",
                ..
            })
        ));
    }

    #[test]
    fn policies_are_named_checked_and_fit_the_platform() {
        let s = parse(&good()).expect("valid");
        assert_eq!(s.policy, PolicySpec::default());
        let with = |table: &str| parse(&format!("{}\n[policy]\n{table}\n", good()));
        let ok =
            with("governor = \"schedutil\"\ncores = \"all-online\"\nplacement = \"wake-idle\"")
                .expect("valid policies");
        assert_eq!(ok.policy.governor.as_deref(), Some("schedutil"));
        let unknown = |table: &str, kind: &str| match with(table) {
            Err(Problem::Policy(e)) => assert_eq!(e.kind, kind, "{table}"),
            other => panic!("{table}: {other:?}"),
        };
        unknown("scheduler = \"bfs\"", "scheduler");
        unknown("governor = \"conservative\"", "governor");
        unknown("idle = \"ladder\"", "idle governor");
        unknown("placement = \"random\"", "placement");
        unknown("cores = \"sometimes\"", "cores");
        let msg = with("scheduler = \"bfs\"").err().map(|e| e.to_string());
        assert_eq!(
            msg.as_deref(),
            Some("policy: unknown scheduler `bfs` (known: cfs, eevdf, vtcfs)")
        );
        // The Tegra switch needs the companion core the spec allows.
        let no_companion = good().replace("companion = true", "companion = false");
        assert!(matches!(
            parse(&format!(
                "{no_companion}\n[policy]\ncores = \"tegra-auto\"\n"
            )),
            Err(Problem::Policy(_))
        ));
        // The Jetson TK1 profile has no per-core hotplug latency.
        assert!(matches!(
            with("cores = \"galaxy-s4-hotplug\""),
            Err(Problem::Invalid {
                field: "policy.cores",
                ..
            })
        ));
        assert!(matches!(
            with("base_slice_us = 3000"),
            Err(Problem::Invalid {
                field: "policy.base_slice_us",
                ..
            })
        ));
        assert!(matches!(
            with("scheduler = \"eevdf\"\nbase_slice_us = 0"),
            Err(Problem::Invalid {
                field: "policy.base_slice_us",
                ..
            })
        ));
        // VT-CFS's preemption tick: only for vtcfs, a whole number of the 4 ms tick.
        assert!(with("scheduler = \"vtcfs\"\npreempt_tick_us = 8000").is_ok());
        for bad in [
            "preempt_tick_us = 8000",
            "scheduler = \"vtcfs\"\npreempt_tick_us = 3000",
            "scheduler = \"vtcfs\"\npreempt_tick_us = 0",
        ] {
            assert!(
                matches!(
                    with(bad),
                    Err(Problem::Invalid {
                        field: "policy.preempt_tick_us",
                        ..
                    })
                ),
                "{bad}"
            );
        }
        // The interactive boost: C in ms for any fair class, a custom slice for EEVDF only,
        // one at a time.
        assert!(with("boost_c_ms = 10").is_ok());
        assert!(with("scheduler = \"vtcfs\"\nboost_c_ms = 3").is_ok());
        assert!(with("scheduler = \"eevdf\"\nboost_slice_us = 100").is_ok());
        for (bad, field) in [
            ("boost_c_ms = 0", "policy.boost_c_ms"),
            ("boost_c_ms = 10001", "policy.boost_c_ms"),
            ("boost_slice_us = 100", "policy.boost_slice_us"),
            (
                "scheduler = \"eevdf\"\nboost_slice_us = 0",
                "policy.boost_slice_us",
            ),
            (
                "scheduler = \"eevdf\"\nboost_c_ms = 10\nboost_slice_us = 100",
                "policy.boost_slice_us",
            ),
        ] {
            match with(bad) {
                Err(Problem::Invalid { field: f, .. }) => assert_eq!(f, field, "{bad}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert!(matches!(with("boost_c_ms = -3"), Err(Problem::Syntax(_))));
        assert!(matches!(with("colour = \"red\""), Err(Problem::Syntax(_))));
    }

    #[test]
    fn a_command_line_may_name_policies_slot_by_slot() {
        let mut s = parse(&good()).expect("valid");
        s.set_policy("scheduler", "eevdf").expect("known");
        s.set_policy("base_slice_us", "3000")
            .expect("eevdf has one");
        assert_eq!(s.policy.scheduler.as_deref(), Some("eevdf"));
        assert_eq!(s.policy.base_slice_us, Some(3000));
        assert!(matches!(
            s.set_policy("governor", "turbo"),
            Err(Problem::Policy(_))
        ));
        assert!(matches!(
            s.set_policy("colour", "red"),
            Err(Problem::Invalid {
                field: "policy",
                ..
            })
        ));
        assert!(matches!(
            s.set_policy("base_slice_us", "soon"),
            Err(Problem::Invalid { .. })
        ));
        assert!(matches!(
            s.set_policy("boost_c_ms", "ten"),
            Err(Problem::Invalid {
                field: "policy.boost_c_ms",
                ..
            })
        ));
        s.set_policy("boost_slice_us", "100")
            .expect("eevdf takes a custom slice");
        assert_eq!(s.policy.boost_slice_us, Some(100));
        // A refused change leaves the spec as it was.
        assert_eq!(s.policy.governor, None);
        assert!(
            s.set_policy("scheduler", "cfs").is_err(),
            "cfs has no base slice"
        );
        assert_eq!(s.policy.scheduler.as_deref(), Some("eevdf"));
    }

    #[test]
    fn window_schedules_are_checked() {
        let back_then_front = format!("{}\n[[window]]\nat_ms = 5000\nstacking = \"background\"\n[[window]]\nat_ms = 6000\nstacking = \"foreground\"\nscreen = \"off\"\n", good()
        );
        let s = parse(&back_then_front).expect("valid window schedule");
        assert_eq!(s.window.len(), 2);
        assert_eq!(s.window[1].screen, Screen::Off);
        assert_eq!(s.window[0].screen, Screen::On);
        let backwards = back_then_front.replace("at_ms = 6000", "at_ms = 4000");
        assert!(matches!(
            parse(&backwards),
            Err(Problem::Invalid {
                field: "window",
                ..
            })
        ));
        let sideways = back_then_front.replace("\"background\"", "\"sideways\"");
        assert!(matches!(parse(&sideways), Err(Problem::Syntax(_))));
    }

    #[test]
    fn messaging_and_video_workloads_are_checked() {
        let msg = good().replace(
            "kind = \"trace\"\ntrace = \"stylus-spiral\"\nscale_to_ms = 10000",
            "kind = \"messaging\"\nduration_ms = 20000\nread_pause_ms = 5000\nchars_min = 8\nchars_max = 24\nkey_interval_ms = 120\nkey_hold_ms = 60\nreply_delay_ms = 50",
        );
        let s = parse(&msg).expect("valid messaging spec");
        let ev = s.input_events().expect("generated");
        assert!(ev.windows(2).all(|w| w[0].at_ns <= w[1].at_ns));
        assert!(ev.iter().all(|e| e.at_ns < 20_000_000_000));
        let nets = ev
            .iter()
            .filter(|e| matches!(e.raw, RawEvent::Net { .. }))
            .count();
        // One reply per round of ~1-3 s typing + 5 s reading in 20 s.
        assert!((2..=4).contains(&nets), "{nets}");
        let held = msg.replace("key_hold_ms = 60", "key_hold_ms = 120");
        assert!(matches!(
            parse(&held),
            Err(Problem::Invalid {
                field: "workload.key_hold_ms",
                ..
            })
        ));
        let video = good().replace(
            "kind = \"trace\"\ntrace = \"stylus-spiral\"\nscale_to_ms = 10000",
            "kind = \"video\"\nduration_ms = 30000\nfps_milli = 0\nwidth = 1920\nheight = 1080\ndecode_cycles_per_frame = 1",
        );
        assert!(matches!(
            parse(&video),
            Err(Problem::Invalid {
                field: "workload.fps_milli",
                ..
            })
        ));
    }

    #[test]
    fn discrete_events_are_presses_releases_keys_and_messages() {
        assert!(is_discrete(&RawEvent::Touch {
            phase: TouchPhase::Down,
            x: 0,
            y: 0
        }));
        assert!(!is_discrete(&RawEvent::Touch {
            phase: TouchPhase::Move,
            x: 0,
            y: 0
        }));
        assert!(is_discrete(&RawEvent::Key {
            code: 1,
            pressed: true
        }));
        assert!(!is_discrete(&RawEvent::Mouse {
            dx: 1,
            dy: 0,
            buttons: 0
        }));
    }
}
