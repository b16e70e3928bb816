// A <select data-autosubmit> sends its form as soon as it changes (the board's, the judge page's and a submission
// page's pickers). A listener in a static file, because the Content-Security-Policy refuses inline onchange handlers.
document.addEventListener("change", (event) => {
  const select = event.target;
  if (select instanceof HTMLSelectElement && "autosubmit" in select.dataset && select.form) select.form.submit();
});
