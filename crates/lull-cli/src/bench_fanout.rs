//! `lull bench fanout`: arguments and printing (the bench is `lull_lab::bench_fanout`).

use std::process::ExitCode;

use clap::Args;
use lull_lab::bench_fanout::curve::{self, DEFAULT_CURVE_CLIENTS, DEFAULT_CURVE_RATES_PER_S};
use lull_lab::bench_fanout::{self, ClientMode, FanoutConfig, FanoutReport};

use crate::output::{self, fixed, Col};

#[derive(Args, Debug)]
pub struct FanoutArgs {
    /// Clients, each an app registered for network messages.
    #[arg(long, default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=bench_fanout::MAX_CLIENTS as i64))]
    clients: u32,
    /// Events per second the producer pushes; each goes to every client.
    #[arg(long, default_value_t = 100_000,
          value_parser = clap::value_parser!(u64).range(1..=bench_fanout::MAX_RATE_PER_S))]
    rate: u64,
    /// How long the producer pushes (per point with --curve).
    #[arg(long, default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(1..=bench_fanout::MAX_SECONDS))]
    seconds: u64,
    /// Run the clients as separate C programs (apps/esm-c/fanout_client.c, built with $CC or cc
    /// against the liblull.a beside this executable) instead of threads.
    #[arg(long)]
    processes: bool,
    /// Sweep clients × rate (see --curve-clients, --curve-rates) and print one row per point.
    #[arg(long)]
    curve: bool,
    /// Client counts of the curve, comma-separated.
    #[arg(long, value_delimiter = ',', requires = "curve",
          value_parser = clap::value_parser!(u32).range(1..=bench_fanout::MAX_CLIENTS as i64))]
    curve_clients: Vec<u32>,
    /// Rates (events/s) of the curve, comma-separated.
    #[arg(long, value_delimiter = ',', requires = "curve",
          value_parser = clap::value_parser!(u64).range(1..=bench_fanout::MAX_RATE_PER_S))]
    curve_rates: Vec<u64>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

fn table(r: &FanoutReport) -> String {
    format!(
        "ESM fan-out on the data plane: {} client {}, {} events/s for {} s, rings of {} records \
         (measured on this machine)\n\
         producer    pushed {} events in {} bursts; rings: written {}, dropped {}, {} markers, \
         {} unmarked, {} wake-ups, high water {}, unread at the end {}\n\
         clients     expected {}, handled {}, dropped and counted {} ({} overflow markers), \
         lost uncounted {}, excess {}, out of order {}, failed {}; sides agree: {}\n\
         rate        {:.0} deliveries/s ({:.0} events/s pushed)\n\
         CPU         producer {:.1} ms, clients {:.1} ms ({} wake-ups), daemon {:.1} ms \
         ({} wake-ups, {} loop wake-ups); window {:.2} s",
        r.clients,
        r.mode,
        r.rate_per_s,
        r.duration_s,
        r.ring_capacity,
        r.events_pushed,
        r.bursts,
        r.ring_written,
        r.ring_dropped,
        r.ring_markers,
        r.ring_unmarked,
        r.ring_wakes,
        r.ring_high_water,
        r.ring_unread,
        r.deliveries_expected,
        r.delivered,
        r.dropped_counted,
        r.overflow_markers,
        r.lost_uncounted,
        r.excess,
        r.out_of_order,
        r.clients_failed,
        r.sides_agree,
        r.deliveries_per_s,
        r.pushed_per_s,
        r.producer_cpu_ms,
        r.clients_cpu_ms,
        r.clients_wakeups,
        r.daemon_cpu_ms,
        r.daemon_wakeups,
        r.daemon_loop_wakeups,
        r.window_s,
    )
}

fn curve_table(points: &[FanoutReport]) -> String {
    const COLS: [Col; 9] = [
        Col::Right("clients", 7),
        Col::Right("events/s", 9),
        Col::Right("offered/s", 12),
        Col::Right("delivered/s", 13),
        Col::Right("dropped", 10),
        Col::Right("lost", 8),
        Col::Right("loss %", 8),
        Col::Right("wakes", 6),
        Col::Right("high water", 11),
    ];
    let mut s = format!(
        "ESM fan-out curve ({} clients, rings of {} records; measured on this machine)\n",
        points.first().map_or("", |p| p.mode),
        points.first().map_or(0, |p| p.ring_capacity),
    );
    s.push_str(&output::table(
        &COLS,
        points.iter().map(|p| {
            [
                p.clients.to_string(),
                p.rate_per_s.to_string(),
                (p.rate_per_s * p.clients as u64).to_string(),
                fixed(p.deliveries_per_s, 0),
                p.dropped_counted.to_string(),
                p.lost_uncounted.to_string(),
                fixed(p.loss() * 100.0, 3),
                p.ring_wakes.to_string(),
                p.ring_high_water.to_string(),
            ]
        }),
    ));
    s
}

fn exit_for(reports: &[FanoutReport]) -> ExitCode {
    let bad: Vec<&FanoutReport> = reports
        .iter()
        .filter(|r| !r.accounted() || r.clients_failed > 0)
        .collect();
    for r in &bad {
        eprintln!(
            "lull bench fanout: {} clients at {}/s: deliveries not accounted for: {} lost \
             uncounted, {} excess, {} out of order, {} unmarked, sides agree {}, {} clients failed",
            r.clients,
            r.rate_per_s,
            r.lost_uncounted,
            r.excess,
            r.out_of_order,
            r.ring_unmarked,
            r.sides_agree,
            r.clients_failed
        );
    }
    if bad.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

pub fn run(args: &FanoutArgs) -> ExitCode {
    let mode = if args.processes {
        match ClientMode::processes_beside_exe() {
            Ok(m) => m,
            Err(e) => return output::failed("lull bench fanout", &e, false),
        }
    } else {
        ClientMode::Threads
    };
    let reports = if args.curve {
        let clients: Vec<usize> = if args.curve_clients.is_empty() {
            DEFAULT_CURVE_CLIENTS.to_vec()
        } else {
            args.curve_clients.iter().map(|&c| c as usize).collect()
        };
        let rates = if args.curve_rates.is_empty() {
            DEFAULT_CURVE_RATES_PER_S.to_vec()
        } else {
            args.curve_rates.clone()
        };
        curve::run_curve(&clients, &rates, args.seconds, &mode)
    } else {
        let config = FanoutConfig {
            mode,
            ..FanoutConfig::new(args.clients as usize, args.rate, args.seconds)
        };
        bench_fanout::run(&config).map(|r| vec![r])
    };
    match reports {
        Ok(reports) => {
            if args.json {
                if args.curve {
                    println!("{}", crate::output::to_json(&reports));
                } else {
                    println!("{}", crate::output::to_json(&reports[0]));
                }
            } else if args.curve {
                print!("{}", curve_table(&reports));
            } else {
                println!("{}", table(&reports[0]));
            }
            exit_for(&reports)
        }
        Err(e) => output::failed("lull bench fanout", &e, false),
    }
}
