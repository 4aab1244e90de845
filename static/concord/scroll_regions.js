// Boxes that scroll sideways (wide tables on a phone, long code) must be reachable by keyboard, or a
// keyboard user cannot read their hidden columns (WCAG 2.1.1; axe "scrollable-region-focusable").
// Whichever box overflows now gets tabindex="0" and a name (a table's caption, else the heading above
// it): a table or list keeps its role, any other box becomes a named region. Rechecked when the layout changes.
(function () {
  "use strict";
  // The page's words in its language (studies.rating.js_strings, rendered as #rater-strings), keyed by the
  // English text, which is also the fallback; {name} placeholders are filled from ``values``.
  const STRINGS = JSON.parse((document.getElementById("rater-strings") || {}).textContent || "{}");
  const t = (text, values) => (STRINGS[text] || text).replace(/\{(\w+)\}/g, (m, k) => (values && k in values ? values[k] : m));
  const FOCUSABLE = "a[href], button, input, select, textarea, [tabindex]";

  function nameFor(box) {
    const caption = box.tagName === "TABLE" && box.caption ? box.caption.textContent.trim() : "";
    if (caption) return caption;
    let before = box.previousElementSibling;
    while (before && !/^H[1-6]$/.test(before.tagName)) before = before.previousElementSibling;
    const heading = before ? before.textContent.trim() : "";
    return heading ? t("{heading} (scrolls sideways)", {heading}) : t("Scrolls sideways");
  }

  function mark() {
    document.querySelectorAll("main table, main .scroll, main .table-scroll, main pre, main ol, main ul").forEach((box) => {
      const scrolls = box.scrollWidth > box.clientWidth + 1 || box.scrollHeight > box.clientHeight + 1;
      const overflow = getComputedStyle(box);
      const scrollable = /auto|scroll/.test(overflow.overflowX + overflow.overflowY);
      if (!scrolls || !scrollable || box.hasAttribute("tabindex") || box.querySelector(FOCUSABLE)) return;
      box.setAttribute("tabindex", "0");
      box.dataset.scrollRegion = "1";
      if (!box.hasAttribute("aria-label") && !box.hasAttribute("aria-labelledby")) box.setAttribute("aria-label", nameFor(box));
      // A list or table keeps its own role (a region role would hide its items from a screen reader).
      if (!/^(TABLE|OL|UL)$/.test(box.tagName) && !box.hasAttribute("role")) box.setAttribute("role", "region");
    });
  }

  let queued = false;
  function later() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; mark(); });
  }
  mark();
  window.addEventListener("resize", later);
  const main = document.querySelector("main");
  if (main && "MutationObserver" in window) new MutationObserver(later).observe(main, { childList: true, subtree: true });
})();
