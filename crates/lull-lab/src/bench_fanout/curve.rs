//! The fan-out curve: clients × rate → deliveries per second and loss, one run per point.

use super::{run, ClientMode, FanoutConfig, FanoutError, FanoutReport};

/// Client counts the curve sweeps unless told otherwise: one app to twenty.
pub const DEFAULT_CURVE_CLIENTS: [usize; 4] = [1, 5, 10, 20];
/// Event rates (per second, each to every client) the curve sweeps unless told otherwise: up to
/// 200,000, twice the rate at which 20 clients make 2 M deliveries/s.
pub const DEFAULT_CURVE_RATES_PER_S: [u64; 5] = [10_000, 25_000, 50_000, 100_000, 200_000];
/// Most points one curve may have.
pub const MAX_CURVE_POINTS: usize = 100;

/// Runs the bench for every `clients × rates` pair, `seconds` each, in order (clients
/// outer); stops at the first run that cannot be set up.
///
/// # Errors
/// [`FanoutError::BadConfig`] for an empty list, too many points or a point out of range; else
/// as [`run`].
pub fn run_curve(
    clients: &[usize],
    rates_per_s: &[u64],
    seconds: u64,
    mode: &ClientMode,
) -> Result<Vec<FanoutReport>, FanoutError> {
    if clients.is_empty() || rates_per_s.is_empty() {
        return Err(FanoutError::BadConfig(
            "a curve needs at least one client count and one rate".into(),
        ));
    }
    if clients.len() * rates_per_s.len() > MAX_CURVE_POINTS {
        return Err(FanoutError::BadConfig(format!(
            "a curve has at most {MAX_CURVE_POINTS} points, asked for {} × {}",
            clients.len(),
            rates_per_s.len()
        )));
    }
    let configs: Vec<FanoutConfig> = clients
        .iter()
        .flat_map(|&c| {
            rates_per_s.iter().map(move |&r| FanoutConfig {
                mode: mode.clone(),
                ..FanoutConfig::new(c, r, seconds)
            })
        })
        .collect();
    // Every point is checked before the first runs.
    for c in &configs {
        c.validate()?;
    }
    configs.iter().map(run).collect()
}
