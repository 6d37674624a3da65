//! Test engine `legacy-v0-2`: a component of the frozen `tessera:engine@0.2.0` world
//! (`wit/v0.2/engine.wit`), made with `wit-bindgen` alone, as an engine built before 0.3 was:
//! it exports no `describe-topics` or `authorize-subscription` and imports no `realtime`.
//!
//! - `GET /api/v1/hello` → 200 `{"data":{"world":"0.2.0","tenant_id":…,"counter":N,"greeting":…}}`:
//!   the counter counts this tenant's calls in storage (the 0.2 imports reach the host), and
//!   `greeting` is its own setting `greeting` (declared with `describe-settings`, default
//!   `hello`).
//! - anything else → 404 `{"message":"Not found."}`
//!
//! It describes its one route (`describe-api`) and asks for no permission.

wit_bindgen::generate!({
    path: "../../../wit/v0.2",
    world: "tessera:engine/engine@0.2.0",
});

use exports::tessera::engine::guest::{
    Caller, Descriptor, Event, Guest, Job, Permission, Request, Response, Setting, TenantInfo,
    UserInfo,
};
use tessera::engine::types::SettingKind;
use tessera::engine::{settings, storage};

struct LegacyV02;

fn json_response(status: u16, body: String) -> Response {
    Response {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.into_bytes(),
    }
}

impl Guest for LegacyV02 {
    fn describe() -> Descriptor {
        Descriptor {
            code: "legacy-v0-2".into(),
            name: "Legacy 0.2".into(),
            version: "0.2.0".into(),
            requires_tenant_provision: false,
            requires_user_provision: false,
            subscriptions: Vec::new(),
            outbound_hosts: Vec::new(),
        }
    }

    fn describe_api() -> String {
        r#"{"paths":{"/api/v1/hello":{"get":{"summary":"Count this call and greet","responses":{"200":{"description":"The world, the tenant, the count of calls and the greeting"}}}}}}"#.into()
    }

    fn describe_settings() -> Vec<Setting> {
        vec![Setting {
            name: "greeting".into(),
            kind: SettingKind::Text,
            default_value: Some("hello".into()),
            description: "What GET /api/v1/hello answers as its greeting.".into(),
            secret: false,
        }]
    }

    fn describe_permissions() -> Vec<Permission> {
        Vec::new()
    }

    fn handle(caller: Caller, request: Request) -> Response {
        if request.method != "GET" || request.path != "/api/v1/hello" {
            return json_response(404, r#"{"message":"Not found."}"#.into());
        }
        let counter = storage::get("counter")
            .ok()
            .flatten()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .and_then(|text| text.parse::<u64>().ok())
            .unwrap_or(0)
            + 1;
        if let Err(error) = storage::set("counter", counter.to_string().as_bytes()) {
            return json_response(500, format!(r#"{{"message":{error:?}}}"#));
        }
        let greeting = settings::get("greeting").unwrap_or_default();
        json_response(
            200,
            format!(
                r#"{{"data":{{"world":"0.2.0","tenant_id":{:?},"counter":{counter},"greeting":{greeting:?}}}}}"#,
                caller.tenant_id
            ),
        )
    }

    fn provision_tenant(_tenant: TenantInfo) -> Result<(), String> {
        Ok(())
    }

    fn deprovision_tenant(_tenant_id: String) -> Result<(), String> {
        Ok(())
    }

    fn provision_user(_user: UserInfo) -> Result<(), String> {
        Ok(())
    }

    fn deprovision_user(_tenant_id: String, _user_id: String) -> Result<(), String> {
        Ok(())
    }

    fn on_event(_event: Event) -> Result<(), String> {
        Ok(())
    }

    fn run_job(_job: Job) -> Result<(), String> {
        Ok(())
    }
}

export!(LegacyV02);
