// Usage (owners): the tenant's engine calls and the limits it hit over a window of days (in
// the address), by engine, by limit and by day, and what each engine keeps for it.

import { api } from "./api.js";
import { h, table } from "./dom.js";

const WINDOWS = [["1", "Today"], ["7", "7 days"], ["30", "30 days"], ["90", "90 days"]];

/** Bytes as people read them. */
function size(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KB", "MB", "GB", "TB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

function stat(label, value) {
  return h("div", { class: "card" }, h("div", { class: "hint" }, label), h("div", { class: "stat" }, value));
}

export async function view({ query, navigate }) {
  const days = query.get("days") ?? "7";
  const usage = (await api("GET", "/core/api/v1/usage", { query: { days } })).data;
  const choose = h("select", { id: "usage-days", name: "days" },
    WINDOWS.map(([value, text]) => h("option", { value, selected: value === days }, text)));
  choose.addEventListener("change", () => navigate("/usage", { days: choose.value }));
  const storedBytes = usage.storage.reduce((sum, engine) => sum + engine.entry_bytes + engine.blob_bytes, 0);
  return [
    h("h1", {}, "Usage"),
    h("div", { class: "field" }, h("label", { for: "usage-days" }, "Period"), choose),
    h("section", { class: "grid", "aria-label": "Totals" },
      stat("Engine calls", usage.engine_calls),
      stat("Limits hit", usage.limits_hit),
      stat("Stored by engines", size(storedBytes))),
    table({
      caption: "Engine calls by engine",
      columns: ["Engine", "Calls"],
      rows: Object.entries(usage.engine_calls_by_engine).map(([engine, calls]) => [engine, calls]),
      empty: "No engine calls in this period.",
    }),
    table({
      caption: "Limits hit",
      columns: ["Limit", "Requests refused"],
      rows: Object.entries(usage.limits_hit_by_limit).map(([limit, refused]) => [h("code", {}, limit), refused]),
      empty: "No request was refused by a limit in this period.",
    }),
    table({
      caption: "By day (UTC)",
      columns: ["Day", "Engine calls", "Limits hit"],
      rows: [...usage.daily].reverse().map((day) => [day.day, day.engine_calls, day.limits_hit]),
      empty: "No days.",
    }),
    table({
      caption: "Storage by engine",
      columns: ["Engine", "Entries", "Entry bytes", "Files"],
      rows: usage.storage.map((engine) => [engine.engine, engine.entries, size(engine.entry_bytes), size(engine.blob_bytes)]),
      empty: "No engine keeps anything for this tenant yet.",
    }),
  ];
}
