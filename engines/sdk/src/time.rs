//! Time and identifiers: RFC 3339 UTC timestamps with fixed microseconds (the host's format,
//! e.g. `2026-11-21T17:19:00.000000Z`), Unix milliseconds for the scheduler, and UUID v4 ids.

use std::time::{SystemTime, UNIX_EPOCH};

/// Microseconds since the Unix epoch, from the wall clock.
pub fn now_unix_micros() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(since) => i64::try_from(since.as_micros()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_micros()).unwrap_or(i64::MAX),
    }
}

/// Milliseconds since the Unix epoch, from the wall clock (for
/// [`scheduler::schedule`](crate::scheduler::schedule)).
pub fn now_unix_ms() -> u64 {
    u64::try_from(now_unix_micros() / 1000).unwrap_or(0)
}

/// Now, as `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
pub fn now_rfc3339() -> String {
    format_rfc3339_micros(now_unix_micros())
}

/// Formats microseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC).
pub fn format_rfc3339_micros(unix_micros: i64) -> String {
    let seconds = unix_micros.div_euclid(1_000_000);
    let micros = unix_micros.rem_euclid(1_000_000);
    let days = seconds.div_euclid(86_400);
    let second_of_day = seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        second_of_day / 3600,
        second_of_day % 3600 / 60,
        second_of_day % 60
    )
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// A new random identifier: a lowercase hyphenated UUID v4.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_fixed_microseconds() {
        assert_eq!(format_rfc3339_micros(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            format_rfc3339_micros(1_795_281_540_000_000),
            "2026-11-21T17:19:00.000000Z"
        );
        assert_eq!(
            format_rfc3339_micros(951_782_400_123_456),
            "2000-02-29T00:00:00.123456Z"
        );
        assert_eq!(format_rfc3339_micros(-1), "1969-12-31T23:59:59.999999Z");
        assert_eq!(
            format_rfc3339_micros(4_102_444_799_000_001),
            "2099-12-31T23:59:59.000001Z"
        );
    }

    #[test]
    fn now_is_plausible() {
        let now = now_rfc3339();
        assert_eq!(now.len(), 27, "{now}");
        assert!(now.ends_with('Z') && now.as_bytes()[19] == b'.');
        assert!(now.as_str() > "2026-01-01");
        assert!(now_unix_ms() > 1_767_225_600_000);
    }

    #[test]
    fn ids_are_uuid_v4() {
        let id = new_id();
        assert_eq!(id.len(), 36);
        assert_eq!(id.as_bytes()[14], b'4');
        assert_ne!(id, new_id());
    }
}
