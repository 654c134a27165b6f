//! Subprocesses with a time limit: every command a test runs (a plugin, kubectl, krew, a
//! shell tool) ends within [`limit`], or it is killed and the test fails naming it. A
//! regression that makes a command wait forever (a FIFO opened for reading, a prompt on a
//! terminal, a server that never answers) then fails the suite instead of holding CI until
//! its own limit ends the whole run.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// The variable that overrides the limit, in seconds.
pub const LIMIT_VAR: &str = "PLACEKIT_TEST_PROCESS_TIMEOUT";

/// How long one subprocess of a test may run: 300 s (a cold `cargo build` of one plugin
/// fits; a plugin run takes well under a second), or [`LIMIT_VAR`] seconds.
pub fn limit() -> Duration {
    std::env::var(LIMIT_VAR)
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(Duration::from_secs(300), Duration::from_secs)
}

/// How long a build (cargo, Go) that a test starts may run.
pub const BUILD_LIMIT: Duration = Duration::from_secs(1800);

/// `Command::output` and `Command::status` under [`limit`].
pub trait Bounded {
    /// As `Command::output` (stdin from `/dev/null`, stdout and stderr captured), killed
    /// with its process group after [`limit`]: then the calling test panics, naming the
    /// command and what it printed so far.
    fn bounded_output(&mut self) -> std::io::Result<Output> {
        self.output_within(limit())
    }
    /// As [`Bounded::bounded_output`] with another limit.
    fn output_within(&mut self, limit: Duration) -> std::io::Result<Output>;
    /// As `Command::status` (standard streams inherited), under [`limit`].
    fn bounded_status(&mut self) -> std::io::Result<ExitStatus> {
        self.status_within(limit())
    }
    /// As [`Bounded::bounded_status`] with another limit (a build).
    fn status_within(&mut self, limit: Duration) -> std::io::Result<ExitStatus>;
}

impl Bounded for Command {
    fn output_within(&mut self, limit: Duration) -> std::io::Result<Output> {
        self.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        own_group(self);
        let what = describe(self);
        let child = self.spawn()?;
        Ok(wait_output_within(child, &what, limit))
    }

    fn status_within(&mut self, limit: Duration) -> std::io::Result<ExitStatus> {
        own_group(self);
        let what = describe(self);
        let mut child = self.spawn()?;
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                kill(&mut child);
                panic!("{what} still ran after {limit:?}: killed");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Waits for a spawned child whose stdout and stderr are piped and reads them, as
/// `Child::wait_with_output`, under [`limit`]; `what` names it in the panic.
pub fn wait_output(child: Child, what: &str) -> Output {
    wait_output_within(child, what, limit())
}

fn wait_output_within(mut child: Child, what: &str, limit: Duration) -> Output {
    // Both pipes are drained while waiting, so a child that fills one cannot block.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait().expect("wait for the child") {
            Some(status) => break status,
            None if Instant::now() > deadline => {
                kill(&mut child);
                let _ = child.wait();
                let out = String::from_utf8_lossy(&stdout.join().unwrap_or_default()).into_owned();
                let err = String::from_utf8_lossy(&stderr.join().unwrap_or_default()).into_owned();
                panic!(
                    "{what} still ran after {limit:?}: killed\n--- stdout\n{out}\n--- stderr\n{err}"
                );
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let output = Output {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
    };
    // Every plugin run of every suite goes through here: a report it printed must match
    // its published schema.
    crate::schemas::check_reports(&String::from_utf8_lossy(&output.stdout));
    output
}

/// The child leads a process group of its own, so that a kill reaches what it started
/// (`kubectl` runs the plugin as its child).
fn own_group(cmd: &mut Command) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt as _;
        cmd.process_group(0);
    }
    #[cfg(not(unix))]
    let _ = cmd;
}

fn kill(child: &mut Child) {
    #[cfg(unix)]
    if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
}

fn describe(cmd: &Command) -> String {
    let args: Vec<String> = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    format!("`{}`", args.join(" "))
}

/// Starts `command` (a long-running one: `status -w`, `why-pending -w`) with its stdout read
/// line by line on a thread: each line arrives with the moment it was read, so a test can
/// say how soon a change was printed. Stderr is discarded.
pub fn spawn_lines(command: &mut Command) -> (Child, std::sync::mpsc::Receiver<(Instant, String)>) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the command starts");
    let stdout = child.stdout.take().expect("stdout is piped");
    (child, lines_of(stdout))
}

/// [`spawn_lines`] over stderr (what a server says while it starts); stdout is discarded.
pub fn spawn_stderr_lines(
    command: &mut Command,
) -> (Child, std::sync::mpsc::Receiver<(Instant, String)>) {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    let stderr = child.stderr.take().expect("stderr is piped");
    (child, lines_of(stderr))
}

/// The lines of `stream`, each with the moment it was read, from a thread.
fn lines_of(stream: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<(Instant, String)> {
    use std::io::BufRead as _;
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stream)
            .lines()
            .map_while(Result::ok)
        {
            if lines.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    received
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_past_its_limit_is_killed_and_named() {
        let started = Instant::now();
        let panic = std::panic::catch_unwind(|| {
            Command::new("sh")
                .args(["-c", "echo started; sleep 30"])
                .output_within(Duration::from_millis(300))
        })
        .expect_err("the limit fails the caller");
        let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            message.contains("`sh -c echo started; sleep 30` still ran after")
                && message.contains("started"),
            "{message}"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn a_command_within_its_limit_answers_as_output_does() {
        let out = Command::new("sh")
            .args(["-c", "echo out; echo err >&2; exit 3"])
            .bounded_output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
    }
}
