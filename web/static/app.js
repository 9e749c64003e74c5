// hookrelay dashboard: optional niceties. Every page works without this file.
(function () {
  "use strict";
  // Auto-refresh pages that ask for it, unless the user is typing or has
  // ticked something.
  var body = document.body;
  if (body && body.getAttribute("data-refresh")) {
    var secs = parseInt(body.getAttribute("data-refresh"), 10) || 10;
    setTimeout(function () {
      var busy = document.activeElement && /INPUT|SELECT|TEXTAREA/.test(document.activeElement.tagName);
      if (!busy && !document.querySelector("input[type=checkbox]:checked")) {
        location.reload();
      }
    }, secs * 1000);
  }
  // "Select all" checkbox for the dead-letter list.
  var all = document.getElementById("select-all");
  if (all) {
    all.addEventListener("change", function () {
      document.querySelectorAll("input[name=id]").forEach(function (cb) { cb.checked = all.checked; });
    });
  }
})();
// A portal link's landing page: open the portal at once (without scripts,
// its button does it).
(function () {
  "use strict";
  var f = document.querySelector("form[data-autosubmit]");
  if (f) {
    f.submit();
  }
})();
