//! Realtime over a cluster (CONTRACT §9): three `tessera serve` hosts on one PostgreSQL
//! database, WebSocket subscribers to `core.timeline` spread over them (Python's `websockets`,
//! `tests/realtime/client.py`), tasks created through every host at once. Each subscriber
//! receives every event once, in the log's reading order (the cursors' order), whichever host
//! wrote it, a write that commits after later ones included; a host SIGKILLed while writes go
//! on drops only its own connections, whose clients resume on the other hosts from their last
//! cursor with nothing missed and nothing twice.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use sqlx::PgPool;
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

use crate::cluster::{Cluster, owner_token};
use crate::components::{repository, target_dir};
use crate::helpers::eventually;

const TOPIC: &str = "core.timeline";
/// The host the test kills.
const KILLED: usize = 2;
/// A publisher's pause between two writes.
const PACE: Duration = Duration::from_millis(20);

fn python() -> PathBuf {
    let python = target_dir().join("polyglot/python-venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: `cargo xtask test` installs it with websockets and httpx-sse",
        python.display()
    );
    python
}

/// A Python WebSocket client subscribed to the timeline on one host; every line it prints is
/// collected as it arrives (so it never waits on a full pipe).
struct Subscriber {
    host: usize,
    frames: Arc<Mutex<Vec<Value>>>,
    _child: Child,
}

impl Subscriber {
    fn start(cluster: &Cluster, host: usize, token: &str, since: Option<&str>) -> Self {
        let url = cluster.hosts[host]
            .url("/core/api/v1/realtime")
            .replacen("http://", "ws://", 1);
        let mut command = Command::new(python());
        command
            .arg(repository().join("tests/realtime/client.py"))
            .args(["ws", &url, "--token", token, "--timeout", "600"]);
        if let Some(cursor) = since {
            command.args(["--since", cursor]);
        }
        let mut child = command
            .arg(TOPIC)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("starting the Python realtime client");
        let stdout = child.stdout.take().unwrap();
        let frames: Arc<Mutex<Vec<Value>>> = Arc::default();
        let collected = frames.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let frame = serde_json::from_str(&line).unwrap_or(json!({ "not_json": line }));
                collected.lock().unwrap().push(frame);
            }
        });
        Self {
            host,
            frames,
            _child: child,
        }
    }

    fn frames(&self) -> Vec<Value> {
        self.frames.lock().unwrap().clone()
    }

    fn events(&self) -> Vec<Value> {
        self.frames()
            .into_iter()
            .filter(|frame| frame["op"] == "event")
            .collect()
    }

    /// The timeline items' ids, in the order received.
    fn ids(&self) -> Vec<String> {
        self.events()
            .iter()
            .map(|event| event["data"]["id"].as_str().unwrap().to_owned())
            .collect()
    }

    fn last_cursor(&self) -> Option<String> {
        self.events()
            .last()
            .map(|event| event["cursor"].as_str().unwrap().to_owned())
    }

    /// How the connection ended (`{"closed": code}`, a timeout…), if it did.
    fn ended(&self) -> Option<Value> {
        self.frames()
            .into_iter()
            .find(|frame| frame.get("op").is_none())
    }

    /// Frames other than `subscribed` and events: errors, an end.
    fn unexpected(&self) -> Vec<Value> {
        self.frames()
            .into_iter()
            .filter(|frame| !matches!(frame["op"].as_str(), Some("subscribed" | "event")))
            .collect()
    }

    async fn subscribed(&self) {
        let host = self.host;
        eventually(30, "the subscription to be confirmed", || async {
            let frames = self.frames();
            assert!(
                frames.iter().all(|frame| frame["op"] != "error"),
                "host {host}: {frames:?}"
            );
            frames
                .iter()
                .any(|frame| *frame == json!({"op": "subscribed", "topic": TOPIC}))
                .then_some(())
        })
        .await;
    }

    /// Waits until the client has received the event `id`.
    async fn reaches(&self, id: &str, what: &str) {
        eventually(60, what, || async {
            self.ids()
                .iter()
                .any(|received| received == id)
                .then_some(())
        })
        .await;
    }
}

/// One timeline event of the log.
#[derive(Debug, Clone, sqlx::FromRow)]
struct Logged {
    id: String,
    entity_id: Option<String>,
    event_type: String,
}

/// The tenant's timeline events as the log holds them now, in its reading order
/// `(transaction_id, position)`: the order of the cursors.
async fn timeline_in_log(pool: &PgPool, tenant_id: &str) -> Vec<Logged> {
    sqlx::query_as(
        "SELECT id, entity_id, event_type FROM event_log
         WHERE tenant_id = $1 AND event_type LIKE 'entity.%'
         ORDER BY transaction_id, position",
    )
    .bind(tenant_id)
    .fetch_all(pool)
    .await
    .unwrap()
}

fn ids_of(log: &[Logged]) -> Vec<String> {
    log.iter().map(|event| event.id.clone()).collect()
}

/// `received` is the log from some event on, without a gap or a repeat, in the log's order,
/// and starts no later than `subscribed_at`: the length of the log when it subscribed (what
/// was written after the subscription is all there).
fn assert_log_from_subscription(
    received: &[String],
    log: &[String],
    subscribed_at: usize,
    who: &str,
) {
    let distinct: HashSet<&String> = received.iter().collect();
    assert_eq!(
        distinct.len(),
        received.len(),
        "{who} received an event twice"
    );
    let start = match received.first() {
        Some(first) => log
            .iter()
            .position(|id| id == first)
            .unwrap_or_else(|| panic!("{who} received {first}, which the log does not hold")),
        None => log.len(),
    };
    assert!(
        start <= subscribed_at,
        "{who} missed the first {} events written after it subscribed",
        start - subscribed_at
    );
    let expected = &log[start..];
    if let Some(at) =
        (0..received.len().max(expected.len())).find(|at| received.get(*at) != expected.get(*at))
    {
        panic!(
            "{who} received {} events, the log holds {} from its first; the first difference is \
             at {at}: received {:?}, the log has {:?}",
            received.len(),
            expected.len(),
            received.get(at),
            expected.get(at)
        );
    }
}

/// Creates tasks through the hosts in turn, starting at `first`: `count` of them, or until
/// `stop`. Once `killed` is set, the killed host is skipped; a request it never answered is
/// not acknowledged (it may have committed, or not). The acknowledged tasks' entity ids, each
/// with whether the host was killed when it was sent.
async fn publish(
    client: reqwest::Client,
    bases: Arc<Vec<String>>,
    token: String,
    first: usize,
    count: Option<usize>,
    stop: CancellationToken,
    killed: Arc<AtomicBool>,
) -> Vec<(String, bool)> {
    let mut acknowledged = Vec::new();
    let mut turn = first;
    while !stop.is_cancelled() && count.is_none_or(|count| acknowledged.len() < count) {
        let host = turn % bases.len();
        turn += 1;
        let after_kill = killed.load(Ordering::SeqCst);
        if after_kill && host == KILLED {
            continue;
        }
        let sent = client
            .post(format!("{}/core/api/v1/intentions", bases[host]))
            .bearer_auth(&token)
            .json(&json!({"type": "entity.create", "payload": {
                "family": "task", "fields": {"title": format!("Task {first}-{turn}")}}}))
            .send()
            .await;
        let answer = match sent {
            Ok(response) => {
                let status = response.status().as_u16();
                response.json::<Value>().await.map(|body| (status, body))
            }
            Err(error) => Err(error),
        };
        let (status, body) = match answer {
            Ok(answer) => answer,
            Err(error) => {
                assert_eq!(host, KILLED, "a write through host {host} failed: {error}");
                continue;
            }
        };
        assert_eq!(status, 200, "a write through host {host}: {body}");
        let entity_id = body["data"]["entity_id"].as_str().unwrap().to_owned();
        acknowledged.push((entity_id, after_kill));
        tokio::time::sleep(PACE).await;
    }
    acknowledged
}

/// Every acknowledged task's creation is in the log.
fn assert_acknowledged_in_log(acknowledged: &[(String, bool)], log: &[Logged]) {
    let created: HashSet<&str> = log
        .iter()
        .filter(|event| event.event_type == "entity.created")
        .filter_map(|event| event.entity_id.as_deref())
        .collect();
    for (entity_id, _) in acknowledged {
        assert!(
            created.contains(entity_id.as_str()),
            "task {entity_id} is not in the log"
        );
    }
}

#[tokio::test]
async fn subscribers_over_three_hosts_get_every_event_once_and_a_killed_hosts_resume_elsewhere() {
    let Some(mut cluster) = Cluster::start(3, &[], &[]).await else {
        return;
    };
    let token = owner_token(&cluster.database, &cluster.hosts[0].url("")).await;
    let client = reqwest::Client::new();
    for host in &cluster.hosts {
        let answer = client
            .get(host.url("/core/api/v1/timeline"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "the token on {}", host.address());
    }
    let database = cluster.database.connect().await;
    let tessera_host::storage::Pool::Postgres(pool) = database.pool() else {
        unreachable!("a cluster runs on PostgreSQL")
    };
    let tenant_id: String = sqlx::query_scalar("SELECT id FROM tenants WHERE slug = 'acme'")
        .fetch_one(pool)
        .await
        .unwrap();
    let bases: Arc<Vec<String>> = Arc::new(cluster.hosts.iter().map(|host| host.url("")).collect());

    // Two subscribers on each host: 0, 1, 2, 0, 1, 2.
    let subscribers: Vec<Subscriber> = (0..6)
        .map(|index| Subscriber::start(&cluster, index % 3, &token, None))
        .collect();
    for subscriber in &subscribers {
        subscriber.subscribed().await;
    }
    let subscribed_at = timeline_in_log(pool, &tenant_id).await.len();

    // A write still in flight while the hosts commit later ones: a transaction of the test's
    // own takes its transaction id (its place in the log's reading order) first, and appends
    // a task's creation after everything below has committed.
    let mut straggler = database.begin().await.unwrap();
    let _transaction_id: String = tessera_host::on_tx!(&mut straggler, conn => sqlx::query_scalar(
        "SELECT pg_current_xact_id()::text",
    )
    .fetch_one(&mut **conn)
    .await
    .unwrap());

    // Three publishers at once, each through the three hosts in turn: concurrent
    // transactions of every host, interleaved in the log.
    let killed = Arc::new(AtomicBool::new(false));
    let mut publishers = tokio::task::JoinSet::new();
    for first in 0..3 {
        publishers.spawn(publish(
            client.clone(),
            bases.clone(),
            token.clone(),
            first,
            Some(10),
            CancellationToken::new(),
            killed.clone(),
        ));
    }
    let acknowledged: Vec<(String, bool)> = publishers.join_all().await.concat();
    assert_eq!(acknowledged.len(), 30);
    // Nothing is sent ahead of the open transaction, whose event will come first.
    tokio::time::sleep(Duration::from_secs(1)).await;
    for (index, subscriber) in subscribers.iter().enumerate() {
        let ahead = subscriber.ids().len();
        assert_eq!(
            ahead, 0,
            "subscriber {index} received {ahead} events ahead of one still to commit"
        );
    }
    let late_task = uuid::Uuid::new_v4().to_string();
    let now = tessera_host::storage::time::now();
    let created = tessera_host::core::events::DomainEvent::Created {
        entity_id: late_task.clone(),
        family: "task".into(),
        timestamp: now.clone(),
    };
    let context = tessera_host::core::events::EventContext {
        tenant_id: tenant_id.clone(),
        ..Default::default()
    };
    tessera_host::core::events::append(&mut straggler, &context, &[created.to_new_event()], &now)
        .await
        .unwrap();
    straggler.commit().await.unwrap();
    let log = timeline_in_log(pool, &tenant_id).await;
    assert_eq!(
        log[0].entity_id.as_deref(),
        Some(late_task.as_str()),
        "the late task's creation is first in the log's order"
    );
    assert_acknowledged_in_log(&acknowledged, &log);
    let log = ids_of(&log);
    for (index, subscriber) in subscribers.iter().enumerate() {
        let who = format!("subscriber {index} on host {}", subscriber.host);
        subscriber
            .reaches(
                log.last().unwrap(),
                &format!("{who} to receive the last event"),
            )
            .await;
        assert_log_from_subscription(&subscriber.ids(), &log, subscribed_at, &who);
    }

    // Writes go on through every host; host 2 is SIGKILLed among them.
    let stop = CancellationToken::new();
    let mut publishers = tokio::task::JoinSet::new();
    for first in 0..3 {
        publishers.spawn(publish(
            client.clone(),
            bases.clone(),
            token.clone(),
            first,
            None,
            stop.clone(),
            killed.clone(),
        ));
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    cluster.hosts[KILLED].kill();
    killed.store(true, Ordering::SeqCst);
    let orphans: Vec<usize> = (0..subscribers.len())
        .filter(|index| subscribers[*index].host == KILLED)
        .collect();
    for &index in &orphans {
        let ended = eventually(10, "the killed host's connection to drop", || async {
            subscribers[index].ended()
        })
        .await;
        // Cut, not closed: no close frame from a killed host.
        assert_eq!(ended, json!({"closed": null}), "subscriber {index}");
    }
    // They stay away while writes go on, then resume on the hosts left from their last
    // cursor.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let written_meanwhile = ids_of(&timeline_in_log(pool, &tenant_id).await);
    let mut resumed = Vec::new();
    for (turn, &index) in orphans.iter().enumerate() {
        let before = subscribers[index].ids();
        assert!(
            written_meanwhile.iter().any(|id| !before.contains(id)),
            "subscriber {index} missed nothing while away: nothing to resume"
        );
        let cursor = subscribers[index].last_cursor().unwrap();
        let host = turn % 2;
        resumed.push((
            index,
            Subscriber::start(&cluster, host, &token, Some(&cursor)),
        ));
    }
    for (_, subscriber) in &resumed {
        subscriber.subscribed().await;
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    stop.cancel();
    let acknowledged: Vec<(String, bool)> = publishers.join_all().await.concat();
    let after_kill = acknowledged
        .iter()
        .filter(|(_, after_kill)| *after_kill)
        .count();
    assert!(
        after_kill > 10,
        "too few writes after the kill: {after_kill}"
    );
    let log = timeline_in_log(pool, &tenant_id).await;
    assert_acknowledged_in_log(&acknowledged, &log);
    let log = ids_of(&log);
    let last = log.last().unwrap();

    // The other hosts' subscribers were never disturbed and have it all.
    for (index, subscriber) in subscribers.iter().enumerate() {
        if subscriber.host == KILLED {
            continue;
        }
        let who = format!("subscriber {index} on host {}", subscriber.host);
        subscriber
            .reaches(last, &format!("{who} to receive the last event"))
            .await;
        assert_eq!(subscriber.unexpected(), Vec::<Value>::new(), "{who}");
        assert_log_from_subscription(&subscriber.ids(), &log, subscribed_at, &who);
    }
    // The killed host's: what they received there, then from their cursor on another host.
    for (index, subscriber) in &resumed {
        let who = format!("subscriber {index}, resumed on host {}", subscriber.host);
        subscriber
            .reaches(last, &format!("{who} to receive the last event"))
            .await;
        assert_eq!(
            subscribers[*index].unexpected(),
            [json!({"closed": null})],
            "{who}"
        );
        assert_eq!(subscriber.unexpected(), Vec::<Value>::new(), "{who}");
        let mut received = subscribers[*index].ids();
        received.extend(subscriber.ids());
        assert_log_from_subscription(&received, &log, subscribed_at, &who);
    }

    // A cursor names the same event on every host.
    let mut cursors: HashMap<String, String> = HashMap::new();
    let every = subscribers
        .iter()
        .chain(resumed.iter().map(|(_, subscriber)| subscriber));
    for subscriber in every {
        for event in subscriber.events() {
            let id = event["data"]["id"].as_str().unwrap().to_owned();
            let cursor = event["cursor"].as_str().unwrap().to_owned();
            let known = cursors.entry(id.clone()).or_insert_with(|| cursor.clone());
            assert_eq!(*known, cursor, "the cursors of {id}");
        }
    }
}
