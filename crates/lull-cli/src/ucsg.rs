//! `lull sim run` on UCSG specs and `lull reproduce`'s UCSG section: tables of the modelled
//! figures with seed 001's numbers beside them. Parsing and printing only.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use lull_sim::ucsg::seed;
use lull_sim::ucsg::{to_csv, to_svg, UcsgResult};

use crate::output::{self, figure, fixed, Col};

/// The columns of a UCSG spec's table, one row per model.
const MODEL_COLS: [Col; 11] = [
    Col::Left("model", 16),
    Col::Right("energy mJ", 10),
    Col::Right("CPU mW", 8),
    Col::Right("resp ms", 9),
    Col::Right("resp p99", 9),
    Col::Right("fps", 6),
    Col::Right("zip s", 7),
    Col::Right("ftp s", 7),
    Col::Right("big %", 6),
    Col::Right("cores", 6),
    Col::Right("MHz", 6),
];

/// The columns of `lull reproduce`'s figures 6 and 7, one row per scenario.
const FIG6_COLS: [Col; 11] = [
    Col::Left("front", 13),
    Col::Left("behind", 8),
    Col::Right("energy", 10),
    Col::Right("seed", 8),
    Col::Bar,
    Col::Right("resp", 8),
    Col::Right("UCSG fps", 10),
    Col::Right("ZIP", 9),
    Col::Right("FTP", 9),
    Col::Right("EEVDF enrg", 11),
    Col::Right("UCSG mJ", 9),
];

/// One spec's table: every model's figures.
#[must_use]
pub fn table(r: &UcsgResult) -> String {
    let details = format!("seed {}", r.header.seed);
    output::modelled_table(
        &r.header,
        &details,
        &MODEL_COLS,
        r.models.iter().map(|(name, m)| {
            let c = m.completion_s;
            [
                name.clone(),
                fixed(m.energy_mj, 1),
                fixed(m.power_mw_mean, 1),
                figure(m.response_ms.map(|x| x.mean), 1),
                figure(m.response_ms.map(|x| x.p99), 1),
                figure(m.fps, 2),
                figure(c.and_then(|c| c.zip), 2),
                figure(c.and_then(|c| c.ftp), 2),
                fixed(m.big_cluster_pct, 1),
                fixed(m.active_cores_mean, 2),
                fixed(m.freq_mhz_mean, 0),
            ]
        }),
    )
}

/// Writes each model's footprint CSV and one SVG of all models.
///
/// # Errors
/// A message when a file cannot be written.
pub fn write_footprints(r: &UcsgResult, dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let write = |path: PathBuf, text: String| {
        lull_os::fileout::write_file_atomically(&path, text.as_bytes())
            .map_err(|e| e.to_string())?;
        eprintln!("wrote {}", path.display());
        Ok::<(), String>(())
    };
    for (name, m) in &r.models {
        write(
            dir.join(format!("{}-{name}.csv", r.header.experiment)),
            to_csv(&m.footprint),
        )?;
    }
    let series: Vec<(&str, &[lull_sim::ucsg::FootprintSample])> = r
        .models
        .iter()
        .map(|(n, m)| (n.as_str(), m.footprint.as_slice()))
        .collect();
    write(
        dir.join(format!("{}.svg", r.header.experiment)),
        to_svg(&format!("{}: CPU footprint", r.header.description), &series),
    )
}

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_owned(), |v| format!("{v:+.1} %"))
}

/// `lull reproduce`'s `ucsg_sim` section as text: figure by figure, UCSG against CFS+OD (and
/// today's Linux) with the seed's numbers beside ours.
pub fn section_table(r: &lull_reproduce::data::Ucsg) -> String {
    let (results, secs) = (&r.results, r.wall_s);
    let mut t = String::new();
    let get = |r: &UcsgResult, m: &str| r.models.get(m).cloned();
    // Figure 5.
    let _ = writeln!(t, "Figure 5 — idle CPU power (mW):  cfs-ondemand  eevdf-schedutil  ucsg   (seed: UCSG slightly above CFS+OD with the screen on; hardly any power off)");
    for r in results
        .iter()
        .filter(|r| r.header.experiment.starts_with("fig5"))
    {
        let p = |m| get(r, m).map(|x| x.power_mw_mean);
        let _ = writeln!(
            t,
            "  screen {:<4} {:>27} {:>16} {:>6}",
            r.screen,
            figure(p("cfs-ondemand"), 2),
            figure(p("eevdf-schedutil"), 2),
            figure(p("ucsg"), 2)
        );
    }
    // Figures 6 and 7.
    let _ = writeln!(
        t,
        "\nFigures 6 and 7 — UCSG against CFS+OD (ours | seed); eevdf-schedutil's energy against CFS+OD"
    );
    let _ = writeln!(t, "  {}", output::head(&FIG6_COLS));
    let cells = r.cells();
    for c in cells.iter().filter(|c| c.experiment.starts_with("fig6")) {
        let cells = [
            c.foreground.clone(),
            c.background.clone(),
            pct(c.energy_change_pct),
            pct(c.seed_energy_change_pct),
            pct(c.response_change_pct),
            figure(c.ucsg_fps, 2),
            pct(c.zip_change_pct),
            pct(c.ftp_change_pct),
            pct(c.eevdf_schedutil_energy_change_pct),
            fixed(c.ucsg_energy_mj, 0),
        ];
        let _ = writeln!(t, "  {}", output::row(&FIG6_COLS, cells));
    }
    let _ = writeln!(
        t,
        "  seed: energy {:+.1} … {:+.1} %, response {:+.1} … {:+.1} %, ZIP {:+.1} … {:+.1} %, FTP {:+.1} … {:+.1} %, video > {:.0} fps",
        seed::ENERGY_CHANGE_RANGE_PCT.0, seed::ENERGY_CHANGE_RANGE_PCT.1,
        seed::RESPONSE_CHANGE_PCT.0, seed::RESPONSE_CHANGE_PCT.1,
        seed::ZIP_CHANGE_PCT.0, seed::ZIP_CHANGE_PCT.1,
        seed::FTP_CHANGE_PCT.0, seed::FTP_CHANGE_PCT.1,
        seed::VIDEO_FPS_AT_LEAST
    );
    // Figure 8.
    if let Some(r) = results
        .iter()
        .find(|r| r.header.experiment.starts_with("fig8"))
    {
        let _ = writeln!(
            t,
            "\nFigure 8 — footprints, video + ZIP ({}): big %, cores, MHz",
            r.header.experiment
        );
        for (name, m) in &r.models {
            let _ = writeln!(
                t,
                "  {name:<16} {:>6.1} % {:>6.2} {:>6.0} MHz",
                m.big_cluster_pct, m.active_cores_mean, m.freq_mhz_mean
            );
        }
        let _ = writeln!(
            t,
            "  seed: CFS+OD {:.1} % / {:.0} cores / {:.0} MHz; UCSG {:.1} % / about {:.1} cores / {:.0} MHz",
            seed::BIG_CLUSTER_PCT.0, seed::ACTIVE_CORES.0, seed::FREQ_MHZ.0,
            seed::BIG_CLUSTER_PCT.1, seed::ACTIVE_CORES.1, seed::FREQ_MHZ.1
        );
    }
    let _ = write!(
        t,
        "\n{} UCSG specs in {secs:.2} s of wall time (modelled figures; `lull sim run experiments/ucsg/fig8-video-zip.toml --footprint-dir DIR` for the plot)",
        results.len()
    );
    t
}
