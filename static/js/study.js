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

  function post(url, fields) {
    var body = new URLSearchParams(fields);
    body.append("position", position);
    return fetch(url, { method: "POST", body: body, headers: { "X-CSRFToken": csrf.value }, credentials: "same-origin" })
      .then(function (r) { return r.json().then(function (data) { return { ok: r.ok, data: data }; }); });
  }

  function saveDraft() {
    var text = box.value;
    if (text === lastSaved) return;
    state.textContent = "Saving…";
    post(task.dataset.draftUrl, { text: text }).then(function (r) {
      if (r.ok) { lastSaved = text; state.textContent = "Draft saved."; state.dataset.saved = "1"; }
      else { state.textContent = r.data.error || "Could not save the draft."; }
    }).catch(function () { state.textContent = "Offline: the draft is not saved yet."; });
  }

  box.addEventListener("input", function () {
    state.dataset.saved = "";
    clearTimeout(timer);
    timer = setTimeout(saveDraft, 600);
  });
  window.addEventListener("beforeunload", saveDraft);

  var tryButton = document.getElementById("try");
  if (!tryButton) return;
  var list = document.getElementById("attempts");

  function show(a) {
    var figure = list.querySelector('[data-number="' + a.number + '"]');
    if (!figure) { figure = document.createElement("figure"); figure.className = "attempt"; figure.dataset.number = a.number; list.appendChild(figure); }
    figure.dataset.status = a.status;
    document.getElementById("attempts-used").textContent = list.querySelectorAll("figure").length;
    var caption = a.score !== null && a.score !== undefined ? "similarity " + Math.round(a.score) + "/100" : a.status === "pending" ? "rendering…" : (a.error || a.status);
    figure.innerHTML = (a.image ? '<img alt="attempt ' + a.number + '" src="' + a.image + '">' : "") + "<figcaption></figcaption>";
    figure.querySelector("figcaption").textContent = "Attempt " + a.number + ": " + caption;
    if (a.status === "pending") setTimeout(function () { poll(a.number); }, 1000);
    else tryButton.disabled = false;
  }

  function poll(number) {
    fetch(task.dataset.attemptUrl + "/" + number, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(show)
      .catch(function () { setTimeout(function () { poll(number); }, 2000); });
  }

  tryButton.addEventListener("click", function () {
    tryButton.disabled = true;
    post(task.dataset.attemptUrl, { text: box.value }).then(function (r) {
      if (!r.ok) { state.textContent = r.data.error; tryButton.disabled = false; return; }
      lastSaved = box.value;
      show(r.data);
    });
  });
  list.querySelectorAll('[data-status="pending"]').forEach(function (f) { poll(f.dataset.number); });
})();
