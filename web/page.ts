/**
 * The dashboard page, embedded as strings so the CLI bundle stays one file. The script builds
 * every element with textContent; the only markup it inserts is the `html` the server rendered
 * from message text (markdown.ts, escaped first). The server's CSP allows only these files.
 */

import { WRITES_CSS, WRITES_JS } from "./page-writes.js";

/**
 * The page; with `token`, a `<meta>` holding it for the header the page's writes carry (only a
 * page served behind the cookie has it; CSP stays `script-src 'self'`).
 */
export function pageHtml(token?: string): string {
  return token ? PAGE_HTML.replace("<title>", `<meta name="cotal-token" content="${token}">\n<title>`) : PAGE_HTML;
}

const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Cotal mesh</title>
<link rel="stylesheet" href="/app.css">
</head>
<body>
<header>
  <strong>Cotal</strong> <span id="space"></span>
  <nav>
    <a href="#/roster" data-nav="roster">Roster</a>
    <a href="#/feed" data-nav="feed">Feed</a>
    <a href="#/managers" data-nav="managers">Managers</a>
    <a href="#/inbox" data-nav="inbox" data-writes hidden>Inbox <span id="inbox-count" class="badge" data-testid="inbox-count"></span></a>
    <a href="#/approvals" data-nav="approvals" data-writes hidden>Approvals <span id="approvals-count" class="badge" data-testid="approvals-count"></span></a>
  </nav>
  <span id="who"></span>
</header>
<div id="banner" hidden></div>
<div id="writes-note" data-testid="writes-note" hidden></div>
<main id="view"></main>
<section id="compose" hidden></section>
<script src="/app.js"></script>
</body>
</html>
`;

export const APP_CSS =
  `
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d232a; background: #f7f8fa; }
header { display: flex; gap: 1.5em; align-items: center; padding: .6em 1em; background: #1d232a; color: #fff; }
header a { color: #cfe3ff; margin-right: 1em; text-decoration: none; }
header a.on { color: #fff; font-weight: bold; text-decoration: underline; }
#who { margin-left: auto; font-size: 12px; opacity: .8; }
#banner { background: #b3261e; color: #fff; padding: .5em 1em; font-weight: bold; }
main { padding: 1em; }
main.stale { opacity: .55; }
h2 { font-size: 16px; margin: .2em 0 .6em; }
table { border-collapse: collapse; background: #fff; width: 100%; }
th, td { text-align: left; padding: .35em .6em; border-bottom: 1px solid #e3e6ea; vertical-align: top; }
th { background: #eef1f4; font-weight: 600; }
tr.stale td { color: #7a828c; }
.badge { display: inline-block; font-size: 11px; padding: 0 .45em; border-radius: .6em; background: #e3e6ea; margin-right: .3em; }
.badge.durable { background: #d6ecd9; } .badge.live { background: #fde7c8; }
.badge.stale { background: #b3261e; color: #fff; }
.badge.ok { background: #d6ecd9; } .badge.late, .badge.gone { background: #f6d3d1; }
.status-working { color: #0b61c9; } .status-waiting { color: #a65d00; } .status-offline { color: #7a828c; }
.stuck { color: #fff; background: #b3261e; font-weight: bold; padding: 0 .3em; border-radius: .3em; }
.post, .entry { background: #fff; border-bottom: 1px solid #e3e6ea; padding: .4em .6em; }
.meta { color: #59636e; font-size: 12px; margin-right: .5em; }
.body p { margin: .2em 0; } code { background: #eef1f4; padding: 0 .25em; border-radius: .2em; } .body pre { background: #f0f2f4; padding: .4em; overflow-x: auto; }
.note { color: #59636e; font-style: italic; margin: .4em 0; }
.cols { display: grid; grid-template-columns: 2fr 1fr; gap: 1em; }
.entry.tool-started, .entry.tool-ended { font-family: ui-monospace, monospace; }
.entry.run-failed { background: #fbe9e7; }
` + WRITES_CSS;

export const APP_JS =
  `"use strict";
const S = { state: null, posts: [], timelines: {}, lastEventAt: 0, detail: null, detailFor: null, channel: null, channelFor: null };
const STALE_MS = 5000;
const el = (tag, props, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else if (k === "html") e.innerHTML = v; else e.setAttribute(k, v);
  }
  for (const k of kids) if (k != null) e.append(k);
  return e;
};
const clock = (ms) => new Date(ms).toLocaleTimeString();
const age = (ms) => { const s = Math.max(0, Math.round(ms / 1000)); return s < 60 ? s + " s" : s < 3600 ? Math.floor(s / 60) + " min " + (s % 60) + " s" : Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min"; };
const route = () => { const h = decodeURIComponent(location.hash.replace(/^#\\/?/, "")); const [view, ...rest] = h.split("/"); return { view: view || "roster", arg: rest.join("/") }; };
const touch = () => { S.lastEventAt = Date.now(); };
const sourceStale = (name) => { const st = S.state; if (!st) return true; const s = st.sources[name]; return !st.connected || !s || !s.ok || s.at === undefined || st.now - s.at > STALE_MS; };
const staleBadge = (name) => {
  const src = S.state && S.state.sources[name];
  if (src && src.error && /not readable/.test(src.error)) return el("span", { class: "badge", text: src.error });
  return sourceStale(name) ? el("span", { class: "badge stale", "data-testid": "stale", text: "stale" + (src && src.error ? ": " + src.error : "") }) : null;
};

const es = new EventSource("/events");
es.addEventListener("backlog", (e) => { const b = JSON.parse(e.data); S.posts = b.posts; S.timelines = b.timelines; touch(); render(); });
es.addEventListener("state", (e) => { S.state = JSON.parse(e.data); touch(); render(); });
es.addEventListener("post", (e) => { const p = JSON.parse(e.data); S.posts.push(p); if (S.posts.length > 1000) S.posts.splice(0, S.posts.length - 1000); if (S.channel && S.channelFor === p.channel) S.channel.push(p); touch(); render(); });
es.addEventListener("timeline", (e) => { const t = JSON.parse(e.data); (S.timelines[t.agent] = S.timelines[t.agent] || []).push(...t.entries); touch(); render(); });
setInterval(() => { banner(); const r = route(); if (r.view === "agent") loadAgent(r.arg); }, 1000);
window.addEventListener("hashchange", () => { S.detail = null; S.channel = null; render(); });

function banner() {
  const b = document.getElementById("banner");
  const quiet = Date.now() - S.lastEventAt > STALE_MS;
  const cut = S.state && !S.state.connected;
  const stale = !S.state || quiet || cut;
  b.hidden = !stale;
  b.textContent = !S.state ? "Connecting to the dashboard…" : cut ? "Stale: the dashboard lost its connection to the mesh; what is shown is no longer live." : "Stale: no update from the dashboard since " + clock(S.lastEventAt) + "; what is shown is no longer live.";
  document.getElementById("view").classList.toggle("stale", stale);
  document.body.dataset.stale = String(stale);
}

function render() {
  banner();
  const st = S.state;
  if (st) {
    document.getElementById("space").textContent = "space " + st.space;
    document.getElementById("who").textContent = "reading as " + st.profile + (st.dmBodies ? " (DM bodies shown)" : " (no DM bodies)") + (writesOn() ? "; writing as " + W.me.as : "");
  }
  const r = route();
  for (const a of document.querySelectorAll("[data-nav]")) a.classList.toggle("on", a.dataset.nav === r.view);
  const view = document.getElementById("view");
  const node = r.view === "feed" ? feedView(r.arg) : r.view === "agent" ? agentView(r.arg) : r.view === "managers" ? managersView() : r.view === "inbox" ? inboxView() : r.view === "approvals" ? approvalsView() : rosterView();
  node.dataset.view = r.view;
  view.replaceChildren(node);
  writesRender(r);
}

function rosterView() {
  const rows = S.state ? S.state.roster : [];
  const pendingKnown = S.state && !sourceStale("pending");
  const t = el("table", {}, el("tr", {}, ...["name", "runtime", "status", "activity", "attention", "host", "model", "spawned by", "unread", "waiting DMs", "oldest waiting"].map((h) => el("th", { text: h }))));
  for (const r of rows) {
    const p = r.pending;
    const oldest = p && p.oldestAt !== undefined ? el("span", { class: r.stuck ? "stuck" : "", "data-testid": "oldest", title: r.stuck ? "mail kept waiting while the seat is idle" : "", text: age(S.state.now - p.oldestAt) + (r.stuck ? " (stuck)" : "") }) : el("span", { text: "-" });
    t.append(el("tr", { class: r.stale ? "stale" : "", "data-testid": "roster-row", "data-id": r.id },
      el("td", {}, el("a", { href: "#/agent/" + encodeURIComponent(r.id), text: r.name }), r.role ? el("span", { class: "meta", text: " (" + r.role + ")" }) : null, r.stale ? el("span", { class: "badge stale", text: "stale" }) : null),
      el("td", { "data-testid": "runtime", text: r.runtime || "-" }),
      el("td", { class: "status-" + r.status, text: r.status + (r.condition ? " (" + r.condition + ")" : "") }),
      el("td", { text: r.activity || "" }),
      el("td", { text: r.attention || "" }),
      el("td", { text: r.host || "" }),
      el("td", { text: r.model || "" }),
      el("td", { "data-testid": "spawned-by", text: r.spawnedBy || "-" }),
      el("td", { text: r.unread === undefined ? "-" : String(r.unread) }),
      el("td", { "data-testid": "pending", text: p ? String(p.count) : "n/a" }),
      el("td", {}, oldest)));
  }
  return el("section", {}, el("h2", {}, "Roster ", staleBadge("roster"), pendingKnown || !S.state ? null : el("span", { class: "badge stale", text: "waiting DMs: " + (S.state.sources.pending.error || "stale") })), t,
    rows.length ? null : el("p", { class: "note", text: "Nobody is on the roster." }));
}

// The sender as every Cotal view words it: the operator speaking for someone is always said.
function sender(m) {
  return [el("strong", { "data-testid": "from", text: m.from }), m.sentBy ? el("span", { class: "meta", "data-testid": "sent-by", text: " (sent by the operator " + m.sentBy + ")" }) : null];
}

function postNode(p) {
  return el("div", { class: "post", "data-testid": "post", "data-channel": p.channel },
    el("span", { class: "meta", text: clock(p.at) }),
    el("a", { href: "#/feed/" + encodeURIComponent(p.channel), class: "badge", text: "#" + p.channel }),
    el("span", { class: "badge " + p.class, "data-testid": "class", text: p.class }),
    p.historical ? el("span", { class: "badge", text: "history" }) : null,
    ...sender(p),
    el("div", { class: "body", html: p.html }),
    p.parts.length ? el("div", { class: "meta", text: "also: " + p.parts.join(", ") }) : null,
    replyButton(p));
}

function feedView(channel) {
  const chans = S.state ? S.state.channels : [];
  const nav = el("p", {}, el("a", { href: "#/feed", class: "badge", text: "all channels" }), ...chans.map((c) => el("a", { href: "#/feed/" + encodeURIComponent(c.name), class: "badge " + c.class, text: "#" + c.name + " (" + c.class + ")" })));
  let posts;
  if (channel) {
    if (S.channelFor !== channel) { S.channelFor = channel; S.channel = null; fetch("/api/channel?name=" + encodeURIComponent(channel)).then((r) => r.json()).then((j) => { if (S.channelFor === channel) { S.channel = j.posts || []; S.channelError = j.error; render(); } }); }
    posts = S.channel || [];
  } else posts = S.posts;
  const list = el("div", {}, ...[...posts].sort((a, b) => b.at - a.at).slice(0, 300).map(postNode));
  return el("section", {}, el("h2", {}, channel ? "#" + channel + " (history, then live)" : "Feed: every channel, live", " ", staleBadge("feed")), nav,
    channel && S.channelError ? el("p", { class: "note", text: S.channelError }) : null, list,
    posts.length ? null : el("p", { class: "note", text: channel && !S.channel ? "Loading…" : "No posts yet." }));
}

function loadAgent(id) {
  fetch("/api/agent?id=" + encodeURIComponent(id)).then((r) => r.json()).then((j) => { if (route().arg === id) { S.detail = j; S.detailFor = id; S.detailAt = Date.now(); render(); } }).catch(() => {});
}

function entryNode(e) {
  const what = { "run-started": "▶ turn started", "run-finished": "■ turn finished", "run-failed": "✗ turn failed", prompt: "« prompt", reply: "» says", "tool-started": "⚙ " + e.tool + " started", "tool-ended": "⚙ " + e.tool + " ended" }[e.kind] || e.kind;
  return el("div", { class: "entry " + e.kind, "data-testid": "timeline-entry", "data-kind": e.kind },
    el("span", { class: "meta", text: clock(e.at) }), el("strong", { text: what }), e.html ? el("div", { class: "body", html: e.html }) : null);
}

function agentView(id) {
  if (S.detailFor !== id) { S.detail = null; S.detailFor = id; loadAgent(id); }
  const d = S.detail;
  const row = S.state ? S.state.roster.find((r) => r.id === id) : undefined;
  const timeline = S.timelines[id] || [];
  const head = el("h2", {}, id + " ", row ? el("span", { class: "badge status-" + row.status, text: row.status }) : el("span", { class: "badge", text: "not on the roster" }), row && row.runtime ? el("span", { class: "badge", "data-testid": "agent-runtime", text: row.runtime }) : null, row && row.spawnedBy ? el("span", { class: "badge", "data-testid": "agent-spawned-by", text: "spawned by " + row.spawnedBy }) : null, row && row.stale ? el("span", { class: "badge stale", text: "stale" }) : null);
  const p = d && d.pending;
  const mail = el("div", { "data-testid": "agent-mail" }, el("h2", {}, "Waiting mail ", staleBadge("pending")),
    el("p", { "data-testid": "agent-pending", text: !d ? "…" : p ? p.count + " DM" + (p.count === 1 ? "" : "s") + " waiting" + (p.oldestAt !== undefined && S.state ? ", oldest " + age(S.state.now - p.oldestAt) : "") : "not readable with this credential" }),
    d && d.waiting ? el("div", {}, ...d.waiting.map((w) => el("div", { class: "post", "data-testid": "waiting-dm" }, el("span", { class: "meta", text: clock(w.at) }), ...sender(w), el("div", { class: "body", html: w.html })))) : null,
    d && !d.dmBodies ? el("p", { class: "note", text: "DM bodies are shown only to an admin credential." }) : null);
  const log = el("table", {}, el("tr", {}, ...["time", "event", "manager", "detail"].map((h) => el("th", { text: h }))),
    ...(d ? d.seatLog : []).map((e) => el("tr", { "data-testid": "seat-event" }, el("td", { text: clock(e.at) }), el("td", { text: e.type }), el("td", { text: e.manager || "" }), el("td", { text: e.detail || "" }))));
  return el("section", {}, head, steerPanel(id, row),
    el("div", { class: "cols" },
      el("div", {}, el("h2", {}, "Timeline (event plane) ", staleBadge("feed")), timeline.length ? el("div", {}, ...[...timeline].reverse().slice(0, 300).map(entryNode)) : el("p", { class: "note", text: "No activity on its event plane." })),
      el("div", {}, mail, el("h2", {}, "Seat log ", staleBadge("seats")), d && d.seatLog.length ? log : el("p", { class: "note", text: d ? "No seat log (not a managed seat, or not readable with this credential)." : "…" }))));
}

function managersView() {
  const rows = S.state ? S.state.managers : [];
  const t = el("table", {}, el("tr", {}, ...["instance", "host", "pid", "health", "last heartbeat", "seats"].map((h) => el("th", { text: h }))));
  for (const m of rows) {
    t.append(el("tr", { "data-testid": "manager-row", "data-instance": m.instance },
      el("td", { text: m.instance }), el("td", { text: m.host || "" }), el("td", { text: m.pid ? String(m.pid) : "" }),
      el("td", {}, el("span", { class: "badge " + m.health, text: m.health })),
      el("td", { text: m.heartbeatAt ? age(S.state.now - m.heartbeatAt) + " ago" : "none" }),
      el("td", { text: m.seats.length + (m.maxSeats ? " / " + m.maxSeats : "") + (m.seats.length ? ": " + m.seats.join(", ") : "") })));
  }
  return el("section", {}, el("h2", {}, "Managers ", staleBadge("managers")), t, rows.length ? null : el("p", { class: "note", text: "No manager heartbeat (or not readable with this credential)." }));
}
` + WRITES_JS;
