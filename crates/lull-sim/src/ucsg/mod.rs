//! Seed 001's experiments (Hsiu et al., UCSG) on a modelled Galaxy S4: the app models of §4.1
//! driving the simulated kernel on a big.LITTLE platform under three models — the seed's
//! baseline (CFS with the Galaxy S4's ondemand, hotplug and cluster switching), today's Linux
//! (EEVDF with schedutil over the big.LITTLE switcher) and UCSG itself (`lull_sched::ucsg` on
//! CFS, as a user-space governor would run it). Every figure is modelled.
//!
//! - [`spec`]: scenario specs (`experiments/ucsg/*.toml`);
//! - `apps`: the file manager, video player, ZIP, FTP, home screen and system threads;
//! - `models`: how each model's policies are built and driven;
//! - [`footprint`]: cluster, active cores and frequency over time (figure 8), CSV and SVG;
//! - [`seed`]: what seed 001 reports, for printing beside the modelled figures.

mod apps;
pub mod compare;
pub mod footprint;
mod models;
pub mod seed;
pub mod spec;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use lull_model::time::NS_PER_MS;
use serde::Serialize;

pub use apps::{Fact, Owner};
pub use compare::{compare_cells, CellComparison};
pub use footprint::{to_csv, to_svg, Footprint, FootprintSample};
pub use spec::{
    AppWork, Background, Foreground, Scenario, ScreenState, UcsgModel, UcsgSpec, UcsgTunables,
};

use crate::engine::Engine;
use crate::event::Ev;
use crate::header::ResultHeader;
use crate::kernel::{Cx, DeviceWork, Kernel};
use crate::soc::{CState, Soc};
use apps::{Cast, Scene, NET_DEVICE};
use models::Driver;

pub use lull_model::stats::{CompletionS, ResponseMs};

/// One model's figures on one scenario (modelled, not measured).
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct UcsgModelResult {
    /// Energy of the CPU clusters over the scenario (seed 001's metric).
    pub energy_mj: f64,
    /// Mean power of the CPU clusters, sampled every 1 ms.
    pub power_mw_mean: f64,
    pub duration_ms: f64,
    /// Where the file manager runs.
    pub response_ms: Option<ResponseMs>,
    /// Where the video runs: frames presented on time per second.
    pub fps: Option<f64>,
    /// Where ZIP or FTP run: from the scenario's start to the app's end.
    pub completion_s: Option<CompletionS>,
    pub big_cluster_pct: f64,
    pub active_cores_mean: f64,
    pub freq_mhz_mean: f64,
    pub cluster_switches: u64,
    /// CPU time of each thread, ms.
    pub thread_cpu_ms: BTreeMap<String, f64>,
    /// Discrete events the engine processed.
    pub sim_events: u64,
    /// The footprint over time (written by `--footprint-dir`, not in the JSON).
    #[serde(skip)]
    pub footprint: Vec<FootprintSample>,
}

/// A whole UCSG spec's results.
#[derive(Clone, PartialEq, Debug, Serialize)]
pub struct UcsgResult {
    #[serde(flatten)]
    pub header: ResultHeader,
    /// The scenario's front app and background apps, as the seed names the cells
    /// (`file-manager`/`video`/`home`, `none`/`zip`/`ftp`/`zip+ftp`) and the screen.
    pub foreground: String,
    pub background: String,
    pub screen: String,
    pub models: BTreeMap<String, UcsgModelResult>,
}

/// Why a UCSG run failed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum UcsgRunError {
    #[error("policy: {0}")]
    Policy(String),
    #[error("the scenario did not finish within {limit_s} s of simulated time")]
    RunsForever { limit_s: u64 },
}

/// Runs every model of `spec`.
///
/// # Errors
/// As [`run_ucsg_model`].
pub fn run_ucsg_spec(spec: &UcsgSpec) -> Result<UcsgResult, UcsgRunError> {
    run_ucsg_spec_audited(spec, false).map(|(r, _)| r)
}

/// As [`run_ucsg_spec`], with each model's scheduling events in the audit log format of
/// `lull-audit` when `audit`, in the spec's model order.
///
/// # Errors
/// As [`run_ucsg_model`].
pub fn run_ucsg_spec_audited(
    spec: &UcsgSpec,
    audit: bool,
) -> Result<(UcsgResult, Vec<(String, lull_audit::AuditLog)>), UcsgRunError> {
    let mut models = BTreeMap::new();
    let mut logs = Vec::new();
    for &m in &spec.models {
        let (r, log) = run(spec, m, audit)?;
        if let Some(log) = log {
            logs.push((m.name().to_owned(), log));
        }
        models.insert(m.name().to_owned(), r);
    }
    let s = &spec.scenario;
    let background: Vec<&str> = s
        .background
        .iter()
        .map(|b| match b {
            Background::Zip => "zip",
            Background::Ftp => "ftp",
        })
        .collect();
    let r = UcsgResult {
        header: spec.header.result_header(),
        foreground: match s.foreground {
            Foreground::FileManager => "file-manager",
            Foreground::Video => "video",
            Foreground::Home => "home",
        }
        .to_owned(),
        background: if background.is_empty() {
            "none".to_owned()
        } else {
            background.join("+")
        },
        screen: match s.screen {
            ScreenState::On => "on",
            ScreenState::Off => "off",
        }
        .to_owned(),
        models,
    };
    Ok((r, logs))
}

fn cast(spec: &UcsgSpec, model: UcsgModel) -> Cast {
    let s = &spec.scenario;
    Cast {
        file_manager: s.foreground == Foreground::FileManager,
        video: s.foreground == Foreground::Video,
        zip: s.background.contains(&Background::Zip),
        ftp: s.background.contains(&Background::Ftp),
        daemon: model == UcsgModel::Ucsg,
    }
}

/// Runs one model of `spec`.
///
/// # Errors
/// [`UcsgRunError::Policy`] when a policy cannot be built for the platform;
/// [`UcsgRunError::RunsForever`] when the apps do not finish within the simulator's limit.
pub fn run_ucsg_model(spec: &UcsgSpec, model: UcsgModel) -> Result<UcsgModelResult, UcsgRunError> {
    run(spec, model, false).map(|(r, _)| r)
}

/// Runs one model of `spec` and returns its scheduling events in the audit log format of
/// `lull-audit` as well (one ring per core, nothing lost), so the audit analyses (TLP, latency)
/// apply to the UCSG scenarios as to the framework specs.
///
/// # Errors
/// As [`run_ucsg_model`].
pub fn run_ucsg_model_with_audit(
    spec: &UcsgSpec,
    model: UcsgModel,
) -> Result<(UcsgModelResult, lull_audit::AuditLog), UcsgRunError> {
    let (r, log) = run(spec, model, true)?;
    Ok((r, log.expect("audit recording was switched on")))
}

fn run(
    spec: &UcsgSpec,
    model: UcsgModel,
    audit: bool,
) -> Result<(UcsgModelResult, Option<lull_audit::AuditLog>), UcsgRunError> {
    let plat = &spec.header.platform;
    let s = &spec.scenario;
    let start_ns = s.start_ms * NS_PER_MS;
    let mut eng = Engine::new(spec.header.seed);
    let mut soc = Soc::big_little(plat);
    let mut driver = Driver::build(model, plat, spec.ucsg)?;
    let mut kernel = Kernel::new(plat, soc.cores.len(), driver.policies());
    driver.prepare(&mut kernel);
    if audit {
        kernel.record_audit();
    }
    let mut scene = Scene::new(cast(spec, model), start_ns, spec.apps, &mut kernel);
    let big = plat.main_cluster();
    let screen_on = s.screen == ScreenState::On;
    scene.sys.screen_on = screen_on;
    if s.foreground == Foreground::FileManager {
        scene.touches = apps::file_manager::script()
            .into_iter()
            .map(|(t, a)| (start_ns + t, a))
            .collect();
    }
    let fixed_mw = (plat.board.rest_mw
        + if screen_on {
            plat.display.on_mw
        } else {
            plat.display.off_mw
        }) as f64;
    let mut cx = Cx {
        eng: &mut eng,
        soc: &mut soc,
    };
    let front = match s.foreground {
        Foreground::FileManager => apps::APP_FILE_MANAGER,
        Foreground::Video => apps::APP_VIDEO,
        Foreground::Home => apps::APP_HOME,
    };
    scene.facts.push(Fact::Foreground(front));
    if !screen_on {
        scene.facts.push(Fact::Display(false));
    }
    driver.start(&mut kernel, &mut scene, &mut cx);
    for (i, &(at, _)) in scene.touches.iter().enumerate() {
        cx.eng.schedule_at(at, Ev::Inject(i as u32));
    }
    if scene.ftp.is_some() {
        cx.eng.schedule_at(start_ns, Ev::Inject(NET_DEVICE));
    }
    let limit_ns = crate::spec::MAX_DURATION_MS * NS_PER_MS;
    let fixed_end = s.duration_ms.map(|d| start_ns + d * NS_PER_MS);
    cx.eng.schedule_at(fixed_end.unwrap_or(limit_ns), Ev::End);
    scene.start(&mut kernel, &mut cx);
    driver.apply_facts(&mut kernel, &mut scene, &mut cx);
    // The meter's draw before the first event: without it the time up to the first event is
    // metered at zero watts, and the CPU's energy (the draw less the board and display) goes
    // negative by the board's power over that time.
    cx.soc.update_power(fixed_mw);
    let mut fp = Footprint::default();
    let mut end_ns = None;
    let mut sim_events = 0u64;
    while let Some((now, ev)) = cx.eng.pop() {
        sim_events += 1;
        cx.soc.account(now, fixed_mw);
        let (is_big, cores, khz) = active_state(&cx, big);
        fp.account(now, is_big, cores, khz);
        if ev == Ev::End {
            if fixed_end.is_none() && end_ns.is_none() {
                return Err(UcsgRunError::RunsForever {
                    limit_s: limit_ns / 1_000_000_000,
                });
            }
            break;
        }
        let k = &mut kernel;
        match ev {
            Ev::Kernel(e) => k.handle(e, &mut scene, &mut cx),
            Ev::Governor => driver.period(k, &mut scene, &mut cx),
            Ev::Inject(NET_DEVICE) => {
                let f = scene.ftp.as_mut().expect("network only with FTP");
                let more = f.arrive();
                let irq = k.irq_cost() + apps::ftp::Ftp::irq_cycles();
                k.device_irq(irq, DeviceWork::Input(NET_DEVICE), &mut scene, &mut cx);
                if more {
                    cx.eng
                        .schedule_in(apps::ftp::Ftp::chunk_interval_ns(), Ev::Inject(NET_DEVICE));
                }
            }
            Ev::Inject(i) => {
                let irq = k.irq_cost();
                k.device_irq(irq, DeviceWork::Input(i), &mut scene, &mut cx);
            }
            Ev::Vsync | Ev::Window(_) | Ev::Seam { .. } | Ev::End => {}
        }
        if std::mem::take(&mut scene.link_restart) {
            cx.eng
                .schedule_in(apps::ftp::Ftp::chunk_interval_ns(), Ev::Inject(NET_DEVICE));
        }
        driver.apply_facts(k, &mut scene, &mut cx);
        driver.after_event(k, &mut cx);
        cx.soc.update_power(fixed_mw);
        if fixed_end.is_none() && end_ns.is_none() && scene.all_done() {
            let at = now + spec.tail_ms * NS_PER_MS;
            end_ns = Some(at);
            cx.eng.schedule_at(at, Ev::End);
        }
    }
    kernel.sync_all(&mut cx);
    let duration_ns = cx.eng.now_ns();
    let mut thread_cpu_ms = BTreeMap::new();
    for t in &kernel.tasks {
        *thread_cpu_ms.entry(t.name.to_string()).or_insert(0.0) += t.exec_ns as f64 / 1e6;
    }
    let response_ms = scene
        .fm
        .as_ref()
        .and_then(|fm| ResponseMs::of_ns(&fm.responses_ns));
    let since_start = |t: Option<u64>| t.map(|t| t.saturating_sub(start_ns) as f64 / 1e9);
    let completion_s = (scene.zip.is_some() || scene.ftp.is_some()).then(|| CompletionS {
        zip: since_start(scene.zip.as_ref().and_then(|z| z.done_ns)),
        ftp: since_start(scene.ftp.as_ref().and_then(|f| f.done_ns)),
    });
    let log = kernel.take_audit_log();
    let result = UcsgModelResult {
        energy_mj: cx.soc.cpu_energy_mj(),
        power_mw_mean: cx.soc.cpu_power_mw_mean(),
        duration_ms: duration_ns as f64 / 1e6,
        response_ms,
        fps: scene.video.as_ref().map(apps::video::Video::fps),
        completion_s,
        big_cluster_pct: fp.big_pct(),
        active_cores_mean: fp.cores_mean(),
        freq_mhz_mean: fp.freq_mhz_mean(),
        cluster_switches: kernel.cluster_switches,
        thread_cpu_ms,
        sim_events,
        footprint: std::mem::take(&mut fp.samples),
    };
    Ok((result, log))
}

/// The active cluster (big or not), its cores not offline, its frequency.
fn active_state(cx: &Cx<'_, '_>, big: usize) -> (bool, u32, u64) {
    let soc = &*cx.soc;
    let ci = soc.active_cluster;
    let mut online = 0;
    let mut khz = 0;
    for c in soc.cluster_cores(ci) {
        if soc.cores[c].state != CState::Offline {
            online += 1;
            khz = soc.khz(c);
        }
    }
    (ci == big, online, khz)
}
