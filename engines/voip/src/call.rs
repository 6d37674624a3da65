//! A call record and its state machine, free of storage and HTTP: `ringing` until the first
//! invited participant joins (`active`), then `ended` when fewer than two remain joined or a
//! joined participant ends it; a call that is still ringing when it ends, or when its ring
//! timeout passes, is `missed`. Times are Unix microseconds in, RFC 3339 UTC out.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tessera_sdk::ApiError;
use tessera_sdk::time::format_rfc3339_micros;

/// Audio or video.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    Audio,
    Video,
}

impl CallKind {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "audio" => Some(Self::Audio),
            "video" => Some(Self::Video),
            _ => None,
        }
    }
}

/// Where a call is: `ringing` until the first invited participant joins, `active` until it
/// ends; `ended` once answered and over, `missed` when it ended unanswered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    Ringing,
    Active,
    Ended,
    Missed,
}

impl CallStatus {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "ringing" => Some(Self::Ringing),
            "active" => Some(Self::Active),
            "ended" => Some(Self::Ended),
            "missed" => Some(Self::Missed),
            _ => None,
        }
    }

    fn is_over(self) -> bool {
        matches!(self, Self::Ended | Self::Missed)
    }
}

/// Where a participant is in a call: `invited` until they join, `joined` while in it, `left`
/// once they left (or the call ended around them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ParticipantState {
    Joined,
    Invited,
    Left,
}

/// A participant of a call.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = tessera_sdk::openapi::all_required)]
pub struct Participant {
    /// The user's id.
    pub user_id: String,
    pub state: ParticipantState,
    /// The last time the participant joined (RFC 3339); null until they do.
    #[schemars(extend("format" = "date-time"))]
    pub joined_at: Option<String>,
    /// The last time the participant left (RFC 3339); null while joined or never joined.
    #[schemars(extend("format" = "date-time"))]
    pub left_at: Option<String>,
}

/// A call record (also what the API answers: every field is always present).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = tessera_sdk::openapi::all_required)]
pub struct Call {
    /// The call's id, a UUID v7.
    #[schemars(extend("format" = "uuid"))]
    pub id: String,
    pub kind: CallKind,
    pub status: CallStatus,
    /// The user who started the call.
    pub initiator_id: String,
    /// Seconds the call rings before it becomes `missed`.
    #[schemars(range(min = 1, max = 300))]
    pub ring_timeout_seconds: u32,
    /// The initiator first, then the invited users in the order given.
    #[schemars(length(min = 2, max = 51))]
    pub participants: Vec<Participant>,
    /// When the call started (RFC 3339).
    #[schemars(extend("format" = "date-time"))]
    pub created_at: String,
    /// When the first invited participant joined (RFC 3339); null until then.
    #[schemars(extend("format" = "date-time"))]
    pub answered_at: Option<String>,
    /// When the call became `ended` or `missed` (RFC 3339); null until then.
    #[schemars(extend("format" = "date-time"))]
    pub ended_at: Option<String>,
    /// `ended_at − answered_at` in whole seconds once ended, 0 when missed, null before the call
    /// is over.
    pub duration_seconds: Option<u64>,
}

/// What a change did to the call's status, when it did: the event to publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusChange {
    Answered,
    Ended,
    Missed,
}

impl StatusChange {
    pub fn event_type(self) -> &'static str {
        match self {
            Self::Answered => "call.answered",
            Self::Ended => "call.ended",
            Self::Missed => "call.missed",
        }
    }
}

/// What a participant asks of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Join,
    Leave,
    End,
}

impl Call {
    /// A new ringing call: the initiator joined, everyone else invited.
    pub fn start(
        id: String,
        kind: CallKind,
        initiator_id: &str,
        invited_ids: &[String],
        ring_timeout_seconds: u32,
        now_micros: i64,
    ) -> Self {
        let now = format_rfc3339_micros(now_micros);
        let initiator = Participant {
            user_id: initiator_id.to_owned(),
            state: ParticipantState::Joined,
            joined_at: Some(now.clone()),
            left_at: None,
        };
        let invited = invited_ids.iter().map(|user_id| Participant {
            user_id: user_id.clone(),
            state: ParticipantState::Invited,
            joined_at: None,
            left_at: None,
        });
        Self {
            id,
            kind,
            status: CallStatus::Ringing,
            initiator_id: initiator_id.to_owned(),
            ring_timeout_seconds,
            participants: std::iter::once(initiator).chain(invited).collect(),
            created_at: now,
            answered_at: None,
            ended_at: None,
            duration_seconds: None,
        }
    }

    pub fn has_participant(&self, user_id: &str) -> bool {
        self.participants
            .iter()
            .any(|participant| participant.user_id == user_id)
    }

    pub fn participant_ids(&self) -> Vec<&str> {
        self.participants
            .iter()
            .map(|participant| participant.user_id.as_str())
            .collect()
    }

    fn joined_count(&self) -> usize {
        self.participants
            .iter()
            .filter(|participant| participant.state == ParticipantState::Joined)
            .count()
    }

    /// `user_id` joins, leaves or ends the call. 404 when they are not in it; 409 when the
    /// call is over, when joining twice, and when leaving or ending without having joined.
    pub fn act(
        &mut self,
        user_id: &str,
        action: Action,
        now_micros: i64,
    ) -> Result<Option<StatusChange>, ApiError> {
        let Some(index) = self
            .participants
            .iter()
            .position(|participant| participant.user_id == user_id)
        else {
            return Err(ApiError::not_found("Call"));
        };
        if self.status.is_over() {
            return Err(ApiError::Conflict("The call has already ended.".into()));
        }
        let now = format_rfc3339_micros(now_micros);
        let participant = &mut self.participants[index];
        let joined = participant.state == ParticipantState::Joined;
        match action {
            Action::Join if joined => Err(ApiError::Conflict(
                "You have already joined the call.".into(),
            )),
            Action::Join => {
                participant.state = ParticipantState::Joined;
                participant.joined_at = Some(now.clone());
                participant.left_at = None;
                if self.status == CallStatus::Ringing {
                    self.status = CallStatus::Active;
                    self.answered_at = Some(now);
                    return Ok(Some(StatusChange::Answered));
                }
                Ok(None)
            }
            Action::Leave | Action::End if !joined => {
                Err(ApiError::Conflict("You have not joined the call.".into()))
            }
            Action::Leave => {
                participant.state = ParticipantState::Left;
                participant.left_at = Some(now);
                if self.joined_count() < 2 {
                    return Ok(Some(self.finish(now_micros)));
                }
                Ok(None)
            }
            Action::End => Ok(Some(self.finish(now_micros))),
        }
    }

    /// The ring timeout passed: a call still ringing is missed; 409 for any other.
    pub fn expire(&mut self, now_micros: i64) -> Result<StatusChange, ApiError> {
        if self.status != CallStatus::Ringing {
            return Err(ApiError::Conflict("The call was answered or ended.".into()));
        }
        Ok(self.finish(now_micros))
    }

    /// Ends the call now: `ended` when it was answered, else `missed`; everyone still joined
    /// leaves with it.
    fn finish(&mut self, now_micros: i64) -> StatusChange {
        let now = format_rfc3339_micros(now_micros);
        for participant in &mut self.participants {
            if participant.state == ParticipantState::Joined {
                participant.state = ParticipantState::Left;
                participant.left_at = Some(now.clone());
            }
        }
        let answered_micros = self.answered_at.as_deref().and_then(parse_rfc3339_micros);
        self.ended_at = Some(now);
        match (self.status, answered_micros) {
            (CallStatus::Active, Some(answered_micros)) => {
                self.status = CallStatus::Ended;
                let seconds = now_micros.saturating_sub(answered_micros).max(0) / 1_000_000;
                self.duration_seconds = Some(u64::try_from(seconds).unwrap_or(0));
                StatusChange::Ended
            }
            _ => {
                self.status = CallStatus::Missed;
                self.duration_seconds = Some(0);
                StatusChange::Missed
            }
        }
    }
}

/// Parses the SDK's fixed timestamp format `YYYY-MM-DDTHH:MM:SS.ffffffZ` back into Unix
/// microseconds (the inverse of `format_rfc3339_micros`); `None` for anything else.
fn parse_rfc3339_micros(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let separators = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
    ];
    if bytes.len() != 27
        || bytes[26] != b'Z'
        || separators
            .iter()
            .any(|(index, separator)| bytes[*index] != *separator)
    {
        return None;
    }
    let number = |from: usize, to: usize| text.get(from..to)?.parse::<i64>().ok();
    let (year, month, day) = (number(0, 4)?, number(5, 7)?, number(8, 10)?);
    let (hour, minute, second) = (number(11, 13)?, number(14, 16)?, number(17, 19)?);
    let micros = number(20, 26)?;
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second;
    Some(seconds * 1_000_000 + micros)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: i64 = 1_000_000;

    fn call() -> Call {
        let invited = vec!["b".to_owned(), "c".to_owned()];
        Call::start("id".into(), CallKind::Audio, "a", &invited, 60, 0)
    }

    #[test]
    fn timestamps_round_trip() {
        for micros in [
            0,
            1_795_281_540_123_456,
            951_782_400_000_001,
            4_102_444_799_999_999,
        ] {
            assert_eq!(
                parse_rfc3339_micros(&format_rfc3339_micros(micros)),
                Some(micros)
            );
        }
        assert_eq!(parse_rfc3339_micros("2026-01-01T00:00:00Z"), None);
    }

    #[test]
    fn answered_calls_end_with_their_duration() {
        let mut call = call();
        assert_eq!(
            call.act("b", Action::Join, 2 * SECOND),
            Ok(Some(StatusChange::Answered))
        );
        assert_eq!(call.act("c", Action::Join, 3 * SECOND), Ok(None));
        assert_eq!(call.act("a", Action::Leave, 4 * SECOND), Ok(None));
        assert_eq!(call.status, CallStatus::Active);
        assert_eq!(
            call.act("b", Action::Leave, 9 * SECOND + 999_999),
            Ok(Some(StatusChange::Ended))
        );
        assert_eq!(call.duration_seconds, Some(7));
        assert!(
            call.participants
                .iter()
                .all(|p| p.state == ParticipantState::Left)
        );
        assert!(matches!(
            call.act("c", Action::Join, 0),
            Err(ApiError::Conflict(_))
        ));
        assert!(matches!(
            call.act("z", Action::Join, 0),
            Err(ApiError::NotFound(_))
        ));
    }

    #[test]
    fn unanswered_calls_are_missed() {
        let mut ended = call();
        assert_eq!(
            ended.act("a", Action::Leave, SECOND),
            Ok(Some(StatusChange::Missed))
        );
        assert_eq!(ended.duration_seconds, Some(0));
        let mut expired = call();
        assert!(matches!(
            expired.act("b", Action::End, SECOND),
            Err(ApiError::Conflict(_))
        ));
        assert_eq!(expired.expire(SECOND), Ok(StatusChange::Missed));
        assert!(expired.expire(2 * SECOND).is_err());
    }
}
