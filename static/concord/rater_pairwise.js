// Pairwise (A/B) item: keys a / b / t choose for the active question (the one holding focus, else the
// first unanswered), then move on to the next unanswered one; checks before submit. rater.js does
// the rest (active time, address bar). The server checks everything again.
(function () {
  "use strict";
  // The page's words in its language (studies.rating.js_strings, rendered as #rater-strings), keyed by the
  // English text, which is also the fallback; {name} placeholders are filled from ``values``.
  const STRINGS = JSON.parse((document.getElementById("rater-strings") || {}).textContent || "{}");
  const t = (text, values) => (STRINGS[text] || text).replace(/\{(\w+)\}/g, (m, k) => (values && k in values ? values[k] : m));
  const form = document.getElementById("item-form");
  if (!form || !form.querySelector(".pairwise-criterion")) return;  // pairwise and ACUTE-Eval forms
  const groups = Array.from(form.querySelectorAll(".pairwise-criterion"));
  const status = form.querySelector(".autosave");
  const answered = (g) => !!g.querySelector("input[type=radio]:checked");
  let active = null;

  function activate(group) {
    groups.forEach((g) => g.classList.toggle("active", g === group));
    active = group;
  }
  function current() {
    const focused = document.activeElement && document.activeElement.closest(".pairwise-criterion");
    return focused || (active && !answered(active) ? active : null) || groups.find((g) => !answered(g)) || active || groups[0];
  }
  function choose(group, value) {
    const input = group.querySelector(`input[type=radio][value="${value}"]`);
    if (!input) return false;
    input.checked = true;
    input.dispatchEvent(new Event("change", {bubbles: true}));
    group.classList.remove("choice-missing");
    if (!group.querySelector(".reason-missing")) group.classList.remove("has-error");
    const next = groups.slice(groups.indexOf(group) + 1).find((g) => !answered(g)) || groups.find((g) => !answered(g));
    activate(next || group);
    if (next) next.scrollIntoView({block: "nearest"});
    return true;
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const tag = (event.target.tagName || "").toLowerCase();
    if (tag === "textarea" || tag === "input" && event.target.type === "text") return;
    const value = {a: "left", b: "right", t: "tie"}[event.key.toLowerCase()];
    if (!value || !groups.length) return;
    if (choose(current(), value)) event.preventDefault();
  });
  groups.forEach((g) => {
    g.addEventListener("focusin", () => activate(g));
    // the mark goes from what was fixed: the choices once one is picked, the "Why?" box once it is written
    g.addEventListener("change", () => { g.classList.remove("choice-missing"); if (!g.querySelector(".reason-missing")) g.classList.remove("has-error"); });
    const why = g.querySelector("textarea");
    if (why) why.addEventListener("input", () => {
      if (!why.value.trim()) return;
      why.closest(".pair-reason").classList.remove("reason-missing");
      if (!g.classList.contains("choice-missing")) g.classList.remove("has-error");
    });
  });
  activate(groups.find((g) => !answered(g)) || groups[0]);

  form.addEventListener("submit", (event) => {
    const bad = [];
    groups.forEach((g) => {
      const reason = g.querySelector("textarea");
      const noChoice = !answered(g), noReason = !!(reason && reason.dataset.required && !reason.value.trim());
      const missing = noChoice || noReason;
      // the red mark goes on what is missing: the choices, or the empty "Why?" box (not the answered choice)
      g.classList.toggle("has-error", missing);
      g.classList.toggle("choice-missing", noChoice);
      if (reason) reason.closest(".pair-reason").classList.toggle("reason-missing", noReason);
      if (missing) bad.push(g);
    });
    if (bad.length) {
      event.preventDefault();
      event.stopImmediatePropagation();
      if (status) status.textContent = bad.some((g) => g.querySelector("textarea[data-required='1']"))
        ? t("Pick an answer for every question (marked in red), with a reason.") : t("Pick an answer for every question (marked in red).");
      bad[0].scrollIntoView({block: "center"});
      activate(bad[0]);
    }
  });
})();
