//! A child process's peak memory, read from outside it (VmHWM in
//! /proc/PID/status, sampled every 10 ms), with a deadline.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The resident high-water mark of a live process, in KiB.
pub fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
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
    let pid = child.id();
    let read = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = read(Box::new(child.stdout.take().expect("stdout")));
    let err = read(Box::new(child.stderr.take().expect("stderr")));
    let start = Instant::now();
    let mut peak = 0;
    let status = loop {
        if let Some(k) = vm_hwm_kib(pid) {
            peak = k.max(peak);
        }
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Peak {
        output: Output {
            status,
            stdout: out.join().expect("stdout"),
            stderr: err.join().expect("stderr"),
        },
        peak_kib: peak,
        wall: start.elapsed(),
    }
}
