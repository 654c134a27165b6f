//! What a command's run leaves for its exit code beyond its result: a report that could
//! not be rendered as `-o` asked, and the server's warnings under `--warnings-as-errors`.
//! Process-wide, set by the output layer ([`crate::ui`]) and read when the exit code is
//! decided ([`crate::error`]), so neither imports the other.

use std::sync::atomic::Ordering;

/// The report could not be rendered as `-o` asked (a jsonpath index past an array's end):
/// the error was said, and the command exits 1.
pub(crate) static OUTPUT_FAILED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Whether a report could not be rendered as `-o` asked (see [`OUTPUT_FAILED`]).
pub fn output_failed() -> bool {
    OUTPUT_FAILED.load(Ordering::SeqCst)
}

/// `--warnings-as-errors` was given.
pub(crate) static WARNINGS_AS_ERRORS: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// How many distinct warnings the server sent this process.
pub(crate) static WARNINGS_SEEN: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// Whether `--warnings-as-errors` was given.
pub fn warnings_are_errors() -> bool {
    WARNINGS_AS_ERRORS.load(Ordering::Relaxed)
}

/// With `--warnings-as-errors`, how many warnings make the command fail (none: `None`).
pub fn failing_warnings() -> Option<usize> {
    let seen = WARNINGS_SEEN.load(Ordering::Relaxed);
    (WARNINGS_AS_ERRORS.load(Ordering::Relaxed) && seen > 0).then_some(seen)
}
