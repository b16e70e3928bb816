// Copy buttons: <button data-copy="ID" hidden> copies the text of the element with that id (a <pre> of the cite block).
// The buttons are hidden until this script shows them, so a page without script offers none that would do nothing.
(function () {
  function copied(button, word) {
    const label = button.textContent;
    button.textContent = word;
    setTimeout(() => { button.textContent = label; }, 1500);
  }
  function fallback(target) {  // no Clipboard API (a page not served over HTTPS): select the text and copy the selection
    const range = document.createRange();
    range.selectNodeContents(target);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    return document.execCommand && document.execCommand("copy");
  }
  document.querySelectorAll("button[data-copy]").forEach((button) => {
    const target = document.getElementById(button.dataset.copy);
    if (!target) return;
    button.hidden = false;
    button.addEventListener("click", () => {
      const text = target.textContent;
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(() => copied(button, "Copied"), () => copied(button, fallback(target) ? "Copied" : "Select and copy"));
      } else {
        copied(button, fallback(target) ? "Copied" : "Select and copy");
      }
    });
  });
})();
