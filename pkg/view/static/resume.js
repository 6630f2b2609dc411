// resume.js: how a page left open over a restart of agentd gets back in
// without a new link (the server side is pkg/view/resume.go). The page
// keeps a resume key in memory; once its cookie is refused, it makes the
// server prove it knows the key (an HMAC of a nonce the page chose, asked
// without credentials) before handing the key over, so a program that
// squats on the port while agentd restarts never sees it.
"use strict";

window.agentdResume = (() => {
  let held = null; // {id, key}: this page's resume key
  const label = "agentd-view-prove:";

  function b64url(bytes) {
    let s = "";
    for (const b of bytes) s += String.fromCharCode(b);
    return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function unb64url(s) {
    const t = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
    return Uint8Array.from(t, (c) => c.charCodeAt(0));
  }

  // fetchKey asks for a resume key (the page's cookie must be good).
  async function fetchKey() {
    try {
      const r = await fetch("/resume-key", { cache: "no-store", credentials: "same-origin" });
      if (r.ok) held = await r.json();
    } catch (e) {
      // No key: the page cannot resume, and says to run agentctl view.
    }
  }

  // resume trades the key for a new cookie on a server that proved it
  // knows it. It answers "ok" (the page has a good cookie again), "no"
  // (this view does not know the page: run agentctl view again) or
  // "unproven" (whatever answers on the port could not prove it knows
  // the key, or did not answer: try again later, it may be a program
  // holding the port while agentd restarts). The page's sockets ask at
  // once when agentd comes back: they share one try.
  let trying = null;
  function resume() {
    if (!trying) trying = tryResume().finally(() => { setTimeout(() => { trying = null; }, 1000); });
    return trying;
  }
  async function tryResume() {
    if (!held || !crypto.subtle) return "no";
    const nonce = b64url(crypto.getRandomValues(new Uint8Array(24)));
    try {
      let r = await fetch("/prove?id=" + encodeURIComponent(held.id) + "&n=" + nonce, { cache: "no-store", credentials: "omit" });
      if (r.status === 404) return "no";
      if (!r.ok) return "unproven";
      const { mac } = await r.json();
      const k = await crypto.subtle.importKey("raw", unb64url(held.key), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
      if (!await crypto.subtle.verify("HMAC", k, unb64url(mac), new TextEncoder().encode(label + nonce))) return "unproven";
      r = await fetch("/resume", { method: "POST", cache: "no-store", credentials: "same-origin",
        headers: { "Content-Type": "application/json" }, body: JSON.stringify({ id: held.id, key: held.key }) });
      if (!r.ok) return "no";
    } catch (e) {
      return "unproven";
    }
    held = null;
    await fetchKey();
    return "ok";
  }

  return { fetchKey, resume };
})();
