//! What seed 001 reports (Hsiu et al., measured on a Galaxy S4), for printing beside the modelled
//! figures. These are the seed's measurements, not targets: nothing in the simulator is fitted to
//! them. Changes are UCSG's against CFS+OD, in percent of CFS+OD's figure.

/// §4.3: UCSG's energy change per scenario (foreground, background), % (negative = less).
pub const ENERGY_CHANGE_PCT: [(&str, &str, f64); 11] = [
    ("file-manager", "none", -31.4),
    ("file-manager", "zip", -26.2),
    ("file-manager", "ftp", -22.6),
    ("file-manager", "zip+ftp", -24.9),
    ("video", "none", -15.2),
    ("video", "zip", -22.0),
    ("video", "ftp", -11.5),
    ("video", "zip+ftp", -23.4),
    ("home", "zip", -12.3),
    ("home", "ftp", -20.1),
    ("home", "zip+ftp", -24.9),
];

/// §4.3: "UCSG reduces the energy consumed under CFS+OD between 11.5% and 31.4%".
pub const ENERGY_CHANGE_RANGE_PCT: (f64, f64) = (-31.4, -11.5);

/// §4.4: the file manager's response time falls by 25.9 to 35.2 %.
pub const RESPONSE_CHANGE_PCT: (f64, f64) = (-35.2, -25.9);
/// §4.4: ZIP's completion time rises by 97.4 to 140.4 %.
pub const ZIP_CHANGE_PCT: (f64, f64) = (97.4, 140.4);
/// §4.4: FTP's completion time rises by 3.7 to 21.5 %.
pub const FTP_CHANGE_PCT: (f64, f64) = (3.7, 21.5);
/// §4.4: both models decode over 29 frames per second in every scenario.
pub const VIDEO_FPS_AT_LEAST: f64 = 29.0;
/// §4.5 (figure 8, video + ZIP): time on the big cluster, CFS+OD and UCSG, %.
pub const BIG_CLUSTER_PCT: (f64, f64) = (23.8, 14.3);
/// §4.5: active cores, CFS+OD "always uses four cores", UCSG "about 2.2 on average".
pub const ACTIVE_CORES: (f64, f64) = (4.0, 2.2);
/// §4.5: mean frequency, CFS+OD and UCSG, MHz.
pub const FREQ_MHZ: (f64, f64) = (704.0, 470.0);

/// The seed's energy change for a scenario, if it reports one.
#[must_use]
pub fn energy_change_pct(foreground: &str, background: &str) -> Option<f64> {
    ENERGY_CHANGE_PCT
        .iter()
        .find(|(f, b, _)| *f == foreground && *b == background)
        .map(|&(_, _, v)| v)
}
