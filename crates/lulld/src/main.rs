//! `lulld`: the ESM daemon. Listens on a Unix socket for applications, reads the configured event
//! sources, and pushes each event to the apps registered for it. Blocks in the kernel with no
//! timeout while nothing happens; stops on SIGINT or SIGTERM. Under systemd it takes the sockets
//! passed by socket activation and reports readiness (`lulld::activation`).

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use lull_actuate::freezer::DEFAULT_NAMESPACE;
use lull_esm::EsmConfig;
use lull_model::time::NS_PER_MS;
use lull_os::sys;
use lull_sched::boost::seam::{BoostMode, BoostSeamConfig};
use lulld::activation::{self, Activated, Adopted, KDS_FD_NAME};
use lulld::daemon::{check_socket_path, same_socket_path, Daemon, DaemonConfig, DaemonError};
use lulld::guis::{GuisConfig, IdleAction};
use lulld::kds::KdsConfig;

/// Delay between start-up and a replay's time 0, so clients started alongside can connect.
const REPLAY_LEAD_NS: u64 = 1_000 * NS_PER_MS;

#[derive(Parser, Debug)]
#[command(
    name = "lulld",
    version,
    about = "The ESM daemon: push delivery of input, network and timer events"
)]
struct Args {
    /// Socket path (default: $XDG_RUNTIME_DIR/lull/esm.sock, else /run/lull/esm.sock).
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Events one app's private queue may hold before the overflow marker (1 to 4096,
    /// `lull_esm::MAX_QUEUE_BOUND`: the queues of stuck apps stay a few MB).
    #[arg(long, default_value_t = lull_esm::DEFAULT_QUEUE_BOUND as u32,
          value_parser = clap::value_parser!(u32).range(1..=lull_esm::MAX_QUEUE_BOUND as i64))]
    queue_bound: u32,
    /// An evdev device to hand to the apps that hold input (each gets a masked descriptor of its
    /// own; the daemon never reads it), or a pipe of `struct input_event` records the daemon
    /// reads; repeatable. A directory, a regular file or a device that is not evdev is refused
    /// by name.
    /// `auto` opens every /dev/input/event* there is.
    #[arg(long)]
    evdev: Vec<String>,
    /// A `lull-trace 1` file to inject at its times, starting one second after start-up.
    #[arg(long)]
    replay: Option<PathBuf>,
    /// A UDP address to receive network messages on (e.g. 127.0.0.1:7000); each datagram is a
    /// `net_message` event on --net-channel.
    #[arg(long)]
    udp: Option<String>,
    /// The channel of --udp's `net_message` events (default 0).
    #[arg(long)]
    net_channel: Option<u32>,
    /// Produce a `timer` event (id 0) every this many milliseconds, into the rings of the apps
    /// registered for timers. Off by default: a periodic timer wakes the daemon's source thread
    /// even when nothing happens.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    timer_ms: Option<u64>,
    /// Run without the display server (ESM only).
    #[arg(long)]
    no_kds: bool,
    /// The display server's control socket (default: kds.sock beside the ESM socket).
    #[arg(long)]
    kds_socket: Option<PathBuf>,
    /// Screen size of the display server, WIDTHxHEIGHT.
    #[arg(long, default_value = "1920x1080", value_parser = lull_kds::screen_size::parse_screen_size)]
    screen: (u32, u32),
    /// A frame-buffer device to show the screen on; `auto` uses /dev/fb0 when there is one.
    /// Without it the display server runs headless (the screen lives in memory; `lull kds
    /// snapshot` saves it).
    #[arg(long)]
    framebuffer: Option<String>,
    /// guiS in the daemon: threads that table 1 forbids are frozen by the kernel (when root and
    /// a cgroup freezer exist) and idle is forced. Default: on with the display server. `off`
    /// gates nothing in the daemon; each app's runtime gates are its own option.
    #[arg(long, value_enum)]
    guis: Option<OnOff>,
    /// What guiS does the moment every GUI app is idle: none, screen-off, or exec:CMD (run with
    /// `sh -c`, LULL_IDLE_APPS set to the number of apps).
    #[arg(long, value_parser = parse_idle_action)]
    idle_action: Option<IdleAction>,
    /// The cgroup directory guiS's freezer creates (1-64 of A-Z a-z 0-9 _ -).
    #[arg(long)]
    guis_namespace: Option<String>,
    /// A policy to run on the seam besides guiS: `ucsg` (seed 001's user-centric scheduler and
    /// governor; needs the display server, and root for the proc connector and negative nice).
    #[arg(long, value_enum)]
    policy: Vec<PolicyName>,
    /// A process name (as in /proc/PID/comm) UCSG should manage although no app owns it;
    /// repeatable. Other system processes are left alone.
    #[arg(long)]
    ucsg_manage: Vec<String>,
    /// Seed 003's interactive boost, off by default: each input event's receiving thread (and
    /// its app's drawing thread) is raised before the push and given back at its next wait or
    /// when the budget C runs out. `nice`: eq. 6's nice against the run queues (negative nice
    /// needs root); `slice`: a 0.1 ms custom slice (Linux 6.12+). Needs the display server; not
    /// with --policy ucsg.
    #[arg(long, value_enum)]
    boost: Option<BoostArg>,
    /// The boost's C, ms: the interaction's work in eq. 6 and the boost's budget (default 10,
    /// seed 003 §VI-B-1).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000))]
    boost_c_ms: Option<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
enum BoostArg {
    Nice,
    Slice,
}

/// The boost's configuration from the flags, or why the combination makes no sense.
fn boost_config(args: &Args) -> Result<Option<BoostSeamConfig>, String> {
    let Some(mode) = args.boost else {
        if args.boost_c_ms.is_some() {
            return Err("--boost-c-ms needs --boost nice or --boost slice".into());
        }
        return Ok(None);
    };
    if args.no_kds {
        return Err(
            "--boost needs the display server (apps declare their threads there); drop --no-kds"
                .into(),
        );
    }
    if args.policy.contains(&PolicyName::Ucsg) {
        return Err(
            "--boost and --policy ucsg both set the nice values of apps' threads; choose one"
                .into(),
        );
    }
    let mode = match mode {
        BoostArg::Nice => BoostMode::Nice,
        BoostArg::Slice => BoostMode::Slice,
    };
    let mut c = BoostSeamConfig::new(mode);
    if let Some(ms) = args.boost_c_ms {
        c.c_ns = ms * NS_PER_MS;
    }
    c.validate().map_err(|e| e.to_string())?;
    Ok(Some(c))
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
enum PolicyName {
    Ucsg,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
enum OnOff {
    On,
    Off,
}

fn parse_idle_action(s: &str) -> Result<IdleAction, String> {
    s.parse().map_err(|e: lulld::guis::GuisError| e.to_string())
}

/// guiS's configuration from the flags, or why the combination makes no sense.
fn guis_config(args: &Args) -> Result<Option<GuisConfig>, String> {
    let on = match (args.guis, args.no_kds) {
        (Some(OnOff::On), true) => {
            return Err("--guis on needs the display server; drop --no-kds".into())
        }
        (Some(OnOff::On), false) | (None, false) => true,
        (Some(OnOff::Off), _) | (None, true) => false,
    };
    if !on && (args.idle_action.is_some() || args.guis_namespace.is_some()) {
        return Err(
            "--idle-action and --guis-namespace need guiS on (it is off with --guis off or --no-kds)"
                .into(),
        );
    }
    Ok(on.then(|| GuisConfig {
        enabled: true,
        freezer_namespace: args
            .guis_namespace
            .clone()
            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned()),
        idle_action: args.idle_action.clone().unwrap_or_default(),
    }))
}

/// `, freeze, thaw; frequency unavailable here (…)`: what the actuator can do besides the
/// syscalls every Linux has, and why not the rest.
fn actuator_availability(r: &lull_actuate::ActuatorReport) -> String {
    use lull_sched::seam::ActionKind;
    let mut out = String::new();
    for k in [
        ActionKind::Freeze,
        ActionKind::Thaw,
        ActionKind::CpuWeight,
        ActionKind::Frequency,
    ] {
        if r.kind(k).unavailable_reason.is_none() {
            out.push_str(", ");
            out.push_str(k.name());
        }
    }
    for (k, why) in r.unavailable_here() {
        out.push_str(&format!("; {} unavailable here ({why})", k.name()));
    }
    out
}

/// The frame buffer to use: `auto` is /dev/fb0 when present, headless otherwise.
fn framebuffer_path(spec: Option<&str>) -> Option<PathBuf> {
    match spec {
        None => None,
        Some("auto") => {
            let fb0 = PathBuf::from("/dev/fb0");
            if fb0.exists() {
                Some(fb0)
            } else {
                eprintln!("lulld: no /dev/fb0 on this machine; the display server runs headless");
                None
            }
        }
        Some(p) => Some(PathBuf::from(p)),
    }
}

/// Whether `fd` is a character device (an evdev node) rather than a pipe or socket of records.
fn is_char_device(fd: &OwnedFd) -> bool {
    use std::os::unix::fs::FileTypeExt;
    fd.try_clone()
        .map(std::fs::File::from)
        .and_then(|f| f.metadata())
        .is_ok_and(|m| m.file_type().is_char_device())
}

fn evdev_paths(specs: &[String]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for s in specs {
        if s == "auto" {
            let found: Vec<PathBuf> = std::fs::read_dir("/dev/input")
                .map(|d| {
                    d.filter_map(Result::ok)
                        .map(|e| e.path())
                        .filter(|p| {
                            p.file_name()
                                .is_some_and(|n| n.to_string_lossy().starts_with("event"))
                        })
                        .collect()
                })
                .unwrap_or_default();
            if found.is_empty() {
                eprintln!(
                    "lulld: no /dev/input/event* devices on this machine; the evdev source is off"
                );
            }
            out.extend(found);
        } else {
            out.push(PathBuf::from(s));
        }
    }
    Ok(out)
}

/// The path of a socket systemd passed, checked against the one the options name.
fn activated_path(
    adopted: &Adopted,
    option: &str,
    given: Option<&PathBuf>,
) -> Result<PathBuf, String> {
    match given {
        Some(p) if *p != adopted.path => Err(format!(
            "{option} {} but systemd passed the socket bound at {}; drop {option} or change \
             the socket unit",
            p.display(),
            adopted.path.display()
        )),
        _ => Ok(adopted.path.clone()),
    }
}

/// Refuses options that mean nothing with the others given, naming the conflict, and a
/// directory where a socket is to be bound (`bind` would say only "Address already in use").
fn check_option_conflicts(args: &Args) -> Result<(), String> {
    if args.no_kds && args.kds_socket.is_some() {
        return Err(
            "--kds-socket names the display server's socket, which --no-kds turns off; drop one"
                .into(),
        );
    }
    if args.udp.is_none() && args.net_channel.is_some() {
        return Err("--net-channel is the channel of --udp's datagrams; it needs --udp".into());
    }
    // A directory or any other non-socket at a socket path is refused by the socket checks
    // (`lulld::check_socket_path`), which run before anything is created.
    Ok(())
}

/// A socket path's error, with the way out when another daemon holds it: the option that gives
/// this daemon a socket of its own.
fn socket_error(e: DaemonError, option: &str) -> String {
    match e {
        DaemonError::AlreadyRunning(_) => format!(
            "{e}: stop it, or give this daemon its own socket with {option} PATH (a second \
             daemon needs --socket and --kds-socket, and with guiS on --guis-namespace NAME)"
        ),
        other => other.to_string(),
    }
}

/// Why a file in `/tmp` may be missing: under systemd, `PrivateTmp=yes` (packaging/systemd)
/// gives the service a `/tmp` and `/var/tmp` of its own. `under_systemd`: `INVOCATION_ID` is
/// set, as systemd sets it for every unit it starts.
fn private_tmp_hint(path: &std::path::Path, not_found: bool, under_systemd: bool) -> &'static str {
    let in_tmp = path.starts_with("/tmp") || path.starts_with("/var/tmp");
    if not_found && in_tmp && under_systemd {
        " (run by systemd, lulld has a private /tmp and /var/tmp (PrivateTmp=yes): keep the \
         file elsewhere, e.g. /var/lib/lull or a home directory)"
    } else {
        ""
    }
}

fn setup(args: &Args, mut activated: Activated) -> Result<Daemon, String> {
    check_option_conflicts(args)?;
    // Inputs are read and checked before anything is created, so a bad one leaves nothing
    // behind.
    let inputs = read_inputs(args)?;
    let esm_fd = activated.esm.take();
    let socket_path = match &esm_fd {
        Some(a) => activated_path(a, "--socket", args.socket.as_ref())?,
        None => args.socket.clone().unwrap_or_else(sys::default_socket_path),
    };
    let config = DaemonConfig {
        socket_path,
        esm: EsmConfig {
            queue_bound: args.queue_bound as usize,
        },
    };
    if args.no_kds && activated.kds.is_some() {
        return Err(format!(
            "systemd passed a display-server socket (named {KDS_FD_NAME:?}) but --no-kds is \
             set; mask lulld-kds.socket (systemctl mask --now lulld-kds.socket), or drop --no-kds"
        ));
    }
    let guis = guis_config(args)?;
    let boost = boost_config(args)?;
    if args.no_kds && !args.policy.is_empty() {
        return Err(
            "--policy needs the display server (apps and their windows); drop --no-kds".into(),
        );
    }
    if !args.policy.contains(&PolicyName::Ucsg) && !args.ucsg_manage.is_empty() {
        return Err("--ucsg-manage needs --policy ucsg".into());
    }
    // Everything checked before anything is created: both socket paths fit and hold nothing but
    // a socket, and they differ.
    let kds_path = match (&activated.kds, args.no_kds) {
        (_, true) => None,
        (Some(a), false) => Some(activated_path(a, "--kds-socket", args.kds_socket.as_ref())?),
        (None, false) => Some(
            args.kds_socket
                .clone()
                .unwrap_or_else(|| config.socket_path.with_file_name("kds.sock")),
        ),
    };
    if esm_fd.is_none() {
        check_socket_path(&config.socket_path).map_err(|e| socket_error(e, "--socket"))?;
    }
    if let Some(p) = &kds_path {
        if same_socket_path(p, &config.socket_path) {
            return Err(DaemonError::SocketShared(p.clone()).to_string());
        }
        if activated.kds.is_none() {
            check_socket_path(p).map_err(|e| socket_error(e, "--kds-socket"))?;
        }
    }
    let signals = sys::termination_signalfd().map_err(|e| format!("signals: {e}"))?;
    let mut d = match esm_fd {
        Some(a) => Daemon::adopt(&config, a.fd),
        None => Daemon::bind(&config),
    }
    .map_err(|e| socket_error(e, "--socket"))?;
    if !args.no_kds {
        serve_display(
            &mut d,
            args,
            kds_path,
            activated.kds.take(),
            guis.as_ref(),
            boost.as_ref(),
        )?;
    }
    d.add_signal_fd(signals, |sig| {
        eprintln!(
            "lulld: {} from pid {}: stopping (thawing and giving back every thread, removing \
             the sockets)",
            sig.name(),
            sig.pid
        );
    })
    .map_err(|e| e.to_string())?;
    add_sources(&mut d, args, inputs)?;
    eprintln!("lulld: listening on {}", d.socket_path().display());
    Ok(d)
}

/// What the options name to read from, read and checked before the daemon is created.
struct Inputs {
    replay: Option<lull_workload::Trace>,
    /// Each `--evdev` path and its open descriptor.
    evdev: Vec<(PathBuf, OwnedFd)>,
}

/// The replay trace and the evdev sources the options name, read and checked. The bounded
/// reader refuses FIFOs and devices (`/dev/zero`), whose reads would never end while the
/// termination signals are blocked for the signalfd.
fn read_inputs(args: &Args) -> Result<Inputs, String> {
    let replay = match &args.replay {
        Some(path) => {
            let text = lull_os::input_file::read_bounded_text(path, lull_os::input_file::TRACE)
                .map_err(|e| {
                    format!(
                        "--replay: {e}{}",
                        private_tmp_hint(
                            path,
                            e.is_not_found(),
                            std::env::var_os("INVOCATION_ID").is_some()
                        )
                    )
                })?;
            Some(
                lull_workload::Trace::parse(&text)
                    .map_err(|e| format!("--replay {}: {e}", path.display()))?,
            )
        }
        None => None,
    };
    let mut evdev = Vec::new();
    for p in evdev_paths(&args.evdev)? {
        let fd = lull_os::input_file::open_event_source(&p).map_err(|e| e.to_string())?;
        if let Err(e) = sys::evdev_use_monotonic(fd.as_raw_fd()) {
            eprintln!(
                "lulld: {}: cannot switch its stamps to CLOCK_MONOTONIC ({e}); \
                 its records must already carry monotonic times",
                p.display()
            );
        }
        evdev.push((p, fd));
    }
    Ok(Inputs { replay, evdev })
}

/// The display server on `kds_path` (or the socket systemd passed), then the policies the
/// options turn on, each saying what it set up.
fn serve_display(
    d: &mut Daemon,
    args: &Args,
    kds_path: Option<PathBuf>,
    kds_fd: Option<Adopted>,
    guis: Option<&GuisConfig>,
    boost: Option<&BoostSeamConfig>,
) -> Result<(), String> {
    let socket_path = kds_path.clone().unwrap_or_default();
    let kds = KdsConfig {
        socket_path,
        screen_width: args.screen.0,
        screen_height: args.screen.1,
        framebuffer: framebuffer_path(args.framebuffer.as_deref()),
    };
    match kds_fd {
        Some(a) => d.adopt_kds(&kds, a.fd),
        None => d.enable_kds(&kds),
    }
    .map_err(|e| socket_error(e, "--kds-socket"))?;
    eprintln!(
        "lulld: display server on {} ({}x{}, {})",
        kds.socket_path.display(),
        kds.screen_width,
        kds.screen_height,
        kds.framebuffer
            .as_ref()
            .map_or_else(|| "headless".to_owned(), |p| p.display().to_string())
    );
    match guis {
        Some(config) => {
            let status = d.enable_guis(config).map_err(|e| e.to_string())?;
            if let Some(r) = &status.recovered {
                eprintln!("lulld: {r}");
            }
            eprintln!("lulld: {status}");
            if let Some(seam) = d.state_mut().seam_report() {
                eprintln!(
                    "lulld: policy seam: {}; actuator: nice, slice, restore_sched, affinity, release{}",
                    seam.policies.join(", "),
                    actuator_availability(&seam.actuator)
                );
            }
        }
        None => eprintln!(
            "lulld: guiS off: the daemon freezes nothing and forces no idle \
             (apps' runtime gates are per app)"
        ),
    }
    if args.policy.contains(&PolicyName::Ucsg) {
        let config = lulld::ucsg::UcsgConfig {
            manage: args.ucsg_manage.clone(),
        };
        let status = d.enable_ucsg(&config).map_err(|e| e.to_string())?;
        eprintln!("lulld: {status}");
    }
    if let Some(config) = boost {
        let status = d.enable_boost(config).map_err(|e| e.to_string())?;
        eprintln!("lulld: {status}");
    }
    Ok(())
}

/// The event sources the options name: evdev devices (handed to the apps) or pipes (read by
/// the daemon), the replay, the UDP socket and the timer.
fn add_sources(d: &mut Daemon, args: &Args, inputs: Inputs) -> Result<(), String> {
    let Inputs { replay, evdev } = inputs;
    for (p, fd) in evdev {
        if is_char_device(&fd) {
            // A device node: each app that holds input reads it through a descriptor of its
            // own; the daemon never reads it (lulld::devices).
            drop(fd);
            let id = d.add_device(&p).map_err(|e| e.to_string())?;
            eprintln!(
                "lulld: input device {id} {} (handed to the apps)",
                p.display()
            );
        } else {
            d.add_evdev(fd).map_err(|e| e.to_string())?;
            eprintln!("lulld: evdev source {} (read by the daemon)", p.display());
        }
    }
    if let Some(trace) = &replay {
        d.add_replay(trace, sys::monotonic_ns() + REPLAY_LEAD_NS)
            .map_err(|e| e.to_string())?;
    }
    if let Some(addr) = &args.udp {
        let sock =
            std::net::UdpSocket::bind(addr).map_err(|e| format!("cannot bind UDP {addr}: {e}"))?;
        d.add_net(OwnedFd::from(sock), args.net_channel.unwrap_or(0))
            .map_err(|e| e.to_string())?;
    }
    if let Some(ms) = args.timer_ms {
        let period = ms * NS_PER_MS;
        d.add_timer(0, sys::monotonic_ns() + period, period)
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn main() -> ExitCode {
    // SAFETY: first thing in `main`: no other thread runs to read the environment it changes.
    let activated = match unsafe { activation::take_listen_fds() } {
        Ok(a) => a.unwrap_or_default(),
        Err(e) => {
            eprintln!("lulld: socket activation: {e}");
            return ExitCode::FAILURE;
        }
    };
    let notify = match activation::notify_target_from_env() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("lulld: {e}");
            return ExitCode::FAILURE;
        }
    };
    let args = Args::parse();
    let daemon = match setup(&args, activated) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("lulld: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Readiness for `Type=notify` (packaging/systemd/lulld.service): every socket listens and
    // every source is open, so clients started after this succeed.
    if let Some(target) = &notify {
        let status = format!(
            "READY=1\nSTATUS=listening on {}",
            daemon.socket_path().display()
        );
        // Not fatal: the service manager reports the missing readiness itself, and the daemon
        // keeps serving whoever is already connected.
        if let Err(e) = activation::notify_to(target, &status) {
            eprintln!("lulld: cannot tell the service manager it is ready: {e}");
        }
    }
    match daemon.run() {
        Ok(report) => {
            eprintln!(
                "lulld: stopped; {}",
                serde_json::to_string(&report).unwrap_or_default()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("lulld: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::private_tmp_hint;
    use std::path::Path;

    #[test]
    fn a_missing_trace_in_tmp_under_systemd_names_private_tmp() {
        let tmp = Path::new("/tmp/t.trace");
        assert!(private_tmp_hint(tmp, true, true).contains("PrivateTmp=yes"));
        assert!(private_tmp_hint(Path::new("/var/tmp/t"), true, true).contains("private /tmp"));
        assert_eq!(private_tmp_hint(tmp, true, false), "");
        assert_eq!(private_tmp_hint(tmp, false, true), "");
        assert_eq!(private_tmp_hint(Path::new("/home/u/t"), true, true), "");
    }
}
