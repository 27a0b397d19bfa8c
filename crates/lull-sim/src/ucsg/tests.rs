use super::*;

/// The spec, or the problem it was refused for.
fn parse(text: &str) -> Result<UcsgSpec, crate::Problem> {
    UcsgSpec::parse(text).map_err(|e| e.problem)
}

use crate::Problem;

fn spec(scenario: &str, models: &str) -> String {
    format!(
        "kind = \"ucsg\"\nexperiment = \"t\"\ndescription = \"t\"\nplatform = \"galaxy-s4\"\nseed = 1\nmodels = [{models}]\ntail_ms = 0\n[scenario]\n{scenario}\n"
    )
}

#[test]
fn bad_specs_get_typed_errors() {
    let ok = "foreground = \"home\"\nbackground = [\"zip\"]\nscreen = \"on\"\nstart_ms = 0";
    assert!(parse(&spec(ok, "\"ucsg\"")).is_ok());
    assert!(matches!(
        parse(&spec(ok, "\"cfs\"")),
        Err(Problem::UnknownModel { .. })
    ));
    assert!(matches!(
        parse(&spec(ok, "\"ucsg\", \"ucsg\"")),
        Err(Problem::Invalid { .. })
    ));
    assert!(matches!(
        parse(&spec(&ok.replace("home", "browser"), "\"ucsg\"")),
        Err(Problem::Syntax(_))
    ));
    // The home screen alone never ends: it needs a length; others must not have one.
    let alone = "foreground = \"home\"\nscreen = \"on\"\nstart_ms = 0";
    assert!(matches!(
        parse(&spec(alone, "\"ucsg\"")),
        Err(Problem::Invalid {
            field: "scenario.duration_ms",
            ..
        })
    ));
    assert!(matches!(
        parse(&spec(&format!("{ok}\nduration_ms = 5"), "\"ucsg\"")),
        Err(Problem::Invalid {
            field: "scenario.duration_ms",
            ..
        })
    ));
    let off = "foreground = \"video\"\nscreen = \"off\"\nstart_ms = 0";
    assert!(matches!(
        parse(&spec(off, "\"ucsg\"")),
        Err(Problem::Invalid {
            field: "scenario.screen",
            ..
        })
    ));
    let tk1 = spec(ok, "\"ucsg\"").replace("galaxy-s4", "jetson-tk1");
    assert!(matches!(
        parse(&tk1),
        Err(Problem::Invalid {
            field: "platform",
            ..
        })
    ));
}

fn run(scenario: &str, model: UcsgModel) -> UcsgModelResult {
    let s = parse(&spec(scenario, &format!("\"{}\"", model.name()))).expect("valid");
    run_ucsg_model(&s, model).expect("runs")
}

#[test]
fn zip_alone_on_the_big_cluster_at_its_top_takes_its_cycles_over_the_frequency() {
    // Under the stock governor ZIP saturates a core: LITTLE at its top, then big at its top.
    let r = run(
        "foreground = \"home\"\nbackground = [\"zip\"]\nscreen = \"on\"\nstart_ms = 0",
        UcsgModel::CfsOndemand,
    );
    let zip_s = r.completion_s.and_then(|c| c.zip).expect("zip ran");
    let cycles = (apps::zip::ZIP_BYTES * apps::zip::ZIP_CYCLES_PER_BYTE) as f64;
    let at_top = cycles / 1.6e9;
    // The first 100 ms period runs on LITTLE; switches and kernel work add a little.
    assert!(zip_s >= at_top, "{zip_s} < {at_top}");
    assert!(zip_s < at_top * 1.05 + 0.3, "{zip_s} vs {at_top}");
    let zip_ms = r.thread_cpu_ms["zip"];
    assert!(zip_ms > 0.9 * at_top * 1000.0);
}

#[test]
fn ftp_alone_is_bound_by_the_link() {
    let r = run(
        "foreground = \"home\"\nbackground = [\"ftp\"]\nscreen = \"on\"\nstart_ms = 0",
        UcsgModel::CfsOndemand,
    );
    let ftp_s = r.completion_s.and_then(|c| c.ftp).expect("ftp ran");
    let link_s = apps::ftp::FTP_BYTES.div_ceil(apps::ftp::FTP_CHUNK_BYTES) as f64
        * apps::ftp::Ftp::chunk_interval_ns() as f64
        / 1e9;
    assert!(
        ftp_s >= link_s - 0.05 && ftp_s < link_s * 1.05,
        "{ftp_s} vs {link_s}"
    );
    // Intermittent CPU: the thread is busy for well under half of the download.
    assert!(r.thread_cpu_ms["ftp"] < 0.5 * ftp_s * 1000.0);
}

#[test]
fn the_file_manager_answers_twenty_touches_and_the_video_presents_its_frames() {
    let fm = run(
        "foreground = \"file-manager\"\nscreen = \"on\"\nstart_ms = 1000",
        UcsgModel::EevdfSchedutil,
    );
    let resp = fm.response_ms.expect("fm ran");
    assert!(resp.mean > 0.0 && resp.p99 >= resp.mean);
    let v = run(
        "foreground = \"video\"\nscreen = \"on\"\nstart_ms = 1000",
        UcsgModel::CfsOndemand,
    );
    let fps = v.fps.expect("video ran");
    assert!(fps > 29.0 && fps <= 30.0, "{fps}");
}

#[test]
fn ucsg_gives_the_front_app_more_cpu_than_cfs_under_contention() {
    // ZIP behind the file manager: UCSG's nice values and placement favour the front app, so
    // its actions finish sooner and ZIP gets less.
    let scen =
        "foreground = \"file-manager\"\nbackground = [\"zip\"]\nscreen = \"on\"\nstart_ms = 1000";
    let cfs = run(scen, UcsgModel::CfsOndemand);
    let ucsg = run(scen, UcsgModel::Ucsg);
    let (c, u) = (cfs.response_ms.expect("fm"), ucsg.response_ms.expect("fm"));
    assert!(u.mean < c.mean, "ucsg {} vs cfs {}", u.mean, c.mean);
    let zip = |r: &UcsgModelResult| r.completion_s.and_then(|c| c.zip).expect("zip");
    assert!(zip(&ucsg) > zip(&cfs));
}

#[test]
fn runs_are_deterministic_and_footprints_are_sampled() {
    let scen = "foreground = \"video\"\nbackground = [\"zip\"]\nscreen = \"on\"\nstart_ms = 1000";
    for m in UcsgModel::ALL {
        let a = run(scen, m);
        let b = run(scen, m);
        assert_eq!(a, b, "{}", m.name());
        assert!(a.footprint.len() as f64 >= a.duration_ms / 100.0 - 1.0);
        assert!((0.0..=100.0).contains(&a.big_cluster_pct));
        assert!(a.active_cores_mean >= 1.0 && a.active_cores_mean <= 4.0);
    }
    let csv = to_csv(&run(scen, UcsgModel::Ucsg).footprint);
    assert!(csv.starts_with("time_s,cluster,active_cores,freq_mhz\n0.0,little,"));
}

#[test]
fn the_screen_off_idle_phone_sleeps_on_one_little_core() {
    let r = run(
        "foreground = \"home\"\nscreen = \"off\"\nstart_ms = 0\nduration_ms = 20000",
        UcsgModel::CfsOndemand,
    );
    assert_eq!(r.big_cluster_pct, 0.0);
    assert!(r.power_mw_mean < 5.0, "{}", r.power_mw_mean);
}

#[test]
fn the_audit_log_does_not_perturb_the_run_and_covers_every_core() {
    let sc = "foreground = \"home\"\nbackground = [\"zip\"]\nscreen = \"on\"\nstart_ms = 0";
    let s = parse(&spec(sc, "\"cfs-ondemand\"")).expect("valid");
    let plain = run_ucsg_model(&s, UcsgModel::CfsOndemand).expect("runs");
    let (r, log) = run_ucsg_model_with_audit(&s, UcsgModel::CfsOndemand).expect("runs");
    assert_eq!(plain, r, "recording does not change the run");
    assert!(
        log.header.rings >= 2,
        "one ring per core of the big.LITTLE SoC"
    );
    assert!(!log.records.is_empty());
    assert!(log
        .records
        .iter()
        .all(|rec| rec.ring < log.header.rings && rec.ring == rec.cpu));
}

#[test]
fn a_short_run_never_meters_negative_cpu_energy() {
    // 50 ms of the idle home screen: before the fix the time up to the first event was
    // metered at zero watts, and the CPU's energy (the draw less the board and the display)
    // came out at -0.38 mJ.
    let home = "foreground = \"home\"\nscreen = \"on\"\nstart_ms = 0\nduration_ms = 50";
    let s = parse(&spec(
        home,
        "\"cfs-ondemand\", \"eevdf-schedutil\", \"ucsg\"",
    ))
    .unwrap();
    let r = run_ucsg_spec(&s).unwrap();
    for (name, m) in &r.models {
        assert!(m.energy_mj > 0.0, "{name}: {} mJ", m.energy_mj);
    }
}

#[test]
fn app_work_and_ucsg_tunables_are_spec_fields_with_the_constants_as_defaults() {
    let fm = "foreground = \"file-manager\"\nscreen = \"on\"\nstart_ms = 0";
    let base = spec(fm, "\"ucsg\"");
    let s = parse(&base).unwrap();
    assert_eq!(s.apps, AppWork::default());
    assert_eq!(s.apps.zip_cycles_per_byte, apps::zip::ZIP_CYCLES_PER_BYTE);
    assert_eq!(s.ucsg.big_to_little_periods, 3);
    let doubled = parse(&format!("{base}[apps]\nfile_manager_work_pct = 200\n")).unwrap();
    let (a, b) = (run_ucsg_spec(&s).unwrap(), run_ucsg_spec(&doubled).unwrap());
    let cpu = |r: &UcsgResult| r.models["ucsg"].thread_cpu_ms["fm-scanner"];
    // The scanner's work doubles; its CPU time grows with it (the level may differ).
    assert!(cpu(&b) > 1.3 * cpu(&a), "{} -> {}", cpu(&a), cpu(&b));
    assert!(matches!(
        parse(&format!("{base}[apps]\nfile_manager_work_pct = 0\n")),
        Err(Problem::Invalid {
            field: "apps.file_manager_work_pct",
            ..
        })
    ));
    assert!(matches!(
        parse(&format!("{base}[ucsg]\nbig_to_little_periods = 0\n")),
        Err(Problem::Invalid {
            field: "ucsg.big_to_little_periods",
            ..
        })
    ));
}
