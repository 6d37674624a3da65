// Webhooks (owners): the list and a form to add one, a webhook's page (its recent deliveries
// with their attempts and errors, updated live through the chat engine's realtime topic
// `chat.webhook.<id>`, a test ping, re-enable after automatic disabling, delete), and the dead
// letter queue with replay. All through the chat engine's public endpoints.

import { api } from "./api.js";
import {
  actionButton, badge, checkboxes, field, form, h, notice, replace, table, tableRow, when,
} from "./dom.js";
import { follow } from "./realtime.js";

const BASE = "/chat/api/v1/webhooks";

/** The event types a chat webhook may subscribe to (API spec, "Chat webhook events"). */
const EVENTS = [
  "message.created", "message.updated", "message.deleted", "notification.created",
  "conversation.created", "conversation.updated", "member.added", "member.removed",
];

function activeBadge(webhook) {
  return webhook.is_active ? badge("active", "ok") : badge("disabled", "bad");
}

function deliveryBadge(status) {
  return badge(status, { delivered: "ok", failed: "bad", pending: "warn" }[status]);
}

function randomSecret() {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

function webhookTable(webhooks) {
  return table({
    caption: "Webhooks of this tenant",
    columns: ["Receiver", "Events", "State", "Created"],
    rows: webhooks.map((webhook) => [
      h("a", { href: `#/webhooks/${encodeURIComponent(webhook.id)}` }, webhook.url),
      webhook.events.join(", "),
      activeBadge(webhook),
      when(webhook.created_at),
    ]),
    empty: "No webhooks yet.",
  });
}

export async function list() {
  const listed = h("div", {}, webhookTable((await api("GET", BASE)).data));
  const created = h("div", {});
  const secretField = field({
    name: "secret", label: "Signing secret", value: randomSecret(), required: true, minlength: 32,
    hint: "At least 32 characters. Shown once: keep it where the receiver checks signatures.",
  });
  const addForm = form({
    label: "Add a webhook",
    className: "card",
    fields: [
      h("h2", {}, "Add a webhook"),
      field({ name: "url", label: "Receiver URL", type: "url", required: true, placeholder: "https://", hint: "HTTPS only." }),
      checkboxes({ name: "events", legend: "Events", choices: EVENTS.map((event) => [event, event]), checked: ["message.created"] }),
      secretField,
    ],
    submitText: "Add webhook",
    submit: async (values) => {
      const webhook = (await api("POST", BASE, { body: values })).data;
      replace(created, h("div", { class: "card", role: "status" },
        h("p", {}, "Webhook added. Its signing secret, shown this once:"),
        h("p", { class: "secret mono", "data-testid": "webhook-secret" }, webhook.secret),
        h("a", { href: `#/webhooks/${encodeURIComponent(webhook.id)}` }, "Open the webhook")));
      secretField.querySelector("input").value = randomSecret();
      replace(listed, webhookTable((await api("GET", BASE)).data));
      return "Webhook added.";
    },
  });
  return [
    h("h1", {}, "Webhooks"),
    listed,
    created,
    addForm,
    h("p", {}, h("a", { href: "#/dead-letters" }, "Dead letter queue")),
  ];
}

const DELIVERY_COLUMNS = ["Event", "Status", "Attempt", "Response", "Time", "Next retry", "Created", ""];

/** What the page says of its live updates, by the connection's state. */
const LIVE_STATES = {
  connecting: "Connecting for live updates…",
  live: "New deliveries and their attempts appear here as they happen.",
  reconnecting: "Live updates interrupted: reconnecting…",
  ended: "Live updates stopped: open this page again to see new deliveries.",
};

export async function detail({ params, query, navigate, refresh, onLeave }) {
  const id = encodeURIComponent(params.id);
  const status = query.get("status") ?? "";
  const cursor = query.get("cursor");
  const readDeliveries = () =>
    api("GET", `${BASE}/${id}/deliveries`, { query: { status, cursor, limit: 50 } });
  const [webhook, deliveries] = await Promise.all([
    api("GET", `${BASE}/${id}`).then((answer) => answer.data),
    readDeliveries(),
  ]);
  const region = notice();
  const actions = h("div", { class: "actions" },
    actionButton("Send a test ping", region, async () => {
      const result = (await api("POST", `${BASE}/${id}/test`)).data;
      await refresh(`Test ping ${result.status} (receiver answered ${result.response_code || "nothing"}).`);
    }),
    webhook.is_active
      ? actionButton("Disable", region, async () => {
          await api("PATCH", `${BASE}/${id}`, { body: { is_active: false } });
          refresh();
        }, { class: "secondary" })
      : actionButton("Re-enable", region, async () => {
          await api("PATCH", `${BASE}/${id}`, { body: { is_active: true } });
          refresh();
        }),
    actionButton("Delete", region, async () => {
      if (!window.confirm("Delete this webhook, its pending deliveries and its history?")) return undefined;
      await api("DELETE", `${BASE}/${id}`);
      navigate("/webhooks");
      return undefined;
    }, { class: "danger" }));
  const filter = h("select", { id: "delivery-status", name: "status" },
    [["", "All"], ["delivered", "Delivered"], ["failed", "Failed"], ["pending", "Pending"]]
      .map(([value, text]) => h("option", { value, selected: value === status }, text)));
  filter.addEventListener("change", () => navigate(`/webhooks/${params.id}`, { status: filter.value }));
  const next = deliveries.meta?.next_cursor;

  const row = (delivery) => tableRow([
    delivery.event,
    deliveryBadge(delivery.status),
    delivery.attempt,
    delivery.response_code ? String(delivery.response_code) : "no response",
    `${delivery.response_time_ms} ms`,
    when(delivery.next_retry_at),
    when(delivery.created_at),
    delivery.status === "delivered" ? "" : actionButton("Resend", region, async () => {
      const result = (await api("POST", `${BASE}/${id}/deliveries/${encodeURIComponent(delivery.id)}/retry`)).data;
      await refresh(`Resent: ${result.status} (receiver answered ${result.response_code || "nothing"}).`);
    }, { class: "secondary", "aria-label": `Resend delivery ${delivery.id}` }),
  ], { "data-delivery-id": delivery.id, "data-status": delivery.status });
  const deliveryTable = (rows) => table({
    caption: "Deliveries, newest first", columns: DELIVERY_COLUMNS, rows, empty: "No deliveries match.",
  });

  // The deliveries on show and their rows, updated in place as the webhook's topic tells.
  const shown = new Map();
  const rows = deliveries.data.map((delivery) => {
    const element = row(delivery);
    shown.set(delivery.id, { delivery, element });
    return element;
  });
  const listing = h("div", { "data-testid": "deliveries" }, deliveryTable(rows));
  const show = (delivery) => {
    const known = shown.get(delivery.id);
    if (known) {
      // Never back to an earlier attempt (an event older than what was read).
      if (delivery.attempt < known.delivery.attempt) return;
      const element = row(delivery);
      known.element.replaceWith(element);
      shown.set(delivery.id, { delivery, element });
      return;
    }
    // A delivery not on show: on the first page, where new ones go, if the filter takes it.
    if (cursor || (status && delivery.status !== status)) return;
    const element = row(delivery);
    shown.set(delivery.id, { delivery, element });
    const body = listing.querySelector("tbody");
    if (!body) {
      replace(listing, deliveryTable([element]));
      return;
    }
    // Newest first: ids are ordered by creation.
    const before = [...body.rows].find((other) => other.dataset.deliveryId < delivery.id);
    body.insertBefore(element, before ?? null);
  };
  const live = h("p", { class: "hint", "data-testid": "live-state", "data-state": "connecting" },
    LIVE_STATES.connecting);
  const subscription = follow(`chat.webhook.${params.id}`, {
    onEvent: (event) => {
      if (event.type === "delivery.updated") show(event.data);
    },
    // Whatever was written while not listening: read again, and show what changed.
    onSync: () => readDeliveries().then((page) => page.data.forEach(show), () => {}),
    onState: (state) => {
      live.dataset.state = state;
      live.textContent = LIVE_STATES[state];
    },
  });
  onLeave(() => subscription.close());

  return [
    h("h1", {}, "Webhook"),
    h("p", {}, h("a", { href: "#/webhooks" }, "All webhooks")),
    h("section", { class: "card", "aria-label": "Webhook" },
      h("dl", { class: "facts" },
        h("dt", {}, "Receiver"), h("dd", { class: "mono" }, webhook.url),
        h("dt", {}, "Events"), h("dd", {}, webhook.events.join(", ")),
        h("dt", {}, "State"), h("dd", { "data-testid": "webhook-state" }, activeBadge(webhook),
          webhook.is_active ? "" : " Disabled after repeated failures, or by an owner: re-enable it once the receiver works."),
        h("dt", {}, "Updated"), h("dd", {}, when(webhook.updated_at))),
      region,
      actions),
    h("h2", {}, "Recent deliveries"),
    live,
    h("div", { class: "field" }, h("label", { for: "delivery-status" }, "Show"), filter),
    listing,
    next ? h("p", {}, h("a", { href: `#/webhooks/${params.id}?${new URLSearchParams({ status, cursor: next })}` }, "Older deliveries")) : null,
  ];
}

export async function deadLetters({ query, refresh }) {
  const letters = await api("GET", `${BASE}/dlq`, { query: { cursor: query.get("cursor"), limit: 50 } });
  const region = notice();
  const next = letters.meta?.next_cursor;
  return [
    h("h1", {}, "Dead letters"),
    h("p", { class: "hint" }, "Deliveries that failed every automatic attempt. Replay one once its receiver works again."),
    region,
    table({
      caption: "Dead letter queue, newest first",
      columns: ["Event", "Webhook", "Attempts", "Last response", "Last error", "Failed", ""],
      rows: letters.data.map((letter) => [
        letter.event,
        h("a", { href: `#/webhooks/${encodeURIComponent(letter.webhook_id)}` }, "webhook"),
        letter.attempts,
        letter.last_response_code ? String(letter.last_response_code) : "no response",
        letter.last_error,
        when(letter.failed_at),
        actionButton("Replay", region, async () => {
          const result = (await api("POST", `${BASE}/dlq/${encodeURIComponent(letter.id)}/retry`)).data;
          await refresh(`Replayed: ${result.status} (receiver answered ${result.response_code || "nothing"}).`);
        }, { "aria-label": `Replay ${letter.event} of ${letter.failed_at}` }),
      ]),
      empty: "The dead letter queue is empty.",
    }),
    next ? h("p", {}, h("a", { href: `#/dead-letters?${new URLSearchParams({ cursor: next })}` }, "Older letters")) : null,
  ];
}
