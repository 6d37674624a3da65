//! Logging into the host's tracing, tagged by the host with the engine code and the correlation
//! id of the current call. Functions take a message; the `trace!` … `error!` macros take
//! `format!` arguments. Off WebAssembly (unit tests) messages go to stderr.

/// A log level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Very detailed.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something unexpected that was handled.
    Warn,
    /// A failure.
    Error,
}

/// Logs `message` at `level`.
pub fn log(level: Level, message: impl AsRef<str>) {
    emit(level, message.as_ref());
}

#[cfg(target_arch = "wasm32")]
fn emit(level: Level, message: &str) {
    use crate::imports::log as host;
    let level = match level {
        Level::Trace => host::Level::Trace,
        Level::Debug => host::Level::Debug,
        Level::Info => host::Level::Info,
        Level::Warn => host::Level::Warn,
        Level::Error => host::Level::Error,
    };
    host::log(level, message);
}

#[cfg(not(target_arch = "wasm32"))]
fn emit(level: Level, message: &str) {
    eprintln!("[{level:?}] {message}");
}

/// Logs at trace level.
pub fn trace(message: impl AsRef<str>) {
    log(Level::Trace, message);
}

/// Logs at debug level.
pub fn debug(message: impl AsRef<str>) {
    log(Level::Debug, message);
}

/// Logs at info level.
pub fn info(message: impl AsRef<str>) {
    log(Level::Info, message);
}

/// Logs at warn level.
pub fn warn(message: impl AsRef<str>) {
    log(Level::Warn, message);
}

/// Logs at error level.
pub fn error(message: impl AsRef<str>) {
    log(Level::Error, message);
}

/// Logs `format!(…)` at trace level.
#[macro_export]
macro_rules! trace {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Trace, ::std::format!($($arg)+)) };
}

/// Logs `format!(…)` at debug level.
#[macro_export]
macro_rules! debug {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Debug, ::std::format!($($arg)+)) };
}

/// Logs `format!(…)` at info level.
#[macro_export]
macro_rules! info {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Info, ::std::format!($($arg)+)) };
}

/// Logs `format!(…)` at warn level.
#[macro_export]
macro_rules! warn {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Warn, ::std::format!($($arg)+)) };
}

/// Logs `format!(…)` at error level.
#[macro_export]
macro_rules! error {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Error, ::std::format!($($arg)+)) };
}
