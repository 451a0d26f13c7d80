//! A child process's peak memory and CPU time, read from outside it
//! (VmHWM in /proc/PID/status, /proc/PID/stat, sampled every 10 ms), with
//! a deadline. Not the rusage's maxrss: that counts the parent's memory at
//! the spawn (vfork shares it until exec), and a test process that
//! resolved a panic's backtrace holds some 300 MiB.

use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// The resident high-water mark of a live process, in KiB.
pub fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// CPU time (user and system) of a live process, in clock ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// What watching a child to its end saw.
pub struct Watched {
    pub status: ExitStatus,
    /// It was killed: past its deadline, or grown past its limit.
    pub killed: bool,
    /// VmHWM while it ran, in KiB.
    pub peak_kib: u64,
    /// CPU seconds per wall second over the run (sampled before the end).
    pub cpu_share: f64,
    pub wall: Duration,
}

impl Watched {
    /// Its exit code; `None` when it was killed (or died of a signal).
    pub fn code(&self) -> Option<i32> {
        if self.killed {
            None
        } else {
            self.status.code()
        }
    }
}

/// Wait for `child` to end, sampling its peak memory and CPU time every
/// 10 ms; killed once it has run `limit` or its peak passes `kill_above_kib`.
pub fn watch(child: &mut Child, limit: Duration, kill_above_kib: u64) -> Watched {
    let pid = child.id();
    let start = Instant::now();
    let (mut peak, mut ticks, mut ticked_at) = (0u64, 0u64, start);
    let (status, killed) = loop {
        if let Some(k) = vm_hwm_kib(pid) {
            peak = peak.max(k);
        }
        if let Some(t) = cpu_ticks(pid) {
            ticks = t;
            ticked_at = Instant::now();
        }
        if let Some(st) = child.try_wait().expect("try_wait") {
            break (st, false);
        }
        if peak > kill_above_kib || start.elapsed() > limit {
            let _ = child.kill();
            break (child.wait().expect("wait"), true);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    let busy = ticked_at.duration_since(start).as_secs_f64().max(0.1);
    Watched {
        status,
        killed,
        peak_kib: peak,
        cpu_share: ticks as f64 / hz / busy,
        wall: start.elapsed(),
    }
}

/// What a measured run left: its output (exit code, stdout, stderr), its
/// peak resident memory and how long it ran.
pub struct Peak {
    pub output: Output,
    pub peak_kib: u64,
    pub wall: Duration,
}

/// Run `cmd` (stdin closed, both outputs piped) to its end or `limit`
/// (killed then), sampling its peak memory. Outputs are read on threads so
/// a chatty child never blocks on a full pipe.
pub fn run_peak(cmd: &mut Command, limit: Duration) -> Peak {
    use std::io::Read;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command runs");
    let read = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = read(Box::new(child.stdout.take().expect("stdout")));
    let err = read(Box::new(child.stderr.take().expect("stderr")));
    let w = watch(&mut child, limit, u64::MAX);
    Peak {
        output: Output {
            status: w.status,
            stdout: out.join().expect("stdout"),
            stderr: err.join().expect("stderr"),
        },
        peak_kib: w.peak_kib,
        wall: w.wall,
    }
}
