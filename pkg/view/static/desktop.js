// The desktop page: one of the agents' desktops, live, in noVNC, view only
// until the person takes its input over. The server decides what input
// passes (it drops key, pointer and clipboard messages from a page that
// does not hold the desktop's lease), so view-only here is a courtesy, not
// the guard. Text from the server is only ever set as text.
import RFB from "./novnc/core/rfb.js";

const nameEl = document.getElementById("desk-name");
const modeEl = document.getElementById("mode");
const takeEl = document.getElementById("take");
const statusEl = document.getElementById("status");
const messageEl = document.getElementById("desk-message");
const screenEl = document.getElementById("screen");

const name = decodeURIComponent(location.hash.slice(1));
let socket = null;
let rfb = null;
let held = false;
let gone = false; // the pass is no longer valid: nothing to retry
let ended = false; // the server said why this desktop cannot be shown
let retry = 500;

// Violations of the policy are kept, for the tests and anyone debugging.
window.agentdPolicyViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.agentdPolicyViolations.push(e.violatedDirective + " " + (e.blockedURI || "inline"));
});

function wsURL(path) {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
}

function setStatus(text, bad) {
  statusEl.textContent = text;
  statusEl.classList.toggle("bad", !!bad);
}

function showMessage(text) {
  messageEl.textContent = text;
  messageEl.hidden = !text;
}

function setHeld(h) {
  held = h;
  if (rfb) rfb.viewOnly = !h;
  modeEl.textContent = h ? "input taken over: agents' batches get busy" : "view only";
  modeEl.classList.toggle("held", h);
  takeEl.textContent = h ? "Hand back" : "Take over";
  if (h && rfb) rfb.focus();
}

function closeRFB() {
  if (rfb) {
    const r = rfb;
    rfb = null;
    window.agentdRFB = null;
    r.disconnect();
  }
  screenEl.replaceChildren();
}

async function check() {
  try {
    const r = await fetch("/check", { cache: "no-store", credentials: "same-origin" });
    if (r.status === 401) {
      const how = await window.agentdResume.resume();
      if (how === "ok") return "";
      if (how === "unproven") return "what answers on agentd's port could not prove it is agentd's view; trying again… (if this lasts, run agentctl desktop view " + name + " for a new link)";
    }
    if (r.status === 401) {
      gone = true;
      return "this page's pass is no longer valid (agentd or its view restarted): run agentctl desktop view " + name + " again";
    }
    if (r.status === 429) return "blocked after too many bad passes: wait, then run agentctl desktop view again";
    return "";
  } catch (e) {
    // agentd is stopped or restarting: a restarted agentd serves its view
    // on the same port and takes this page's cookie, so keep trying.
    return "agentd is not answering (stopped or restarting); trying again… (if it does not come back, run agentctl desktop view " + name + ")";
  }
}

function startRFB(viewer) {
  closeRFB();
  const url = wsURL("/ws/rfb?name=" + encodeURIComponent(name) + "&viewer=" + encodeURIComponent(viewer));
  const r = new RFB(screenEl, url, { shared: true });
  r.viewOnly = true;
  r.scaleViewport = true;
  r.resizeSession = false;
  r.qualityLevel = 9;
  r.compressionLevel = 1;
  r.addEventListener("connect", () => { if (rfb === r) setStatus("live"); });
  r.addEventListener("disconnect", (e) => {
    if (rfb !== r) return;
    if (!e.detail.clean && !ended) setStatus("the desktop's stream was lost", true);
  });
  rfb = r;
  // Tests read the canvas from here.
  window.agentdRFB = r;
}

function connect() {
  const ws = new WebSocket(wsURL("/ws/desktop?name=" + encodeURIComponent(name)));
  socket = ws;
  ws.onopen = () => { retry = 500; };
  ws.onmessage = (ev) => {
    if (socket !== ws) return;
    const m = JSON.parse(ev.data);
    if (m.type === "start") {
      ended = false;
      showMessage("");
      takeEl.disabled = false;
      setHeld(false);
      startRFB(m.viewer);
    } else if (m.type === "lease") {
      setHeld(!!m.held);
    } else if (m.type === "end") {
      ended = true;
      takeEl.disabled = true;
      setHeld(false);
      setStatus("ended", true);
      showMessage(m.message);
      closeRFB();
    } else if (m.type === "error") {
      showMessage(m.message);
      if (m.code !== "busy" || !rfb) {
        ended = true;
        takeEl.disabled = true;
        setStatus(m.code === "busy" ? "busy" : "not shown", true);
      }
    }
  };
  ws.onclose = async () => {
    if (socket !== ws) return;
    closeRFB();
    setHeld(false);
    takeEl.disabled = true;
    if (ended) return;
    const why = await check();
    if (why) {
      setStatus(why, true);
      showMessage(why);
    }
    if (gone) return;
    if (!why) setStatus("reconnecting…", true);
    setTimeout(connect, retry);
    retry = Math.min(retry * 2, 10000);
  };
}

takeEl.addEventListener("click", () => {
  if (socket && socket.readyState === WebSocket.OPEN) {
    socket.send(JSON.stringify({ type: held ? "hand_back" : "take" }));
  }
});

nameEl.textContent = name;
document.title = "agentd desktop " + name;
if (!name) {
  setStatus("no desktop named: run agentctl desktop view NAME", true);
} else {
  window.agentdResume.fetchKey();
  connect();
}
