//! Who a realtime connection is, and whether it still may be: a bearer token verified as the
//! `Caller` extractor verifies it (signature and expiry, an active session, a current
//! membership in a tenant that is not disabled, the lower of the token's and the member's
//! role), or a single-use ticket issued for such a token. The same checks run again on a
//! timer while the connection lives: a token that expired, a session logged out or revoked
//! close it with 4001, a membership or tenant that ended with 4003.
//!
//! Realtime verifies the token itself, with the auth service's public API, rather than through
//! `Caller`, because `Caller` keeps guests to their inbox's REST routes while a guest may
//! connect here for its `core.inbox` topic (`topics.rs` keeps it to that topic).

use sha2::{Digest as _, Sha256};

use super::hub::close;
use super::store::{self, TicketRow};
use tessera_auth::AuthState;
use tessera_auth::caller::Caller;
use tessera_http::ApiError;
use tessera_storage::{Database, time};

/// How long a ticket may be redeemed.
pub const TICKET_LIFETIME: chrono::Duration = chrono::Duration::seconds(30);

/// A verified realtime caller and how it proved itself.
#[derive(Debug, Clone)]
pub struct Viewer {
    pub caller: Caller,
    pub credential: Credential,
}

/// What a connection's identity rests on, checked again while it lives.
#[derive(Debug, Clone)]
pub enum Credential {
    /// A bearer access token.
    Bearer { token: String, expires_at: i64 },
    /// A ticket, redeemed: the token it was issued for expired at `token_expires_at`.
    Ticket { token_expires_at: i64 },
}

impl Viewer {
    /// When the token behind the connection expires (Unix seconds).
    pub fn token_expires_at(&self) -> i64 {
        match &self.credential {
            Credential::Bearer { expires_at, .. } => *expires_at,
            Credential::Ticket { token_expires_at } => *token_expires_at,
        }
    }
}

/// Roles from least to most allowed, as `Caller` ranks them.
const ROLES: [&str; 3] = ["viewer", "editor", "owner"];

fn lower_role(token_role: String, current_role: String) -> String {
    let rank = |role: &str| ROLES.iter().position(|known| *known == role);
    if rank(&current_role) < rank(&token_role) {
        current_role
    } else {
        token_role
    }
}

/// The caller of a bearer token: 401 unless it verifies, its session is active and its user
/// still a member of its tenant.
pub async fn from_bearer(auth: &AuthState, token: &str) -> Result<Viewer, ApiError> {
    let claims = auth
        .access_tokens
        .verify(token)
        .await
        .ok_or(ApiError::Unauthenticated)?;
    let (active, membership) = tokio::try_join!(
        auth.sessions.is_active(&claims.sid),
        auth.sessions.current_membership(&claims.sub, &claims.tid),
    )?;
    let (Some((current_role, user_type)), true) = (membership, active) else {
        return Err(ApiError::Unauthenticated);
    };
    Ok(Viewer {
        caller: Caller {
            role: lower_role(claims.role, current_role),
            token_type: if user_type == "guest" {
                user_type
            } else {
                claims.typ
            },
            user_id: claims.sub,
            tenant_id: claims.tid,
            workspace_id: claims.wid,
            session_id: claims.sid,
        },
        credential: Credential::Bearer {
            token: token.to_owned(),
            expires_at: claims.exp,
        },
    })
}

fn ticket_hash(ticket: &str) -> String {
    hex::encode(Sha256::digest(ticket.as_bytes()))
}

/// Issues a single-use ticket for the viewer: the ticket and when it stops being redeemable.
pub async fn issue_ticket(
    database: &Database,
    viewer: &Viewer,
) -> anyhow::Result<(String, String)> {
    let ticket = format!("rt_{}", hex::encode(rand::random::<[u8; 32]>()));
    let now = chrono::Utc::now();
    let expires_at = time::format(now + TICKET_LIFETIME);
    let caller = &viewer.caller;
    let row = TicketRow {
        tenant_id: caller.tenant_id.clone(),
        user_id: caller.user_id.clone(),
        session_id: caller.session_id.clone(),
        workspace_id: caller.workspace_id.clone(),
        role: caller.role.clone(),
        token_type: caller.token_type.clone(),
        token_expires_at: viewer.token_expires_at(),
    };
    store::insert_ticket(
        database,
        &ticket_hash(&ticket),
        &row,
        &expires_at,
        &time::format(now),
    )
    .await?;
    Ok((ticket, expires_at))
}

/// The viewer of a ticket, redeeming it (once, on whichever host): 401 for an unknown,
/// expired or used ticket, or one whose session or membership has ended since.
pub async fn redeem_ticket(
    auth: &AuthState,
    database: &Database,
    ticket: &str,
) -> Result<Viewer, ApiError> {
    let row = store::redeem_ticket(database, &ticket_hash(ticket), &time::now())
        .await?
        .ok_or(ApiError::Unauthenticated)?;
    let viewer = Viewer {
        caller: Caller {
            user_id: row.user_id,
            tenant_id: row.tenant_id,
            workspace_id: row.workspace_id,
            role: row.role,
            token_type: row.token_type,
            session_id: row.session_id,
        },
        credential: Credential::Ticket {
            token_expires_at: row.token_expires_at,
        },
    };
    match recheck(auth, &viewer).await? {
        Ok(()) => Ok(viewer),
        Err(_) => Err(ApiError::Unauthenticated),
    }
}

/// The checks of the connection's credential, again: `Ok(Err(code))` when it must close
/// (4001: the token expired, or its session was logged out or revoked; 4003: the user is no
/// longer a member of the tenant, or the tenant or the user was disabled).
pub async fn recheck(auth: &AuthState, viewer: &Viewer) -> anyhow::Result<Result<(), u16>> {
    let caller = &viewer.caller;
    let token_valid = match &viewer.credential {
        Credential::Bearer { token, .. } => auth.access_tokens.verify(token).await.is_some(),
        Credential::Ticket { token_expires_at } => {
            *token_expires_at > chrono::Utc::now().timestamp()
        }
    };
    if !token_valid || !auth.sessions.is_active(&caller.session_id).await? {
        return Ok(Err(close::UNAUTHENTICATED));
    }
    if auth
        .sessions
        .current_membership(&caller.user_id, &caller.tenant_id)
        .await?
        .is_none()
    {
        return Ok(Err(close::TENANT_ENDED));
    }
    Ok(Ok(()))
}
