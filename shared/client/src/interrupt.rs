//! Ctrl-C, SIGTERM and SIGHUP while a mutating command writes.
//!
//! Killing a run mid-write would leave writes unrecorded and no report, so once the writes
//! start the three signals are caught and counted instead:
//!
//! - the **first** stops new writes; writes in flight get at most one more, immediate
//!   attempt instead of their remaining retries and backoff;
//! - the **second** stops waiting: writes still in flight are recorded `unknown` (rollback
//!   checks them against the node), the journal is flushed and the report printed at once.
//!
//! Either way the command exits [`placekit_core::exit::INTERRUPTED`] (130). Before the snapshot is
//! written (reading, planning, the confirmation prompt) the signals keep their default
//! effect: there is nothing to record yet. Once caught they stay caught for the rest of the
//! run (tokio never restores a default handler); the report is all that is left to print.

use tokio::sync::watch;

/// How many interrupting signals arrived, and which was the first.
#[derive(Debug)]
pub struct Interrupt {
    count: watch::Sender<(usize, Option<&'static str>)>,
}

impl Default for Interrupt {
    fn default() -> Self {
        Interrupt {
            count: watch::Sender::new((0, None)),
        }
    }
}

impl Interrupt {
    /// Records one signal (`signal`: its name, for the report).
    pub fn trigger(&self, signal: &'static str) {
        self.count.send_modify(|(n, first)| {
            *n += 1;
            first.get_or_insert(signal);
        });
    }

    /// Signals received so far.
    pub fn count(&self) -> usize {
        self.count.borrow().0
    }

    /// Whether at least one signal arrived: no new write may start.
    pub fn is_set(&self) -> bool {
        self.count() > 0
    }

    /// The first signal received (`SIGINT`, `SIGTERM`, `SIGHUP`).
    pub fn signal(&self) -> Option<&'static str> {
        self.count.borrow().1
    }

    /// Waits until at least `n` signals arrived.
    pub async fn reached(&self, n: usize) {
        let mut rx = self.count.subscribe();
        // The sender lives as long as `self`, so the wait can only end by reaching `n`.
        let _ = rx.wait_for(|(count, _)| *count >= n).await;
    }

    /// Catches SIGINT, SIGTERM and SIGHUP from the moment it returns (the handlers are
    /// installed before it returns, not in the task) and counts them into `self`, then calls
    /// `told` with the signal's name and how many have arrived, for the application to tell
    /// the user what it does (this crate prints nothing). The returned task ends when
    /// aborted. Must be called inside a tokio runtime.
    pub fn listen(
        self: &std::sync::Arc<Self>,
        told: impl Fn(&'static str, usize) + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let interrupt = self.clone();
        // Without signal handlers the signals keep their default effect.
        let signals = Signals::new().ok();
        tokio::spawn(async move {
            let Some(mut signals) = signals else { return };
            while let Some(name) = signals.next().await {
                interrupt.trigger(name);
                told(name, interrupt.count());
            }
        })
    }
}

#[cfg(unix)]
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn new() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            int: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    async fn next(&mut self) -> Option<&'static str> {
        tokio::select! {
            s = self.int.recv() => s.map(|()| "SIGINT"),
            s = self.term.recv() => s.map(|()| "SIGTERM"),
            s = self.hup.recv() => s.map(|()| "SIGHUP"),
        }
    }
}

#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn new() -> std::io::Result<Self> {
        Ok(Signals)
    }

    async fn next(&mut self) -> Option<&'static str> {
        tokio::signal::ctrl_c().await.ok().map(|()| "SIGINT")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_signals_and_keeps_the_first() {
        let interrupt = Interrupt::default();
        assert!(!interrupt.is_set());
        interrupt.trigger("SIGTERM");
        interrupt.trigger("SIGINT");
        assert_eq!(interrupt.count(), 2);
        assert_eq!(interrupt.signal(), Some("SIGTERM"));
        // Already reached: returns at once.
        interrupt.reached(2).await;
    }

    #[tokio::test]
    async fn a_waiter_wakes_when_the_count_is_reached() {
        let interrupt = std::sync::Arc::new(Interrupt::default());
        let waiter = {
            let interrupt = interrupt.clone();
            tokio::spawn(async move { interrupt.reached(2).await })
        };
        interrupt.trigger("SIGINT");
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        interrupt.trigger("SIGINT");
        waiter.await.unwrap();
    }
}
