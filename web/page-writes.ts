/**
 * The page's writing half (docs/web.md, Writes): composers, the Inbox, Approvals, steering. Joined
 * to page.ts's script as one file: `writesRender` is called by its `render`. Everything a user
 * types goes out with the token header (from the page's `<meta>`), JSON, to this origin only.
 * Inputs live in `#compose`, outside the view that is rebuilt on every update, so typing survives it.
 */

export const WRITES_CSS = `
header .badge { color: #1d232a; }
#writes-note { background: #fff4d6; padding: .4em 1em; border-bottom: 1px solid #e9d8a6; }
#compose { padding: 0 1em 1em; }
#compose textarea { width: 100%; min-height: 4em; font: inherit; box-sizing: border-box; }
#compose .row { display: flex; gap: .5em; align-items: center; margin: .3em 0; flex-wrap: wrap; }
.receipt { background: #e8f3ea; padding: .3em .6em; margin: .3em 0; border-radius: .3em; }
.refused { background: #fbe9e7; padding: .3em .6em; margin: .3em 0; border-radius: .3em; }
.mentions { background: #fff; border: 1px solid #c9ced4; max-width: 20em; }
.mentions div { padding: .15em .5em; cursor: pointer; } .mentions div.sel { background: #cfe3ff; }
button.small { font-size: 11px; padding: 0 .5em; margin-left: .5em; }
pre.terminal { background: #111; color: #d8d8d8; padding: .5em; font: 12px/1.25 ui-monospace, monospace; overflow: auto; max-height: 30em; white-space: pre; }
.steer { margin: .4em 0 .8em; }
`;

export const WRITES_JS = `
const W = { token: (document.querySelector('meta[name="cotal-token"]') || {}).content, me: null, key: null, replyTo: null, inbox: null, approvals: null, term: null, termFor: null, spawnable: null };
const writesOn = () => !!(W.me && W.me.writes === "on" && W.token);

async function api(path, body) {
  try {
    const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json", "X-Cotal-Token": W.token }, body: JSON.stringify(body) });
    const j = await r.json().catch(() => ({ error: "status " + r.status }));
    return { ok: r.ok, status: r.status, json: j };
  } catch (e) { return { ok: false, status: 0, json: { error: String(e) } }; }
}
function outcome(node, res, okText) {
  node.hidden = false;
  node.className = res.ok ? "receipt" : "refused";
  node.dataset.testid = res.ok ? "receipt" : "refused";
  node.textContent = res.ok ? okText(res.json) : "Refused (" + res.status + (res.json.code ? ", " + res.json.code : "") + "): " + res.json.error;
}

fetch("/api/me").then((r) => r.json()).then((me) => {
  W.me = me;
  for (const a of document.querySelectorAll("[data-writes]")) a.hidden = !writesOn();
  const note = document.getElementById("writes-note");
  note.hidden = me.writes === "on";
  note.textContent = me.writes === "off" ? "Read-only: " + me.why : "Read-only: this dashboard was started with --read-only.";
  if (me.writes === "on") document.getElementById("who").dataset.as = me.as;
  W.key = null;
  render();
  if (writesOn()) { pollInbox(); setInterval(pollInbox, 3000); pollApprovals(); setInterval(pollApprovals, 3000); }
}).catch(() => {});

// ---- the composer: a channel post, a DM to an agent, a reply ------------------------------------

function rosterNames() { return S.state ? S.state.roster.map((r) => r.name) : []; }

function composer(kind, target) {
  const box = el("textarea", { "data-testid": "compose-text", placeholder: kind === "post" ? "Post on #" + target + " as " + W.me.as + " (@ completes a name)" : "DM " + target + " as " + W.me.as });
  const list = el("div", { class: "mentions", "data-testid": "mention-list", hidden: "" });
  const replying = el("span", { class: "meta", "data-testid": "replying" });
  const result = el("div", { hidden: "" });
  const sendBtn = el("button", { "data-testid": "compose-send", text: kind === "post" ? "Post" : "Send DM" });
  const cancel = el("button", { class: "small", text: "not a reply", hidden: "" });
  const showReply = () => { const rt = W.replyTo; replying.textContent = rt ? "replying to " + rt.from + ": " + rt.excerpt : ""; cancel.hidden = !rt; };
  cancel.addEventListener("click", () => { W.replyTo = null; showReply(); });
  W.showReply = showReply;
  showReply();
  let sel = 0, matches = [];
  const word = () => { const upto = box.value.slice(0, box.selectionStart); const m = /@([A-Za-z0-9_]*)$/.exec(upto); return m ? m[1] : null; };
  const pick = (name) => { const at = box.selectionStart; const upto = box.value.slice(0, at).replace(/@[A-Za-z0-9_]*$/, "@" + name + " "); box.value = upto + box.value.slice(at); box.selectionStart = box.selectionEnd = upto.length; list.hidden = true; box.focus(); };
  const suggest = () => {
    const w = word();
    matches = w === null ? [] : rosterNames().filter((n) => n.toLowerCase().startsWith(w.toLowerCase())).slice(0, 8);
    sel = 0;
    list.replaceChildren(...matches.map((n, i) => { const d = el("div", { "data-testid": "mention-option", class: i === sel ? "sel" : "", text: "@" + n }); d.addEventListener("mousedown", (e) => { e.preventDefault(); pick(n); }); return d; }));
    list.hidden = matches.length === 0;
  };
  box.addEventListener("input", suggest);
  box.addEventListener("keydown", (e) => {
    if (!list.hidden && (e.key === "Tab" || e.key === "Enter")) { e.preventDefault(); pick(matches[sel]); return; }
    if (!list.hidden && (e.key === "ArrowDown" || e.key === "ArrowUp")) { e.preventDefault(); sel = (sel + (e.key === "ArrowDown" ? 1 : matches.length - 1)) % matches.length; [...list.children].forEach((c, i) => c.classList.toggle("sel", i === sel)); return; }
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); sendBtn.click(); }
  });
  sendBtn.addEventListener("click", async () => {
    const text = box.value;
    const names = new Set(rosterNames());
    const mentions = [...new Set([...text.matchAll(/@([A-Za-z0-9_]+)/g)].map((m) => m[1]).filter((n) => names.has(n)))];
    const body = kind === "post" ? { channel: target, text } : { to: target, text };
    if (W.replyTo) body.replyTo = W.replyTo.id;
    if (kind === "post" && mentions.length) body.mentions = mentions;
    sendBtn.disabled = true;
    const res = await api(kind === "post" ? "/api/post" : "/api/dm", body);
    sendBtn.disabled = false;
    outcome(result, res, (j) => (kind === "post" ? "Posted on #" + target : "DM to " + target) + " as " + W.me.as + ": " + j.text);
    if (res.ok) { box.value = ""; W.replyTo = null; showReply(); }
  });
  return el("div", { "data-testid": "composer", "data-kind": kind }, el("h2", { text: kind === "post" ? "Post on #" + target : "DM " + target }), replying, cancel, box, list, el("div", { class: "row" }, sendBtn), result);
}

function replyButton(p) {
  if (!writesOn()) return null;
  const b = el("button", { class: "small", "data-testid": "reply", text: "reply" });
  b.addEventListener("click", () => {
    const tmp = document.createElement("template"); tmp.innerHTML = p.html;
    W.replyTo = { id: p.id, from: p.from, excerpt: (tmp.content.textContent || "").slice(0, 60) };
    const where = p.channel ? "#/feed/" + encodeURIComponent(p.channel) : "#/agent/" + encodeURIComponent(p.from);
    if (location.hash !== where) { W.keepReply = true; location.hash = where; } else if (W.showReply) W.showReply();
  });
  return b;
}

/** What goes in #compose for the route: built again only when the route changes, so typing survives updates. */
function writesRender(r) {
  const key = writesOn() ? r.view + "/" + r.arg : "off";
  if (W.key === key) return;
  // A reply button that moved to its composer keeps what it answers; any other move forgets it.
  if (!W.keepReply) W.replyTo = null;
  W.keepReply = false;
  W.key = key;
  const c = document.getElementById("compose");
  let node = null;
  if (writesOn()) {
    if (r.view === "feed" && r.arg) node = composer("post", r.arg);
    else if (r.view === "agent" && r.arg) node = composer("dm", r.arg);
    else if (r.view === "inbox") node = W.replyTo ? composer("dm", W.replyTo.from) : null;
    else if (r.view === "roster" || r.view === "") node = W.me.steer ? spawnForm() : null;
  }
  c.hidden = !node;
  c.replaceChildren(...(node ? [node] : []));
  stopTerminal(r);
}

// ---- the Inbox: the person's unread DMs ------------------------------------------------------------

function pollInbox() {
  fetch("/api/inbox/count").then((r) => r.json()).then((j) => {
    const n = document.getElementById("inbox-count");
    n.textContent = j.unread === undefined ? "?" : String(j.unread);
    n.classList.toggle("stale", j.unread > 0);
    if (route().view === "inbox" && (!W.inbox || W.inbox.unread !== j.unread)) loadInbox();
  }).catch(() => {});
}
function loadInbox() {
  fetch("/api/inbox").then((r) => r.json()).then((j) => { W.inbox = j; if (route().view === "inbox") render(); }).catch(() => {});
}

function inboxView() {
  if (!writesOn()) return el("section", {}, el("p", { class: "note", text: "No inbox: this dashboard has no person to read it as." }));
  if (!W.inbox) { loadInbox(); return el("section", {}, el("h2", { text: "Inbox" }), el("p", { class: "note", text: "Loading…" })); }
  const j = W.inbox;
  if (j.error) return el("section", {}, el("h2", { text: "Inbox" }), el("p", { class: "refused", text: j.error }));
  const result = el("div", { hidden: "" });
  const mark = el("button", { "data-testid": "mark-read", text: j.messages.length === 1 ? "Mark this DM read" : "Mark these " + j.messages.length + " DMs read" });
  mark.addEventListener("click", async () => {
    const res = await api("/api/inbox/read", { seqs: j.messages.map((m) => m.seq) });
    outcome(result, res, (x) => "Marked " + x.marked + " read; " + x.unread + " unread.");
    W.inbox = null; pollInbox();
  });
  const list = j.messages.map((m) => el("div", { class: "post", "data-testid": "inbox-dm", "data-from": m.from },
    el("span", { class: "meta", text: clock(m.at) }), ...sender(m), el("div", { class: "body", html: m.html }), replyButton(m)));
  return el("section", {}, el("h2", {}, "Inbox of " + j.as + " ", el("span", { class: "badge", "data-testid": "inbox-unread", text: j.unread + " unread" })),
    el("p", { class: "note", text: "Unread DMs, oldest first. Showing them leaves them unread (as cotal inbox does); Mark read acknowledges exactly those shown." }),
    ...list, j.messages.length ? mark : el("p", { class: "note", text: "No unread DMs." }), result);
}

// ---- Approvals: the open asks of seats, allowed or denied as the person ---------------------------

function pollApprovals() {
  fetch("/api/approvals").then((r) => r.json()).then((j) => {
    W.approvals = j;
    const n = document.getElementById("approvals-count");
    n.textContent = j.asks ? String(j.asks.length) : "?";
    if (route().view === "approvals") render();
  }).catch(() => {});
}

function approvalsView() {
  const j = W.approvals;
  const head = el("h2", { text: "Approvals" });
  if (!j) return el("section", {}, head, el("p", { class: "note", text: "Loading…" }));
  if (j.error) return el("section", {}, head, el("p", { class: "refused", "data-testid": "approvals-error", text: j.error }));
  const now = Date.now();
  const t = el("table", {}, el("tr", {}, ...["seat", "tool", "arguments", "age", "time left", ""].map((h) => el("th", { text: h }))));
  // The last answer's outcome stays above the list (the list is read again every few seconds).
  const result = el("div", { hidden: "" });
  if (W.answered) outcome(result, W.answered, (x) => x.text);
  for (const a of j.asks) {
    const answer = (decision) => async () => { W.answered = await api("/api/approve", { seat: a.seat, id: a.id, decision }); pollApprovals(); render(); };
    const allow = el("button", { "data-testid": "allow", text: "Allow" }); allow.addEventListener("click", answer("allow"));
    const deny = el("button", { "data-testid": "deny", text: "Deny" }); deny.addEventListener("click", answer("deny"));
    t.append(el("tr", { "data-testid": "approval", "data-seat": a.seat, "data-id": a.id },
      el("td", { text: a.seat }), el("td", { text: a.tool }), el("td", {}, el("code", { text: a.args })),
      el("td", { text: age(now - a.at) }), el("td", { text: a.expiresAt ? age(a.expiresAt - now) : "-" }),
      el("td", {}, allow, deny)));
  }
  return el("section", {}, head, result, t, j.asks.length ? null : el("p", { class: "note", text: "No open asks." }));
}

// ---- Steering: spawn, stop, restart, and the seat's terminal (read-only) --------------------------

function steerPanel(id, row) {
  if (!writesOn()) return null;
  const name = id.split(".").pop();
  const result = el("div", { hidden: "", "data-testid": "steer-result" });
  const act = (what) => async () => { const res = await api("/api/" + what, { name }); outcome(result, res, (j) => j.text || what + ": done"); W.steerResult = result; };
  const stop = el("button", { "data-testid": "stop", text: "Stop" }); stop.addEventListener("click", act("stop"));
  const restart = el("button", { "data-testid": "restart", text: "Restart" }); restart.addEventListener("click", act("restart"));
  if (W.steerFor !== id) W.steerResult = null;
  if (W.steerResult) { result.hidden = W.steerResult.hidden; result.className = W.steerResult.className; result.dataset.testid = W.steerResult.dataset.testid; result.textContent = W.steerResult.textContent; }
  W.steerFor = id;
  startTerminal(name);
  const screen = el("pre", { class: "terminal", "data-testid": "terminal", text: W.term === null ? "(no screen yet)" : W.term });
  return el("div", { class: "steer" }, stop, restart, result,
    el("h2", { text: "Terminal (read-only: what cotal attach shows)" }), W.termError ? el("p", { class: "refused", "data-testid": "terminal-error", text: W.termError }) : null, screen);
}

let termSource = null;
function startTerminal(name) {
  if (W.termFor === name) return;
  if (termSource) termSource.close();
  W.termFor = name; W.term = null; W.termError = null;
  termSource = new EventSource("/api/terminal?name=" + encodeURIComponent(name));
  termSource.addEventListener("screen", (e) => { W.term = JSON.parse(e.data).screen; W.termError = null; const p = document.querySelector('[data-testid="terminal"]'); if (p) p.textContent = W.term; });
  termSource.addEventListener("refused", (e) => { W.termError = JSON.parse(e.data).error; termSource.close(); render(); });
}
function stopTerminal(r) {
  if (r.view === "agent" || !termSource) return;
  termSource.close(); termSource = null; W.termFor = null;
}

function spawnForm() {
  const from = el("select", { "data-testid": "spawn-from" });
  const name = el("input", { "data-testid": "spawn-name", placeholder: "seat name" });
  const option = (r) => el("option", { value: r, text: r || "(the persona's runtime)" });
  const runtime = el("select", { "data-testid": "spawn-runtime" }, option(""));
  const result = el("div", { hidden: "" });
  const go = el("button", { "data-testid": "spawn", text: "Spawn" });
  fetch("/api/spawnable").then((r) => r.json()).then((j) => {
    if (j.error) { outcome(result, { ok: false, status: 403, json: j }, () => ""); return; }
    from.replaceChildren(...j.personas.map((p) => el("option", { value: "persona:" + p, text: "persona " + p })), ...j.seats.map((s) => el("option", { value: "seat:" + s, text: "team seat " + s })));
    // The runtimes come from the registry through the server: the page names none itself.
    runtime.replaceChildren(option(""), ...(j.runtimes || []).map(option));
  });
  go.addEventListener("click", async () => {
    const [kind, value] = from.value.split(":");
    const body = kind === "seat" ? { seat: value } : { persona: value };
    if (name.value) body.name = name.value;
    if (runtime.value) body.runtime = runtime.value;
    const res = await api("/api/spawn", body);
    outcome(result, res, (j) => j.text || "spawned");
  });
  return el("div", { "data-testid": "spawn-form" }, el("h2", { text: "Spawn a seat (as " + W.me.as + ")" }), el("div", { class: "row" }, from, name, runtime, go), result);
}
render();
`;
