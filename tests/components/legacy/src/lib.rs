//! Test engine `legacy`: a component of the frozen `tessera:engine@0.1.0` world
//! (`wit/v0.1/engine.wit`), made with `wit-bindgen` alone, as an engine built before 0.2 was.
//!
//! - `GET /api/v1/hello` → 200 `{"data":{"world":"0.1.0","tenant_id":…,"counter":N,"scan_page":…}}`:
//!   the counter counts this tenant's calls in storage (the 0.1 imports reach the host), and
//!   `scan_page` is the host setting `storage.scan-page`.
//! - anything else → 404 `{"message":"Not found."}`

wit_bindgen::generate!({
    path: "../../../wit/v0.1",
    world: "tessera:engine/engine@0.1.0",
});

use exports::tessera::engine::guest::{
    Caller, Descriptor, Event, Guest, Job, Request, Response, TenantInfo, UserInfo,
};
use tessera::engine::{settings, storage};

struct Legacy;

fn json_response(status: u16, body: String) -> Response {
    Response {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.into_bytes(),
    }
}

impl Guest for Legacy {
    fn describe() -> Descriptor {
        Descriptor {
            code: "legacy".into(),
            name: "Legacy".into(),
            version: "0.1.0".into(),
            requires_tenant_provision: false,
            requires_user_provision: false,
            subscriptions: Vec::new(),
            outbound_hosts: Vec::new(),
        }
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
        let scan_page = settings::get("storage.scan-page").unwrap_or_default();
        json_response(
            200,
            format!(
                r#"{{"data":{{"world":"0.1.0","tenant_id":{:?},"counter":{counter},"scan_page":{scan_page:?}}}}}"#,
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

export!(Legacy);
