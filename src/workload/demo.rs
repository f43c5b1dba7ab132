//! netto's built-in demo traffic, so there is something to measure without setting up
//! traffic by hand: a TCP stream from the host into a private namespace over a veth
//! pair, which exercises the real send and receive paths on both ends and touches no
//! outside network.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use anyhow::{anyhow, Context};
use nix::sys::signal::{self, SigHandler, Signal};

use crate::workload::netns::VethPair;
use crate::workload::traffic::{
    self, Discard, Proto, SendConfig, SendSyscall, TrafficError, Until,
};

/// iperf3's port, so the stream is easy to recognise in packet captures.
pub const DEMO_PORT: u16 = 5201;

/// Bulk-transfer sized writes, like a file copy or a backup stream.
const WRITE_SIZE: usize = 64 * 1024;

/// BBR is what a modern bulk sender would use; the demo falls back to the kernel
/// default where BBR is missing.
const PREFERRED_CONGESTION: &str = "bbr";

/// Pause before reconnecting, so a discard server that keeps failing does not turn the client
/// into a busy loop.
const RECONNECT_PAUSE: Duration = Duration::from_millis(100);

/// The running demo. Dropping it stops the traffic and removes the namespace.
pub struct Demo {
    /// Bits per second; `None`: as fast as it goes.
    rate: Option<u64>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    pair: Arc<VethPair>,
}

impl Demo {
    /// Must be called from a thread in the host's network namespace.
    /// `rate`: bits per second (the kernel paces the stream to it); `None`:
    /// as fast as the veth pair takes.
    pub fn start(rate: Option<u64>) -> anyhow::Result<Demo> {
        let pair = VethPair::create("demo").context("cannot set up the demo namespace")?;
        // From here on, dropping `demo` stops whatever was started and removes the namespace.
        let mut demo = Demo {
            rate,
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
            pair: Arc::new(pair),
        };
        let dest = SocketAddr::from((demo.pair.peer_addr(), DEMO_PORT));
        let (ready_tx, ready_rx) = mpsc::channel();
        let (pair, stop) = (Arc::clone(&demo.pair), Arc::clone(&demo.stop));
        let server = thread::Builder::new()
            .name("netto-demo-discard".into())
            .spawn(move || serve(&pair, dest, &stop, ready_tx))
            .context("cannot start the demo discard thread")?;
        demo.threads.push(server);
        ready_rx
            .recv()
            .map_err(|_| anyhow!("the demo discard thread ended before listening"))??;
        let stop = Arc::clone(&demo.stop);
        let client = thread::Builder::new()
            .name("netto-demo-client".into())
            .spawn(move || push(dest, rate, &stop))
            .context("cannot start the demo client thread")?;
        demo.threads.push(client);
        Ok(demo)
    }

    /// One line saying where the demo traffic flows, for netto's startup banner.
    pub fn describe(&self) -> String {
        let rate = match self.rate {
            Some(bits) => format!("paced to {}", bits_per_second(bits)),
            None => "as fast as it goes".to_owned(),
        };
        format!(
            "demo traffic: TCP {} -> {}:{DEMO_PORT}, 64 KiB writes {rate} ({PREFERRED_CONGESTION} if available), via veth {} into namespace {}",
            self.pair.host_addr(),
            self.pair.peer_addr(),
            self.pair.host_ifname(),
            self.pair.ns_name(),
        )
    }

    /// The topology, so a caller can watch its interface counters.
    pub fn veth(&self) -> &VethPair {
        &self.pair
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// `bits` per second as a person writes it: 1 Gbit/s, 250 Mbit/s.
fn bits_per_second(bits: u64) -> String {
    let bits = bits as f64;
    let (value, unit) = [(1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")]
        .into_iter()
        .find(|&(scale, _)| bits >= scale)
        .map_or((bits, "bit/s"), |(scale, unit)| (bits / scale, unit));
    format!("{} {unit}", (value * 100.0).round() / 100.0)
}

/// Runs the discard server inside the namespace. Readiness (or why it failed) goes
/// back to `start`, so the client never races a server that is not listening yet.
fn serve(
    pair: &VethPair,
    addr: SocketAddr,
    stop: &AtomicBool,
    ready: mpsc::Sender<anyhow::Result<()>>,
) {
    let bound = pair
        .enter_current_thread()
        .map_err(anyhow::Error::from)
        .and_then(|()| Discard::bind(Proto::Tcp, addr).map_err(anyhow::Error::from))
        .with_context(|| format!("cannot start the demo discard server on {addr}"));
    let server = match bound {
        Ok(server) => server,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    let _ = server.run(Until::flag(stop));
}

/// Streams to the discard server until stopped, reconnecting whenever the connection ends.
fn push(dest: SocketAddr, rate: Option<u64>, stop: &AtomicBool) {
    let mut config = SendConfig {
        size: WRITE_SIZE,
        congestion: Some(PREFERRED_CONGESTION.to_owned()),
        max_rate: rate.map(|bits| bits / 8),
        ..SendConfig::new(Proto::Tcp, SendSyscall::Write, dest)
    };
    loop {
        let sent = traffic::send(&config, Until::flag(stop));
        if stop.load(Ordering::Relaxed) {
            return;
        }
        match sent {
            Err(TrafficError::Congestion { .. }) => config.congestion = None,
            Ok(_) | Err(_) => thread::sleep(RECONNECT_PAUSE),
        }
    }
}

/// The demo traffic in a child process (`netto demo-traffic`), so the CPU it burns
/// is not counted as netto's own overhead. The child stops when its stdin
/// closes, which also happens when netto is killed: the child then still
/// removes its namespace.
pub struct DemoProcess {
    child: std::process::Child,
    description: String,
}

impl DemoProcess {
    /// `rate`: bits per second, as [`Demo::start`] takes it.
    pub fn start(rate: Option<u64>) -> anyhow::Result<DemoProcess> {
        use std::io::{BufRead, BufReader};
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::process::CommandExt;
        use std::process::{Command, Stdio};

        let mut child = Command::new("/proc/self/exe")
            .arg0(std::ffi::OsStr::from_bytes(DEMO_PROCESS_NAME.to_bytes()))
            .arg(DEMO_TRAFFIC_COMMAND)
            .args(rate.map(|bits| format!("--rate={bits}")))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("cannot start the demo traffic process")?;
        let mut description = String::new();
        if let Some(stdout) = child.stdout.take() {
            BufReader::new(stdout)
                .read_line(&mut description)
                .context("reading from the demo traffic process")?;
        }
        if description.trim().is_empty() {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("the demo traffic process failed to start");
        }
        Ok(DemoProcess {
            child,
            description: description.trim().to_owned(),
        })
    }

    pub fn describe(&self) -> &str {
        &self.description
    }
}

impl Drop for DemoProcess {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// The hidden subcommand the demo child runs.
pub const DEMO_TRAFFIC_COMMAND: &str = "demo-traffic";

/// The demo child's name in `ps`, `ss -p` and `--by process`: started
/// from /proc/self/exe, it would be called `exe`.
pub const DEMO_PROCESS_NAME: &std::ffi::CStr = c"netto-demo";

/// Signals a terminal sends to its whole foreground process group, which
/// the child shares with netto: Ctrl-C, Ctrl-\, Ctrl-Z and a hang-up. The
/// child ignores them (and so do the `ip` commands it runs to clean up,
/// which inherit the setting), leaving netto to decide: netto closes the
/// child's stdin when it ends, however it ends, SIGKILL included.
const TERMINAL_SIGNALS: [Signal; 4] = [
    Signal::SIGINT,
    Signal::SIGQUIT,
    Signal::SIGTSTP,
    Signal::SIGHUP,
];

/// Body of `netto demo-traffic`: runs the traffic until stdin closes, or until a
/// SIGTERM (sent to every process of a stopped service, for instance),
/// then removes the namespace.
pub fn run_until_stdin_closes(rate: Option<u64>) -> anyhow::Result<()> {
    use std::io::{Read, Write};

    // Before any thread starts; the threads take names of their own.
    nix::sys::prctl::set_name(DEMO_PROCESS_NAME).context("naming the demo traffic process")?;

    for signal in TERMINAL_SIGNALS {
        // SAFETY: nix's signal() is unsafe for the handlers it may install;
        // SIG_IGN runs no code in a signal context, and nothing else in this
        // process handles these signals. Ignored (not handled: a handler
        // is reset by exec), so the `ip` commands inherit it.
        unsafe { signal::signal(signal, SigHandler::SigIgn) }
            .context("ignoring the terminal's signals in the demo traffic")?;
    }
    let (done_tx, done) = mpsc::channel();
    let mut terminate = signal_hook::iterator::Signals::new([libc::SIGTERM])
        .context("handling SIGTERM in the demo traffic")?;
    let on_term = done_tx.clone();
    thread::spawn(move || {
        if terminate.forever().next().is_some() {
            let _ = on_term.send(());
        }
    });
    let demo = Demo::start(rate)?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{}", demo.describe())?;
    stdout.flush()?;
    thread::spawn(move || {
        let mut ignored = [0u8; 64];
        while matches!(std::io::stdin().read(&mut ignored), Ok(n) if n > 0) {}
        let _ = done_tx.send(());
    });
    let _ = done.recv();
    drop(demo);
    Ok(())
}
