// A study task page: save the draft as the participant types, and (IM retry mode) render an attempt and poll for it.
(function () {
  "use strict";
  var task = document.getElementById("task");
  if (!task) return;
  var box = document.getElementById("prompt");
  var state = document.getElementById("draft-state");
  var csrf = task.parentNode.querySelector("input[name=csrfmiddlewaretoken]") || document.querySelector("input[name=csrfmiddlewaretoken]");
  var position = task.dataset.position;
  var timer = null;
  var lastSaved = box.value;
  var leaving = false;  // the form is being submitted: the task is over, and its prompt travels with the form

  function post(url, fields, keepalive) {
    var body = new URLSearchParams(fields);
    body.append("position", position);
    return fetch(url, { method: "POST", body: body, headers: { "X-CSRFToken": csrf.value }, credentials: "same-origin", keepalive: !!keepalive })
      .then(function (r) { return r.json().then(function (data) { return { ok: r.ok, data: data }; }); });
  }

  // A draft is never sent once the form is on its way: the server may already have taken the submit, and a draft for
  // the task just left would then be refused (a 400 nobody sees, since the page is gone). keepalive: a draft sent as
  // the page closes still arrives.
  function saveDraft(keepalive) {
    var text = box.value;
    if (leaving || text === lastSaved) return;
    state.textContent = "Saving…";
    post(task.dataset.draftUrl, { text: text }, keepalive).then(function (r) {
      if (r.ok) { lastSaved = text; state.textContent = "Draft saved."; state.dataset.saved = "1"; }
      else { state.textContent = r.data.error || "Could not save the draft."; }
    }).catch(function () { state.textContent = "Offline: the draft is not saved yet."; });
  }

  box.addEventListener("input", function () {
    state.dataset.saved = "";
    clearTimeout(timer);
    timer = setTimeout(saveDraft, 600);
  });
  box.form.addEventListener("submit", function () {
    leaving = true;
    clearTimeout(timer);
  });
  window.addEventListener("beforeunload", function () { saveDraft(true); });
  // Back to this page from the browser's cache, after the form went: the task may be submitted, so ask the server where
  // the participant is now instead of saving drafts for it.
  window.addEventListener("pageshow", function (event) { if (event.persisted && leaving) window.location.reload(); });

  var tryButton = document.getElementById("try");
  if (!tryButton) return;
  var list = document.getElementById("attempts");
  var maxAttempts = parseInt(tryButton.dataset.max, 10);

  // Try is possible while attempts are left and none is rendering; with none left the page says to submit.
  function refreshTry() {
    var used = list.querySelectorAll("figure").length;
    document.getElementById("attempts-used").textContent = used;
    document.getElementById("attempts-none").hidden = used < maxAttempts;
    tryButton.disabled = used >= maxAttempts || !!list.querySelector('[data-status="pending"]');
  }

  function show(a) {
    var figure = list.querySelector('[data-number="' + a.number + '"]');
    if (!figure) { figure = document.createElement("figure"); figure.className = "attempt"; figure.dataset.number = a.number; list.appendChild(figure); }
    figure.dataset.status = a.status;
    var caption = a.score !== null && a.score !== undefined ? "similarity " + Math.round(a.score) + "/100" : a.status === "pending" ? "rendering…" : (a.error || a.status);
    figure.innerHTML = (a.image ? '<img alt="attempt ' + a.number + ': the image of its prompt" src="' + a.image + '">' : "") +
      '<figcaption></figcaption><blockquote class="attempt-prompt"></blockquote>';
    figure.querySelector("figcaption").textContent = "Attempt " + a.number + ": " + caption;
    var prompt = figure.querySelector(".attempt-prompt");
    prompt.textContent = a.text;
    prompt.title = "the prompt of attempt " + a.number;
    if (a.status === "pending") setTimeout(function () { poll(a.number); }, 1000);
    refreshTry();
  }

  function poll(number) {
    fetch(task.dataset.attemptUrl + "/" + number, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(show)
      .catch(function () { setTimeout(function () { poll(number); }, 2000); });
  }

  tryButton.addEventListener("click", function () {
    tryButton.disabled = true;
    post(task.dataset.attemptUrl, { text: box.value }).then(function (r) {
      if (!r.ok) { state.textContent = r.data.error; refreshTry(); return; }
      lastSaved = box.value;
      show(r.data);
    });
  });
  list.querySelectorAll('[data-status="pending"]').forEach(function (f) { poll(f.dataset.number); });
})();
