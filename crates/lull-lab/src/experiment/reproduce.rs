//! Comparisons between models and the live-apps section of `lull reproduce`.

use super::*;
use lull_model::stats::change_pct;

// ---------------------------------------------------------------------------------------------
// Comparisons.

/// ESM + KDS + guiS against one baseline on the same app, each figure as the change of ESM +
/// KDS + guiS's relative to the baseline's, in percent (`live::change_pct`: −100 = needs none of
/// it); `None` where the baseline's figure is zero or absent.
#[derive(Clone, Copy, PartialEq, Debug, Serialize)]
pub struct Reduction {
    pub baseline: DeliveryModel,
    pub latency_mean_change_pct: Option<f64>,
    pub latency_p99_change_pct: Option<f64>,
    pub wakeups_per_s_change_pct: Option<f64>,
    pub cpu_ms_change_pct: Option<f64>,
}

/// `guis` against each of `baselines`.
#[must_use]
pub fn reductions(guis: &ExperimentReport, baselines: &[ExperimentReport]) -> Vec<Reduction> {
    let change = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(ours), Some(base)) => change_pct(base, ours),
        _ => None,
    };
    baselines
        .iter()
        .map(|b| Reduction {
            baseline: b.model,
            latency_mean_change_pct: change(guis.latency_us.us.mean, b.latency_us.us.mean),
            latency_p99_change_pct: change(guis.latency_us.us.p99, b.latency_us.us.p99),
            wakeups_per_s_change_pct: change_pct(b.wakeups_per_s, guis.wakeups_per_s),
            cpu_ms_change_pct: change_pct(b.cpu_ms.total, guis.cpu_ms.total),
        })
        .collect()
}

/// What keeping the app's drawing thread parked in the background saved, against a baseline
/// that kept drawing: differences of the baseline's figures minus ESM + KDS + guiS's over their
/// background windows, per second of window (the windows differ by milliseconds).
#[derive(Clone, Copy, PartialEq, Debug, Serialize)]
pub struct BackgroundSaving {
    pub baseline: DeliveryModel,
    pub drawing_cpu_ms_per_s_saved: f64,
    pub app_cpu_ms_per_s_saved: f64,
    pub server_cpu_ms_per_s_saved: f64,
    pub frames_per_s_not_drawn: f64,
}

/// `None` unless both reports carry a background window.
#[must_use]
pub fn background_saving(
    guis: &ExperimentReport,
    baseline: &ExperimentReport,
) -> Option<BackgroundSaving> {
    let (g, b) = (guis.background_window?, baseline.background_window?);
    let per_s = |w: &BackgroundWindow, v: f64| {
        if w.window_s > 0.0 {
            v / w.window_s
        } else {
            0.0
        }
    };
    Some(BackgroundSaving {
        baseline: baseline.model,
        drawing_cpu_ms_per_s_saved: per_s(&b, b.drawing_cpu_ms) - per_s(&g, g.drawing_cpu_ms),
        app_cpu_ms_per_s_saved: per_s(&b, b.app_cpu_ms) - per_s(&g, g.app_cpu_ms),
        server_cpu_ms_per_s_saved: per_s(&b, b.server_cpu_ms) - per_s(&g, g.server_cpu_ms),
        frames_per_s_not_drawn: per_s(&b, b.frames_drawn as f64) - per_s(&g, g.frames_drawn as f64),
    })
}

// ---------------------------------------------------------------------------------------------
// The live-apps section of `lull reproduce`.

/// The apps `lull reproduce` runs: seed 000's three, tracking at its middle speed.
pub const REPRODUCE_APPS: [ExperimentApp; 3] = [
    ExperimentApp::Tracking20s,
    ExperimentApp::Messaging,
    ExperimentApp::Video,
];

/// The baseline the background scenario is compared with: the honest modern display server,
/// which never polls.
pub const REPRODUCE_BACKGROUND_BASELINE: DeliveryModel = DeliveryModel::BlockingMiddleware;

/// One app under every model, ESM + KDS + guiS first, and how it compares with each baseline.
#[derive(Clone, Debug, Serialize)]
pub struct AppComparison {
    pub app: ExperimentApp,
    pub runs: Vec<ExperimentReport>,
    pub reductions: Vec<Reduction>,
}

/// The video's background scenario under ESM + KDS + guiS and [`REPRODUCE_BACKGROUND_BASELINE`].
#[derive(Clone, Debug, Serialize)]
pub struct BackgroundComparison {
    pub runs: Vec<ExperimentReport>,
    pub saving: Option<BackgroundSaving>,
}

/// Everything the live-apps section of `lull reproduce` measures.
#[derive(Clone, Debug, Serialize)]
pub struct AppsReproduction {
    pub apps: Vec<AppComparison>,
    pub video_background_10s: BackgroundComparison,
    /// How guiS was enforced in the ESM + KDS + guiS runs (`GuisStatus`'s words).
    pub enforcement: Option<String>,
}

/// Runs [`REPRODUCE_APPS`] under every model, then the video's background scenario, with the
/// `lull-app` at `app_binary` and the stylus recording `stylus`.
///
/// # Errors
/// The first experiment that fails, named ([`ExperimentError::During`]).
pub fn reproduce(app_binary: &Path, stylus: &Trace) -> Result<AppsReproduction, ExperimentError> {
    let run_one = |app: ExperimentApp, model: DeliveryModel, scenario: Scenario| {
        crate::progress::note(&format!(
            "{} under {} ({})",
            app.name(),
            model.name(),
            scenario.name()
        ));
        ExperimentSpec::standard(app, model, scenario, stylus, app_binary.to_owned())
            .and_then(|spec| run(&spec))
            .map_err(|e| {
                e.during(format!(
                    "{} under {} ({})",
                    app.name(),
                    model.name(),
                    scenario.name()
                ))
            })
    };
    let mut apps = Vec::new();
    let mut enforcement = None;
    for app in REPRODUCE_APPS {
        // `APP_MODELS` starts with ESM + KDS + guiS, the one compared with the others.
        let runs = APP_MODELS
            .into_iter()
            .map(|model| run_one(app, model, Scenario::None))
            .collect::<Result<Vec<_>, _>>()?;
        if enforcement.is_none() {
            enforcement = runs
                .iter()
                .find_map(|r| r.guis.as_ref().map(|g| g.status.to_string()));
        }
        let reductions = reductions(&runs[0], &runs[1..]);
        apps.push(AppComparison {
            app,
            runs,
            reductions,
        });
    }
    let guis = run_one(
        ExperimentApp::Video,
        DeliveryModel::EsmKdsGuis,
        Scenario::Background10s,
    )?;
    let baseline = run_one(
        ExperimentApp::Video,
        REPRODUCE_BACKGROUND_BASELINE,
        Scenario::Background10s,
    )?;
    let saving = background_saving(&guis, &baseline);
    Ok(AppsReproduction {
        apps,
        video_background_10s: BackgroundComparison {
            runs: vec![guis, baseline],
            saving,
        },
        enforcement,
    })
}
