// Live progress of scoring and training runs: poll each queued/running run's API row once a second.
(function () {
  "use strict";
  const rows = Array.from(document.querySelectorAll("tr[data-run]"))
    .filter((row) => ["queued", "running"].includes(row.dataset.status));
  function update(row) {
    fetch(row.dataset.url, {credentials: "same-origin", headers: {Accept: "application/json"}})
      .then((r) => r.json())
      .then((run) => {
        row.querySelector("progress").value = run.percent;
        row.querySelector(".run-numbers").textContent = `${run.done}/${run.total} (${run.percent.toFixed(1)}%)`;
        row.querySelector(".run-eta").textContent = run.eta_seconds ? `about ${Math.ceil(run.eta_seconds)} s left` : "";
        row.querySelector(".run-status").innerHTML = `<span class="status ${run.status}">${run.status}</span>`;
        row.querySelector(".run-device").textContent = run.device || "–";
        row.querySelector(".run-attempts").textContent = run.attempts;
        const loss = row.querySelector(".run-loss");
        if (loss && run.last_loss !== null) loss.textContent = run.last_loss.toFixed(4);
        const phase = row.querySelector(".run-phase");
        if (phase) phase.textContent = run.phase || "";
        const validation = row.querySelector(".run-validation");
        if (validation && run.best_validation !== null) validation.textContent = run.best_validation.toFixed(4);
        const error = row.nextElementSibling && row.nextElementSibling.querySelector(".run-error");
        if (error) error.textContent = run.error ? `Failed: ${run.error}` : "";
        row.dataset.status = run.status;
        if (["queued", "running"].includes(run.status)) setTimeout(() => update(row), 1000);
      })
      .catch(() => setTimeout(() => update(row), 3000));
  }
  rows.forEach(update);
})();
