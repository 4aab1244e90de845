// Best-worst tuples (raters/_bws_tuple.html): one best and one worst response per question, never
// the same one; keyboard 1-5 chooses a row and b / w marks it; checks before submitting. rater.js
// (loaded first) autosaves the fields (named r0-best-… / r0-worst-…) and records active time.
(function () {
  "use strict";
  // The page's words in its language (studies.rating.js_strings, rendered as #rater-strings), keyed by the
  // English text, which is also the fallback; {name} placeholders are filled from ``values``.
  const STRINGS = JSON.parse((document.getElementById("rater-strings") || {}).textContent || "{}");
  const t = (text, values) => (STRINGS[text] || text).replace(/\{(\w+)\}/g, (m, k) => (values && k in values ? values[k] : m));
  const form = document.getElementById("item-form");
  if (!form || form.dataset.design !== "bws_tuples") return;
  const sets = Array.from(form.querySelectorAll("fieldset.bw-criterion"));

  function checked(set, name) { const input = set.querySelector(`input[name="${name}"]:checked`); return input ? input.value : ""; }
  // The response picked as best cannot also be worst (and the reverse): disable its twin.
  function sync(set) {
    const best = checked(set, set.dataset.best), worst = checked(set, set.dataset.worst);
    set.querySelectorAll(`input[name="${set.dataset.worst}"]`).forEach((i) => { i.disabled = i.value === best; });
    set.querySelectorAll(`input[name="${set.dataset.best}"]`).forEach((i) => { i.disabled = i.value === worst; });
  }
  function pick(set, kind, input) {
    const twin = set.querySelector(`input[name="${kind === "best" ? set.dataset.worst : set.dataset.best}"][value="${input.value}"]`);
    if (twin && twin.checked) twin.checked = false;  // moving a pick to the other column frees it
    input.checked = true;
    sync(set);
    input.dispatchEvent(new Event("change", {bubbles: true}));  // rater.js autosaves on change
  }
  sets.forEach((set) => {
    sync(set);
    let active = null;
    set.addEventListener("change", (event) => {
      if (event.target.type !== "radio") return;
      const kind = event.target.name === set.dataset.best ? "best" : "worst";
      const twin = set.querySelector(`input[name="${kind === "best" ? set.dataset.worst : set.dataset.best}"][value="${event.target.value}"]`);
      if (twin && twin.checked) twin.checked = false;
      sync(set);
      set.classList.remove("has-error");
    });
    set.addEventListener("keydown", (event) => {
      const rows = Array.from(set.querySelectorAll("tr.bw-row"));
      if (/^[1-9]$/.test(event.key) && Number(event.key) <= rows.length) {
        rows.forEach((r) => r.classList.remove("active"));
        active = rows[Number(event.key) - 1];
        active.classList.add("active");
        event.preventDefault();
      } else if ((event.key === "b" || event.key === "w") && active) {
        const kind = event.key === "b" ? "best" : "worst";
        const input = active.querySelector(`input[name="${kind === "best" ? set.dataset.best : set.dataset.worst}"]`);
        pick(set, kind, input);
        event.preventDefault();
      }
    });
  });

  form.addEventListener("submit", (event) => {
    let first = null;
    sets.forEach((set) => {
      const best = checked(set, set.dataset.best), worst = checked(set, set.dataset.worst);
      const note = set.querySelector(".bw-problem");
      const message = !best && !worst ? t("pick the best and the worst response") : !best ? t("pick the best response")
        : !worst ? t("pick the worst response") : best === worst ? t("the best and the worst must differ") : "";
      note.textContent = message; note.hidden = !message;
      set.classList.toggle("has-error", !!message);
      if (message && !first) first = set;
    });
    if (first) {
      event.preventDefault();
      const status = form.querySelector(".autosave");
      if (status) status.textContent = t("Some answers need attention (marked in red).");
      first.scrollIntoView({block: "center"});
      first.focus();
    }
  });
})();
