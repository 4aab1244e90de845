// Pairwise (A/B) item: keys a / b / t choose for the active question (the one holding focus, else the
// first unanswered), then move on to the next unanswered one; checks before submit. rater.js does
// the rest (active time, address bar). The server checks everything again.
(function () {
  "use strict";
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
    group.classList.remove("has-error");
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
    g.addEventListener("change", () => g.classList.remove("has-error"));
  });
  activate(groups.find((g) => !answered(g)) || groups[0]);

  form.addEventListener("submit", (event) => {
    const bad = [];
    groups.forEach((g) => {
      const reason = g.querySelector("textarea");
      const missing = !answered(g) || (reason && reason.dataset.required && !reason.value.trim());
      g.classList.toggle("has-error", !!missing);
      if (missing) bad.push(g);
    });
    if (bad.length) {
      event.preventDefault();
      event.stopImmediatePropagation();
      if (status) status.textContent = "Pick an answer for every question (marked in red)" +
        (bad.some((g) => g.querySelector("textarea[data-required='1']")) ? ", with a reason." : ".");
      bad[0].scrollIntoView({block: "center"});
      activate(bad[0]);
    }
  });
})();
