// The page: the session list, live (those that need a person first, with
// Approve and Deny on a permission prompt), and one session's terminal,
// live: read-only until the person takes it over, when the keys typed in
// it go to the server over the terminal's WebSocket (the server passes
// them on only from the page that holds the lease). Everything shown comes
// from the server; session data is only ever set as text, never as HTML.
"use strict";

const statusEl = document.getElementById("status");
const rowsEl = document.getElementById("rows");
const emptyEl = document.getElementById("empty");
const termSection = document.getElementById("terminal");
const termName = document.getElementById("term-name");
const termMessage = document.getElementById("term-message");
const termEl = document.getElementById("term");
const termMode = document.getElementById("term-mode");
const takeBtn = document.getElementById("take");
const giveBtn = document.getElementById("give");
const noticeEl = document.getElementById("notice");

let sessions = [];
let details = {}; // what the sessions that need a person ask, by name
let desktops = [];
const deskSection = document.getElementById("desktops");
const deskRowsEl = document.getElementById("desk-rows");
let held = false; // this page holds the watched session's keyboard
let listSocket = null;
let termSocket = null;
let term = null;
let watching = "";
let gone = false; // the view stopped or refused the cookie: nothing to retry

function wsURL(path) {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
}

function setStatus(text, bad) {
  statusEl.textContent = text;
  statusEl.classList.toggle("bad", !!bad);
}

function ago(t) {
  if (!t) return "";
  const ms = Date.now() - Date.parse(t);
  if (!(ms >= 0)) return "";
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m" + (s % 60) + "s";
  if (s < 86400) return Math.floor(s / 3600) + "h" + Math.floor((s % 3600) / 60) + "m";
  return Math.floor(s / 86400) + "d" + Math.floor((s % 86400) / 3600) + "h";
}

function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
}

// needRank puts the sessions that need a person first.
function needRank(s) {
  if (s.state === "needs_approval") return 0;
  if (s.state === "needs_attention") return 1;
  return 2;
}

// asked says what a session that needs a person asks.
function asked(d) {
  if (!d) return "";
  const what = [d.tool, d.subject].filter(Boolean).join(": ");
  return what || d.question || d.message || d.kind || "";
}

function notice(text, bad) {
  noticeEl.textContent = text;
  noticeEl.hidden = !text;
  noticeEl.classList.toggle("bad", !!bad);
}

// answer sends Approve or Deny for the prompt the page showed; the server
// refuses, saying what is asked now, if it changed meanwhile.
async function answer(name, promptID, deny) {
  const verb = deny ? "deny" : "approve";
  try {
    const r = await fetch("/api/approve", {
      method: "POST", credentials: "same-origin", cache: "no-store",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name: name, prompt_id: promptID, deny: deny }),
    });
    const a = await r.json();
    if (r.ok) {
      notice(name + ": " + (deny ? "denied" : "approved") + " (" + a.result.choice + ")", false);
    } else {
      notice(name + ": " + verb + " refused: " + a.message, true);
    }
  } catch (e) {
    notice(name + ": " + verb + " failed: " + e, true);
  }
}

function render() {
  rowsEl.replaceChildren();
  emptyEl.hidden = sessions.length > 0;
  const shown = sessions.slice().sort((a, b) => needRank(a) - needRank(b));
  for (const s of shown) {
    const tr = document.createElement("tr");
    tr.dataset.name = s.name;
    if (s.name === watching) tr.classList.add("selected");
    if (needRank(s) < 2) tr.classList.add("needs");
    const d = details[s.name];
    cell(tr, s.name, "name");
    cell(tr, s.status, "status status-" + s.status);
    const state = s.state || s.input || "";
    cell(tr, state, "state state-" + (state || "none"));
    cell(tr, asked(d), "asks");
    cell(tr, (s.command || []).join(" ") + (s.command_cut ? " …" : ""), "program");
    cell(tr, ago(s.created_at), "age");
    cell(tr, s.last_activity ? ago(s.last_activity) + " ago" : "", "activity");
    const act = document.createElement("td");
    act.className = "actions";
    if (s.state === "needs_approval" && d && d.prompt_id) {
      for (const [label, deny] of [["Approve", false], ["Deny", true]]) {
        const b = document.createElement("button");
        b.type = "button";
        b.textContent = label;
        b.className = label.toLowerCase();
        b.addEventListener("click", (ev) => { ev.stopPropagation(); answer(s.name, d.prompt_id, deny); });
        act.appendChild(b);
      }
    }
    if (s.lease) {
      const l = document.createElement("span");
      l.className = "lease";
      l.textContent = "taken over by " + s.lease.holder + " since " + new Date(s.lease.since).toLocaleTimeString();
      act.appendChild(l);
    }
    tr.appendChild(act);
    tr.addEventListener("click", () => { location.hash = encodeURIComponent(s.name); });
    rowsEl.appendChild(tr);
  }
}

// renderDesktops lists the desktops; a watchable one links to its page
// (the same origin, so the cookie goes with it).
function renderDesktops() {
  deskRowsEl.replaceChildren();
  deskSection.hidden = desktops.length === 0;
  for (const d of desktops) {
    const tr = document.createElement("tr");
    tr.dataset.name = d.name;
    cell(tr, d.name, "name");
    cell(tr, d.status, "status status-" + d.status);
    cell(tr, d.server, "server");
    cell(tr, d.width + "x" + d.height, "size");
    cell(tr, d.session || "", "session");
    const act = document.createElement("td");
    act.className = "actions";
    if (d.watchable) {
      const a = document.createElement("a");
      a.href = "/desktop#" + encodeURIComponent(d.name);
      a.target = "_blank";
      a.rel = "noopener";
      a.textContent = "watch";
      act.appendChild(a);
    } else {
      act.textContent = d.why || "";
    }
    tr.appendChild(act);
    deskRowsEl.appendChild(tr);
  }
}

// check asks the server whether this page's cookie still holds, to say
// the right thing when a WebSocket closed.
async function check() {
  try {
    const r = await fetch("/check", { cache: "no-store", credentials: "same-origin" });
    if (r.status === 401) {
      const how = await window.agentdResume.resume();
      if (how === "ok") return "";
      if (how === "unproven") return "what answers on agentd's port could not prove it is agentd's view; trying again… (if this lasts, run agentctl view for a new link)";
    }
    if (r.status === 401) {
      gone = true;
      return "this page's pass is no longer valid (agentd or its view restarted): run agentctl view again";
    }
    if (r.status === 429) return "blocked after too many bad passes: wait, then run agentctl view again";
    return "";
  } catch (e) {
    // The view lives inside agentd: not answering means agentd is
    // stopped or restarting. A restarted agentd serves its view on the
    // same port and takes this page's cookie (until the view's idle
    // time), so the page keeps trying; a 401 then says if it cannot.
    return "agentd is not answering (stopped or restarting); trying again… (if it does not come back, run agentctl view for a new link)";
  }
}

let listRetry = 500;
function connectList() {
  const ws = new WebSocket(wsURL("/ws/list"));
  listSocket = ws;
  ws.onopen = () => { listRetry = 500; setStatus("live"); };
  ws.onmessage = (ev) => {
    const m = JSON.parse(ev.data);
    if (m.type === "list") {
      sessions = m.sessions || [];
      details = m.details || {};
      desktops = m.desktops || [];
      render();
      renderDesktops();
    } else if (m.type === "error") {
      setStatus(m.message, true);
    }
  };
  ws.onclose = async () => {
    if (listSocket !== ws) return;
    const why = await check();
    if (why) setStatus(why, true);
    if (gone) return;
    setTimeout(connectList, listRetry);
    listRetry = Math.min(listRetry * 2, 10000);
    if (!why) setStatus("reconnecting…", true);
  };
}

function showTermMessage(text) {
  termMessage.textContent = text;
  termMessage.hidden = !text;
}

// setHeld shows whether this page holds the keyboard: the terminal takes
// keys only then.
function setHeld(h, live) {
  held = h;
  termMode.textContent = h ? "you have the keyboard" : "read-only";
  termMode.classList.toggle("held", h);
  takeBtn.hidden = h || !live;
  giveBtn.hidden = !h || !live;
  if (term) term.options.disableStdin = !h;
}

function closeTerm() {
  setHeld(false, false);
  if (termSocket) {
    const ws = termSocket;
    termSocket = null;
    ws.close();
  }
  if (term) {
    term.dispose();
    term = null;
    window.agentdTerm = null;
  }
  termEl.replaceChildren();
}

const encoder = new TextEncoder();

function watch(name) {
  closeTerm();
  watching = name;
  render();
  if (!name) {
    termSection.hidden = true;
    return;
  }
  termSection.hidden = false;
  termName.textContent = name;
  showTermMessage("");
  const ws = new WebSocket(wsURL("/ws/term?name=" + encodeURIComponent(name)));
  ws.binaryType = "arraybuffer";
  termSocket = ws;
  let ended = false;
  ws.onmessage = (ev) => {
    if (termSocket !== ws) return;
    if (typeof ev.data !== "string") {
      if (term) term.write(new Uint8Array(ev.data));
      return;
    }
    const m = JSON.parse(ev.data);
    if (m.type === "start") {
      term = new Terminal({ cols: m.cols, rows: m.rows, disableStdin: true, cursorBlink: false,
        scrollback: 1000, fontSize: 14 });
      term.open(termEl);
      // Keys go out only while this page holds the keyboard (the server
      // drops any other page's anyway).
      term.onData((d) => { if (held && termSocket === ws) ws.send(encoder.encode(d)); });
      // Tests read the screen from here.
      window.agentdTerm = term;
      setHeld(false, true);
    } else if (m.type === "resize") {
      if (term) term.resize(m.cols, m.rows);
    } else if (m.type === "lease") {
      setHeld(!!m.held, true);
      showTermMessage(m.message || "");
      if (m.held && term) term.focus();
    } else if (m.type === "refused") {
      showTermMessage(m.message);
    } else if (m.type === "end" || m.type === "error") {
      ended = true;
      setHeld(false, false);
      showTermMessage(m.message);
    }
  };
  ws.onclose = async () => {
    if (termSocket !== ws || ended) return;
    // The lease ended with the connection: a reconnect is read-only and
    // takes nothing over by itself.
    setHeld(false, false);
    const why = await check();
    showTermMessage(why || "the connection to agentd was lost; reconnecting (read-only)…");
    if (!gone && termSocket === ws) setTimeout(() => { if (termSocket === ws) watch(name); }, 1000);
  };
}

takeBtn.addEventListener("click", () => {
  if (termSocket && termSocket.readyState === WebSocket.OPEN) termSocket.send(JSON.stringify({ type: "take" }));
});
giveBtn.addEventListener("click", () => {
  if (termSocket && termSocket.readyState === WebSocket.OPEN) termSocket.send(JSON.stringify({ type: "give" }));
});

// agentdScreen returns the terminal's visible lines as text, for tests.
window.agentdScreen = function () {
  if (!term) return null;
  const b = term.buffer.active;
  const out = [];
  for (let i = 0; i < term.rows; i++) {
    const line = b.getLine(b.viewportY + i);
    out.push(line ? line.translateToString(true) : "");
  }
  return out;
};

window.addEventListener("hashchange", () => watch(decodeURIComponent(location.hash.slice(1))));
setInterval(render, 1000); // ages
window.agentdResume.fetchKey();
connectList();
if (location.hash.length > 1) watch(decodeURIComponent(location.hash.slice(1)));
