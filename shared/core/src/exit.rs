//! Exit codes with fixed meanings, shared by every placekit plugin and documented in each
//! plugin's `--help`.

/// The command did what was asked and found nothing wrong.
pub const SUCCESS: u8 = 0;
/// The command ran and found problems, or some targets failed (lint findings, conflicts,
/// partial failure).
pub const PROBLEMS: u8 = 1;
/// Usage or input error; nothing was changed.
pub const USAGE: u8 = 2;
/// The cluster was unreachable or the request was forbidden; nothing was changed.
pub const CLUSTER: u8 = 3;
/// With `--contexts`/`--all-contexts`: some contexts could not be read (unreachable,
/// unauthorized, timed out); the others' results are printed. Findings there do not change
/// it: the report is incomplete. When every context failed, their own code (3).
pub const SOME_CONTEXTS_UNREAD: u8 = 4;
/// Interrupted (Ctrl-C, SIGTERM or SIGHUP) while writing: what was written is recorded
/// and reported; the rest was not attempted. 128 + SIGINT, as shells report Ctrl-C.
pub const INTERRUPTED: u8 = 130;

/// The text every plugin's `--help` ends with.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
    0  success
    1  problems found, or some targets failed (conflicts, partial failure)
    2  usage or input error; nothing was changed
    3  cluster unreachable or forbidden; nothing was changed
    4  with --contexts/--all-contexts: some contexts could not be read; the
       others' results are printed
  130  interrupted (Ctrl-C, SIGTERM, SIGHUP) while writing; the report says what
       was done";
