// The study form: show only the settings of the chosen design (fields with data-designs) and of the
// chosen unit of judgement (fields with data-units).
(function () {
  "use strict";
  var form = document.querySelector("form[data-study-form]");
  if (!form) { return; }
  function chosen(name) {
    var input = form.querySelector("input[name=" + name + "]:checked");
    return input ? input.value : "";
  }
  function update() {
    var design = chosen("design"), unit = chosen("unit");
    form.querySelectorAll("[data-designs]").forEach(function (field) {
      // no design picked yet: none of the designs' own settings (they would read as settings of every design)
      field.hidden = design === "" || field.getAttribute("data-designs").split(" ").indexOf(design) < 0;
    });
    form.querySelectorAll("[data-units]").forEach(function (field) {
      field.hidden = field.getAttribute("data-units").split(" ").indexOf(unit || "response") < 0;
    });
  }
  // A design that cannot judge the unit chosen takes the first it can (ACUTE-Eval: the dialogue), as the
  // server does (studies.authoring.builder_defaults.design_units).
  var defaultsNode = document.getElementById("builder-defaults");
  var units = defaultsNode ? JSON.parse(defaultsNode.textContent).units : {};
  function switchUnit() {
    var allowed = units[chosen("design")], unit = chosen("unit") || "response";
    var input = allowed && allowed.indexOf(unit) < 0 && form.querySelector("input[name=unit][value=" + allowed[0] + "]");
    if (input && !input.disabled) { input.checked = true; }
  }
  form.addEventListener("change", function (event) {
    if (event.target.name === "design") { switchUnit(); }
    if (event.target.name === "design" || event.target.name === "unit") { update(); }
  });
  update();
}());
