// The console's realtime client (the host's WebSocket, CONTRACT §9): one topic per
// subscription, through a single-use ticket (the access token stays out of the URL), and
// after a dropped connection a new ticket and a resubscription from the last cursor seen, so
// nothing is missed and nothing arrives twice. The page that opens it closes it when it is left.

import { api, session } from "./api.js";

/** Delays before reconnecting, in ms: the first attempt soon, then backing off. */
const BACKOFF_MS = [500, 1_000, 2_000, 5_000, 10_000, 30_000];
/** How often an open connection is pinged (proxies close idle WebSockets). */
const PING_MS = 30_000;
/** Close codes after which reconnecting cannot help: access to the tenant ended. */
const FINAL_CLOSE_CODES = new Set([4003]);
/** `error` statuses that end a subscription: not allowed, unknown topic. */
const FINAL_ERROR_STATUSES = new Set([403, 404]);

/**
 * Follows `topic` until `close()`. `onEvent(frame)` gets each `event` frame (`type`, `data`,
 * `cursor`, …), in order; `onSync()` is called whenever events may have been missed and the
 * page should read again what it shows (a subscription without a cursor, the first one
 * included, since it starts at most a moment before it is made; or a `reset`, when the cursor
 * is older than the host keeps); `onState(state)` follows the connection: `connecting`, `live`,
 * `reconnecting` or `ended` (the topic refused, or access ended: nothing more will come).
 */
export function follow(topic, { onEvent, onSync = () => {}, onState = () => {} }) {
  let socket = null;
  let cursor = null;
  let failures = 0;
  let retryTimer = null;
  let pingTimer = null;
  let closed = false;

  const state = (name) => {
    if (!closed) onState(name);
  };

  const stopTimers = () => {
    clearTimeout(retryTimer);
    clearInterval(pingTimer);
    retryTimer = null;
    pingTimer = null;
  };

  const end = () => {
    state("ended");
    closed = true;
    stopTimers();
    socket?.close(1000);
    socket = null;
  };

  const retry = () => {
    if (closed || retryTimer) return;
    state("reconnecting");
    const delay = BACKOFF_MS[Math.min(failures, BACKOFF_MS.length - 1)];
    failures += 1;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      connect();
    }, delay);
  };

  const subscribe = () => {
    const frame = { op: "subscribe", topic };
    if (cursor) frame.since = cursor;
    socket.send(JSON.stringify(frame));
  };

  const receive = (frame) => {
    if (frame.topic !== undefined && frame.topic !== topic) return;
    switch (frame.op) {
      case "subscribed":
        failures = 0;
        state("live");
        // Without a cursor, the subscription may start after something the page did not read.
        if (!cursor) onSync();
        break;
      case "event":
        cursor = frame.cursor;
        onEvent(frame);
        break;
      case "reset":
        // The cursor is older than what the host keeps: read again, then go on live.
        cursor = null;
        onSync();
        break;
      case "error":
        if (FINAL_ERROR_STATUSES.has(frame.status)) {
          end();
        } else if (frame.status === 422 && cursor) {
          // A cursor the host does not take: start over without it.
          cursor = null;
          subscribe();
        } else {
          // A limit, or a frame the host did not take: start again, later (`close` retries).
          socket?.close(1000);
        }
        break;
      default:
        break;
    }
  };

  async function connect() {
    if (closed) return;
    state(failures ? "reconnecting" : "connecting");
    let ticket;
    try {
      ticket = (await api("POST", "/core/api/v1/realtime/tickets")).data.ticket;
    } catch (error) {
      // Signed out meanwhile (the sign-in screen takes over): stop; anything else: try again.
      if (error.sessionEnded || !session()) end();
      else retry();
      return;
    }
    if (closed) return;
    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    const url = `${scheme}//${window.location.host}/core/api/v1/realtime?ticket=${encodeURIComponent(ticket)}`;
    let current;
    try {
      current = new WebSocket(url);
    } catch (error) {
      // Refused by the browser (a policy): trying again would not help.
      console.error(error);
      end();
      return;
    }
    socket = current;
    current.addEventListener("open", () => {
      if (socket !== current) return;
      subscribe();
      pingTimer = setInterval(() => current.send(JSON.stringify({ op: "ping" })), PING_MS);
    });
    current.addEventListener("message", (message) => {
      if (socket !== current) return;
      let frame;
      try {
        frame = JSON.parse(message.data);
      } catch {
        return;
      }
      receive(frame);
    });
    current.addEventListener("close", (close) => {
      if (socket !== current) return;
      socket = null;
      stopTimers();
      if (FINAL_CLOSE_CODES.has(close.code)) end();
      else retry();
    });
  }

  connect();
  return {
    /** Stops following: closes the connection and never reconnects. */
    close() {
      closed = true;
      stopTimers();
      const open = socket;
      socket = null;
      open?.close(1000);
    },
  };
}
