//! Timestamps as stored: fixed-width RFC 3339 UTC text, so lexical order is time order on both
//! databases.

use chrono::{DateTime, SecondsFormat, Utc};

/// The current time in the storage format, e.g. `2026-11-21T17:19:00.123456Z`.
pub fn now() -> String {
    format(Utc::now())
}

/// Formats an instant in the storage format.
pub fn format(instant: DateTime<Utc>) -> String {
    instant.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Parses a stored timestamp.
pub fn parse(text: &str) -> anyhow::Result<DateTime<Utc>> {
    Ok(DateTime::parse_from_rfc3339(text)?.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_timestamps_are_fixed_width_and_round_trip() {
        let instant = DateTime::parse_from_rfc3339("2026-11-21T17:19:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let text = format(instant);
        assert_eq!(text, "2026-11-21T17:19:00.000000Z");
        assert_eq!(parse(&text).unwrap(), instant);
        assert_eq!(now().len(), text.len());
    }
}
