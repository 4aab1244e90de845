// Span annotation on the rater page (studies/designs/kinds/spans.py): the rater marks words and gives each
// span a label. The server cut the text into tokens (.span-token, data-start/data-end: offsets into the
// stored text), so the page never relies on the browser's text selection: a tap or click on a first word
// and then a last word marks the span (a word alone: twice), a mouse drag marks it at once, and the keyboard
// moves between words (←/→), starts and ends a span (Space/Enter), unmarks (Delete), cancels (Esc) and picks
// the label (1–9). The spans live in the row's hidden input as JSON ([{start, end, label, turn?}]), which
// autosave, Back and reload keep like any field; "" is unanswered, [] is "nothing to mark".
(function () {
  "use strict";
  if (window.concordSpans) return;  // one span criterion or several: one script
  window.concordSpans = true;
  // The page's words in its language (studies.rating.js_strings), keyed by the English text (the fallback).
  const STRINGS = JSON.parse((document.getElementById("rater-strings") || {}).textContent || "{}");
  const t = (text, values) => (STRINGS[text] || text).replace(/\{(\w+)\}/g, (m, k) => (values && k in values ? values[k] : m));

  function setup(row) {
    const input = row.querySelector("input.span-value");
    const list = row.querySelector(".span-list");
    const nothing = row.querySelector(".span-nothing");
    const overlapAllowed = row.dataset.overlap === "1";
    let spans = [];
    let confirmedNone = false;
    try {
      const stored = input.value ? JSON.parse(input.value) : null;
      if (Array.isArray(stored)) { spans = stored; confirmedNone = stored.length === 0; }
    } catch (e) { spans = []; }
    let anchor = null;       // the first word of a span being marked
    let dragFrom = null;     // the word a mouse button went down on
    let skipClick = false;   // a drag just marked a span: the click that follows is no tap

    const currentLabel = () => {
      const chosen = row.querySelector(".span-labels input:checked");
      return chosen ? chosen.value : row.querySelector(".span-labels input").value;
    };
    const turnOf = (doc) => (doc.dataset.turn === "" ? null : Number(doc.dataset.turn));
    const tokensOf = (doc) => Array.from(doc.querySelectorAll(".span-token"));
    const sameTurn = (span, turn) => (turn === null ? span.turn === undefined : span.turn === turn);
    const textOf = (doc, start, end) => tokensOf(doc)
      .filter((t) => Number(t.dataset.start) >= start && Number(t.dataset.end) <= end)
      .map((t) => t.textContent).join(" ");

    function save() {
      input.value = spans.length ? JSON.stringify(spans) : (confirmedNone ? "[]" : "");
      input.dispatchEvent(new Event("change", {bubbles: true}));  // autosave and the page's checks listen
      if (spans.length || confirmedNone) clearError();
      render();
    }
    function clearError() {
      row.classList.remove("has-error");
      row.removeAttribute("aria-invalid");
      const note = document.getElementById(row.getAttribute("aria-describedby"));
      if (note) { note.hidden = true; note.textContent = ""; }
    }
    function spanAt(doc, token) {
      const turn = turnOf(doc), s = Number(token.dataset.start), e = Number(token.dataset.end);
      return spans.findIndex((sp) => sameTurn(sp, turn) && sp.start < e && sp.end > s);
    }
    function render() {
      row.querySelectorAll(".span-doc").forEach((doc) => {
        const turn = turnOf(doc);
        tokensOf(doc).forEach((t) => {
          const s = Number(t.dataset.start), e = Number(t.dataset.end);
          const hit = spans.find((sp) => sameTurn(sp, turn) && sp.start < e && sp.end > s);
          t.classList.toggle("marked", !!hit);
          t.dataset.label = hit ? hit.label : "";
          t.title = hit ? hit.label : "";
          t.classList.toggle("anchor", anchor !== null && anchor.token === t);
        });
      });
      list.textContent = "";
      spans.forEach((sp, i) => {
        const doc = Array.from(row.querySelectorAll(".span-doc")).find((d) => sameTurn(sp, turnOf(d)));
        const li = document.createElement("li");
        li.dataset.testid = "span-item";
        li.textContent = `“${doc ? textOf(doc, sp.start, sp.end) : ""}” — ${sp.label} `;
        const remove = document.createElement("button");
        remove.type = "button";
        remove.className = "span-remove";
        remove.textContent = t("Remove");
        remove.setAttribute("aria-label", t("Remove the span “{text}”", {text: doc ? textOf(doc, sp.start, sp.end) : ""}));
        remove.addEventListener("click", () => { spans.splice(i, 1); save(); });
        li.appendChild(remove);
        list.appendChild(li);
      });
      if (!spans.length && confirmedNone) {
        const li = document.createElement("li");
        li.textContent = t("Nothing to mark (confirmed).");
        list.appendChild(li);
      }
      nothing.hidden = spans.length > 0;
    }
    function mark(doc, a, b) {
      const [first, last] = Number(a.dataset.start) <= Number(b.dataset.start) ? [a, b] : [b, a];
      const span = {start: Number(first.dataset.start), end: Number(last.dataset.end), label: currentLabel()};
      const turn = turnOf(doc);
      if (turn !== null) span.turn = turn;
      if (!overlapAllowed) {  // a new span replaces those it overlaps (the server refuses overlaps)
        spans = spans.filter((sp) => !(sameTurn(sp, turn) && sp.start < span.end && sp.end > span.start));
      }
      spans.push(span);
      spans.sort((x, y) => ((x.turn ?? -1) - (y.turn ?? -1)) || x.start - y.start || x.end - y.end);
      confirmedNone = false;
      anchor = null;
      save();
    }
    // One tap (or click): the first word, then the last; a tap on a marked word, with nothing started, unmarks it.
    function tap(doc, token) {
      if (anchor === null) {
        const hit = spanAt(doc, token);
        if (hit >= 0) { spans.splice(hit, 1); save(); return; }
        anchor = {doc, token};
        render();
        return;
      }
      if (anchor.doc !== doc) { anchor = {doc, token}; render(); return; }
      mark(doc, anchor.token, token);
    }

    row.querySelectorAll(".span-doc").forEach((doc) => {
      let cursor = -1;
      const moveTo = (i) => {
        const all = tokensOf(doc);
        if (!all.length) return;
        cursor = Math.max(0, Math.min(all.length - 1, i));
        all.forEach((t, j) => t.classList.toggle("cursor", j === cursor));
        doc.setAttribute("aria-label", t("word {n} of {count}: {text}",
                                         {n: cursor + 1, count: all.length, text: all[cursor].textContent})
          + (all[cursor].dataset.label ? t(", marked {label}", {label: all[cursor].dataset.label}) : ""));
      };
      doc.addEventListener("focus", () => { if (cursor < 0) moveTo(0); });
      doc.addEventListener("blur", () => tokensOf(doc).forEach((t) => t.classList.remove("cursor")));
      doc.addEventListener("keydown", (event) => {
        const all = tokensOf(doc);
        if (event.key === "ArrowRight") { moveTo(cursor + 1); event.preventDefault(); }
        else if (event.key === "ArrowLeft") { moveTo(cursor - 1); event.preventDefault(); }
        else if (event.key === "Home") { moveTo(0); event.preventDefault(); }
        else if (event.key === "End") { moveTo(all.length - 1); event.preventDefault(); }
        else if (event.key === " " || event.key === "Enter") {
          event.preventDefault();  // never submits the page nor scrolls it
          if (cursor < 0) moveTo(0);
          if (anchor === null || anchor.doc !== doc) { anchor = {doc, token: all[cursor]}; render(); }
          else mark(doc, anchor.token, all[cursor]);
          moveTo(cursor);
        } else if (event.key === "Escape") { anchor = null; render(); }
        else if (event.key === "Delete" || event.key === "Backspace") {
          const hit = cursor >= 0 ? spanAt(doc, all[cursor]) : -1;
          if (hit >= 0) { spans.splice(hit, 1); save(); moveTo(cursor); }
          event.preventDefault();
        } else if (/^[1-9]$/.test(event.key)) {
          const radio = row.querySelectorAll(".span-labels input")[Number(event.key) - 1];
          if (radio) { radio.checked = true; event.preventDefault(); }
        }
      });
      // Mouse: a drag from one word to another marks the span at once; pointers of other kinds (a finger,
      // a pen) tap, which needs no drag and no text selection.
      doc.addEventListener("pointerdown", (event) => {
        const token = event.target.closest(".span-token");
        dragFrom = event.pointerType === "mouse" && token ? token : null;
      });
      doc.addEventListener("pointerup", (event) => {
        const token = event.target.closest(".span-token");
        if (event.pointerType === "mouse" && dragFrom && token && token !== dragFrom) {
          anchor = null;
          mark(doc, dragFrom, token);
          skipClick = true;
        }
        dragFrom = null;
      });
      doc.addEventListener("click", (event) => {
        const token = event.target.closest(".span-token");
        if (skipClick) { skipClick = false; return; }
        if (!token) return;
        tap(doc, token);
        moveTo(tokensOf(doc).indexOf(token));
      });
    });
    nothing.addEventListener("click", () => { spans = []; anchor = null; confirmedNone = true; save(); });
    render();
  }

  function init() {
    const rows = document.querySelectorAll(".span-row");
    rows.forEach(setup);
    const form = rows.length ? rows[0].closest("form") : null;
    if (!form) return;
    // Before the page's own checks (capture): a question with neither spans nor "nothing to mark" stops the send.
    form.addEventListener("submit", (event) => {
      const empty = Array.from(form.querySelectorAll(".span-row")).filter((r) => !r.querySelector("input.span-value").value);
      empty.forEach((r) => {
        r.classList.add("has-error");
        r.setAttribute("aria-invalid", "true");
        const note = document.getElementById(r.getAttribute("aria-describedby"));
        if (note) { note.textContent = t("mark the spans, or confirm there is nothing to mark"); note.hidden = false; }
      });
      if (empty.length) {
        event.preventDefault();
        event.stopImmediatePropagation();
        empty[0].scrollIntoView({block: "center"});
        const doc = empty[0].querySelector(".span-doc");
        if (doc) doc.focus({preventScroll: true});
      }
    }, true);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
