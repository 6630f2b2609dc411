// xterm.js sizes and colours its rows with <style> elements it creates;
// the content security policy lets in only those that carry this page's
// nonce, which this script gives every <style> the page creates. It runs
// before xterm.js.
"use strict";
// Violations of the policy are kept, for the tests and anyone debugging.
window.agentdPolicyViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.agentdPolicyViolations.push(e.violatedDirective + " " + (e.blockedURI || "inline"));
});
(function () {
  const meta = document.querySelector('meta[name="agentd-style-nonce"]');
  const nonce = meta ? meta.content : "";
  const create = Document.prototype.createElement;
  Document.prototype.createElement = function (tag, options) {
    const el = create.call(this, tag, options);
    if (String(tag).toLowerCase() === "style") {
      el.setAttribute("nonce", nonce);
    }
    return el;
  };
})();
