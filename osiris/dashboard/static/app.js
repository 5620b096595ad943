// Live refresh: every few seconds, fetch this page's main section (rendered and
// escaped by the server, `?_fragment=1`) and swap it in when it changed. No page
// reload, no state kept, nothing sent but GET requests to this same origin.
(function () {
  "use strict";
  var INTERVAL_MS = 3000;
  var main = document.getElementById("main");
  var badge = document.getElementById("live");
  if (!main || main.getAttribute("data-live") !== "1") {
    if (badge) { badge.textContent = "read-only"; }
    return;
  }
  var last = null;
  function fragmentUrl() {
    var url = new URL(window.location.href);
    url.searchParams.set("_fragment", "1");
    return url.pathname + url.search;
  }
  function stamp(text) {
    if (badge) { badge.textContent = text; }
  }
  function refresh() {
    if (document.visibilityState !== "visible") { return; }
    fetch(fragmentUrl(), { credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.text();
      })
      .then(function (html) {
        if (last !== null && html !== last) {
          main.innerHTML = html;
        }
        last = html;
        main.setAttribute("data-refreshed", String(Date.now()));
        stamp("read-only · live · " + new Date().toLocaleTimeString());
      })
      .catch(function (error) { stamp("read-only · not refreshed (" + error.message + ")"); });
  }
  refresh();
  window.setInterval(refresh, INTERVAL_MS);
})();
