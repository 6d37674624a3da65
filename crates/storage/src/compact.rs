//! Ids and times in their compact stored form on SQLite (the footprint per entity):
//! a canonical UUID as its 16 bytes instead of 36 characters, a storage timestamp as its
//! microseconds since 1970 instead of 27 characters. Bind [`StoredId`] and [`StoredTime`]
//! where a column holds them, and decode the column as [`IdText`] and [`TimeText`] (the
//! `event_log` view gives the text back in SQL, `migrations/sqlite/…_compact_ids_and_times.sql`):
//! readers see the same text either way.
//!
//! Only a value whose text the compact form gives back exactly is stored compact (a
//! lower-case hyphenated UUID; a timestamp in the storage format, `time::format`); any other
//! value keeps its text, so every value reads back as it was written, and a look-up binds the
//! value the same way, so it finds what was stored. On PostgreSQL both are stored as text.

use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::{Decode, Encode, Postgres, Sqlite, Type, TypeInfo as _, ValueRef as _};

/// An id as a column stores it: on SQLite a lower-case hyphenated UUID is a 16-byte blob,
/// anything else its text; on PostgreSQL its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredId<'a>(pub &'a str);

impl StoredId<'_> {
    /// The 16 bytes SQLite stores, when the id is a UUID in its canonical text.
    pub fn bytes(self) -> Option<[u8; 16]> {
        let uuid = uuid::Uuid::try_parse(self.0).ok()?;
        let mut text = [0_u8; uuid::fmt::Hyphenated::LENGTH];
        (uuid.hyphenated().encode_lower(&mut text) == self.0).then(|| uuid.into_bytes())
    }
}

/// A time as a column stores it: on SQLite a timestamp in the storage format
/// (`2026-11-27T21:56:48.123456Z`) is its microseconds since 1970, anything else its text; on
/// PostgreSQL its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredTime<'a>(pub &'a str);

impl StoredTime<'_> {
    /// The microseconds SQLite stores, when the text is a timestamp in the storage format.
    pub fn microseconds(self) -> Option<i64> {
        let instant = crate::time::parse(self.0).ok()?;
        let microseconds = instant.timestamp_micros();
        // SQLite's integer division and remainder read back only times after 1970.
        (microseconds >= 0 && crate::time::format(instant) == self.0).then_some(microseconds)
    }
}

impl Type<Sqlite> for StoredId<'_> {
    fn type_info() -> <Sqlite as sqlx::Database>::TypeInfo {
        <&str as Type<Sqlite>>::type_info()
    }
}

impl Encode<'_, Sqlite> for StoredId<'_> {
    fn encode_by_ref(
        &self,
        buffer: &mut <Sqlite as sqlx::Database>::ArgumentBuffer,
    ) -> Result<IsNull, BoxDynError> {
        match self.bytes() {
            Some(bytes) => <Vec<u8> as Encode<Sqlite>>::encode(bytes.to_vec(), buffer),
            None => <&str as Encode<Sqlite>>::encode_by_ref(&self.0, buffer),
        }
    }
}

impl Type<Postgres> for StoredId<'_> {
    fn type_info() -> <Postgres as sqlx::Database>::TypeInfo {
        <&str as Type<Postgres>>::type_info()
    }
}

impl Encode<'_, Postgres> for StoredId<'_> {
    fn encode_by_ref(
        &self,
        buffer: &mut <Postgres as sqlx::Database>::ArgumentBuffer,
    ) -> Result<IsNull, BoxDynError> {
        <&str as Encode<Postgres>>::encode_by_ref(&self.0, buffer)
    }
}

impl Type<Sqlite> for StoredTime<'_> {
    fn type_info() -> <Sqlite as sqlx::Database>::TypeInfo {
        <&str as Type<Sqlite>>::type_info()
    }
}

impl Encode<'_, Sqlite> for StoredTime<'_> {
    fn encode_by_ref(
        &self,
        buffer: &mut <Sqlite as sqlx::Database>::ArgumentBuffer,
    ) -> Result<IsNull, BoxDynError> {
        match self.microseconds() {
            Some(microseconds) => <i64 as Encode<Sqlite>>::encode(microseconds, buffer),
            None => <&str as Encode<Sqlite>>::encode_by_ref(&self.0, buffer),
        }
    }
}

impl Type<Postgres> for StoredTime<'_> {
    fn type_info() -> <Postgres as sqlx::Database>::TypeInfo {
        <&str as Type<Postgres>>::type_info()
    }
}

impl Encode<'_, Postgres> for StoredTime<'_> {
    fn encode_by_ref(
        &self,
        buffer: &mut <Postgres as sqlx::Database>::ArgumentBuffer,
    ) -> Result<IsNull, BoxDynError> {
        <&str as Encode<Postgres>>::encode_by_ref(&self.0, buffer)
    }
}

/// An id read from a column written through [`StoredId`]: its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdText(pub String);

impl From<IdText> for String {
    fn from(id: IdText) -> Self {
        id.0
    }
}

impl Type<Sqlite> for IdText {
    fn type_info() -> <Sqlite as sqlx::Database>::TypeInfo {
        <&str as Type<Sqlite>>::type_info()
    }

    fn compatible(ty: &<Sqlite as sqlx::Database>::TypeInfo) -> bool {
        matches!(ty.name(), "TEXT" | "BLOB")
    }
}

impl<'r> Decode<'r, Sqlite> for IdText {
    fn decode(value: <Sqlite as sqlx::Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
        if value.type_info().name() == "BLOB" {
            let bytes = <&[u8] as Decode<Sqlite>>::decode(value)?;
            Ok(Self(
                uuid::Uuid::from_slice(bytes)?.hyphenated().to_string(),
            ))
        } else {
            Ok(Self(<String as Decode<Sqlite>>::decode(value)?))
        }
    }
}

impl Type<Postgres> for IdText {
    fn type_info() -> <Postgres as sqlx::Database>::TypeInfo {
        <String as Type<Postgres>>::type_info()
    }

    fn compatible(ty: &<Postgres as sqlx::Database>::TypeInfo) -> bool {
        <String as Type<Postgres>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Postgres> for IdText {
    fn decode(value: <Postgres as sqlx::Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(Self(<String as Decode<Postgres>>::decode(value)?))
    }
}

/// A time read from a column written through [`StoredTime`]: its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeText(pub String);

impl From<TimeText> for String {
    fn from(time: TimeText) -> Self {
        time.0
    }
}

impl Type<Sqlite> for TimeText {
    fn type_info() -> <Sqlite as sqlx::Database>::TypeInfo {
        <&str as Type<Sqlite>>::type_info()
    }

    fn compatible(ty: &<Sqlite as sqlx::Database>::TypeInfo) -> bool {
        matches!(ty.name(), "TEXT" | "INTEGER")
    }
}

impl<'r> Decode<'r, Sqlite> for TimeText {
    fn decode(value: <Sqlite as sqlx::Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
        if value.type_info().name() == "INTEGER" {
            let microseconds = <i64 as Decode<Sqlite>>::decode(value)?;
            let instant = chrono::DateTime::from_timestamp_micros(microseconds)
                .ok_or("a stored time out of range")?;
            Ok(Self(crate::time::format(instant)))
        } else {
            Ok(Self(<String as Decode<Sqlite>>::decode(value)?))
        }
    }
}

impl Type<Postgres> for TimeText {
    fn type_info() -> <Postgres as sqlx::Database>::TypeInfo {
        <String as Type<Postgres>>::type_info()
    }

    fn compatible(ty: &<Postgres as sqlx::Database>::TypeInfo) -> bool {
        <String as Type<Postgres>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Postgres> for TimeText {
    fn decode(value: <Postgres as sqlx::Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(Self(<String as Decode<Postgres>>::decode(value)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_what_reads_back_exactly_is_stored_compact() {
        let id = "0195f3a2-7c41-7d2e-9f10-3b5c6d7e8f90";
        assert_eq!(
            StoredId(id)
                .bytes()
                .map(|bytes| uuid::Uuid::from_bytes(bytes).to_string()),
            Some(id.to_owned())
        );
        for kept_as_text in [
            "0195F3A2-7C41-7D2E-9F10-3B5C6D7E8F90",
            "0195f3a27c417d2e9f103b5c6d7e8f90",
            "{0195f3a2-7c41-7d2e-9f10-3b5c6d7e8f90}",
            "x",
            "",
        ] {
            assert_eq!(StoredId(kept_as_text).bytes(), None, "{kept_as_text}");
        }
        let time = "2026-11-27T21:56:48.123456Z";
        assert_eq!(StoredTime(time).microseconds(), Some(1_795_816_608_123_456));
        for kept_as_text in [
            "2026-11-27T21:56:48Z",
            "2026-11-27T21:56:48.123456+00:00",
            "2026-11-20",
            "1969-12-31T23:59:59.000000Z",
            "then",
        ] {
            assert_eq!(
                StoredTime(kept_as_text).microseconds(),
                None,
                "{kept_as_text}"
            );
        }
    }
}
