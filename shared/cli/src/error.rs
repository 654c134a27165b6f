//! How a plugin's `main` turns a command's result into its fixed exit code and says why it
//! stopped. The reasons themselves ([`CommandError`]) live in placekit-client.

pub use placekit_client::error::*;

impl From<crate::complete::HelperError> for CommandError {
    fn from(e: crate::complete::HelperError) -> Self {
        CommandError::Completion(Box::new(e))
    }
}

/// Runs a plugin's async work on a runtime built only now (after argument parsing, so
/// `--help` and `--version` never build one) and turns the result into the fixed exit code,
/// printing the error, if any, the way every plugin does.
pub fn run_to_exit_code(
    work: impl Future<Output = Result<u8, CommandError>>,
) -> std::process::ExitCode {
    exit_code(block_on(work))
}

/// The fixed exit code of a command's result, printing the error, if any; a command that
/// succeeded but drew server warnings under `--warnings-as-errors` exits 1.
pub fn exit_code(result: Result<u8, CommandError>) -> std::process::ExitCode {
    match result {
        // The report's rendering failed (said already): 1, as kubectl's.
        Ok(placekit_core::exit::SUCCESS) if crate::outcome::output_failed() => {
            std::process::ExitCode::from(placekit_core::exit::PROBLEMS)
        }
        Ok(code) => match crate::outcome::failing_warnings() {
            Some(n) if code == placekit_core::exit::SUCCESS => {
                eprintln!(
                    "error: the server sent {} (--warnings-as-errors)",
                    placekit_core::text::count(n, "warning")
                );
                std::process::ExitCode::from(placekit_core::exit::PROBLEMS)
            }
            _ => std::process::ExitCode::from(code),
        },
        Err(e) => report(&e),
    }
}

/// Says why the command stopped, on stderr, and returns its exit code. The last stop before
/// the terminal: no configured secret gets past it, and no control character from a cluster
/// string or a file.
pub fn report(e: &CommandError) -> std::process::ExitCode {
    eprintln!(
        "error: {}",
        placekit_core::text::escape_controls(
            &placekit_client::secrets::redact(&e.to_string()),
            true
        )
    );
    std::process::ExitCode::from(e.exit_code())
}
