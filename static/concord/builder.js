// The study builder: criteria rows added, removed and moved by buttons or keys, each row's
// fields shown for its kind, and the rater's page beside them re-rendered by the server
// (studies/<slug>/builder/preview/) as the form changes; an answer given in that page can be saved as a
// practice or check item's expected answer (studies/<slug>/builder/expected/). No inline script (CSP).
(function () {
  "use strict";
  var form = document.querySelector("form[data-study-form]");
  if (!form || !form.querySelector("[data-builder]")) { return; }
  var aside = document.querySelector("[data-builder-preview]");
  var slot = aside && aside.querySelector("[data-preview-slot]");
  var item = 0, sequence = 0, timer = null, edited = false;

  function changed() {
    edited = true;
    schedule();
  }

  // A short name is made from its question as the server makes a blank one (Django's slugify, 60
  // characters), so a pre-filled name never keeps naming a question it no longer asks.
  function slug(text) {
    return text.normalize("NFKD").replace(/[^\x00-\x7f]/g, "").toLowerCase().replace(/[^\w\s-]/g, "")
      .replace(/[-\s]+/g, "-").replace(/^[-_]+|[-_]+$/g, "").slice(0, 60).replace(/^-+|-+$/g, "");
  }

  // The questionnaire's names use underscores (studies.authoring.questionnaire_rows), the criteria's hyphens.
  function nameFor(row, question) {
    var builder = row.closest("[data-builder]");
    var made = slug(question);
    return builder && builder.getAttribute("data-prefix") === "q" ? made.replace(/-/g, "_").replace(/^_+|_+$/g, "") : made;
  }

  // A row's name follows its question while it is pre-filled (or blank, or the question's own slug);
  // the researcher typing a name stops it (clearing the name starts it again).
  function markAutoName(row, prefilled) {
    var name = row.querySelector("[data-row-field=name]"), question = row.querySelector("[data-row-field=question]");
    if (!name || !question || name.disabled) { return; }
    if (prefilled || name.value === "" || name.value === nameFor(row, question.value)) { row.setAttribute("data-auto-name", ""); }
  }

  function followQuestion(event) {
    var row = event.target.closest && event.target.closest("[data-row]");
    var field = event.target.getAttribute && event.target.getAttribute("data-row-field");
    if (!row) { return; }
    if (field === "question" && row.hasAttribute("data-auto-name")) {
      row.querySelector("[data-row-field=name]").value = nameFor(row, event.target.value);
    } else if (field === "name") {
      if (event.target.value === "") { row.setAttribute("data-auto-name", ""); } else { row.removeAttribute("data-auto-name"); }
    }
  }

  function showKindFields(row) {
    var kind = row.querySelector("[data-row-field=kind]");
    row.querySelectorAll("[data-kinds]").forEach(function (part) {
      part.hidden = !kind || part.getAttribute("data-kinds").split(" ").indexOf(kind.value) < 0;
    });
  }

  // One list of rows (the criteria, "c-"; the questionnaire, "q-"): buttons and keys add, move and remove.
  function setUp(builder) {
    var prefix = builder.getAttribute("data-prefix") || "c";
    var rows = builder.querySelector("[data-builder-rows]");
    var template = builder.querySelector("template[data-builder-template]");
    var named = new RegExp("^" + prefix + "-[^-]+-");

    // Names follow the rows' order (c-0-..., c-1-...): the server reads the rows in that order.
    function renumber() {
      rows.querySelectorAll("[data-row]").forEach(function (row, index) {
        row.querySelectorAll("[name]").forEach(function (input) {
          input.name = input.name.replace(named, prefix + "-" + index + "-");
        });
        row.querySelector("[data-row-title]").textContent = "Question " + (index + 1);
      });
    }

    function addRow(after) {
      if (!template) { return; }
      var fresh = template.content.firstElementChild.cloneNode(true);
      fresh.setAttribute("data-auto-name", "");
      if (after && after.nextElementSibling) { rows.insertBefore(fresh, after.nextElementSibling); }
      else { rows.appendChild(fresh); }
      renumber();
      showKindFields(fresh);
      fresh.querySelector("[data-row-field=question]").focus();
      changed();
    }

    // A ready-made question (ABC-Eval's behaviours): a new row filled from the server's json_script, editable.
    function addPreset(id) {
      var node = document.getElementById(id);
      if (!node || !template) { return; }
      var preset = JSON.parse(node.textContent);
      addRow(null);
      var fresh = rows.lastElementChild;
      fresh.removeAttribute("data-auto-name");
      Object.keys(preset).forEach(function (field) {
        var input = fresh.querySelector("[data-row-field=" + field + "]");
        if (!input) { return; }
        if (input.type === "checkbox") { input.checked = !!preset[field]; } else { input.value = preset[field]; }
      });
      showKindFields(fresh);
      changed();
    }

    function move(row, direction, focusSelector) {
      var other = direction === "up" ? row.previousElementSibling : row.nextElementSibling;
      if (!other) { return; }
      if (direction === "up") { rows.insertBefore(row, other); } else { rows.insertBefore(other, row); }
      renumber();
      var focus = focusSelector && row.querySelector(focusSelector);
      if (focus) { focus.focus(); }
      changed();
    }

    function remove(row) {
      var next = row.nextElementSibling || row.previousElementSibling;
      row.remove();
      renumber();
      var focus = next ? next.querySelector("[data-row-field=question]") : builder.querySelector("[data-builder-add]");
      if (focus) { focus.focus(); }
      changed();
    }

    builder.addEventListener("click", function (event) {
      var button = event.target.closest("button");
      if (!button || !builder.contains(button)) { return; }
      var row = button.closest("[data-row]");
      if (button.hasAttribute("data-builder-add")) { addRow(null); }
      else if (button.hasAttribute("data-builder-preset")) { addPreset(button.getAttribute("data-builder-preset")); }
      else if (row && button.hasAttribute("data-move")) {
        move(row, button.getAttribute("data-move"), "[data-move=" + button.getAttribute("data-move") + "]");
      } else if (row && button.hasAttribute("data-remove")) { remove(row); }
    });

    builder.addEventListener("keydown", function (event) {
      var row = event.target.closest && event.target.closest("[data-row]");
      if (!row || !event.altKey || !template) { return; }
      var field = event.target.getAttribute("data-row-field");
      if (event.key === "ArrowUp" || event.key === "ArrowDown") {
        event.preventDefault();
        move(row, event.key === "ArrowUp" ? "up" : "down", field ? "[data-row-field=" + field + "]" : null);
      } else if (event.key === "Delete" || event.key === "Backspace") {
        event.preventDefault();
        remove(row);
      } else if (event.key === "Enter") {
        event.preventDefault();
        addRow(row);
      }
    });
    rows.querySelectorAll("[data-row]").forEach(showKindFields);
    rows.querySelectorAll("[data-row]").forEach(function (row) { markAutoName(row, builder.hasAttribute("data-prefilled")); });
    builder.renumber = renumber;
  }

  form.querySelectorAll("[data-builder]").forEach(setUp);

  // A new study's questions are the chosen design's usual ones (ACUTE-Eval: the paper's four) until the
  // researcher edits a row; the defaults of every design and unit come from the server (json_script).
  var criteria = form.querySelector("[data-builder][data-prefix=c]");
  var defaultsNode = document.getElementById("builder-defaults");
  var defaults = defaultsNode ? JSON.parse(defaultsNode.textContent) : null;

  function chosen(name) {
    var input = form.querySelector("input[name=" + name + "]:checked");
    return input ? input.value : "";
  }

  function swapDefaults() {
    if (!defaults || !criteria || !criteria.hasAttribute("data-prefilled")) { return; }
    var wanted = defaults.rows[chosen("design") + ":" + (chosen("unit") || "response")];
    var rows = criteria.querySelector("[data-builder-rows]");
    var template = criteria.querySelector("template[data-builder-template]");
    if (!wanted || !template) { return; }
    rows.innerHTML = "";
    wanted.forEach(function (spec) {
      var fresh = template.content.firstElementChild.cloneNode(true);
      fresh.querySelector("[data-row-field=name]").value = spec.name;
      fresh.querySelector("[data-row-field=question]").value = spec.question;
      fresh.querySelector("[data-row-field=help]").value = spec.help;
      fresh.setAttribute("data-auto-name", "");
      rows.appendChild(fresh);
    });
    criteria.renumber();
    rows.querySelectorAll("[data-row]").forEach(showKindFields);
  }

  form.addEventListener("change", function (event) {
    if (event.target.name === "design" || event.target.name === "unit") { swapDefaults(); }
  });
  form.addEventListener("input", function (event) {
    followQuestion(event);
    if (criteria && criteria.contains(event.target) && event.target.closest("[data-row]")) {
      criteria.removeAttribute("data-prefilled");  // edited: the rows are the researcher's now
    }
  });
  form.addEventListener("change", function (event) {
    var row = event.target.closest && event.target.closest("[data-row]");
    if (row && event.target.getAttribute("data-row-field") === "kind") { showKindFields(row); }
    if (row && criteria && criteria.contains(row)) { criteria.removeAttribute("data-prefilled"); }
    changed();
  });
  form.addEventListener("input", changed);

  if (!aside || !slot) { return; }

  function csrf() {
    var input = form.querySelector("[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function schedule() {
    if (!aside || !slot) { return; }
    if (timer) { clearTimeout(timer); }
    timer = setTimeout(refresh, 250);
  }

  // A screen reader hears one short line after each refresh, not the whole rater page again.
  function announce() {
    var status = aside.querySelector("[data-preview-status]");
    if (!status) { return; }
    var body = slot.querySelector("[data-testid=preview-body]");
    var problems = slot.querySelectorAll("[data-testid=builder-problem], [data-testid=preview-refused]").length;
    var where = body && body.getAttribute("data-items")
      ? " (item " + (parseInt(body.getAttribute("data-item"), 10) + 1) + " of " + body.getAttribute("data-items") + ")" : "";
    status.textContent = "Preview updated" + where + (problems ? ": " + problems + " problem" + (problems > 1 ? "s" : "") + " to fix." : ".");
  }

  // The server renders the rater's page with the form as it stands; the newest answer wins.
  function refresh() {
    timer = null;
    var mine = ++sequence;
    var data = new FormData(form);
    data.append("builder_item", String(item));
    aside.setAttribute("aria-busy", "true");
    fetch(aside.getAttribute("data-preview-url"), {
      method: "POST", body: data, credentials: "same-origin", headers: {"X-CSRFToken": csrf()}
    }).then(function (response) { return response.text(); }).then(function (html) {
      if (mine !== sequence) { return; }
      slot.innerHTML = html;
      announce();
      aside.setAttribute("data-refreshed", String(mine));
      aside.removeAttribute("aria-busy");
    }).catch(function () {
      if (mine === sequence) { aside.removeAttribute("aria-busy"); }
    });
  }

  function saveExpected(button) {
    var section = button.closest("[data-expected]");
    var status = section.querySelector("[data-expected-status]");
    var itemForm = slot.querySelector("#item-form");
    if (edited) {
      status.textContent = "Save the study first: expected answers are checked against the saved questions.";
      return;
    }
    var data = itemForm ? new FormData(itemForm) : new FormData();
    section.querySelectorAll("[name]").forEach(function (input) {
      if (input.type === "checkbox" && !input.checked) { return; }  // only the answers ticked for the check
      data.append(input.name, input.value);
    });
    data.append("builder_item", String(item));
    data.append("csrfmiddlewaretoken", csrf());
    status.textContent = "Saving…";
    button.disabled = true;  // one save per click: a double click sends once (the server also stores once)
    fetch(aside.getAttribute("data-expected-url"), {
      method: "POST", body: data, credentials: "same-origin", headers: {"X-CSRFToken": csrf()}
    }).then(function (response) { return response.json(); }).then(function (answer) {
      button.disabled = false;
      if (answer.saved) {
        status.textContent = answer.message;
        status.className = "ok";
      } else {
        status.className = "error";
        status.textContent = "Not saved: " + Object.keys(answer.errors).map(function (key) {
          return key + ": " + answer.errors[key];
        }).join("; ");
      }
    }).catch(function () {
      button.disabled = false;
      status.className = "error";
      status.textContent = "Not saved: the server did not answer. Try again.";
    });
  }

  aside.addEventListener("click", function (event) {
    var button = event.target.closest("button");
    if (!button) { return; }
    if (button.hasAttribute("data-preview-item")) {
      item = Math.max(0, parseInt(button.getAttribute("data-preview-item"), 10) || 0);
      refresh();
    } else if (button.hasAttribute("data-preview-width")) {
      aside.setAttribute("data-width", button.getAttribute("data-preview-width"));
      aside.querySelectorAll("[data-preview-width]").forEach(function (other) {
        other.setAttribute("aria-pressed", String(other === button));
      });
    } else if (button.hasAttribute("data-expected-save")) {
      saveExpected(button);
    }
  });
  // The preview's own form is never sent: nothing a researcher answers there is stored as a rating.
  aside.addEventListener("submit", function (event) { event.preventDefault(); });
}());
