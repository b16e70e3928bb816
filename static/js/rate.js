// Keyboard rating on /rate/: 1–5 score the current dimension, y/n answer the current checklist item (each
// moves on), Ctrl+Enter submits. The radios stay native, so Tab, Space and the arrow keys work as usual.
(function () {
  "use strict";
  const form = document.getElementById("rate-form");
  if (!form) return;
  const steps = Array.from(form.querySelectorAll("fieldset.step"));
  const rationale = document.getElementById("rationale");
  const rationaleBox = rationale.closest("label");
  let current = -1;

  // The current question is highlighted; with none (index -1) the rationale box is, as the last step.
  function show(index) {
    steps.forEach((s, i) => s.classList.toggle("current", i === index));
    rationaleBox.classList.toggle("current", index < 0);
    current = index;
    if (index >= 0) steps[index].scrollIntoView({ block: "center" });
  }

  function answer(value) {
    const radio = steps[current].querySelector('input[value="' + value + '"]');
    if (!radio) return;
    radio.checked = true;
    const next = current + 1;
    if (next < steps.length) {
      show(next);
      (steps[next].querySelector("input:checked") || steps[next].querySelector("input")).focus({ preventScroll: true });
    } else {
      show(-1);
      rationale.focus();
    }
  }

  // Before Ctrl+Enter submits: say in the page what is missing and put the focus there (the browser's own bubble is
  // easy to miss, and the next score keys would otherwise land in the rationale without a word).
  const problem = document.createElement("p");
  problem.id = "rate-problem";
  problem.className = "error";
  problem.setAttribute("role", "alert");
  problem.hidden = true;
  rationaleBox.after(problem);

  function ready() {
    const missing = steps.findIndex((s) => !s.querySelector("input:checked"));
    if (missing >= 0) {
      steps[missing].classList.add("invalid");
      problem.textContent = "Not saved: question " + (missing + 1) + " has no answer yet; it is selected now.";
      problem.hidden = false;
      show(missing);
      steps[missing].querySelector("input").focus({ preventScroll: true });
      return false;
    }
    if (!rationale.value.trim()) {
      problem.textContent = "Not saved: the rationale is required. Type it in the box (the focus is there now), then Ctrl+Enter again.";
      problem.hidden = false;
      show(-1);
      rationale.classList.add("invalid");
      rationale.focus();
      return false;
    }
    problem.hidden = true;
    return true;
  }

  document.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      if (ready()) form.requestSubmit();
      return;
    }
    const typing = event.target.matches("textarea, input[type=text], select");
    if (typing || event.ctrlKey || event.metaKey || event.altKey || current < 0) return;
    const kind = steps[current].dataset.kind;
    if (kind === "score" && /^[1-5]$/.test(event.key)) {
      event.preventDefault();
      answer(event.key);
    } else if (kind === "check" && (event.key === "y" || event.key === "n")) {
      event.preventDefault();
      answer(event.key === "y" ? "1" : "0");
    }
  });

  // Whatever question the focus is in (Tab, a click) becomes the current one; the rationale box too.
  form.addEventListener("focusin", function (event) {
    const step = event.target.closest("fieldset.step");
    if (step) show(steps.indexOf(step));
    else if (event.target === rationale) show(-1);
  });

  rationale.addEventListener("input", function () {
    if (rationale.value.trim()) rationale.classList.remove("invalid");
  });

  // Start at the first question marked invalid (after an error), else the first without an answer, else the rationale.
  const invalid = steps.findIndex((s) => s.classList.contains("invalid"));
  const first = invalid >= 0 ? invalid : steps.findIndex((s) => !s.querySelector("input:checked"));
  if (first >= 0) show(first);
  else {
    show(-1);
    rationale.focus();
  }
})();
