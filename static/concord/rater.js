// Rater item page: autosave, active time, Likert keys, BWS ranking (drag by mouse or touch, arrows,
// selects), and checks before submitting. The server checks everything again and is the authority;
// the checks here use the same grammar and the same messages (studies.designs.ratings, typed_value_parse)
// and only save round trips. Each check applies to the fields of its kind that the page has (its
// design's partial puts them there), so no check asks which design the study has.
(function () {
  "use strict";
  // The page's words in its language (studies.rating.js_strings, rendered as #rater-strings), keyed by the
  // English text, which is also the fallback; {name} placeholders are filled from ``values``.
  const STRINGS = JSON.parse((document.getElementById("rater-strings") || {}).textContent || "{}");
  const t = (text, values) => (STRINGS[text] || text).replace(/\{(\w+)\}/g, (m, k) => (values && k in values ? values[k] : m));
  const form = document.getElementById("item-form");
  if (!form) return;
  // Two notices, two live regions: autosave news must never overwrite what is wrong with the answers.
  const saveStatus = form.querySelector(".autosave");
  const summary = form.querySelector(".form-problems");
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
    // Per-response fields (r<letter>-…), and a pairwise item's choice and reason (studies.designs.pairwise).
    // A multi-label row's ticked boxes share one name: they are saved as a list.
    form.querySelectorAll(".labelset-row").forEach((row) => { data[row.dataset.field] = []; });
    // A per-turn row of boxes (studies.designs.kinds.per_turn) with none ticked is an answer too: "none".
    form.querySelectorAll(".per-turn-row:not([data-mode=categorical])").forEach((row) => { data[row.dataset.field] = []; });
    new FormData(form).forEach((value, key) => {
      if (!/^(r[A-Z]\d*-|r0-(best|worst)-|choice-|reason-)/.test(key)) return;  // r0-: a tuple pick
      if (Array.isArray(data[key])) data[key].push(value); else data[key] = value;
    });
    return data;
  }
  // Every change is saved: a pick (change) at once, typing (input) after a 400 ms pause. Until the server
  // has it, the answers wait in localStorage (this browser, across reloads and a closed tab) as the
  // page's pending answer: {seq, at, data}, seq one more for every change. Only the server's "stored"
  // for the pending seq clears it, so a failed or offline save keeps it, an older save's late answer
  // never clears a newer change, and one save is in flight at a time (the server gets them in order).
  // A pending answer is newer than anything the server has (an assignment is bound to this browser):
  // on load it replaces the answers the page shows, and it is sent on load, when the connection comes
  // back (online), and with a keepalive request when the page is hidden or left.
  const pendingKey = form.dataset.draftUrl ? `concord-draft:${form.dataset.draftUrl}` : "";
  const OFFLINE = t("Not saved yet — offline; will be sent when the connection is back");
  // Where storage is refused (a cross-site frame without third-party storage) the page itself keeps it.
  let memory = null;
  function pending() {
    if (!pendingKey) return null;
    try { return JSON.parse(localStorage.getItem(pendingKey) || "null"); } catch (e) { return memory; }
  }
  let seq = (pending() || {}).seq || 0;
  function keep(data) {
    seq = Math.max(seq, (pending() || {}).seq || 0) + 1;
    memory = {seq, at: Date.now(), data};
    try { if (pendingKey) localStorage.setItem(pendingKey, JSON.stringify(memory)); } catch (e) { /* storage full or off */ }
  }
  function stored(sent) {
    if (memory && memory.seq === sent) memory = null;
    const now = pending();
    try { if (now && now.seq === sent) localStorage.removeItem(pendingKey); } catch (e) { /* ignore */ }
    return !pending();
  }
  let timer = null, inFlight = false, again = false, offline = false, backoff = 0;
  // A save that fails while the browser still says "online" (a dropped connection, a proxy's reset) gets
  // no "online" event to wake it: it tries again by itself, waiting 1, 2, 4 … up to 30 s.
  function retryLater() {
    backoff = Math.min(backoff ? backoff * 2 : 1000, 30000);
    clearTimeout(timer);
    timer = setTimeout(() => send(false), backoff);
  }
  function send(keepalive) {
    clearTimeout(timer);
    timer = null;
    const waiting = pending();
    if (!form.dataset.draftUrl || !waiting) return;
    if (inFlight && !keepalive) { again = true; return; }
    if (!navigator.onLine) { offline = true; saveStatus.textContent = OFFLINE; return; }
    inFlight = true;
    fetch(form.dataset.draftUrl, {
      method: "POST", headers: {"Content-Type": "application/json", "X-Concord-Form-Token": draftToken},
      body: JSON.stringify(waiting.data), credentials: "omit", keepalive,
    }).then((r) => {
      offline = false;
      backoff = 0;
      // A refusal (4xx) will not change by sending again: the answers stay on the page, not in the outbox.
      const done = r.ok ? stored(waiting.seq) : (r.status < 500 && stored(waiting.seq));
      if (r.status >= 500 && !keepalive) retryLater();  // a server restarting or overloaded: later may work
      if (r.ok && !done) { again = true; saveStatus.textContent = t("Saving…"); return; }
      // Beside answers the page marks as wrong, a bare "Saved" read as "accepted": say it is a draft.
      const marked = (summary && summary.textContent.trim() && summary.offsetParent !== null)
        || [...form.querySelectorAll(".error")].some((e) => e.textContent.trim() && e.offsetParent !== null);
      saveStatus.textContent = !r.ok ? t("Not saved — your answers are still on this page")
        : marked ? t("Draft saved (not submitted): please fix the marked answers") : t("Saved");
    }).catch(() => { offline = true; saveStatus.textContent = OFFLINE; if (!keepalive) retryLater(); })
      .finally(() => {
        inFlight = false;
        if (again) { again = false; send(false); }
      });
  }
  function scheduleSave(event) {
    if (!form.dataset.draftUrl) return;
    keep(answers());
    // A newer change is not saved yet: the line must not keep saying "Saved" about an older one.
    saveStatus.textContent = navigator.onLine ? t("Saving…") : OFFLINE;
    const typed = event && event.type === "input" && event.target.matches("textarea, input[type=text], input:not([type])");
    if (!typed) { send(false); return; }
    clearTimeout(timer);
    timer = setTimeout(() => send(false), 400);
  }
  form.addEventListener("input", scheduleSave);
  form.addEventListener("change", scheduleSave);
  const flush = () => { if (pending() && navigator.onLine) send(true); };
  window.addEventListener("pagehide", flush);
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "hidden") flush(); });
  window.addEventListener("online", () => send(false));
  window.addEventListener("offline", () => { offline = true; if (pending()) saveStatus.textContent = OFFLINE; });

  // The pending answer (newer than the server's) replaces what the page shows, and is sent again.
  (function restore() {
    const waiting = pending();
    if (!waiting || !waiting.data) return;
    Object.entries(waiting.data).forEach(([name, value]) => {
      const fields = [...form.elements].filter((f) => f.name === name);
      if (!fields.length) return;
      const values = Array.isArray(value) ? value.map(String) : [String(value)];
      const choices = fields.filter((f) => f.type === "radio" || f.type === "checkbox");
      if (choices.length) choices.forEach((f) => { f.checked = values.includes(f.value); });
      else fields[0].value = values[0];
    });
    form.querySelectorAll("ol.ranking").forEach((list) => {  // the rows follow their restored ranks
      [...list.querySelectorAll("li.rank-item")].sort((x, y) => (Number(x.querySelector("select").value) || 99)
        - (Number(y.querySelector("select").value) || 99)).forEach((li) => list.appendChild(li));
    });
    send(false);
  })();

  // --- checks: one function per kind of field, each returns its message ("" when fine) -----------

  // The numbers a rater may type: digits with an optional decimal point (as designs._DECIMAL).
  const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)$/, DECIMAL_COMMA = /^[+-]?\d*,\d+$/, THOUSANDS_COMMA = /^[+-]?\d{1,3},\d{3}$/;
  function magnitudeMessage(input) {
    const text = input.value.trim(), low = input.dataset.min, high = input.dataset.max;
    if (text === "") return t("give a value for this response");
    if (THOUSANDS_COMMA.test(text)) return t("“{text}” is ambiguous: write {whole} for a whole number, or use a point for decimals", {text, whole: text.replace(",", "")});
    if (DECIMAL_COMMA.test(text)) return t("write {fixed} with a point, not a comma", {fixed: text.replace(",", ".")});
    if (!DECIMAL.test(text)) return t("“{text}” is not a number: type digits, e.g. 40 or 12.5", {text: Array.from(text).slice(0, 12).join("")});
    const value = Number(text);
    if (value < 0 && Number(low) >= 0) return t("must not be negative: use a number from {low} to {high}", {low, high});
    if (value < Number(low) || value > Number(high)) return t("use a number from {low} to {high}", {low, high});
    return "";
  }
  const likertMessage = (row) => (row.querySelector("input:checked") ? "" : t("pick a point for this response"));
  const rankMessage = (select) => (select.value === "" ? t("rank this response") : "");
  function rankingMessage(list) {
    const values = Array.from(list.querySelectorAll("select")).map((s) => s.value).filter((v) => v !== "");
    const size = list.querySelectorAll("select").length;
    return new Set(values).size !== values.length ? t("ranks must be 1..{size}, each used once (no ties)", {size}) : "";
  }

  // Other judgement kinds (studies.designs.kinds): the same messages as categorical.py, multilabel.py,
  // free_text.py and rationale.py.
  const labelMessage = (row) => (row.querySelector("input:checked") ? "" : t("pick one of the labels for this response"));
  function labelSetMessage(row) {
    const ticked = Array.from(row.querySelectorAll("input:checked")).map((i) => i.value);
    const none = row.dataset.none;
    if (none && ticked.includes(none) && ticked.length > 1) return t("“None of these” cannot go with other labels");
    if (ticked.length) return "";
    return none ? t("tick the labels that apply, or “None of these”") : t("tick at least one label");
  }
  function textMessage(area) {
    const n = area.value.trim().length, low = Number(area.dataset.min), high = Number(area.dataset.max);
    if (area.dataset.why) return n < low ? t("say why in a few words") : n > high ? t("write at most {high} characters (now {n})", {high, n}) : "";
    if (n < low) return n === 0 && low <= 1 ? t("write something here") : t("write at least {low} characters (now {n})", {low, n});
    return n > high ? t("write at most {high} characters (now {n})", {high, n}) : "";
  }

  // Show (or clear) one field's message: its text, its red border, aria-invalid.
  function mark(box, invalidEl, note, message) {
    if (note) { note.textContent = message; note.hidden = !message; }
    box.classList.toggle("has-error", !!message);
    if (message) invalidEl.setAttribute("aria-invalid", "true"); else invalidEl.removeAttribute("aria-invalid");
    return message;
  }
  const noteOf = (el) => document.getElementById(el.getAttribute("aria-describedby"));
  function checkMagnitude(input) { return mark(input.closest(".magnitude-row"), input, noteOf(input), magnitudeMessage(input)); }
  function checkLikert(row) { return mark(row, row, noteOf(row), likertMessage(row)); }
  function checkRank(select) { return mark(select.closest("li"), select, noteOf(select), rankMessage(select)); }
  function checkRanking(list) { return mark(list, list, noteOf(list), rankingMessage(list)); }
  function checkLabel(row) { return mark(row, row, noteOf(row), labelMessage(row)); }
  function checkLabelSet(row) { return mark(row, row, noteOf(row), labelSetMessage(row)); }
  function checkText(area) { return mark(area.closest(".text-row"), area, noteOf(area), textMessage(area)); }

  // Every field in one pass: all problems are shown at once, not the first one only.
  function checkAll() {
    const bad = [];
    form.querySelectorAll(".magnitude-row input").forEach((el) => { if (checkMagnitude(el)) bad.push(el); });
    form.querySelectorAll(".likert-row").forEach((el) => { if (checkLikert(el)) bad.push(el); });
    form.querySelectorAll(".label-row").forEach((el) => { if (checkLabel(el)) bad.push(el); });
    form.querySelectorAll(".labelset-row").forEach((el) => { if (checkLabelSet(el)) bad.push(el); });
    form.querySelectorAll(".text-row textarea").forEach((el) => { if (checkText(el)) bad.push(el); });
    form.querySelectorAll("ol.ranking").forEach((list) => {
      list.querySelectorAll("select").forEach((el) => { if (checkRank(el)) bad.push(el); });
      if (checkRanking(list)) bad.push(list);
    });
    return bad;
  }
  function showSummary(count) {
    summary.hidden = count === 0;
    summary.textContent = count === 0 ? "" : count === 1 ? t("1 answer needs attention; it is marked below.")
      : t("{count} answers need attention; they are marked below.", {count});
  }
  const flaggedCount = () => form.querySelectorAll(".has-error").length;

  // A field marked wrong is checked again as soon as it changes, so the mark goes once it is fixed.
  function recheck(target) {
    if (target.matches(".magnitude-row input")) {
      if (target.getAttribute("aria-invalid") === "true") checkMagnitude(target);
    } else if (target.closest(".likert-row")) {
      checkLikert(target.closest(".likert-row"));
    } else if (target.closest(".label-row")) {
      checkLabel(target.closest(".label-row"));
    } else if (target.closest(".labelset-row")) {
      checkLabelSet(target.closest(".labelset-row"));
    } else if (target.matches(".text-row textarea")) {
      if (target.getAttribute("aria-invalid") === "true") checkText(target);
    } else if (target.closest("ol.ranking")) {
      const list = target.closest("ol.ranking");
      list.querySelectorAll("select").forEach((el) => { if (el.getAttribute("aria-invalid") === "true") checkRank(el); });
      checkRanking(list);  // ties show at once (the selects swap ranks, so they are rare)
    } else return;
    // The server's note for a whole question (e.g. a ranking with ties) goes once nothing in it is marked.
    const fieldset = target.closest("fieldset.criterion");
    const note = fieldset && fieldset.querySelector(":scope > p.error");
    if (note && !fieldset.querySelector(".has-error")) note.hidden = true;
    if (!summary.hidden) showSummary(flaggedCount());
  }
  form.addEventListener("input", (event) => recheck(event.target));
  form.addEventListener("change", (event) => recheck(event.target));

  // --- Likert: typing a point's number picks it in the focused row ---------------------------------
  // Scales of up to 9 points: one digit. Longer scales: two digits typed within a second make one
  // number (1 then 0 is 10, 1 then 1 is 11); 0 alone is 10, as on a phone's keypad.
  form.querySelectorAll(".likert-row").forEach((row) => {
    const size = row.querySelectorAll("input[type=radio]").length;
    let typed = "", typedAt = 0;
    row.addEventListener("keydown", (event) => {
      if (!/^[0-9]$/.test(event.key) || event.ctrlKey || event.metaKey || event.altKey) return;
      const now = performance.now();
      let wanted = event.key;
      if (size >= 10) {
        const joined = (now - typedAt < 1000 ? typed : "") + event.key;
        wanted = joined.length <= 2 && Number(joined) >= 1 && Number(joined) <= size ? joined : event.key;
        typed = wanted; typedAt = now;
        if (wanted === "0") wanted = "10";
      }
      const input = row.querySelector(`input[value="${Number(wanted)}"]`);
      event.preventDefault();
      if (input) { input.checked = true; input.focus(); input.dispatchEvent(new Event("change", {bubbles: true})); }
    });
  });

  // --- labels: typing a label's number picks it (one label) or ticks / unticks it (a label set) ---------
  // "None of these" is 0 and clears the other boxes; ticking a label clears "None of these".
  function exclusiveNone(row, changed) {
    const none = row.dataset.none;
    if (!none || !changed.checked) return;
    row.querySelectorAll("input[type=checkbox]").forEach((box) => {
      if (box !== changed && (changed.value === none || box.value === none)) box.checked = false;
    });
  }
  form.querySelectorAll(".labelset-row").forEach((row) => {
    row.addEventListener("change", (event) => { if (event.target.type === "checkbox") exclusiveNone(row, event.target); });
  });
  form.querySelectorAll(".label-row, .labelset-row").forEach((row) => {
    row.addEventListener("keydown", (event) => {
      if (!/^[0-9]$/.test(event.key) || event.ctrlKey || event.metaKey || event.altKey) return;
      const inputs = Array.from(row.querySelectorAll("input"));
      const input = event.key === "0" ? inputs.find((i) => i.value === row.dataset.none) : inputs[Number(event.key) - 1];
      event.preventDefault();
      if (!input || (input.value === row.dataset.none && event.key !== "0")) return;
      input.checked = input.type === "radio" ? true : !input.checked;
      if (input.type === "checkbox") exclusiveNone(row, input);
      input.focus();
      input.dispatchEvent(new Event("change", {bubbles: true}));
    });
  });

  // --- BWS: the list order is the ranking; selects, arrows and dragging all change it -------------
  form.querySelectorAll("ol.ranking").forEach((list) => {
    const items = () => Array.from(list.querySelectorAll("li.rank-item"));
    const selectOf = (li) => li.querySelector("select");
    function numberFromOrder() {
      items().forEach((li, i) => { selectOf(li).value = String(i + 1); });
      recheck(selectOf(items()[0]));
      scheduleSave();
    }
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

    // Mouse: HTML drag and drop on the whole row.
    let dragged = null;
    list.addEventListener("dragstart", (event) => {
      if (held) { event.preventDefault(); return; }  // the handle is being dragged by pointer events
      dragged = event.target.closest("li");
      event.dataTransfer.effectAllowed = "move";
    });
    list.addEventListener("dragover", (event) => {
      event.preventDefault();
      const over = event.target.closest("li");
      if (!dragged || !over || over === dragged) return;
      const box = over.getBoundingClientRect();
      list.insertBefore(dragged, event.clientY > box.top + box.height / 2 ? over.nextSibling : over);
    });
    list.addEventListener("drop", (event) => { event.preventDefault(); numberFromOrder(); dragged = null; });

    // Touch and pen (phones do not fire HTML drag events): Pointer Events on the handle, which has
    // touch-action: none so the finger drags the row instead of scrolling the page. The held row
    // itself never moves in the DOM (that would drop its pointer capture): its neighbours step
    // around it while the pointer passes their middle.
    let held = null;
    list.addEventListener("pointerdown", (event) => {
      const handle = event.target.closest(".handle");
      if (!handle || (event.pointerType === "mouse" && event.button !== 0)) return;
      held = {li: handle.closest("li"), id: event.pointerId};
      handle.setPointerCapture(event.pointerId);
      held.li.classList.add("dragging");
      event.preventDefault();
    });
    list.addEventListener("pointermove", (event) => {
      if (!held || event.pointerId !== held.id) return;
      const li = held.li;
      for (;;) {
        const before = li.previousElementSibling, after = li.nextElementSibling;
        if (before && event.clientY < middle(before)) list.insertBefore(before, li.nextSibling);
        else if (after && event.clientY > middle(after)) list.insertBefore(after, li);
        else break;
      }
    });
    const middle = (el) => { const box = el.getBoundingClientRect(); return box.top + box.height / 2; };
    function release(event) {
      if (!held || event.pointerId !== held.id) return;
      held.li.classList.remove("dragging");
      held = null;
      numberFromOrder();
    }
    list.addEventListener("pointerup", release);
    list.addEventListener("pointercancel", release);
  });

  // --- submit: every problem at once, then focus the first ----------------------------------------
  form.addEventListener("submit", (event) => {
    const bad = checkAll();
    showSummary(bad.length ? flaggedCount() : 0);
    if (bad.length) {
      event.preventDefault();
      bad[0].scrollIntoView({block: "center"});
      const focusable = bad[0].matches("input, select, [tabindex]") ? bad[0] : bad[0].querySelector("input, select");
      if (focusable) focusable.focus({preventScroll: true});
      return;
    }
    // Offline (the browser says so, or the last save could not reach the server): stay on this page,
    // say so, and go on by itself once the connection is back; the answers wait in the outbox meanwhile.
    if (form.dataset.draftUrl && (!navigator.onLine || offline)) {
      event.preventDefault();
      keep(answers());
      summary.hidden = false;
      summary.textContent = t("The connection is gone. Your answers are kept on this page; it goes on to the next item as soon as the connection is back.");
      saveStatus.textContent = OFFLINE;
      waitForConnection();
      return;
    }
    clearTimeout(timer);
    form.querySelector("input[name=active_ms]").value = String(currentActive());
    memory = null;
    try { if (pendingKey) localStorage.removeItem(pendingKey); } catch (e) { /* the POST carries every answer */ }
  });
  // Back online: try a save first (it proves the server answers), then submit again (checks run again).
  let waitingToGoOn = false;
  function waitForConnection() {
    if (waitingToGoOn) return;
    waitingToGoOn = true;
    const tryAgain = () => {
      if (!navigator.onLine) return;
      fetch(form.dataset.draftUrl, {method: "POST", body: JSON.stringify((pending() || {}).data || answers()),
        headers: {"Content-Type": "application/json", "X-Concord-Form-Token": draftToken}, credentials: "omit"})
        .then(() => {
          offline = false; waitingToGoOn = false;
          window.removeEventListener("online", tryAgain); clearInterval(every);
          summary.hidden = true; summary.textContent = "";
          form.requestSubmit();
        }).catch(() => { /* still offline: the next online event or look tries again */ });
    };
    const every = setInterval(tryAgain, 5000);
    window.addEventListener("online", tryAgain);
  }
})();
