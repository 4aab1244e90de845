// Rater item page: autosave, active time, Likert keys, BWS ranking (drag, arrows, selects),
// and checks before submitting. The server checks everything again; this only saves round trips.
(function () {
  "use strict";
  const form = document.getElementById("item-form");
  if (!form) return;
  const design = form.dataset.design;
  const status = form.querySelector(".autosave");
  // Autosave carries the page's per-assignment form token, not a cookie: inside a cross-site frame
  // (Mechanical Turk) the browser may send no cookies at all.
  const draftToken = form.dataset.draftToken || "";

  // A stored answer is answered with the next item's page itself (no redirect): show this page's own
  // address, so that reload, Back and a bookmark reach this item, not the one just submitted.
  if (form.dataset.url && window.location.pathname !== form.dataset.url) {
    window.history.replaceState(null, "", form.dataset.url);
  }

  // Active time: only while the page is visible.
  let activeMs = 0, visibleSince = document.visibilityState === "visible" ? performance.now() : null;
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") visibleSince = performance.now();
    else if (visibleSince !== null) { activeMs += performance.now() - visibleSince; visibleSince = null; }
  });
  const currentActive = () => Math.round(activeMs + (visibleSince !== null ? performance.now() - visibleSince : 0));

  // Autosave every change (debounced); a lost connection loses at most the field being typed.
  function answers() {
    const data = {};
    new FormData(form).forEach((value, key) => { if (/^r\d+-/.test(key)) data[key] = value; });
    return data;
  }
  let timer = null;
  function scheduleSave() {
    if (!form.dataset.draftUrl) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      fetch(form.dataset.draftUrl, {
        method: "POST", headers: {"Content-Type": "application/json", "X-Concord-Form-Token": draftToken},
        body: JSON.stringify(answers()), credentials: "omit",
      }).then((r) => { status.textContent = r.ok ? "Saved" : "Not saved — your answers are still on this page"; })
        .catch(() => { status.textContent = "Offline — your answers are kept on this page; they will be saved"; });
    }, 400);
  }
  form.addEventListener("input", scheduleSave);
  form.addEventListener("change", scheduleSave);

  // Likert: digits choose a point in the focused row.
  form.querySelectorAll(".likert-row").forEach((row) => {
    row.addEventListener("keydown", (event) => {
      if (!/^[0-9]$/.test(event.key)) return;
      const input = row.querySelector(`input[value="${event.key}"]`);
      if (input) { input.checked = true; input.focus(); input.dispatchEvent(new Event("change", {bubbles: true})); event.preventDefault(); }
    });
  });

  // BWS: the list order is the ranking; selects, arrows and dragging all change it.
  form.querySelectorAll("ol.ranking").forEach((list) => {
    const items = () => Array.from(list.querySelectorAll("li.rank-item"));
    const selectOf = (li) => li.querySelector("select");
    function numberFromOrder() { items().forEach((li, i) => { selectOf(li).value = String(i + 1); }); scheduleSave(); }
    function orderFromSelects(changed) {
      const wanted = Number(selectOf(changed).value);
      if (!wanted) return;
      const clash = items().find((li) => li !== changed && Number(selectOf(li).value) === wanted);
      const old = items().indexOf(changed) + 1;
      if (clash) selectOf(clash).value = String(old);  // swap so ranks stay unique
      items().sort((a, b) => (Number(selectOf(a).value) || 99) - (Number(selectOf(b).value) || 99))
        .forEach((li) => list.appendChild(li));
      scheduleSave();
    }
    list.addEventListener("change", (event) => { if (event.target.tagName === "SELECT") orderFromSelects(event.target.closest("li")); });
    list.addEventListener("click", (event) => {
      const button = event.target.closest("button.move");
      if (!button) return;
      const li = button.closest("li"), all = items(), i = all.indexOf(li), j = i + Number(button.dataset.step);
      if (j < 0 || j >= all.length) return;
      if (j < i) list.insertBefore(li, all[j]); else list.insertBefore(all[j], li);
      numberFromOrder();
      button.focus();
    });
    let dragged = null;
    list.addEventListener("dragstart", (event) => { dragged = event.target.closest("li"); event.dataTransfer.effectAllowed = "move"; });
    list.addEventListener("dragover", (event) => {
      event.preventDefault();
      const over = event.target.closest("li");
      if (!dragged || !over || over === dragged) return;
      const box = over.getBoundingClientRect();
      list.insertBefore(dragged, event.clientY > box.top + box.height / 2 ? over.nextSibling : over);
    });
    list.addEventListener("drop", (event) => { event.preventDefault(); numberFromOrder(); dragged = null; });
  });

  // Checks before submit, shown next to the field (the server repeats them).
  function problems() {
    const found = [];
    if (design === "rme" || design === "bme") {
      form.querySelectorAll("input[type=number]").forEach((input) => {
        const note = input.parentElement.querySelector(".field-error");
        const value = input.value.trim(), min = Number(input.dataset.min), max = Number(input.dataset.max);
        let message = "";
        if (value === "") message = "give a value for this response";
        else if (!/^\d+$/.test(value)) message = "use a whole number";
        else if (Number(value) < min || Number(value) > max) message = `use a number from ${min} to ${max}`;
        note.textContent = message; note.hidden = !message;
        input.closest(".magnitude-row").classList.toggle("has-error", !!message);
        input.setAttribute("aria-invalid", message ? "true" : "false");
        if (message) found.push(input);
      });
    } else if (design === "likert") {
      form.querySelectorAll(".likert-row").forEach((row) => {
        const missing = !row.querySelector("input:checked");
        row.classList.toggle("has-error", missing);
        if (missing) found.push(row);
      });
    } else if (design === "bws") {
      form.querySelectorAll("ol.ranking").forEach((list) => {
        const values = Array.from(list.querySelectorAll("select")).map((s) => s.value);
        const bad = values.includes("") || new Set(values).size !== values.length;
        list.classList.toggle("has-error", bad);
        if (bad) found.push(list);
      });
    }
    return found;
  }
  form.addEventListener("submit", (event) => {
    const bad = problems();
    if (bad.length) {
      event.preventDefault();
      status.textContent = "Some answers need attention (marked in red).";
      bad[0].scrollIntoView({block: "center"});
      return;
    }
    form.querySelector("input[name=active_ms]").value = String(currentActive());
  });
})();
