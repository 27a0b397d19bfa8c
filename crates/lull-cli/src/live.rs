//! `lull live …`: the live ESM stack and its baselines, measured on this machine.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use lull_lab::experiment::{
    self, ByGroup, ExperimentApp, ExperimentError, ExperimentReport, ExperimentSpec, LatencyStats,
    Scenario,
};
use lull_lab::live::{self, LiveError, LiveReport, RunSpec};
use lull_model::DeliveryModel;

use crate::output::{self, figure, fixed, Col};

#[derive(Subcommand, Debug)]
pub enum LiveCommand {
    /// Replay a stylus workload through one delivery model; report latency, wake-ups, CPU time.
    Latency(LatencyArgs),
    /// Run one delivery model with no input; report wake-ups and CPU time.
    Idle(IdleArgs),
    /// Wake-up latency of the candidate daemon → app channels (how the channel was chosen).
    Channel(ChannelArgs),
    /// Run a live app (tracking, messaging, video) under one delivery model with the display
    /// server; report latency, frames, wake-ups and CPU time per guiS thread category.
    Experiment(ExperimentArgs),
    /// Seed 001's experiment live: the file manager or the video player in front, ZIP and/or
    /// FTP behind, under the stock kernel or UCSG on the daemon's seam.
    Ucsg(UcsgArgs),
    /// Seed 003's painting experiment live: the painting app replaying the stylus recording
    /// among N CPU hogs, under the stock kernel or the daemon's interactive boost.
    Vtcfs(VtcfsArgs),
    /// Seed 003's Table IV live: hackbench over pipes and sockets beside the live stack (daemon,
    /// painting app receiving the stylus replay) with the nice boost, without it, and alone.
    VtcfsOverhead(VtcfsOverheadArgs),
    /// Seed 004's schemes live: a capacity thief makes one CPU slow; lull-work (with and without
    /// barriers) and xz run under each policy through the live controller, and with none.
    Toggling(TogglingArgs),
}

#[derive(Args, Debug)]
pub struct TogglingArgs {
    /// Share of the thief's CPU the thief takes, percent (0: no thief, the equal-CPU control).
    #[arg(long, default_value_t = lull_lab::toggling_live::DEFAULT_THIEF_SHARE_PCT)]
    thief_share: u32,
    /// The CPU the thief slows (the slow set; the other CPUs are the fast set).
    #[arg(long, default_value_t = lull_lab::toggling_live::DEFAULT_THIEF_CPU)]
    thief_cpu: u32,
    /// Comma-separated policies (default: baseline,affinity-1,affinity-2,toggle-0.1s,
    /// toggle-0.25s,toggle-0.5s,equalise).
    #[arg(long)]
    policy: Option<String>,
    /// Repetitions of every arm, interleaved (1..=100, default 3).
    #[arg(long, default_value_t = lull_lab::toggling_live::DEFAULT_REPS)]
    reps: u32,
    /// Work per thread, ms of one idle CPU here (1..=600000, default 700).
    #[arg(long, default_value_t = lull_lab::toggling_live::DEFAULT_WORK_MS,
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    work_ms: u64,
    /// The lull-work program (default: beside this executable).
    #[arg(long)]
    work_binary: Option<PathBuf>,
    /// Print JSON: {"thief":{"cpu","asked_pct","measured_pct",…,"method","rt_limit"},
    /// "fast_cpus","slow_cpus","reps","workloads":[{"name","command","rows":[{"policy",
    /// "completion_s":{"median","min","max"},"runs_s","speedup_pct","thread_spread_s",
    /// "samples","sample_cost_ns_mean","scaled","masks"}]}],"skipped":[{"workload","why"}]}.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct VtcfsOverheadArgs {
    /// Repetitions of every size and transport, each with and without (1..=100, default 5).
    #[arg(long)]
    reps: Option<u32>,
    /// The hackbench program (Debian rt-tests).
    #[arg(long, default_value = "hackbench")]
    hackbench: PathBuf,
    /// The lull-app program (default: beside this executable).
    #[arg(long)]
    app_binary: Option<PathBuf>,
    /// Print JSON: {"reps","rows":[{"transport","pairs","groups","without_s","stock_s","with_s",
    /// "…_mean_s","overhead_pct","stack_pct","seed_overhead_pct"}],"overhead_pct","stack_pct",…}.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct VtcfsArgs {
    /// The app: painting.
    #[arg(long, default_value = "painting")]
    app: String,
    /// CPU hogs (nice 0 busy loops on every CPU), 0..=64.
    #[arg(long)]
    hogs: u32,
    /// stock, nice or slice; a comma-separated list runs each in turn in this one run.
    #[arg(long)]
    policy: String,
    /// C, ms, for the nice policy (default 10, seed 003 §VI-B-1).
    #[arg(long)]
    c_ms: Option<u64>,
    /// Replay only the recording's first N events.
    #[arg(long)]
    events: Option<usize>,
    /// The stylus recording (default as for `live latency`).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// The lull-app program (default: beside this executable).
    #[arg(long)]
    app_binary: Option<PathBuf>,
    /// Print JSON: {"policy","hogs","events","response_us":{"mean","p50","p99","max"},
    /// "hog_throughput", extra keys}; a list of policies prints an array of them.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct UcsgArgs {
    /// filemanager or video.
    #[arg(long)]
    foreground: String,
    /// none, zip, ftp or zip+ftp.
    #[arg(long, default_value = "none")]
    background: String,
    /// stock (no policy in the daemon) or ucsg.
    #[arg(long)]
    policy: String,
    /// Shrinks sizes and times, 0 < scale <= 1 (1: seed 001's).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// The lull-app program (default: beside this executable).
    #[arg(long)]
    app_binary: Option<PathBuf>,
    /// Print JSON: {"policy","foreground","background","response_ms":{"mean","p99"},"fps",
    /// "completion_s":{"zip","ftp"},"cpu_ms", extra keys}.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ExperimentArgs {
    /// tracking-10s, tracking-20s, tracking-60s, messaging or video.
    #[arg(long)]
    app: String,
    /// esm-kds-guis, pull-16ms, vsync-batched or blocking-middleware.
    #[arg(long)]
    model: String,
    /// none, or background-10s (video only: the app spends 10 s of the clip in the background).
    #[arg(long, default_value = "none")]
    scenario: String,
    /// The lull-app program (default: beside this executable).
    #[arg(long)]
    app_binary: Option<PathBuf>,
    /// The stylus recording for tracking (default as for `live latency`).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Print JSON: {"app","model","scenario","latency_us":{…},"frame_latency_us":{…},
    /// "wakeups_per_s","cpu_ms":{"event","drawing","foreground","background","other","server",
    /// "total"},"wakeups":{…},"frames_drawn","events":{…},"window_s",…,"profile":{"events",
    /// "frames","wakeups_per_event","wakeups_per_frame","cpu_us_per_event","cpu_us_per_frame",
    /// "device_wakeups_per_event","display":{…}},"threads":[{"group","name","tid","wakeups",
    /// "involuntary_switches","cpu_ms","wakeups_per_event","wakeups_per_frame",…}]}.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct ChannelArgs {
    /// One-way trips per channel.
    #[arg(long, default_value_t = lull_lab::channel::DEFAULT_TRIPS,
          value_parser = clap::value_parser!(u32).range(2..=10_000_000))]
    trips: u32,
    /// Print JSON: [{"channel","trips","p50_us","p99_us","mean_us"},…].
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct LatencyArgs {
    /// esm, pull-16ms, vsync-batched or blocking-middleware.
    #[arg(long)]
    model: String,
    /// tracking-10s, tracking-20s or tracking-60s.
    #[arg(long)]
    workload: String,
    /// The recording to scale (default: the shipped stylus spiral; the built-in generator's
    /// identical copy is used when the file is not found from the current directory).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Print JSON: {"model","workload","events_injected",…,"latency_us":{…},"wakeups_per_s","cpu_ms",…;
    /// for esm also "one_hop_us":{…},"esm_over_one_hop","daemon_wakeups_per_event",
    /// "producer_wakeups_per_event","app_wakeups_per_event","rings":{…}}.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
pub struct IdleArgs {
    /// esm, pull-16ms, vsync-batched or blocking-middleware.
    #[arg(long)]
    model: String,
    /// Length of the idle window, 1..=3600 s.
    #[arg(long)]
    seconds: u64,
    /// Print JSON in the same shape as `live latency`.
    #[arg(long)]
    json: bool,
}

/// The columns of the live latency and idle table, one row per run.
const LIVE_COLS: [Col; 10] = [
    Col::Left("model", 20),
    Col::Left("workload", 14),
    Col::Right("delivered", 13),
    Col::Right("lost", 5),
    Col::Right("mean µs", 10),
    Col::Right("p50 µs", 10),
    Col::Right("p99 µs", 10),
    Col::Right("max µs", 10),
    Col::Right("wakeups/s", 11),
    Col::Right("cpu ms", 9),
];

/// One row of the text table.
#[must_use]
pub fn row(r: &LiveReport) -> String {
    output::row(
        &LIVE_COLS,
        [
            r.model.name().to_owned(),
            r.workload.clone(),
            format!("{:>6}/{:<6}", r.events_delivered, r.events_injected),
            r.events_dropped.to_string(),
            figure(r.latency_us.mean, 1),
            figure(r.latency_us.p50, 1),
            figure(r.latency_us.p99, 1),
            figure(r.latency_us.max, 1),
            fixed(r.wakeups_per_s, 1),
            fixed(r.cpu_ms, 1),
        ],
    )
}

/// The text table's header.
#[must_use]
pub fn header() -> String {
    output::head(&LIVE_COLS)
}

fn print(r: &LiveReport, as_json: bool) {
    if as_json {
        println!("{}", crate::output::to_json(r));
    } else {
        println!(
            "live run, measured on this machine\n{}\n{}",
            header(),
            row(r)
        );
        for t in &r.threads {
            println!(
                "  {:<8} {:>8} wakeups ({:>8.1}/s) {:>9.2} ms cpu",
                t.role, t.wakeups, t.wakeups_per_s, t.cpu_ms
            );
        }
        if let Some(h) = r.one_hop_us {
            println!(
                "raw eventfd one hop, same events' times: mean {} p50 {} p99 {} µs; ESM p50 / one-hop p50 = {}",
                figure(h.mean, 1),
                figure(h.p50, 1),
                figure(h.p99, 1),
                figure(r.esm_over_one_hop, 2)
            );
        }
        if let Some(w) = r.daemon_wakeups_per_event {
            println!("daemon loop wake-ups per event delivered: {w:.3}");
        }
        if let (Some(p), Some(a)) = (r.producer_wakeups_per_event, r.app_wakeups_per_event) {
            println!("producer wake-ups per event: {p:.3}; app wake-ups per event: {a:.3}");
        }
        if let Some(k) = r.rings {
            println!(
                "rings: {} — produced {} = delivered {} + dropped {}; read {} (markers {}); handled {}; {}",
                k.rings,
                k.produced,
                k.delivered,
                k.dropped,
                k.consumed,
                k.markers,
                k.handled,
                if k.balanced { "balanced" } else { "NOT balanced" }
            );
        }
    }
}

fn fail(e: &LiveError) -> ExitCode {
    let usage = matches!(
        e,
        LiveError::UnknownModel(_) | LiveError::UnknownWorkload(_) | LiveError::BadSeconds(_)
    );
    output::failed("lull live", e, usage)
}

fn channel(a: &ChannelArgs) -> ExitCode {
    match lull_lab::channel::measure(a.trips) {
        Ok(r) if a.json => {
            println!("{}", crate::output::to_json(&r));
            ExitCode::SUCCESS
        }
        Ok(r) => {
            println!("one-way wake-up latency of a blocked receiver, measured on this machine");
            const COLS: [Col; 5] = [
                Col::Left("channel", 12),
                Col::Right("trips", 8),
                Col::Right("p50 µs", 9),
                Col::Right("p99 µs", 9),
                Col::Right("mean µs", 9),
            ];
            let rows = r.iter().map(|c| {
                [
                    c.channel.to_owned(),
                    c.trips.to_string(),
                    fixed(c.p50_us, 1),
                    fixed(c.p99_us, 1),
                    fixed(c.mean_us, 1),
                ]
            });
            print!("{}", output::table(&COLS, rows));
            ExitCode::SUCCESS
        }
        Err(e) => output::failed("lull live channel", &e, false),
    }
}

pub fn run(cmd: LiveCommand) -> ExitCode {
    let result = match cmd {
        LiveCommand::Channel(a) => return channel(&a),
        LiveCommand::Experiment(a) => return experiment(&a),
        LiveCommand::Ucsg(a) => return ucsg(&a),
        LiveCommand::Vtcfs(a) => return vtcfs(&a),
        LiveCommand::VtcfsOverhead(a) => return vtcfs_overhead(&a),
        LiveCommand::Toggling(a) => return toggling(&a),
        LiveCommand::Latency(a) => (|| {
            let model = live::parse_model(&a.model)?;
            let workload = live::parse_workload(&a.workload)?;
            let base = live::stylus_trace(a.trace.as_deref())?;
            eprintln!(
                "live: replaying {} through {} in real time (about {} s)…",
                workload.name(),
                model.name(),
                workload.span_ns().div_ceil(1_000_000_000)
            );
            live::run(&RunSpec::latency(model, workload, &base)?).map(|r| (r, a.json))
        })(),
        LiveCommand::Idle(a) => (|| {
            let model = live::parse_model(&a.model)?;
            eprintln!("live: {} with no input for {} s…", model.name(), a.seconds);
            live::run(&RunSpec::idle(model, a.seconds)?).map(|r| (r, a.json))
        })(),
    };
    match result {
        Ok((r, as_json)) => {
            print(&r, as_json);
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

/// `lull reproduce`'s `live_esm` section as text: every model on tracking-20s and idle, and
/// ESM's change against each baseline.
pub fn live_esm_table(r: &lull_reproduce::data::LiveEsm) -> String {
    let (latency, idle) = (&r.tracking_20s, &r.idle);
    let mut t = String::new();
    let _ = writeln!(
        t,
        "live, measured on this machine; stack = device driver + daemon or hub + app threads"
    );
    let _ = writeln!(t, "{}", header());
    for r in latency.iter().chain(idle) {
        let _ = writeln!(t, "{}", row(r));
    }
    if let Some(esm) = latency.iter().find(|r| r.model == DeliveryModel::Esm) {
        let _ = writeln!(
            t,
            "esm: raw eventfd one hop p50 {} µs (same events' times); ESM p50 / one-hop p50 = {}; daemon loop wake-ups per event {}",
            figure(esm.one_hop_us.and_then(|h| h.p50), 1),
            figure(esm.esm_over_one_hop, 2),
            figure(esm.daemon_wakeups_per_event, 2)
        );
    }
    let changes = &r.esm_vs_baselines;
    let _ = writeln!(
        t,
        "ESM relative to each baseline (change of ESM's figure; tracking-20s, then idle):"
    );
    let show =
        |c: Option<f64>| c.map_or_else(|| "n/a (baseline 0)".to_owned(), |c| format!("{c:+.1}%"));
    for c in changes {
        let _ = writeln!(
            t,
            "  vs {:<20} mean latency {}  wake-ups {}  idle wake-ups {:.1}/s -> {:.1}/s ({})",
            c.baseline.name(),
            show(c.mean_latency_change_pct),
            show(c.wakeups_change_pct),
            c.idle_wakeups_per_s.baseline,
            c.idle_wakeups_per_s.esm,
            show(c.idle_wakeups_change_pct)
        );
    }
    t.trim_end().to_owned()
}

// ---------------------------------------------------------------------------------------------
// `lull live experiment` and the `live_apps` section of `lull reproduce`.

fn experiment_spec(
    app: ExperimentApp,
    model: DeliveryModel,
    scenario: Scenario,
    app_binary: Option<&Path>,
    trace: Option<&Path>,
) -> Result<ExperimentSpec, String> {
    let binary = experiment::app_binary(app_binary).map_err(|e| e.to_string())?;
    let stylus = live::stylus_trace(trace).map_err(|e| e.to_string())?;
    ExperimentSpec::standard(app, model, scenario, &stylus, binary).map_err(|e| e.to_string())
}

fn experiment(a: &ExperimentArgs) -> ExitCode {
    let parsed = (|| {
        let app = experiment::parse_app(&a.app)?;
        let scenario = experiment::parse_scenario(&a.scenario)?;
        experiment::check_scenario(app, scenario)?;
        Ok::<_, ExperimentError>((app, experiment::parse_model(&a.model)?, scenario))
    })();
    let (app, model, scenario) = match parsed {
        Ok(p) => p,
        Err(e) => return output::failed("lull live experiment", &e, true),
    };
    let spec = match experiment_spec(
        app,
        model,
        scenario,
        a.app_binary.as_deref(),
        a.trace.as_deref(),
    ) {
        Ok(s) => s,
        Err(e) => return output::failed("lull live experiment", &e, false),
    };
    eprintln!(
        "live: {} through {} in real time (about {} s)…",
        spec.app_name,
        model.name(),
        spec.workload.span_ns().div_ceil(1_000_000_000)
    );
    match experiment::run(&spec) {
        Ok(r) => output::print_report(&r, a.json, experiment_text),
        Err(e) => output::failed("lull live experiment", &e, false),
    }
}

fn ucsg(a: &UcsgArgs) -> ExitCode {
    use lull_lab::ucsg_live::{self, UcsgLiveSpec};
    let parsed = (|| {
        Ok::<_, ucsg_live::UcsgLiveError>((
            ucsg_live::parse_foreground(&a.foreground)?,
            ucsg_live::parse_background(&a.background)?,
            ucsg_live::parse_policy(&a.policy)?,
        ))
    })();
    let (foreground, background, policy) = match parsed {
        Ok(p) => p,
        Err(e) => return output::failed("lull live ucsg", &e, true),
    };
    let app_binary = match experiment::app_binary(a.app_binary.as_deref()) {
        Ok(p) => p,
        Err(e) => return output::failed("lull live ucsg", &e, false),
    };
    let spec = UcsgLiveSpec {
        foreground,
        background,
        policy,
        scale: a.scale,
        app_binary,
    };
    eprintln!(
        "live: UCSG with {} in front of {} under the {} policy, in real time…",
        crate::output::spelled(&spec.foreground),
        crate::output::spelled(&spec.background),
        crate::output::spelled(&spec.policy)
    );
    match ucsg_live::run(&spec) {
        Ok(r) if a.json => {
            println!("{}", crate::output::to_json(&r));
            ExitCode::SUCCESS
        }
        Ok(r) => {
            let opt = |v: Option<f64>, unit: &str| {
                v.map_or_else(|| "-".to_owned(), |x| format!("{x:.1} {unit}"))
            };
            println!(
                "policy {}, foreground {}, background {} (scale {})",
                crate::output::spelled(&r.policy),
                crate::output::spelled(&r.foreground),
                crate::output::spelled(&r.background),
                r.scale
            );
            if let Some(rt) = r.response_ms {
                println!(
                    "response: mean {:.1} ms, p99 {:.1} ms ({} of {} touches answered by their own \
                     frame, {} by a later touch's)",
                    rt.mean, rt.p99, r.responses, r.touches, r.superseded
                );
            }
            println!("fps: {}", opt(r.fps, "fps"));
            println!(
                "completion: zip {}, ftp {}",
                opt(r.completion_s.zip, "s"),
                opt(r.completion_s.ftp, "s")
            );
            println!("cpu: {:.0} ms", r.cpu_ms);
            if let Some(s) = &r.ucsg {
                println!("{s}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => output::failed("lull live ucsg", &e, e.is_usage()),
    }
}

fn vtcfs(a: &VtcfsArgs) -> ExitCode {
    use lull_lab::vtcfs_live::{self, VtcfsLiveSpec};
    let fail = |e: &dyn std::fmt::Display, usage: bool| output::failed("lull live vtcfs", e, usage);
    let trace = match live::stylus_trace(a.trace.as_deref()) {
        Ok(t) => t,
        Err(e) => return fail(&e, false),
    };
    let app_binary = match experiment::app_binary(a.app_binary.as_deref()) {
        Ok(p) => p,
        Err(e) => return fail(&e, false),
    };
    let spec = vtcfs_live::parse_app(&a.app)
        .and_then(|()| vtcfs_live::parse_policies(&a.policy))
        .and_then(|p| VtcfsLiveSpec::new(a.hogs, p, a.c_ms, a.events, trace, app_binary));
    let spec = match spec {
        Ok(s) => s,
        Err(e) => return fail(&e, e.is_usage()),
    };
    eprintln!(
        "live: the painting app under each policy (stock, nice or slice boost), in real time…"
    );
    let reports = match vtcfs_live::run(&spec) {
        Ok(r) => r,
        Err(e) => return fail(&e, e.is_usage()),
    };
    if a.json {
        match reports.as_slice() {
            [one] => println!("{}", crate::output::to_json(one)),
            many => println!("{}", crate::output::to_json(&many)),
        }
        return ExitCode::SUCCESS;
    }
    println!(
        "painting app among {} CPU hogs, {} events, measured on this machine (response = injection -> frame drawn)",
        spec.hogs,
        spec.trace.events.len()
    );
    const COLS: [Col; 10] = [
        Col::Left("policy", 7),
        Col::Right("C ms", 6),
        Col::Right("mean µs", 9),
        Col::Right("p50 µs", 9),
        Col::Right("p99 µs", 9),
        Col::Right("max µs", 9),
        Col::Right("drawn", 9),
        Col::Right("hog Mop/s", 10),
        Col::Right("hog cpu", 9),
        Col::Right("stroke µs", 10),
    ];
    let rows = reports.iter().map(|r| {
        [
            r.policy.name().to_owned(),
            figure(r.c_ms, 0),
            figure(r.response_us.mean, 1),
            figure(r.response_us.p50, 1),
            figure(r.response_us.p99, 1),
            figure(r.response_us.max, 1),
            r.responses.to_string(),
            fixed(r.hog_throughput, 1),
            format!("{:.0}%", r.hog_cpu_share * 100.0),
            figure(r.handler_cpu_us_mean, 1),
        ]
    });
    print!("{}", output::table(&COLS, rows));
    for r in &reports {
        if let Some(s) = &r.boost {
            println!("{}: {s}", r.policy.name());
        }
    }
    if reports.iter().any(|r| r.daemon_nice.is_none()) {
        println!("note: not root: the daemon and the driver ran at nice 0");
    }
    ExitCode::SUCCESS
}

fn vtcfs_overhead(a: &VtcfsOverheadArgs) -> ExitCode {
    use lull_lab::vtcfs_overhead::{self, OverheadSpec};
    let fail = |e: &dyn std::fmt::Display, usage: bool| {
        output::failed("lull live vtcfs-overhead", e, usage)
    };
    let trace = match live::stylus_trace(None) {
        Ok(t) => t,
        Err(e) => return fail(&e, false),
    };
    let app_binary = match experiment::app_binary(a.app_binary.as_deref()) {
        Ok(p) => p,
        Err(e) => return fail(&e, false),
    };
    let mut spec = match OverheadSpec::new(a.reps, trace, app_binary) {
        Ok(s) => s,
        Err(e) => return fail(&e, e.is_usage()),
    };
    spec.hackbench.clone_from(&a.hackbench);
    eprintln!("live: hackbench beside the live stack, with the boost, without it and alone…");
    let r = match vtcfs_overhead::run(&spec) {
        Ok(r) => r,
        Err(e) => return fail(&e, e.is_usage()),
    };
    if a.json {
        println!("{}", crate::output::to_json(&r));
        return ExitCode::SUCCESS;
    }
    println!(
        "hackbench beside the live stack with the boost, without it, and alone, {} repetitions, measured on this machine",
        r.reps
    );
    const COLS: [Col; 9] = [
        Col::Left("over", 7),
        Col::Right("pairs", 6),
        Col::Right("groups", 7),
        Col::Right("no stack s", 10),
        Col::Right("stock s", 10),
        Col::Right("boost s", 10),
        Col::Right("boost", 9),
        Col::Right("stack", 9),
        Col::Right("seed", 7),
    ];
    let rows = r.rows.iter().map(|row| {
        [
            row.transport.name().to_owned(),
            row.pairs.to_string(),
            row.groups.to_string(),
            fixed(row.without_mean_s, 3),
            fixed(row.stock_mean_s, 3),
            fixed(row.with_mean_s, 3),
            format!("{:.2}%", row.overhead_pct),
            format!("{:.2}%", row.stack_pct),
            format!("{:.2}%", row.seed_overhead_pct),
        ]
    });
    print!("{}", output::table(&COLS, rows));
    println!(
        "all rows: boost {:+.2}% against the stack without it, stack {:+.2}% against none \
         ({} threads raised meanwhile)",
        r.overhead_pct, r.stack_pct, r.boosted_pushes
    );
    ExitCode::SUCCESS
}

fn toggling(a: &TogglingArgs) -> ExitCode {
    use lull_lab::toggling_live::{self as tl, TogglingError, TogglingSpec};
    let fail = |e: &TogglingError| output::failed("lull live toggling", e, e.is_usage());
    let work_binary = match &a.work_binary {
        Some(p) => p.clone(),
        None => match tl::default_work_binary() {
            Ok(p) => p,
            Err(e) => return fail(&e),
        },
    };
    let mut spec = TogglingSpec::new(work_binary);
    if let Some(list) = &a.policy {
        match tl::parse_policies(list) {
            Ok(p) => spec.policies = p,
            Err(e) => return fail(&e),
        }
    }
    spec.thief_share_pct = a.thief_share;
    spec.thief_cpu = a.thief_cpu;
    spec.reps = a.reps;
    spec.work_ms = a.work_ms;
    let r = match tl::run(&spec) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    if a.json {
        println!("{}", crate::output::to_json(&r));
    } else {
        print!("{}", toggling_text(&r));
    }
    ExitCode::SUCCESS
}

/// The table of `lull live toggling`.
pub fn toggling_text(r: &lull_lab::toggling_live::TogglingReport) -> String {
    let mut out = String::new();
    let t = &r.thief;
    if t.asked_pct == 0 {
        let _ = writeln!(out, "no thief: all CPUs equal (control)");
    } else {
        let _ = writeln!(
            out,
            "thief on CPU {}: asked {} %, took {} (per run {}–{}), {}{}; RT limit {}",
            t.cpu,
            t.asked_pct,
            t.measured_pct.map_or("?".into(), |m| format!("{m:.1} %")),
            t.measured_run_min_pct
                .map_or("?".into(), |m| format!("{m:.1}")),
            t.measured_run_max_pct
                .map_or("?".into(), |m| format!("{m:.1} %")),
            match t.method {
                Some(lull_lab::toggling_live::thief::ThiefMethod::Deadline) => "SCHED_DEADLINE",
                _ => "SCHED_FIFO duty cycle",
            },
            t.deadline_refused
                .as_ref()
                .map_or(String::new(), |e| format!(" (SCHED_DEADLINE refused: {e})")),
            t.rt_limit.map_or("unknown".into(), |l| format!(
                "{} of {} us",
                l.runtime_us, l.period_us
            )),
        );
    }
    let _ = writeln!(
        out,
        "fast CPUs {}, slow CPUs {}; {} threads; {} repetitions; sampling every {} ms; measured on this machine",
        lull_os::topology::format_cpu_list(&r.fast_cpus),
        lull_os::topology::format_cpu_list(&r.slow_cpus), r.threads, r.reps, r.sample_period_ms
    );
    const COLS: [Col; 8] = [
        Col::Left("workload", 8),
        Col::Left("policy", 13),
        Col::Right("median s", 8),
        Col::Right("min s", 8),
        Col::Right("max s", 8),
        Col::Right("speedup", 9),
        Col::Right("spread s", 9),
        Col::Right("masks", 7),
    ];
    let rows = r.workloads.iter().flat_map(|w| {
        w.rows.iter().map(|row| {
            [
                w.name.clone(),
                row.policy.clone(),
                fixed(row.completion_s.median, 3),
                fixed(row.completion_s.min, 3),
                fixed(row.completion_s.max, 3),
                row.speedup_pct.map_or("-".into(), |s| format!("{s:+.1}%")),
                figure(row.thread_spread_s, 3),
                row.masks.map_or("-".into(), |s| s.to_string()),
            ]
        })
    });
    out.push_str(&output::table(&COLS, rows));
    for w in &r.workloads {
        if let Some(o) = w.monitoring_overhead_pct {
            let _ = writeln!(
                out,
                "{}: baseline (monitoring only) {o:+.1}% against no controller (seed 004: about 3 %)",
                w.name
            );
        }
    }
    for s in &r.skipped {
        let _ = writeln!(out, "skipped {}: {}", s.workload, s.why);
    }
    out
}

/// A row of a figure per group of threads, after its label.
fn by_group<T: Copy>(label: &str, b: ByGroup<T>, cell: impl Fn(T) -> String) -> [String; 8] {
    [
        label.to_owned(),
        cell(b.event),
        cell(b.drawing),
        cell(b.foreground),
        cell(b.background),
        cell(b.other),
        cell(b.server),
        cell(b.total),
    ]
}

fn stats(l: &LatencyStats) -> String {
    format!(
        "mean {} p50 {} p99 {} max {} (n={})",
        figure(l.us.mean, 1),
        figure(l.us.p50, 1),
        figure(l.us.p99, 1),
        figure(l.us.max, 1),
        l.count
    )
}

/// The human form of one experiment's report.
fn experiment_text(r: &ExperimentReport) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "live app {} under {} (scenario {}), measured on this machine over {:.2} s",
        r.app,
        r.model.name(),
        r.scenario.name(),
        r.window_s
    );
    let e = r.events;
    let _ = writeln!(
        t,
        "events: {} injected, {} delivered, {} dropped ({} counted by the stack)",
        e.injected, e.delivered, e.dropped, e.dropped_counted
    );
    let _ = writeln!(t, "latency µs (handler start):   {}", stats(&r.latency_us));
    let _ = writeln!(
        t,
        "frame latency µs (DRAW ack):  {}",
        stats(&r.frame_latency_us)
    );
    let _ = writeln!(
        t,
        "frames drawn {}, wake-ups {:.1}/s, draw errors {}",
        r.frames_drawn, r.wakeups_per_s, r.draw_errors
    );
    const GROUP_COLS: [Col; 8] = [
        Col::Left("", 12),
        Col::Right("event", 9),
        Col::Right("drawing", 9),
        Col::Right("foreground", 10),
        Col::Right("background", 10),
        Col::Right("other", 9),
        Col::Right("server", 9),
        Col::Right("total", 9),
    ];
    let (c, w) = (r.cpu_ms, r.wakeups);
    t.push_str(&output::table(
        &GROUP_COLS,
        [
            by_group("cpu ms", c, |x| fixed(x, 1)),
            by_group("wake-ups", w, |x| x.to_string()),
        ],
    ));
    if let Some(b) = r.background_window {
        let _ = writeln!(
            t,
            "background window {:.2} s: drawing {:.1} ms cpu ({} wake-ups), foreground {:.1} ms, \
             background {:.1} ms, app {:.1} ms, server {:.1} ms; {} frames drawn, {} app wake-ups",
            b.window_s,
            b.drawing_cpu_ms,
            b.drawing_wakeups,
            b.foreground_cpu_ms,
            b.background_cpu_ms,
            b.app_cpu_ms,
            b.server_cpu_ms,
            b.frames_drawn,
            b.wakeups
        );
    }
    if let Some(m) = &r.messaging {
        let _ = writeln!(
            t,
            "messages sent {}, replies {} (respondent answered {}), reply round trip µs: {}",
            m.sent,
            m.replies,
            m.respondent_messages,
            stats(&m.reply_rtt_us)
        );
    }
    if let Some(v) = &r.video {
        let _ = writeln!(
            t,
            "video {}x{}: {} frames, {} decoded ({} late, {:.2} ms each), {} drawn",
            v.width_px, v.height_px, v.frames, v.decoded, v.late, v.decode_ms_mean, v.drawn
        );
    }
    if let Some(g) = &r.guis {
        let _ = writeln!(t, "{}", g.status);
    }
    if let Some(s) = &r.seam {
        let _ = writeln!(
            t,
            "seam ({}): actuator {}",
            s.policies.join(", "),
            s.actuator
        );
    }
    let p = &r.profile;
    let _ = writeln!(
        t,
        "profile: {} events, {} frames in the window; stack {:.2} wake-ups and {:.1} µs cpu per \
         event, {:.2} wake-ups and {:.1} µs cpu per frame; device {:.2} wake-ups per event",
        p.events,
        p.frames,
        p.wakeups_per_event,
        p.cpu_us_per_event,
        p.wakeups_per_frame,
        p.cpu_us_per_frame,
        p.device_wakeups_per_event
    );
    if let Some(d) = &p.display {
        let _ = writeln!(
            t,
            "display server: {} requests, {} draws in {} batches, {} FRAME, {} FRAME_DONE, {} \
             timer expiries, {} restacks ({} px), {} restacks skipped (direct scanout)",
            d.requests,
            d.draws,
            d.draw_batches,
            d.frame_requests,
            d.frames_done,
            d.frame_timer_expiries,
            d.restacks,
            d.restacked_pixels,
            d.restacks_skipped
        );
    }
    let _ = writeln!(
        t,
        "threads:   {:<16} {:>7} {:>8} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10}",
        "", "tid", "wake-ups", "invol", "cpu ms", "wk/event", "wk/frame", "µs/event", "µs/frame"
    );
    for th in &r.threads {
        let _ = writeln!(
            t,
            "  {:<8} {:<16} {:>7} {:>8} {:>9} {:>9.2} {:>9.2} {:>10.2} {:>10.1} {:>10.1}",
            crate::output::spelled(&th.group),
            th.name,
            th.tid,
            th.wakeups,
            th.involuntary_switches,
            th.cpu_ms,
            th.wakeups_per_event,
            th.wakeups_per_frame,
            th.cpu_us_per_event,
            th.cpu_us_per_frame
        );
    }
    t
}

fn show_change(c: Option<f64>) -> String {
    c.map_or_else(|| "n/a".to_owned(), |c| format!("{c:+.1}%"))
}

/// `lull reproduce`'s `live_apps` section as text: each app under every model, then the video
/// in the background under ESM + KDS + guiS and blocking-middleware.
pub fn apps_table(r: &experiment::AppsReproduction) -> String {
    let mut t = String::new();
    for a in &r.apps {
        let _ = writeln!(t, "{} (measured live):", a.app.name());
        let _ = writeln!(
            t,
            "  {:<20} {:>10} {:>10} {:>12} {:>10} {:>9} {:>9} {:>9} {:>7} {:>9}",
            "model",
            "mean µs",
            "p99 µs",
            "frame µs",
            "wakeups/s",
            "cpu ms",
            "drawing",
            "server",
            "frames",
            "delivered"
        );
        for r in &a.runs {
            let _ = writeln!(
                t,
                "  {:<20} {:>10} {:>10} {:>12} {:>10.1} {:>9.1} {:>9.1} {:>9.1} {:>7} {:>4}/{:<4}",
                r.model.name(),
                figure(r.latency_us.us.mean, 1),
                figure(r.latency_us.us.p99, 1),
                figure(r.frame_latency_us.us.mean, 1),
                r.wakeups_per_s,
                r.cpu_ms.total,
                r.cpu_ms.drawing,
                r.cpu_ms.server,
                r.frames_drawn,
                r.events.delivered,
                r.events.injected
            );
        }
        let _ = writeln!(t, "  ESM+KDS+guiS relative to each baseline:");
        for c in &a.reductions {
            let _ = writeln!(
                t,
                "    vs {:<20} latency mean {} p99 {}  wake-ups/s {}  cpu {}",
                c.baseline.name(),
                show_change(c.latency_mean_change_pct),
                show_change(c.latency_p99_change_pct),
                show_change(c.wakeups_per_s_change_pct),
                show_change(c.cpu_ms_change_pct)
            );
        }
    }
    let bg = &r.video_background_10s;
    let _ = writeln!(
        t,
        "video, background-10s: 10 s of the clip in the background (window opens once the app \
         knows and its drawing thread sleeps):"
    );
    for r in &bg.runs {
        if let Some(b) = r.background_window {
            let _ = writeln!(
                t,
                "  {:<20} {:.2} s: drawing {:.1} ms cpu, {} wake-ups, {} frames; app {:.1} ms, \
                 server {:.1} ms",
                r.model.name(),
                b.window_s,
                b.drawing_cpu_ms,
                b.drawing_wakeups,
                b.frames_drawn,
                b.app_cpu_ms,
                b.server_cpu_ms
            );
        }
    }
    if let Some(s) = bg.saving {
        let _ = writeln!(
            t,
            "  saved by guiS vs {}: drawing {:.1} ms/s, app {:.1} ms/s, server {:.1} ms/s of CPU; \
             {:.1} frames/s not drawn",
            s.baseline.name(),
            s.drawing_cpu_ms_per_s_saved,
            s.app_cpu_ms_per_s_saved,
            s.server_cpu_ms_per_s_saved,
            s.frames_per_s_not_drawn
        );
    }
    if let Some(e) = &r.enforcement {
        let _ = write!(t, "{e}");
    }
    t.trim_end().to_owned()
}
