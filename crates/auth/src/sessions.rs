//! Sessions and token sets. A login opens a session (one refresh-token family); each refresh
//! rotates the refresh token (stored only as a SHA-256 hash) and presenting a rotated one again
//! is treated as theft: the whole session is revoked. Access tokens name their session, and the
//! bearer extractor refuses tokens of revoked sessions at once (a small per-host cache that a
//! revocation on this host clears; other hosts see it within [`ACTIVE_CACHE_TTL`]). It also
//! reads the member's current role and type in the token's tenant (cached as long), so a role
//! change or a removed membership applies within that time on every host, whatever the
//! token's `exp`.
//!
//! Connections that outlive a request (realtime) cannot wait for a cache: they read a session
//! and a membership afresh ([`Sessions::is_active_now`], [`Sessions::current_membership_now`]),
//! and hear of this host's revocations and access changes at once ([`Sessions::access_changes`]).

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::Utc;
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use utoipa::ToSchema;

use crate::audit::{self, AuditEntry, AuditEvent};
use crate::config::AuthConfig;
use crate::request_origin::RequestOrigin;
use crate::store::sessions::{self as store, RefreshRow};
use crate::tokens::{AccessClaims, AccessTokens};
use tessera_storage::{Database, Tx, time};

/// The most sessions a user's list shows (more than `max_active_sessions` could ever be
/// active at once only with a huge limit configured).
pub const MAX_LISTED_SESSIONS: u32 = 200;

/// How long a host trusts its last look at a session.
pub const ACTIVE_CACHE_TTL: Duration = Duration::from_secs(5);

/// `data` of login, refresh and switch-context.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TokenSet {
    pub access_token: String,
    pub refresh_token: String,
    /// Always `Bearer`.
    pub token_type: &'static str,
    /// Seconds.
    pub expires_in: u64,
}

/// What a token set is scoped to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenScope {
    pub user_id: String,
    pub tenant_id: String,
    pub workspace_id: Option<String>,
    pub role: String,
    pub user_type: String,
}

/// Why a refresh was refused.
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    #[error("unknown, expired or revoked refresh token")]
    Invalid,
    /// An already rotated token: the session is revoked.
    #[error("a rotated refresh token was presented again")]
    Reused { session_id: String, user_id: String },
    #[error(transparent)]
    Storage(#[from] anyhow::Error),
}

/// How opaque tokens (refresh tokens, `mfa_token`s) are stored: SHA-256, hex. They are 256-bit
/// random values, so a fast hash is enough; the token itself is never stored.
pub(crate) fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Whose access changed on this host: what listeners (realtime connections) check again at
/// once rather than at their next periodic check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccessChange {
    /// These sessions ended (a logout, a revocation, an eviction).
    Sessions(Vec<String>),
    /// A user's access changed: their role, their account disabled, their sessions ended.
    User(String),
    /// A tenant was disabled or enabled.
    Tenant(String),
}

/// Access changes a listener may fall behind by before it is told it lagged (and then checks
/// everything again).
const ACCESS_CHANGES_BUFFER: usize = 1024;

/// Sessions and the tokens of each; cheap to clone.
#[derive(Clone)]
pub struct Sessions {
    database: Database,
    tokens: AccessTokens,
    config: AuthConfig,
    active: moka::future::Cache<String, bool>,
    /// (user, tenant) → the current (role, user type); `None` when not a member.
    members: moka::future::Cache<(String, String), Option<(String, String)>>,
    changes: tokio::sync::broadcast::Sender<AccessChange>,
}

impl Sessions {
    pub fn new(database: Database, tokens: AccessTokens, config: AuthConfig) -> Self {
        Self {
            database,
            tokens,
            config,
            active: moka::future::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(ACTIVE_CACHE_TTL)
                .build(),
            members: moka::future::Cache::builder()
                .max_capacity(100_000)
                .time_to_live(ACTIVE_CACHE_TTL)
                .build(),
            changes: tokio::sync::broadcast::channel(ACCESS_CHANGES_BUFFER).0,
        }
    }

    /// The access changes made on this host from now on (see [`AccessChange`]).
    pub fn access_changes(&self) -> tokio::sync::broadcast::Receiver<AccessChange> {
        self.changes.subscribe()
    }

    /// Tells this host's listeners that someone's access changed (after the change committed).
    /// The revocations of this type announce themselves; a service that changes a role, a
    /// user's or a tenant's access elsewhere calls this.
    pub fn announce(&self, change: AccessChange) {
        // No listener is no error: nothing is connected.
        let _ = self.changes.send(change);
    }

    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    /// Opens a session and returns its first token set; beyond `max_active_sessions` the
    /// user's oldest sessions end (`evicted`). Returns the session id too.
    /// `origin` is where the sign-in came from: its address and `User-Agent` are kept with the
    /// session for its user's sessions list.
    pub async fn open(
        &self,
        scope: &TokenScope,
        origin: &RequestOrigin,
    ) -> anyhow::Result<(String, TokenSet)> {
        let session_id = uuid::Uuid::new_v4().to_string();
        let now = Utc::now();
        let expires_at = now + chrono::Duration::from_std(self.config.refresh_token_lifetime)?;
        let mut tx = self.database.begin().await?;
        let client_ip = origin.client_ip.map(|ip| ip.to_canonical().to_string());
        store::insert_session(
            &mut tx,
            &store::NewSession {
                id: &session_id,
                user_id: &scope.user_id,
                created_at: &time::format(now),
                expires_at: &time::format(expires_at),
                client_ip: client_ip.as_deref(),
                user_agent: origin.user_agent.as_deref(),
            },
        )
        .await?;
        // Every active session of the user beyond the newest `max`, oldest first.
        let active = store::active_sessions(&mut tx, &scope.user_id, &time::format(now)).await?;
        let max = usize::try_from(self.config.max_active_sessions.max(1)).unwrap_or(usize::MAX);
        let evicted: Vec<String> = active.into_iter().skip(max).collect();
        for id in &evicted {
            store::revoke(&mut tx, id, "evicted").await?;
            let entry = AuditEntry::new(AuditEvent::SessionEvicted)
                .tenant(&scope.tenant_id)
                .user(&scope.user_id)
                .detail("session_id", id.clone())
                .detail("by_session_id", session_id.clone());
            audit::record_in(&mut tx, &entry).await?;
        }
        let token_set = self.issue_in(&mut tx, &session_id, scope).await?;
        tx.commit().await?;
        for id in &evicted {
            self.active.invalidate(id).await;
        }
        if !evicted.is_empty() {
            self.announce(AccessChange::Sessions(evicted));
        }
        Ok((session_id, token_set))
    }

    /// The end of a successful sign-in (a password, a second factor, a magic link, a passkey):
    /// a session in the user's first tenant and its default workspace, and `entry` (the event
    /// and its details) recorded with the session. `None` when the user belongs to no tenant.
    pub(crate) async fn open_in_first_tenant(
        &self,
        user_id: &str,
        login: &str,
        origin: &RequestOrigin,
        entry: AuditEntry,
    ) -> anyhow::Result<Option<TokenSet>> {
        let Some(membership) = crate::store::membership(&self.database, user_id, None).await?
        else {
            return Ok(None);
        };
        let workspace_id =
            crate::store::default_workspace(&self.database, &membership.tenant_id).await?;
        let (session_id, token_set) = self
            .open(
                &TokenScope {
                    user_id: user_id.to_owned(),
                    tenant_id: membership.tenant_id.clone(),
                    workspace_id,
                    role: membership.role,
                    user_type: membership.user_type,
                },
                origin,
            )
            .await?;
        let entry = entry
            .tenant(membership.tenant_id)
            .user(user_id)
            .login(login)
            .origin(origin)
            .detail("session_id", session_id);
        audit::record(&self.database, &entry).await?;
        Ok(Some(token_set))
    }

    /// A new token set in an existing session (switch-context): earlier tokens stay valid.
    pub async fn reissue(&self, session_id: &str, scope: &TokenScope) -> anyhow::Result<TokenSet> {
        let mut tx = self.database.begin().await?;
        let token_set = self.issue_in(&mut tx, session_id, scope).await?;
        tx.commit().await?;
        Ok(token_set)
    }

    async fn issue_in(
        &self,
        tx: &mut Tx,
        session_id: &str,
        scope: &TokenScope,
    ) -> anyhow::Result<TokenSet> {
        let now = Utc::now();
        let refresh_token = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>());
        let refresh_expires = now + chrono::Duration::from_std(self.config.refresh_token_lifetime)?;
        store::insert_refresh_token(
            tx,
            &hash_token(&refresh_token),
            session_id,
            &scope.tenant_id,
            scope.workspace_id.as_deref(),
            &time::format(now),
            &time::format(refresh_expires),
        )
        .await?;
        let lifetime = self.config.token_lifetime.as_secs();
        let access_token = self.tokens.issue(&AccessClaims {
            sub: scope.user_id.clone(),
            tid: scope.tenant_id.clone(),
            wid: scope.workspace_id.clone(),
            role: scope.role.clone(),
            typ: scope.user_type.clone(),
            sid: session_id.to_owned(),
            jti: uuid::Uuid::new_v4().to_string(),
            iat: now.timestamp(),
            exp: now.timestamp() + i64::try_from(lifetime)?,
        })?;
        Ok(TokenSet {
            access_token,
            refresh_token,
            token_type: "Bearer",
            expires_in: lifetime,
        })
    }

    /// Rotates a refresh token: the presented one is spent and a new set is issued, scoped as
    /// before with the user's current role. A spent token revokes its session.
    pub async fn refresh(&self, refresh_token: &str) -> Result<TokenSet, RefreshError> {
        let now = time::now();
        let token_hash = hash_token(refresh_token);
        let mut tx = self.database.begin().await?;
        let Some(RefreshRow {
            session_id,
            tenant_id,
            workspace_id,
            expires_at,
            used_at,
            user_id,
            revoked_at,
        }) = store::refresh_token(&mut tx, &token_hash).await?
        else {
            return Err(RefreshError::Invalid);
        };
        if revoked_at.is_some() || expires_at <= now {
            return Err(RefreshError::Invalid);
        }
        let spent = store::spend_refresh_token(&mut tx, &token_hash, &now).await?;
        if used_at.is_some() || !spent {
            store::revoke(&mut tx, &session_id, "refresh_token_reused").await?;
            tx.commit().await?;
            self.active.invalidate(&session_id).await;
            self.announce(AccessChange::Sessions(vec![session_id.clone()]));
            return Err(RefreshError::Reused {
                session_id,
                user_id,
            });
        }
        let Some((role, user_type)) = store::member_role_in(&mut tx, &user_id, &tenant_id).await?
        else {
            // No longer a member of that tenant: the session ends.
            store::revoke(&mut tx, &session_id, "membership_ended").await?;
            tx.commit().await?;
            self.active.invalidate(&session_id).await;
            self.announce(AccessChange::Sessions(vec![session_id]));
            return Err(RefreshError::Invalid);
        };
        let scope = TokenScope {
            user_id,
            tenant_id,
            workspace_id,
            role,
            user_type,
        };
        let token_set = self.issue_in(&mut tx, &session_id, &scope).await?;
        let entry = AuditEntry::new(AuditEvent::Refreshed)
            .tenant(&scope.tenant_id)
            .user(&scope.user_id)
            .detail("session_id", session_id);
        audit::record_in(&mut tx, &entry).await?;
        tx.commit().await?;
        Ok(token_set)
    }

    /// Ends one session (logout).
    pub async fn revoke(&self, session_id: &str, reason: &str) -> anyhow::Result<()> {
        let mut tx = self.database.begin().await?;
        store::revoke(&mut tx, session_id, reason).await?;
        tx.commit().await?;
        self.active.invalidate(session_id).await;
        self.announce(AccessChange::Sessions(vec![session_id.to_owned()]));
        Ok(())
    }

    /// The user's active sessions, newest first (at most [`MAX_LISTED_SESSIONS`]).
    pub async fn list_active(&self, user_id: &str) -> anyhow::Result<Vec<store::SessionRow>> {
        store::list_active(&self.database, user_id, &time::now(), MAX_LISTED_SESSIONS).await
    }

    /// Ends one of the user's own active sessions, recording `entry` with it: false (nothing
    /// changed) when the session is not theirs or not active.
    pub async fn revoke_own(
        &self,
        user_id: &str,
        session_id: &str,
        entry: &AuditEntry,
    ) -> anyhow::Result<bool> {
        let mut tx = self.database.begin().await?;
        let revoked =
            store::revoke_own(&mut tx, user_id, session_id, &time::now(), "revoked").await?;
        if !revoked {
            return Ok(false);
        }
        audit::record_in(&mut tx, entry).await?;
        tx.commit().await?;
        self.active.invalidate(session_id).await;
        self.announce(AccessChange::Sessions(vec![session_id.to_owned()]));
        Ok(true)
    }

    /// Ends every session of a user (logout everywhere).
    pub async fn revoke_all(&self, user_id: &str, reason: &str) -> anyhow::Result<()> {
        let ids = store::unrevoked_sessions(&self.database, user_id).await?;
        let tx = self.database.begin().await?;
        self.end_sessions(tx, &ids, reason).await
    }

    /// Stores a user's new password hash and ends every session of theirs but `keep`, in `tx`
    /// (with whatever it already holds), and commits: a change keeps the session that made
    /// it, a reset keeps none. Returns how many sessions ended.
    pub async fn replace_password(
        &self,
        mut tx: Tx,
        user_id: &str,
        password_hash: &str,
        keep: Option<&str>,
        reason: &str,
    ) -> anyhow::Result<usize> {
        let ids: Vec<String> = store::unrevoked_sessions(&self.database, user_id)
            .await?
            .into_iter()
            .filter(|id| Some(id.as_str()) != keep)
            .collect();
        crate::store::replace_password_hash(&mut tx, user_id, password_hash).await?;
        self.end_sessions(tx, &ids, reason).await?;
        Ok(ids.len())
    }

    /// Revokes these sessions in `tx` (with whatever it already holds), commits, and forgets
    /// them in this host's cache, so their tokens are refused at once here.
    async fn end_sessions(&self, mut tx: Tx, ids: &[String], reason: &str) -> anyhow::Result<()> {
        for id in ids {
            store::revoke(&mut tx, id, reason).await?;
        }
        tx.commit().await?;
        for id in ids {
            self.active.invalidate(id).await;
        }
        if !ids.is_empty() {
            self.announce(AccessChange::Sessions(ids.to_vec()));
        }
        Ok(())
    }

    /// Whether a session may still be used (not revoked, not expired).
    pub async fn is_active(&self, session_id: &str) -> anyhow::Result<bool> {
        if let Some(active) = self.active.get(session_id).await {
            return Ok(active);
        }
        let active = store::is_active(&self.database, session_id, &time::now()).await?;
        self.active.insert(session_id.to_owned(), active).await;
        Ok(active)
    }

    /// Whether a session may still be used, read from the database now (and remembered for
    /// [`Self::is_active`]).
    pub async fn is_active_now(&self, session_id: &str) -> anyhow::Result<bool> {
        let active = store::is_active(&self.database, session_id, &time::now()).await?;
        self.active.insert(session_id.to_owned(), active).await;
        Ok(active)
    }

    /// The user's current role and type in a tenant, read from the database now (and
    /// remembered for [`Self::current_membership`]).
    pub async fn current_membership_now(
        &self,
        user_id: &str,
        tenant_id: &str,
    ) -> anyhow::Result<Option<(String, String)>> {
        let membership = store::member_role(&self.database, user_id, tenant_id).await?;
        self.members
            .insert(
                (user_id.to_owned(), tenant_id.to_owned()),
                membership.clone(),
            )
            .await;
        Ok(membership)
    }

    /// The user's current role and type in a tenant (`None`: not a member), as this host read
    /// it at most [`ACTIVE_CACHE_TTL`] ago. Nothing invalidates it early: a role can change on
    /// any host (or in the admin CLI), so every host relies on the same short lifetime.
    pub async fn current_membership(
        &self,
        user_id: &str,
        tenant_id: &str,
    ) -> anyhow::Result<Option<(String, String)>> {
        let key = (user_id.to_owned(), tenant_id.to_owned());
        if let Some(membership) = self.members.get(&key).await {
            return Ok(membership);
        }
        let membership = store::member_role(&self.database, user_id, tenant_id).await?;
        self.members.insert(key, membership.clone()).await;
        Ok(membership)
    }
}
