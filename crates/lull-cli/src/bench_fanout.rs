//! `lull bench fanout`: arguments and printing (the bench is `lull_lab::bench_fanout`).

use std::process::ExitCode;

use clap::Args;
use lull_lab::bench_fanout::{self, FanoutConfig, FanoutReport};

#[derive(Args, Debug)]
pub struct FanoutArgs {
    /// Client threads, each an app registered for network messages.
    #[arg(long, default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=bench_fanout::MAX_CLIENTS as i64))]
    clients: u32,
    /// Datagrams (events) per second sent to the daemon's UDP source; each goes to every client.
    #[arg(long, default_value_t = 25_000,
          value_parser = clap::value_parser!(u64).range(1..=bench_fanout::MAX_RATE_PER_S))]
    rate: u64,
    /// How long the sender sends.
    #[arg(long, default_value_t = 5,
          value_parser = clap::value_parser!(u64).range(1..=bench_fanout::MAX_SECONDS))]
    seconds: u64,
    /// Each app's private queue bound in the daemon.
    #[arg(long, default_value_t = bench_fanout::DEFAULT_QUEUE_BOUND as u32,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    queue_bound: u32,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

fn table(r: &FanoutReport) -> String {
    format!(
        "ESM fan-out: {} clients, {} events/s for {} s, queue bound {} (measured on this machine)\n\
         events      sent {} (send failed {}), dropped at the socket {}, injected {}, accepted {}\n\
         deliveries  expected {}, delivered {}, dropped and counted {} ({} overflow markers), \
         lost uncounted {}, excess {}, out of order {}\n\
         rate        {:.0} deliveries/s ({:.0} events/s sent)\n\
         daemon      {:.1} ms CPU, {} wake-ups ({} loop wake-ups)\n\
         clients     {:.1} ms CPU, {} wake-ups; sender {:.1} ms CPU; window {:.2} s",
        r.clients,
        r.rate_per_s,
        r.duration_s,
        r.queue_bound,
        r.events_sent,
        r.send_failed,
        r.socket_dropped,
        r.events_injected,
        r.events_accepted,
        r.deliveries_expected,
        r.delivered,
        r.dropped_counted,
        r.overflow_markers,
        r.lost_uncounted,
        r.excess,
        r.out_of_order,
        r.deliveries_per_s,
        r.sent_per_s,
        r.daemon_cpu_ms,
        r.daemon_wakeups,
        r.daemon_loop_wakeups,
        r.clients_cpu_ms,
        r.clients_wakeups,
        r.sender_cpu_ms,
        r.window_s,
    )
}

pub fn run(args: &FanoutArgs) -> ExitCode {
    let config = FanoutConfig {
        queue_bound: args.queue_bound as usize,
        ..FanoutConfig::new(args.clients as usize, args.rate, args.seconds)
    };
    match bench_fanout::run(&config) {
        Ok(r) => {
            if args.json {
                println!("{}", crate::to_json(&r));
            } else {
                println!("{}", table(&r));
            }
            if r.accounted() && r.clients_failed == 0 {
                ExitCode::SUCCESS
            } else {
                eprintln!(
                    "lull bench fanout: deliveries not accounted for: {} lost uncounted, {} excess, \
                     {} out of order, {} clients failed",
                    r.lost_uncounted, r.excess, r.out_of_order, r.clients_failed
                );
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("lull bench fanout: {e}");
            ExitCode::FAILURE
        }
    }
}
