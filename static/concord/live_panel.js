// The study page's live-reliability panel: fetched after the page has loaded (it is computed from raters'
// answers; the page's own controls never wait for it or depend on it). Without scripts, the link opens it.
(function () {
  "use strict";
  document.querySelectorAll("[data-live-panel]").forEach((box) => {
    fetch(box.dataset.livePanel, {credentials: "same-origin", headers: {Accept: "text/html"}})
      .then((response) => {
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        return response.text();
      })
      .then((html) => { box.innerHTML = html; })
      .catch((error) => {
        const status = box.querySelector("[data-live-status]");
        if (status) status.append(` (could not be loaded here: ${error.message})`);
      });
  });
})();
