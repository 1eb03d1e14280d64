/* The viewer of report.html, inlined into the page by conformance/report/html.py. Shipped as package data.

   The first screen is in report.html itself; every other page (a finding, a case, a requirement's cells, a
   transcript, the duration trends) is a side file in the folder beside it, loaded when it is asked for:
   report.files/<key>.js, which calls AMQPReport.page(key, html). A <script src> is the one way a page opened
   from file:// can read a file beside it in every browser (Chromium refuses fetch() and XMLHttpRequest of
   file:// URLs), and its error event tells a missing file apart, so the page can say what is wrong instead of
   showing nothing. A page is addressed by the fragment (#finding/<id>, #case/<id>:<column>), so the browser's
   Back button closes it and the address can be shared. No request ever leaves the folder. */
(function () {
  "use strict";
  var root = document.documentElement;
  var BASE = root.getAttribute("data-side-base") || "report.files/";
  var KINDS = /^((?:finding|case|cell|ladder)\/[A-Za-z0-9._\/-]+|durations|cases)(?::([A-Za-z0-9._-]+))?$/;
  var loaded = Object.create(null);
  var waiting = Object.create(null);
  var panel = document.getElementById("side-panel");
  var body = document.getElementById("side-body");
  var openedHere = false;

  function esc(text) {
    return String(text).replace(/[&<>"']/g, function (c) {
      return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c];
    });
  }

  function settle(key, how, value) {
    var callbacks = waiting[key] || [];
    delete waiting[key];
    callbacks.forEach(function (cb) { cb[how](value); });
  }

  window.AMQPReport = {
    page: function (key, html) {
      loaded[key] = html;
      settle(key, "ok", html);
    }
  };

  function load(key, ok, fail) {
    if (key in loaded) { ok(loaded[key]); return; }
    var cb = {ok: ok, fail: fail};
    if (waiting[key]) { waiting[key].push(cb); return; }
    waiting[key] = [cb];
    var script = document.createElement("script");
    script.src = BASE + key + ".js";
    script.onerror = function () { script.remove(); settle(key, "fail", "missing"); };
    script.onload = function () { script.remove(); if (waiting[key]) settle(key, "fail", "wrong"); };
    document.head.appendChild(script);
  }

  function problem(key, why) {
    var file = BASE + key + ".js";
    var what = why === "missing"
      ? "could not be read: it is missing from the folder beside report.html, or the browser may not read it"
      : "was read, but it does not hold this page (it is cut off or from another report)";
    return '<div class="side-problem" role="alert"><h2>This page is not available</h2><p>The side file <code>' +
      esc(file) + "</code> " + what + ".</p><p>report.html holds only the first screen; each finding, case and " +
      "transcript page is a file in <code>" + esc(BASE) + "</code> beside it. Keep the report folder whole " +
      "(report.html together with " + esc(BASE) + ") and open report.html from there; " +
      "<code>amqp-conformance report</code> writes both again.</p>" +
      '<p><a href="#top" data-close>Back to the report</a></p></div>';
  }

  function fillLadders(scope) {
    Array.prototype.forEach.call(scope.querySelectorAll("details[data-ladder]"), function (details) {
      function fill() {
        if (details.getAttribute("data-state")) return;
        details.setAttribute("data-state", "loading");
        var target = details.querySelector(".ladder-body");
        var key = details.getAttribute("data-ladder");
        load(key, function (html) {
          details.setAttribute("data-state", "loaded");
          target.innerHTML = html;
        }, function (why) {
          details.setAttribute("data-state", "failed");
          target.innerHTML = problem(key, why);
        });
      }
      if (details.open) fill();
      details.addEventListener("toggle", function () { if (details.open) fill(); });
    });
  }

  function show(key, focus) {
    panel.hidden = false;
    root.classList.add("side-open");
    body.setAttribute("data-key", key);
    body.setAttribute("data-state", "loading");
    body.innerHTML = '<p class="note">Loading ' + esc(BASE + key) + ".js …</p>";
    load(key, function (html) {
      if (body.getAttribute("data-key") !== key) return;
      body.innerHTML = html;
      body.setAttribute("data-state", "loaded");
      fillLadders(body);
      var target = focus && document.getElementById("at-" + focus);
      panel.scrollTop = 0;
      if (target) {                 // the release that was clicked: marked (a finding page keeps its top in view)
        target.classList.add("focused");
        if (target.tagName === "DETAILS") target.open = true;
        if (key.indexOf("finding/") !== 0) target.scrollIntoView({block: "start"});
      }
    }, function (why) {
      if (body.getAttribute("data-key") !== key) return;
      body.innerHTML = problem(key, why);
      body.setAttribute("data-state", "failed");
    });
  }

  function hide() {
    if (panel.hidden) return;
    panel.hidden = true;
    root.classList.remove("side-open");
    body.removeAttribute("data-key");
    body.innerHTML = "";
  }

  function route() {
    var match = KINDS.exec(decodeURIComponent(location.hash.slice(1)));
    if (match) show(match[1], match[2]); else hide();
  }

  function close() {
    if (openedHere) { openedHere = false; history.back(); }
    else { location.hash = ""; hide(); }
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a");
    if (!link) return;
    if (link.hasAttribute("data-close")) { event.preventDefault(); close(); return; }
    var href = link.getAttribute("href") || "";
    if (href.charAt(0) === "#" && KINDS.test(href.slice(1))) openedHere = true;
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && !panel.hidden) close();
  });
  window.addEventListener("hashchange", route);
  route();
}());
