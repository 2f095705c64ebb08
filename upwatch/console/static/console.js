// Progressive enhancement only: every page works without this script. Elements with
// data-refresh are replaced, every few seconds, by the server-rendered fragment at that URL.
(function () {
  "use strict";
  var EVERY_MS = 3000;

  function refresh(element) {
    // Ticked rows wait: replacing them would untick what the person is choosing.
    if (element.querySelector("input[type=checkbox]:checked")) { return; }
    var url = element.getAttribute("data-refresh");
    fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.text();
      })
      .then(function (html) {
        if (element.innerHTML !== html) { element.innerHTML = html; }
        element.removeAttribute("data-stale");
      })
      .catch(function () { element.setAttribute("data-stale", "true"); });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var elements = document.querySelectorAll("[data-refresh]");
    Array.prototype.forEach.call(elements, function (element) {
      window.setInterval(function () { refresh(element); }, EVERY_MS);
    });
    document.documentElement.setAttribute("data-live", "true");
  });
})();
