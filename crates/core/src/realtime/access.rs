//! Who a realtime connection is, and whether it still may be: a bearer token verified by
//! [`Caller::authenticate`], the `Caller` extractor's own check (signature and expiry, an
//! active session, a current membership in a tenant that is not disabled, the lower of the
//! token's and the member's role, guests kept to the core routes they may use), or a
//! single-use ticket issued for such a token. The hub checks every connection again
//! ([`Check`]) on a timer and when this host announces an access change: a token that expired
//! or a session that ended closes it with 4001, a membership, user or tenant that ended with
//! 4003; a changed role or user type re-authorizes its subscriptions.

use std::collections::HashMap;

use sha2::{Digest as _, Sha256};

use super::protocol::close;
use super::store::{self, TicketRow};
use tessera_auth::AuthState;
use tessera_auth::caller::Caller;
use tessera_auth::sessions::Sessions;
use tessera_auth::tokens::AccessTokens;
use tessera_http::ApiError;
use tessera_storage::{Database, time};

/// How long a ticket may be redeemed.
pub const TICKET_LIFETIME: chrono::Duration = chrono::Duration::seconds(30);

/// What realtime needs of the auth service: the token verifier and the session store.
#[derive(Clone)]
pub struct Verifier {
    pub tokens: AccessTokens,
    pub sessions: Sessions,
}

impl Verifier {
    pub fn of(auth: &AuthState) -> Self {
        Self {
            tokens: auth.access_tokens.clone(),
            sessions: auth.sessions.clone(),
        }
    }
}

/// A verified realtime caller and how it proved itself.
#[derive(Debug, Clone)]
pub struct Viewer {
    /// The caller now: its role and type narrowed by the membership as last checked.
    pub caller: Caller,
    /// The role and type the token (or the ticket) grants, before the membership narrows them.
    pub granted: (String, String),
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

    /// The caller the credential grants, narrowed by a membership's current role and type.
    fn narrowed(&self, current_role: String, user_type: String) -> Caller {
        Caller {
            role: self.granted.0.clone(),
            token_type: self.granted.1.clone(),
            ..self.caller.clone()
        }
        .narrowed(current_role, user_type)
    }
}

/// The caller of a bearer token on `route` (the matched route), as the `Caller` extractor
/// verifies it: 401 unless it verifies, its session is active and its user still a member of
/// its tenant; 403 for a guest where guests may not go.
pub async fn from_bearer(
    verifier: &Verifier,
    token: &str,
    route: &str,
) -> Result<Viewer, ApiError> {
    let (caller, claims) =
        Caller::authenticate(&verifier.tokens, &verifier.sessions, token, route).await?;
    Ok(Viewer {
        caller,
        granted: (claims.role, claims.typ),
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
/// expired or used ticket, or one whose session or membership has ended since. The ticket
/// grants what its token's caller had when it was issued.
pub async fn redeem_ticket(
    verifier: &Verifier,
    database: &Database,
    ticket: &str,
) -> Result<Viewer, ApiError> {
    let row = store::redeem_ticket(database, &ticket_hash(ticket), &time::now())
        .await?
        .ok_or(ApiError::Unauthenticated)?;
    let viewer = Viewer {
        granted: (row.role.clone(), row.token_type.clone()),
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
    match Check::cached(verifier).verdict(&viewer).await? {
        Verdict::Stays(caller) => Ok(Viewer { caller, ..viewer }),
        Verdict::Closes(_) => Err(ApiError::Unauthenticated),
    }
}

/// What a check of a connection decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It may stay, as this caller (its role or type may have changed).
    Stays(Caller),
    /// It must close with this code: 4001 (the token expired, or its session ended) or 4003
    /// (the user is no longer a member of the tenant, or the user or the tenant is disabled).
    Closes(u16),
}

/// One round of checks over any number of connections: each session and each membership is
/// read once a round, from the database (`fresh`) or through the auth service's short cache.
pub struct Check<'a> {
    verifier: &'a Verifier,
    fresh: bool,
    sessions: HashMap<String, bool>,
    members: HashMap<(String, String), Option<(String, String)>>,
}

impl<'a> Check<'a> {
    /// A round that reads the database now: for connections already open.
    pub fn fresh(verifier: &'a Verifier) -> Self {
        Self {
            verifier,
            fresh: true,
            sessions: HashMap::new(),
            members: HashMap::new(),
        }
    }

    /// A round that reads through the cache every request's bearer check uses: for a
    /// connection being opened.
    fn cached(verifier: &'a Verifier) -> Self {
        Self {
            fresh: false,
            ..Self::fresh(verifier)
        }
    }

    async fn session_active(&mut self, session_id: &str) -> anyhow::Result<bool> {
        if let Some(active) = self.sessions.get(session_id) {
            return Ok(*active);
        }
        let sessions = &self.verifier.sessions;
        let active = if self.fresh {
            sessions.is_active_now(session_id).await?
        } else {
            sessions.is_active(session_id).await?
        };
        self.sessions.insert(session_id.to_owned(), active);
        Ok(active)
    }

    async fn membership(
        &mut self,
        user_id: &str,
        tenant_id: &str,
    ) -> anyhow::Result<Option<(String, String)>> {
        let key = (user_id.to_owned(), tenant_id.to_owned());
        if let Some(membership) = self.members.get(&key) {
            return Ok(membership.clone());
        }
        let sessions = &self.verifier.sessions;
        let membership = if self.fresh {
            sessions.current_membership_now(user_id, tenant_id).await?
        } else {
            sessions.current_membership(user_id, tenant_id).await?
        };
        self.members.insert(key, membership.clone());
        Ok(membership)
    }

    /// Whether the viewer may stay, and as whom. An ended membership (or a disabled user or
    /// tenant) decides first: 4003 tells a client that signing in again will not help.
    pub async fn verdict(&mut self, viewer: &Viewer) -> anyhow::Result<Verdict> {
        let caller = &viewer.caller;
        let Some((current_role, user_type)) =
            self.membership(&caller.user_id, &caller.tenant_id).await?
        else {
            return Ok(Verdict::Closes(close::TENANT_ENDED));
        };
        let token_valid = match &viewer.credential {
            Credential::Bearer { token, .. } => self.verifier.tokens.verify(token).await.is_some(),
            Credential::Ticket { token_expires_at } => {
                *token_expires_at > chrono::Utc::now().timestamp()
            }
        };
        if !token_valid || !self.session_active(&caller.session_id).await? {
            return Ok(Verdict::Closes(close::UNAUTHENTICATED));
        }
        Ok(Verdict::Stays(viewer.narrowed(current_role, user_type)))
    }
}
