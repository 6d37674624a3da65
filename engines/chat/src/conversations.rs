//! Conversations, messages and members (CONTRACT §7). They exist so that the subscribable
//! events really happen: each change commits with its webhook deliveries (`changes.rs`).
//!
//! Each change is also published to chat's realtime topics after it (`topics.rs`): messages
//! with their text to those who may read the conversation, unlike webhooks.
//!
//! Access: the default conversation is open to everyone in the tenant; another one to its
//! members and to owners. Writing needs a writer (owner or editor, not a guest token). A message
//! is edited by its author only and deleted by its author or an owner.

use serde::{Deserialize, Serialize};
use tessera_sdk::serde_json::{Map, Value};
use tessera_sdk::{
    ApiError, Context, CursorPage, HandlerResult, Request, Response, ValidationErrors, storage,
    tenancy, time,
};

use crate::batch::Batch;
use crate::changes;
use crate::events::ChatEvent;
use crate::topics;
use crate::{new_ordered_id, object_body};

/// Longest conversation title, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// Longest message body, in characters.
pub const MAX_BODY_CHARS: usize = 10_000;
/// Most members a conversation is created with.
pub const MAX_INITIAL_MEMBERS: usize = 500;
/// Most users one message notifies by mention.
pub const MAX_MENTIONS: usize = 20;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Conversation {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub slug: Option<String>,
    #[serde(default)]
    pub is_default: bool,
    pub member_ids: Vec<String>,
    pub created_by: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// `data` of `conversation.created` on `me`: the conversation without its members.
#[derive(Serialize)]
pub struct Joined<'a> {
    id: &'a str,
    title: &'a str,
    slug: Option<&'a str>,
    is_default: bool,
    created_by: Option<&'a str>,
    created_at: &'a str,
    updated_at: &'a str,
}

impl Conversation {
    /// What a user who joins it hears on `me` (`topics::joined`).
    pub fn joined(&self) -> Joined<'_> {
        Joined {
            id: &self.id,
            title: &self.title,
            slug: self.slug.as_deref(),
            is_default: self.is_default,
            created_by: self.created_by.as_deref(),
            created_at: &self.created_at,
            updated_at: &self.updated_at,
        }
    }

    /// The REST API's read rule, which realtime subscriptions follow too (`subscriptions.rs`).
    pub fn may_read(&self, ctx: &Context) -> bool {
        self.is_default || ctx.is_owner() || self.member_ids.contains(&ctx.user_id)
    }

    fn require_read(&self, ctx: &Context) -> Result<(), ApiError> {
        if self.may_read(ctx) {
            Ok(())
        } else {
            Err(ApiError::Forbidden)
        }
    }

    fn require_write(&self, ctx: &Context) -> Result<(), ApiError> {
        ctx.require_writer()?;
        self.require_read(ctx)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Message {
    pub id: String,
    pub conversation_id: String,
    pub author_id: String,
    pub body: String,
    pub created_at: String,
    pub updated_at: String,
}

fn conversation_key(id: &str) -> String {
    format!("conversations/{id}")
}

fn message_key(conversation_id: &str, message_id: &str) -> String {
    format!("messages/{conversation_id}/{message_id}")
}

fn load_conversation(id: &str) -> Result<Conversation, ApiError> {
    storage::get_json(&conversation_key(id))?.ok_or_else(|| ApiError::not_found("Conversation"))
}

fn load_message(conversation_id: &str, message_id: &str) -> Result<Message, ApiError> {
    storage::get_json(&message_key(conversation_id, message_id))?
        .ok_or_else(|| ApiError::not_found("Message"))
}

/// A required string field of `min..=max` characters (after trimming).
fn text_field(
    body: &Map<String, Value>,
    field: &str,
    max: usize,
    errors: &mut ValidationErrors,
) -> Option<String> {
    match body.get(field) {
        None | Some(Value::Null) => {
            errors.add(field, "required");
            None
        }
        Some(Value::String(text)) => {
            let text = text.trim();
            if text.is_empty() {
                errors.add(field, "required");
                None
            } else if text.chars().count() > max {
                errors.add(field, format!("max:{max}"));
                None
            } else {
                Some(text.to_owned())
            }
        }
        Some(_) => {
            errors.add(field, "string");
            None
        }
    }
}

/// True when `user_id` is a user provisioned in this tenant.
fn is_user(user_id: &str) -> Result<bool, ApiError> {
    Ok(!user_id.is_empty() && user_id.len() <= 100 && tenancy::user_record(user_id)?.is_some())
}

pub fn list(ctx: &Context, req: &Request) -> HandlerResult {
    let page = CursorPage::from_query(req.query(&["cursor", "limit"])?)?;
    // Conversations the caller may not read are skipped; pages stay full by reading on, up to
    // a bounded number of conversations per request (then a short page with a cursor).
    let found = storage::find_json::<Conversation, _, ApiError>(
        "conversations/",
        page.after.as_deref(),
        false,
        page.fetch_limit() as usize,
        storage::LIST_SCAN_BOUND,
        200,
        |key, conversation| Ok(conversation.may_read(ctx).then_some((key, conversation))),
    )?;
    let (rows, meta) = page.finish_found(found.items, |(key, _)| key.clone(), found.stopped_after);
    let conversations: Vec<Conversation> = rows
        .into_iter()
        .map(|(_, conversation)| conversation)
        .collect();
    Ok(Response::ok_with_meta(&conversations, &meta))
}

pub fn create(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    ctx.require_writer()?;
    let body = object_body(req)?;
    let mut errors = ValidationErrors::new();
    let title = text_field(&body, "title", MAX_TITLE_CHARS, &mut errors);
    let mut member_ids = vec![ctx.user_id.clone()];
    match body.get("member_ids") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) if items.len() <= MAX_INITIAL_MEMBERS => {
            for (index, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(user_id) if is_user(user_id)? => {
                        if !member_ids.iter().any(|member| member == user_id) {
                            member_ids.push(user_id.to_owned());
                        }
                    }
                    Some(_) => errors.add(format!("member_ids.{index}"), "exists"),
                    None => errors.add(format!("member_ids.{index}"), "string"),
                }
            }
        }
        Some(Value::Array(_)) => errors.add("member_ids", format!("max:{MAX_INITIAL_MEMBERS}")),
        Some(_) => errors.add("member_ids", "array"),
    }
    errors.into_result()?;
    let now = time::now_rfc3339();
    let conversation = Conversation {
        id: new_ordered_id(),
        title: title.expect("validated"),
        slug: None,
        is_default: false,
        member_ids,
        created_by: Some(ctx.user_id.clone()),
        created_at: now.clone(),
        updated_at: now,
    };
    let mut batch = Batch::new();
    batch.put(conversation_key(&conversation.id), &conversation)?;
    let event = ChatEvent::new("conversation.created", &conversation.id).user(&ctx.user_id);
    changes::commit_with(batch, &ctx.tenant_id, &[event])?;
    topics::joined(&conversation.joined(), &conversation.member_ids)?;
    Ok(Response::created(&conversation))
}

pub fn show(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    let conversation = load_conversation(req.param("id"))?;
    conversation.require_read(ctx)?;
    Ok(Response::ok(&conversation))
}

pub fn update(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    let mut conversation = load_conversation(req.param("id"))?;
    conversation.require_write(ctx)?;
    let body = object_body(req)?;
    let mut errors = ValidationErrors::new();
    let title = text_field(&body, "title", MAX_TITLE_CHARS, &mut errors);
    errors.into_result()?;
    conversation.title = title.expect("validated");
    conversation.updated_at = time::now_rfc3339();
    let mut batch = Batch::new();
    batch.put(conversation_key(&conversation.id), &conversation)?;
    let event = ChatEvent::new("conversation.updated", &conversation.id).user(&ctx.user_id);
    changes::commit_with(batch, &ctx.tenant_id, &[event])?;
    Ok(Response::ok(&conversation))
}

pub fn messages(ctx: &Context, req: &Request) -> HandlerResult {
    let page = CursorPage::from_query(req.query(&["cursor", "limit"])?)?;
    let conversation = load_conversation(req.param("id"))?;
    conversation.require_read(ctx)?;
    let (rows, meta) =
        storage::page_json::<Message>(&format!("messages/{}/", conversation.id), &page, false)?;
    let messages: Vec<Message> = rows.into_iter().map(|(_, message)| message).collect();
    Ok(Response::ok_with_meta(&messages, &meta))
}

/// The users a message mentions with `@<user_id>`: provisioned users of the tenant other than
/// the author, each once, at most [`MAX_MENTIONS`].
fn mentions(body: &str, author_id: &str) -> Result<Vec<String>, ApiError> {
    let mut found: Vec<String> = Vec::new();
    for (index, _) in body.match_indices('@') {
        let candidate: String = body[index + 1..]
            .chars()
            .take_while(|c| c.is_ascii_hexdigit() || *c == '-')
            .collect();
        if candidate.len() != 36 || candidate == author_id || found.contains(&candidate) {
            continue;
        }
        if is_user(&candidate)? {
            found.push(candidate);
            if found.len() == MAX_MENTIONS {
                break;
            }
        }
    }
    Ok(found)
}

pub fn post_message(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    let conversation = load_conversation(req.param("id"))?;
    conversation.require_write(ctx)?;
    let body = object_body(req)?;
    let mut errors = ValidationErrors::new();
    let text = text_field(&body, "body", MAX_BODY_CHARS, &mut errors);
    errors.into_result()?;
    let now = time::now_rfc3339();
    let message = Message {
        id: new_ordered_id(),
        conversation_id: conversation.id.clone(),
        author_id: ctx.user_id.clone(),
        body: text.expect("validated"),
        created_at: now.clone(),
        updated_at: now,
    };
    let mut chat_events = vec![
        ChatEvent::new("message.created", &conversation.id)
            .message(&message.id)
            .user(&ctx.user_id),
    ];
    for mentioned in mentions(&message.body, &ctx.user_id)? {
        chat_events.push(
            ChatEvent::new("notification.created", &conversation.id)
                .message(&message.id)
                .user(&mentioned),
        );
    }
    let mut batch = Batch::new();
    batch.put(message_key(&conversation.id, &message.id), &message)?;
    changes::commit_with(batch, &ctx.tenant_id, &chat_events)?;
    topics::message("message.created", &message.conversation_id, &message)?;
    Ok(Response::created(&message))
}

pub fn edit_message(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    let conversation = load_conversation(req.param("id"))?;
    conversation.require_write(ctx)?;
    let mut message = load_message(&conversation.id, req.param("message_id"))?;
    if message.author_id != ctx.user_id {
        return Err(ApiError::Forbidden);
    }
    let body = object_body(req)?;
    let mut errors = ValidationErrors::new();
    let text = text_field(&body, "body", MAX_BODY_CHARS, &mut errors);
    errors.into_result()?;
    message.body = text.expect("validated");
    message.updated_at = time::now_rfc3339();
    let mut batch = Batch::new();
    batch.put(message_key(&conversation.id, &message.id), &message)?;
    let event = ChatEvent::new("message.updated", &conversation.id)
        .message(&message.id)
        .user(&ctx.user_id);
    changes::commit_with(batch, &ctx.tenant_id, &[event])?;
    topics::message("message.updated", &message.conversation_id, &message)?;
    Ok(Response::ok(&message))
}

pub fn delete_message(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    let conversation = load_conversation(req.param("id"))?;
    conversation.require_write(ctx)?;
    let message = load_message(&conversation.id, req.param("message_id"))?;
    if message.author_id != ctx.user_id && !ctx.is_owner() {
        return Err(ApiError::Forbidden);
    }
    let mut batch = Batch::new();
    batch.delete(message_key(&conversation.id, &message.id));
    let event = ChatEvent::new("message.deleted", &conversation.id)
        .message(&message.id)
        .user(&ctx.user_id);
    changes::commit_with(batch, &ctx.tenant_id, &[event])?;
    topics::message("message.deleted", &message.conversation_id, &message)?;
    Ok(Response::no_content())
}

#[derive(Serialize)]
struct Membership<'a> {
    conversation_id: &'a str,
    user_id: &'a str,
    member_ids: &'a [String],
}

pub fn add_member(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    let mut conversation = load_conversation(req.param("id"))?;
    conversation.require_write(ctx)?;
    let body = object_body(req)?;
    let user_id = match body.get("user_id") {
        None | Some(Value::Null) => return Err(ApiError::invalid("user_id", "required")),
        Some(Value::String(user_id)) if is_user(user_id)? => user_id.clone(),
        Some(Value::String(_)) => return Err(ApiError::invalid("user_id", "exists")),
        Some(_) => return Err(ApiError::invalid("user_id", "string")),
    };
    if conversation.member_ids.contains(&user_id) {
        return Err(ApiError::Conflict(
            "The user is already a member of the conversation.".into(),
        ));
    }
    conversation.member_ids.push(user_id.clone());
    conversation.updated_at = time::now_rfc3339();
    let mut batch = Batch::new();
    batch.put(conversation_key(&conversation.id), &conversation)?;
    let event = ChatEvent::new("member.added", &conversation.id).user(&user_id);
    changes::commit_with(batch, &ctx.tenant_id, &[event])?;
    topics::member_added(&conversation.id, &conversation.joined(), &user_id)?;
    Ok(Response::created(&Membership {
        conversation_id: &conversation.id,
        user_id: &user_id,
        member_ids: &conversation.member_ids,
    }))
}

pub fn remove_member(ctx: &Context, req: &Request) -> HandlerResult {
    req.query(&[])?;
    let mut conversation = load_conversation(req.param("id"))?;
    conversation.require_write(ctx)?;
    let user_id = req.param("user_id").to_owned();
    let Some(position) = conversation
        .member_ids
        .iter()
        .position(|member| *member == user_id)
    else {
        return Err(ApiError::not_found("Member"));
    };
    conversation.member_ids.remove(position);
    conversation.updated_at = time::now_rfc3339();
    let mut batch = Batch::new();
    batch.put(conversation_key(&conversation.id), &conversation)?;
    let event = ChatEvent::new("member.removed", &conversation.id).user(&user_id);
    changes::commit_with(batch, &ctx.tenant_id, &[event])?;
    topics::member_removed(&conversation.id, &user_id)?;
    Ok(Response::no_content())
}
