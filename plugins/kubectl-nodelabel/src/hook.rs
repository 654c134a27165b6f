//! Node-feature hooks run on the admin's machine for `nodelabel import --hook`: the
//! process handling (no shell, a reduced environment, a deadline, an output cap, the
//! process group stopped afterwards) apart from the pure feature format in
//! [`placekit_core::nfd`].

use std::path::Path;
use std::time::Duration;

use placekit_core::nfd::{MAX_FEATURE_FILE_BYTES, SourceError};

/// What a hook printed: its feature list, and what it wrote to stderr (shown to the user;
/// with empty values, it makes the node an error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookOutput {
    pub stdout: String,
    pub stderr: String,
}

/// Runs a feature hook for one node directly (no shell) with a timeout, an output cap and
/// an environment reduced to `PATH`, `LANG` and `NODE_NAME` (the node it describes, also
/// its first argument), so no credential of the caller's environment reaches it. NFD runs
/// hooks on each node; placekit runs them on the admin's machine, once per target node, so
/// a hook must describe the node it is given rather than the machine it runs on.
/// A non-zero exit, a timeout or too much output is an error that shows its stderr.
///
/// Long on purpose: spawn, feed, read both streams under the cap and the deadline, and
/// stop what the hook left running, in that order.
pub async fn run_hook(
    path: &Path,
    timeout: Duration,
    node: &str,
) -> Result<HookOutput, SourceError> {
    use tokio::io::AsyncReadExt;
    let hook = format!(
        "{} (node {})",
        path.display(),
        placekit_core::text::escaped(node)
    );
    let fail = |message: String| SourceError::Hook {
        hook: hook.clone(),
        message,
    };
    // The node's name comes from the server and becomes the hook's argument and
    // environment: only a valid node name (a DNS subdomain: no option-like `-x`, no spaces,
    // no control characters) is passed on.
    let problems = placekit_core::validation::dns1123_subdomain_errors(node);
    if !problems.is_empty() {
        return Err(fail(format!(
            "{} is not a valid node name ({}): the hook is not run for it",
            placekit_core::validation::go_quote(node),
            problems.join("; ")
        )));
    }
    let mut command = tokio::process::Command::new(path);
    command
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("LANG", "C")
        .env("NODE_NAME", node)
        .arg(node)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    // Its own process group, so what it starts in the background is stopped with it.
    #[cfg(unix)]
    command.process_group(0);
    // "Text file busy" (ETXTBSY) is transient: a process forked elsewhere (a hook of another
    // node, or whatever is just writing the file) still holds a write descriptor to it until
    // it execs. A few short retries, then the error.
    let mut attempts = 0;
    let mut child = loop {
        match command.spawn() {
            Ok(child) => break child,
            Err(e) if e.raw_os_error() == Some(26) && attempts < 5 => {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(20 * attempts)).await;
            }
            Err(e) => return Err(fail(format!("cannot run it: {e}"))),
        }
    };
    let group = ProcessGroup(child.id());
    let mut stdout = child.stdout.take().expect("piped");
    // The pipe's identity, to find a process of another session that still holds it.
    let pipe = PipeHolders::of(&stdout);
    let mut stderr = child.stderr.take().expect("piped");
    let cap = MAX_FEATURE_FILE_BYTES as u64 + 1;
    // Both pipes are drained on their own tasks so a chatty hook never blocks on a full
    // pipe, and a background child that keeps them open cannot hold the import up.
    let stdout_task = tokio::spawn(async move {
        let mut out = Vec::new();
        let _ = (&mut stdout).take(cap).read_to_end(&mut out).await;
        out
    });
    let stderr_task = tokio::spawn(async move {
        let mut err = Vec::new();
        let _ = (&mut stderr).take(cap).read_to_end(&mut err).await;
        err
    });
    let deadline = tokio::time::Instant::now() + timeout;
    let timed_out = || {
        // Not reaped: the group id cannot have been reused.
        group.kill();
        fail(format!("timed out after {timeout:?}"))
    };
    let mut stdout_task = stdout_task;
    // Whichever comes first: the hook's exit, or the end (or overflow) of its output.
    let (status, early_out) = tokio::select! {
        status = tokio::time::timeout_at(deadline, child.wait()) => match status {
            Ok(Ok(status)) => (status, None),
            Ok(Err(e)) => return Err(fail(e.to_string())),
            Err(_) => return Err(timed_out()),
        },
        out = &mut stdout_task => {
            let out = out.unwrap_or_default();
            if out.len() > MAX_FEATURE_FILE_BYTES {
                group.kill();
                return Err(fail(format!("printed more than {MAX_FEATURE_FILE_BYTES} bytes")));
            }
            match tokio::time::timeout_at(deadline, child.wait()).await {
                Ok(Ok(status)) => (status, Some(out)),
                Ok(Err(e)) => return Err(fail(e.to_string())),
                Err(_) => return Err(timed_out()),
            }
        }
    };
    // The hook has exited: what it printed is its output. A background child still holding
    // the pipes gets a moment, then the group is stopped (closing them); the group still
    // has members then, so its id is still theirs.
    let grace = Duration::from_secs(1);
    let out = match early_out {
        Some(out) => out,
        None => {
            let mut stdout_task = stdout_task;
            match tokio::time::timeout(grace, &mut stdout_task).await {
                Ok(out) => out.unwrap_or_default(),
                Err(_) => {
                    // Killing the holders closes the pipe: the reader ends with what the
                    // hook printed. A child that left the group (setsid) is found by the
                    // pipe it holds and stopped too.
                    group.kill();
                    pipe.kill_holders();
                    match tokio::time::timeout(grace, stdout_task).await {
                        Ok(Ok(out)) => out,
                        // Never a partial or empty output in its place: an import with
                        // --prune would remove every label the hook set before.
                        _ => {
                            return Err(fail(
                                "exited, but a process it started (in a session of its own) still holds its output open and could not be stopped: its output is not used"
                                    .into(),
                            ));
                        }
                    }
                }
            }
        }
    };
    let err = tokio::time::timeout(grace, stderr_task)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    // The hook has exited and its output is read: what it left running in its group (a
    // background child that closed its output) is stopped too, not left to outlive the
    // import.
    group.kill_if_alive();
    if out.len() > MAX_FEATURE_FILE_BYTES {
        return Err(fail(format!(
            "printed more than {MAX_FEATURE_FILE_BYTES} bytes"
        )));
    }
    let stderr_text = String::from_utf8_lossy(&err).trim().to_string();
    if !status.success() {
        return Err(fail(format!(
            "exited with {status}{}",
            if stderr_text.is_empty() {
                String::new()
            } else {
                format!(": {stderr_text}")
            }
        )));
    }
    let stdout = String::from_utf8(out)
        .map_err(|_| fail("printed something that is not UTF-8 text".into()))?;
    Ok(HookOutput {
        stdout,
        stderr: stderr_text,
    })
}

/// The processes holding a hook's stdout pipe, found by the pipe's inode in `/proc/*/fd`
/// (Linux): a background child that called `setsid` left the hook's process group, and is
/// stopped through the pipe it still holds. Elsewhere there is nothing to find, and the
/// hook's output is then refused rather than cut short.
#[derive(Debug, Clone, Copy)]
struct PipeHolders(Option<u64>);

impl PipeHolders {
    fn of(stdout: &tokio::process::ChildStdout) -> Self {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsFd;
            PipeHolders(rustix::fs::fstat(stdout.as_fd()).ok().map(|s| s.st_ino))
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = stdout;
            PipeHolders(None)
        }
    }

    fn kill_holders(self) {
        #[cfg(target_os = "linux")]
        if let Some(ino) = self.0 {
            let target = format!("pipe:[{ino}]");
            let me = std::process::id().to_string();
            for proc_dir in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                let pid = proc_dir.file_name().to_string_lossy().into_owned();
                if pid == me || !pid.bytes().all(|b| b.is_ascii_digit()) {
                    continue;
                }
                let holds = std::fs::read_dir(proc_dir.path().join("fd"))
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|fd| {
                        std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy() == target)
                    });
                if holds {
                    let _ = std::process::Command::new("kill")
                        .args(["-KILL", &pid])
                        .stdout(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null())
                        .status();
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = self;
    }
}

/// A hook's process group (its leader's pid): killed whole, so the hook's background
/// children do not outlive it.
#[derive(Debug, Clone, Copy)]
struct ProcessGroup(Option<u32>);

impl ProcessGroup {
    /// [`ProcessGroup::kill`], if the group still has a member (`kill -0`): once the last
    /// member is gone its id may be another group's.
    fn kill_if_alive(self) {
        #[cfg(unix)]
        if let Some(pid) = self.0 {
            let alive = std::process::Command::new("kill")
                .args(["-0", "--", &format!("-{pid}")])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if alive {
                self.kill();
            }
        }
    }

    /// Sends SIGKILL to the group (through `kill(1)`: no unsafe code here). A group that is
    /// already gone is fine.
    fn kill(self) {
        #[cfg(unix)]
        if let Some(pid) = self.0 {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[cfg(unix)]
    #[tokio::test]
    async fn hooks_run_without_a_shell_or_secrets() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let hook = dir.path().join("my-script");
        // HOME (set for the test process) stands for any inherited secret: it must not reach the hook.
        std::fs::write(
            &hook,
            "#!/bin/sh\necho \"home=${HOME:-none}\"\necho \"node=$NODE_NAME arg=$1\"\necho 'vm.swappiness=10'\n",
        )
        .unwrap();
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = run_hook(&hook, Duration::from_secs(5), "gpu-1")
            .await
            .unwrap();
        assert_eq!(
            out.stdout,
            "home=none\nnode=gpu-1 arg=gpu-1\nvm.swappiness=10\n"
        );
        assert_eq!(out.stderr, "");

        let failing = dir.path().join("failing");
        std::fs::write(
            &failing,
            "#!/bin/sh\necho 'cannot read /host-proc' >&2\nexit 3\n",
        )
        .unwrap();
        std::fs::set_permissions(&failing, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = run_hook(&failing, Duration::from_secs(5), "gpu-1")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("exit status: 3") && err.contains("cannot read /host-proc"),
            "{err}"
        );

        let slow = dir.path().join("slow");
        std::fs::write(&slow, "#!/bin/sh\nsleep 5\n").unwrap();
        std::fs::set_permissions(&slow, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = run_hook(&slow, Duration::from_millis(200), "gpu-1")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("timed out"), "{err}");

        let chatty = dir.path().join("chatty");
        std::fs::write(&chatty, "#!/bin/sh\nyes a=1 | head -c 200000\n").unwrap();
        std::fs::set_permissions(&chatty, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = run_hook(&chatty, Duration::from_secs(5), "gpu-1")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than 65536 bytes"), "{err}");

        // A hook that leaves a background child holding its stdout: its own output counts,
        // it is not "timed out", and the child is stopped.
        let marker = dir.path().join("still-running");
        let background = dir.path().join("background");
        std::fs::write(
            &background,
            format!(
                "#!/bin/sh\necho 'a=1'\n(sleep 3; touch {}) &\nexit 0\n",
                marker.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&background, std::fs::Permissions::from_mode(0o755)).unwrap();
        let started = std::time::Instant::now();
        let out = run_hook(&background, Duration::from_secs(10), "gpu-1")
            .await
            .unwrap();
        assert_eq!(out.stdout, "a=1\n");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "did not wait for the child"
        );

        // A child that left the hook's session (setsid) and holds its stdout: what the hook
        // printed is still its output, and the child is stopped through the pipe.
        let escaped = dir.path().join("escaped");
        let escaped_marker = dir.path().join("escaped-still-running");
        std::fs::write(
            &escaped,
            format!(
                "#!/bin/sh\necho 'a=1'\nsetsid sh -c 'sleep 3; touch {}' &\nexit 0\n",
                escaped_marker.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&escaped, std::fs::Permissions::from_mode(0o755)).unwrap();
        let started = std::time::Instant::now();
        let out = run_hook(&escaped, Duration::from_secs(10), "gpu-1").await;
        assert_eq!(
            out.unwrap().stdout,
            "a=1\n",
            "what the hook printed is kept"
        );
        assert!(started.elapsed() < Duration::from_secs(3));
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert!(!escaped_marker.exists(), "the setsid child was stopped");

        // A timed-out hook's grandchildren are stopped with it.
        let slow_tree = dir.path().join("slow-tree");
        std::fs::write(
            &slow_tree,
            format!(
                "#!/bin/sh\n(sleep 2; touch {}) &\nsleep 10\n",
                marker.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&slow_tree, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = run_hook(&slow_tree, Duration::from_millis(300), "gpu-1")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("timed out"), "{err}");
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert!(!marker.exists(), "a background child outlived its hook");
    }

    /// A node name from the server is the hook's argument: one that is not a valid node name
    /// (option-like, with spaces or control characters) never reaches it.
    #[cfg(unix)]
    #[tokio::test]
    async fn a_hook_never_gets_an_invalid_node_name() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let hook = dir.path().join("hook");
        std::fs::write(
            &hook,
            format!("#!/bin/sh\ntouch {}\necho a=b\n", marker.display()),
        )
        .unwrap();
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        for node in ["--help", "gpu 1", "gpu-1\n", "gpu-\u{1b}[2J"] {
            let err = run_hook(&hook, Duration::from_secs(5), node)
                .await
                .unwrap_err()
                .to_string();
            assert!(err.contains("is not a valid node name"), "{node:?}: {err}");
            assert!(!err.contains('\u{1b}'), "{err:?}");
        }
        assert!(!marker.exists(), "the hook never ran");
    }

    /// A hook that leaves a background child behind with its output closed: the child is
    /// stopped with the hook's group once the hook has exited.
    #[cfg(unix)]
    #[tokio::test]
    async fn what_a_hook_leaves_running_is_stopped_after_it_exits() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let hook = dir.path().join("hook");
        std::fs::write(
            &hook,
            format!(
                "#!/bin/sh\nsleep 60 >/dev/null 2>&1 </dev/null &\necho $! > {}\necho a=b\n",
                pid_file.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = run_hook(&hook, Duration::from_secs(5), "gpu-1")
            .await
            .unwrap();
        assert_eq!(out.stdout, "a=b\n");
        let pid = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .to_string();
        let mut alive = true;
        for _ in 0..50 {
            alive = std::process::Command::new("kill")
                .args(["-0", &pid])
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap()
                .success()
                && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z "));
            if !alive {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(!alive, "the hook's background child {pid} is still running");
    }
}
