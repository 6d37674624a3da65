//! `/auth/api/v1/auth/mfa/webauthn/*` and `/auth/api/v1/auth/passkey/*`: passkeys registered,
//! listed and deleted by their owner, the challenge of a login's second step with one, and the
//! sign-in without a password. The ceremonies' state and the checks of a passkey's use are
//! `passkeys/`.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};
use webauthn_rs::prelude::{
    DiscoverableAuthentication, Passkey, PasskeyAuthentication, PasskeyRegistration,
    PublicKeyCredential, RegisterPublicKeyCredential, Uuid,
};

use crate::audit::{self, AuditEntry, AuditEvent, RequestOrigin};
use crate::caller::Caller;
use crate::lockout;
use crate::passkeys::{
    MAX_NAME_CHARS, PASSWORDLESS, REGISTER, Refusal, RelyingParty, SECOND_FACTOR, accept_result,
    counter_of, credential_challenge_key, credential_id_text, log_refusal, options_challenge_key,
    passkeys_of, store_ceremony, take_ceremony,
};
use crate::routes::answers::{TokenSetWithServices, signed_in};
use crate::sessions::hash_token;
use crate::state::AuthState;
use crate::store;
use crate::store::webauthn::NewCredential;
use tessera_http::envelope::Data;
use tessera_http::extract::ApiJson;
use tessera_http::{ApiError, ApiResult, ValidationErrors};
use tessera_storage::time;

pub fn router<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    AuthState: axum::extract::FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(start_registration))
        .routes(routes!(finish_registration))
        .routes(routes!(list_credentials))
        .routes(routes!(delete_credential))
        .routes(routes!(second_factor_challenge))
        .routes(routes!(start_passwordless))
        .routes(routes!(finish_passwordless))
}

// ---- Wire shapes -------------------------------------------------------------------------

/// WebAuthn options for `navigator.credentials.create()` or `.get()`: `{publicKey: …}` in the
/// W3C JSON encoding (binary fields base64url).
fn options_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .property(
            "publicKey",
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .description(Some(
                    "PublicKeyCredentialCreationOptions or PublicKeyCredentialRequestOptions, \
                     W3C WebAuthn Level 3 JSON (binary fields base64url)",
                )),
        )
        .required("publicKey")
        .description(Some(
            "The argument of `navigator.credentials.create()` (registration) or `.get()` \
             (sign-in), in the W3C JSON encoding",
        ))
        .build()
}

/// A credential as the browser returns it, in the W3C JSON encoding (`toJSON()` of a
/// `PublicKeyCredential`): `id`, `rawId`, `type`, `response`.
pub(crate) fn credential_schema() -> utoipa::openapi::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(
            "The PublicKeyCredential the authenticator returned, in the W3C JSON encoding \
             (`credential.toJSON()`: `id`, `rawId`, `type`, `response`, binary fields base64url)",
        ))
        .build()
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CeremonyOptions {
    #[schema(schema_with = options_schema)]
    pub options: Value,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PasswordlessOptions {
    #[schema(schema_with = options_schema)]
    pub options: Value,
    /// Give it back to `…/passkey/finish` with the credential.
    pub challenge_id: String,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct FinishRegistrationRequest {
    #[schema(schema_with = credential_schema, required = true)]
    pub credential: Option<Value>,
    /// A name for the credential (1 to 100 characters); default `Passkey`.
    #[schema(max_length = 100, pattern = r"\S")]
    pub name: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PasskeyCredential {
    pub id: String,
    pub name: String,
    pub created_at: String,
    pub last_used_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RegisteredPasskey {
    pub id: String,
    pub name: String,
    pub created_at: String,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct SecondFactorChallengeRequest {
    /// The `mfa_token` of the login's 202 answer. Not blank.
    #[schema(value_type = String, required = true, pattern = r"\S")]
    pub mfa_token: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct FinishPasswordlessRequest {
    /// The `challenge_id` of `…/passkey/start`. Not blank.
    #[schema(value_type = String, required = true, pattern = r"\S")]
    pub challenge_id: Option<String>,
    #[schema(schema_with = credential_schema, required = true)]
    pub credential: Option<Value>,
}

/// The 422 of a credential that is missing or not the answer of a pending ceremony.
fn invalid_credential() -> ApiError {
    ApiError::Validation(ValidationErrors::single("credential", "invalid"))
}

/// Reads the optional credential name: trimmed, 1 to [`MAX_NAME_CHARS`] characters.
fn credential_name(errors: &mut ValidationErrors, name: Option<String>) -> String {
    let Some(name) = name else {
        return "Passkey".into();
    };
    let name = name.trim().to_owned();
    if name.is_empty() {
        errors.add("name", "required");
    } else {
        errors.check_length(&name, "name", 1, MAX_NAME_CHARS);
    }
    name
}

// ---- Endpoints ---------------------------------------------------------------------------

/// Starts registering a passkey for the caller: creation options for the browser.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/mfa/webauthn/register/start",
    tag = "auth",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Creation options (`options.publicKey`) for `navigator.credentials.create()`", body = Data<CeremonyOptions>),
        (status = 401, description = "Unauthenticated"),
        (status = 409, description = "The caller has as many passkeys as allowed"),
        (status = 503, description = "This host offers no passkeys (its public URL is a bare IP address)"),
    )
)]
async fn start_registration(
    State(state): State<AuthState>,
    caller: Caller,
) -> ApiResult<Json<Data<CeremonyOptions>>> {
    let relying_party = state.relying_party()?;
    let registered = passkeys_of(&state.database, &caller.user_id).await?;
    if registered.len() >= relying_party.max_credentials_per_user as usize {
        return Err(too_many_passkeys(relying_party));
    }
    let login = store::email_of(&state.database, &caller.user_id)
        .await?
        .ok_or(ApiError::Unauthenticated)?;
    let user_handle = match store::webauthn::user_handle(&state.database, &caller.user_id).await? {
        Some(handle) => handle,
        None => {
            let handle = Uuid::new_v4().to_string();
            store::webauthn::keep_user_handle(&state.database, &caller.user_id, &handle).await?
        }
    };
    let user_handle = Uuid::parse_str(&user_handle)
        .map_err(|error| anyhow::anyhow!("a stored WebAuthn user handle: {error}"))?;
    let registered = registered
        .iter()
        .map(|passkey| passkey.cred_id().clone())
        .collect();
    let (options, registration) = relying_party
        .webauthn
        .start_passkey_registration(user_handle, &login, &login, Some(registered))
        .map_err(|error| anyhow::anyhow!("starting a passkey registration: {error}"))?;
    let mut options = serde_json::to_value(options).map_err(anyhow::Error::from)?;
    // Ask for a discoverable credential, so the passkey also signs in without a password.
    if let Some(selection) = options.pointer_mut("/publicKey/authenticatorSelection") {
        selection["residentKey"] = Value::from("preferred");
        selection["requireResidentKey"] = Value::from(false);
    }
    let key_hash = options_challenge_key(&options)?;
    store_ceremony::<PasskeyRegistration>(
        &state.database,
        &state.service_secret,
        &key_hash,
        REGISTER,
        Some(&caller.user_id),
        None,
        &registration,
    )
    .await?;
    Ok(Json(Data {
        data: CeremonyOptions { options },
    }))
}

fn too_many_passkeys(relying_party: &RelyingParty) -> ApiError {
    ApiError::Conflict(format!(
        "This account has {} passkeys, the most allowed (TESSERA_WEBAUTHN_MAX_CREDENTIALS); \
         delete one first.",
        relying_party.max_credentials_per_user
    ))
}

/// Finishes a registration with the browser's credential: the passkey is the caller's.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/mfa/webauthn/register/finish",
    tag = "auth",
    security(("bearer" = [])),
    request_body = FinishRegistrationRequest,
    responses(
        (status = 201, description = "Registered", body = Data<RegisteredPasskey>),
        (status = 401, description = "Unauthenticated"),
        (status = 409, description = "The credential is registered already, or the caller has as many passkeys as allowed"),
        (status = 422, description = "Missing or invalid credential (no pending registration of the caller's it answers), or a bad name"),
        (status = 503, description = "This host offers no passkeys"),
    )
)]
async fn finish_registration(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    caller: Caller,
    ApiJson(body): ApiJson<FinishRegistrationRequest>,
) -> ApiResult<(StatusCode, Json<Data<RegisteredPasskey>>)> {
    let relying_party = state.relying_party()?;
    let mut errors = ValidationErrors::new();
    let credential = body.credential.filter(Value::is_object);
    if credential.is_none() {
        errors.add("credential", "required");
    }
    let name = credential_name(&mut errors, body.name);
    errors.into_result()?;
    let credential = credential.expect("checked above");
    let key_hash = credential_challenge_key(&credential).ok_or_else(invalid_credential)?;
    let answer = serde_json::from_value::<RegisterPublicKeyCredential>(credential)
        .map_err(|_| invalid_credential())?;
    let registration = take_ceremony::<PasskeyRegistration>(
        &state.database,
        &state.service_secret,
        &key_hash,
        REGISTER,
        Some(&caller.user_id),
        None,
    )
    .await?
    .ok_or_else(invalid_credential)?;
    let passkey = relying_party
        .webauthn
        .finish_passkey_registration(&answer, &registration)
        .map_err(|error| {
            tracing::info!(error = %error, "a passkey registration was refused");
            invalid_credential()
        })?;
    let id = Uuid::new_v4().to_string();
    let created_at = time::now();
    let mut tx = state.database.begin().await?;
    // One registration at a time per user, so parallel ones cannot pass the limit.
    store::webauthn::lock_user(&mut tx, &caller.user_id).await?;
    let count = store::webauthn::count_credentials_in(&mut tx, &caller.user_id).await?;
    if count >= i64::from(relying_party.max_credentials_per_user) {
        return Err(too_many_passkeys(relying_party));
    }
    let inserted = store::webauthn::insert_credential(
        &mut tx,
        &NewCredential {
            id: &id,
            user_id: &caller.user_id,
            credential_id: &credential_id_text(passkey.cred_id()),
            name: &name,
            passkey: &serde_json::to_string(&passkey).map_err(anyhow::Error::from)?,
            sign_count: counter_of(&passkey),
            created_at: &created_at,
        },
    )
    .await?;
    if !inserted {
        return Err(ApiError::Conflict(
            "This credential is registered already.".into(),
        ));
    }
    audit::record_in(
        &mut tx,
        &AuditEntry::new(AuditEvent::MfaEnabled)
            .caller(&caller)
            .origin(&origin)
            .detail("method", "webauthn")
            .detail("credential", id.clone()),
    )
    .await?;
    tx.commit().await?;
    Ok((
        StatusCode::CREATED,
        Json(Data {
            data: RegisteredPasskey {
                id,
                name,
                created_at,
            },
        }),
    ))
}

/// The caller's passkeys, oldest first.
#[utoipa::path(
    get,
    path = "/auth/api/v1/auth/mfa/webauthn/credentials",
    tag = "auth",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The caller's passkeys", body = Data<Vec<PasskeyCredential>>),
        (status = 401, description = "Unauthenticated"),
    )
)]
async fn list_credentials(
    State(state): State<AuthState>,
    _: tessera_http::extract::NoQuery,
    caller: Caller,
) -> ApiResult<Json<Data<Vec<PasskeyCredential>>>> {
    let credentials = store::webauthn::credentials(&state.database, &caller.user_id)
        .await?
        .into_iter()
        .map(|row| PasskeyCredential {
            id: row.id,
            name: row.name,
            created_at: row.created_at,
            last_used_at: row.last_used_at,
        })
        .collect();
    Ok(Json(Data { data: credentials }))
}

/// Deletes one of the caller's passkeys.
#[utoipa::path(
    delete,
    path = "/auth/api/v1/auth/mfa/webauthn/credentials/{id}",
    tag = "auth",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "The passkey's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 401, description = "Unauthenticated"),
        (status = 404, description = "The caller has no passkey of this id"),
    )
)]
async fn delete_credential(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let mut tx = state.database.begin().await?;
    if !store::webauthn::delete_credential(&mut tx, &caller.user_id, &id).await? {
        return Err(ApiError::not_found("Passkey"));
    }
    audit::record_in(
        &mut tx,
        &AuditEntry::new(AuditEvent::MfaDisabled)
            .caller(&caller)
            .origin(&origin)
            .detail("method", "webauthn")
            .detail("credential", id),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Request options for a login's second step with a passkey.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/mfa/webauthn/challenge",
    tag = "auth",
    request_body = SecondFactorChallengeRequest,
    responses(
        (status = 200, description = "Request options (`options.publicKey`) for `navigator.credentials.get()`; answer with `…/mfa/verify`", body = Data<CeremonyOptions>),
        (status = 401, description = "Unknown, expired or used mfa_token"),
        (status = 409, description = "The account has no passkey"),
        (status = 422, description = "Missing mfa_token"),
        (status = 503, description = "This host offers no passkeys"),
    )
)]
async fn second_factor_challenge(
    State(state): State<AuthState>,
    ApiJson(body): ApiJson<SecondFactorChallengeRequest>,
) -> ApiResult<Json<Data<CeremonyOptions>>> {
    let relying_party = state.relying_party()?;
    let mut errors = ValidationErrors::new();
    let mfa_token = errors.required("mfa_token", body.mfa_token);
    errors.into_result()?;
    let mfa_token_hash = hash_token(&mfa_token);
    let store::mfa::Challenge { user_id, .. } =
        store::mfa::challenge(&state.database, &mfa_token_hash, &time::now())
            .await?
            .ok_or(ApiError::Unauthenticated)?;
    let passkeys = passkeys_of(&state.database, &user_id).await?;
    if passkeys.is_empty() {
        return Err(ApiError::Conflict("This account has no passkey.".into()));
    }
    let (options, authentication) = relying_party
        .webauthn
        .start_passkey_authentication(&passkeys)
        .map_err(|error| anyhow::anyhow!("starting a passkey authentication: {error}"))?;
    let options = serde_json::to_value(options).map_err(anyhow::Error::from)?;
    let key_hash = options_challenge_key(&options)?;
    store_ceremony::<PasskeyAuthentication>(
        &state.database,
        &state.service_secret,
        &key_hash,
        SECOND_FACTOR,
        Some(&user_id),
        Some(&mfa_token_hash),
        &authentication,
    )
    .await?;
    Ok(Json(Data {
        data: CeremonyOptions { options },
    }))
}

/// Starts a sign-in without a password: request options for a discoverable credential.
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/passkey/start",
    tag = "auth",
    responses(
        (status = 200, description = "Request options (`options.publicKey`, no credentials listed) and the ceremony's `challenge_id`", body = Data<PasswordlessOptions>),
        (status = 503, description = "This host offers no passkeys"),
    )
)]
async fn start_passwordless(
    State(state): State<AuthState>,
    _: tessera_http::extract::NoQuery,
) -> ApiResult<Json<Data<PasswordlessOptions>>> {
    let relying_party = state.relying_party()?;
    let (options, authentication) = relying_party
        .webauthn
        .start_discoverable_authentication()
        .map_err(|error| anyhow::anyhow!("starting a passwordless sign-in: {error}"))?;
    let mut options = serde_json::to_value(options).map_err(anyhow::Error::from)?;
    // The client chooses how to ask (a button, or conditional mediation in an autofill field).
    if let Some(options) = options.as_object_mut() {
        options.remove("mediation");
    }
    let challenge_id = URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>());
    store_ceremony::<DiscoverableAuthentication>(
        &state.database,
        &state.service_secret,
        &hash_token(&challenge_id),
        PASSWORDLESS,
        None,
        None,
        &authentication,
    )
    .await?;
    Ok(Json(Data {
        data: PasswordlessOptions {
            options,
            challenge_id,
        },
    }))
}

/// Signs in with a discoverable passkey, as a login does (the passkey is both factors: user
/// verification is required).
#[utoipa::path(
    post,
    path = "/auth/api/v1/auth/passkey/finish",
    tag = "auth",
    request_body = FinishPasswordlessRequest,
    responses(
        (status = 200, description = "Token set and service map, as a login", body = TokenSetWithServices),
        (status = 401, description = "Unknown, used or expired challenge_id, an unknown credential, a wrong signature or a counter that did not advance (counts toward the lockout)"),
        (status = 422, description = "Missing challenge_id or credential, or a credential that is not a WebAuthn assertion"),
        (status = 429, description = "The account is locked after too many failures (`Retry-After`)"),
        (status = 503, description = "This host offers no passkeys"),
    )
)]
async fn finish_passwordless(
    State(state): State<AuthState>,
    origin: RequestOrigin,
    ApiJson(body): ApiJson<FinishPasswordlessRequest>,
) -> ApiResult<Response> {
    let relying_party = state.relying_party()?;
    let mut errors = ValidationErrors::new();
    let challenge_id = errors.required("challenge_id", body.challenge_id);
    let credential = body.credential.filter(Value::is_object);
    if credential.is_none() {
        errors.add("credential", "required");
    }
    errors.into_result()?;
    let answer = serde_json::from_value::<PublicKeyCredential>(credential.expect("checked above"))
        .map_err(|_| invalid_credential())?;
    let failed = |refusal: Refusal| {
        AuditEntry::new(AuditEvent::PasskeyFailed)
            .origin(&origin)
            .detail("reason", refusal.as_str())
    };
    let Some(ceremony) = take_ceremony::<DiscoverableAuthentication>(
        &state.database,
        &state.service_secret,
        &hash_token(challenge_id.trim()),
        PASSWORDLESS,
        None,
        None,
    )
    .await?
    else {
        audit::record(&state.database, &failed(Refusal::Invalid)).await?;
        return Err(ApiError::Unauthenticated);
    };
    // Which account the authenticator names: its user handle, and the credential under it.
    let identified = match relying_party
        .webauthn
        .identify_discoverable_authentication(&answer)
    {
        Ok((user_handle, credential_id)) => {
            let user =
                store::webauthn::user_of_handle(&state.database, &user_handle.to_string()).await?;
            let stored = store::webauthn::passkey_by_credential_id(
                &state.database,
                &credential_id_text(credential_id),
            )
            .await?;
            match (user, stored) {
                (Some((user_id, login)), Some(stored)) if stored.user_id == user_id => {
                    Some((user_id, login, stored))
                }
                _ => None,
            }
        }
        Err(_) => None,
    };
    let Some((user_id, login, stored)) = identified else {
        log_refusal(Refusal::Invalid, None);
        audit::record(&state.database, &failed(Refusal::Invalid)).await?;
        return Err(ApiError::Unauthenticated);
    };
    // A known account's failures show in its (first) tenant's trail.
    let failed = audit::entry_for_user(&state.database, AuditEvent::PasskeyFailed, &user_id)
        .await?
        .login(&login)
        .origin(&origin);
    // The answer is a guess at the account like a password: counted before it is checked.
    lockout::reserve_or_refuse(&state.database, &state.config, &login, failed.clone()).await?;
    let passkey: Passkey = serde_json::from_str(&stored.passkey).map_err(anyhow::Error::from)?;
    let result = relying_party
        .webauthn
        .finish_discoverable_authentication_v2(&answer, ceremony, &passkey);
    if let Err(refusal) = accept_result(&state.database, &user_id, result).await? {
        // The guess stays counted: its reservation is the failure.
        audit::record(&state.database, &failed.detail("reason", refusal.as_str())).await?;
        return Err(ApiError::Unauthenticated);
    }
    lockout::release(&state.database, &login, state.config.lockout_max_attempts).await?;
    let entry = AuditEntry::new(AuditEvent::PasskeyUsed).detail("credential", stored.id);
    signed_in(&state, &user_id, &login, &origin, entry).await
}
