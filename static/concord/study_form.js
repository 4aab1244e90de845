// The study form: show only the settings of the chosen design (each field carries data-designs).
(function () {
  "use strict";
  var form = document.querySelector("form[data-study-form]");
  if (!form) { return; }
  function update() {
    var chosen = form.querySelector("input[name=design]:checked");
    var design = chosen ? chosen.value : "";
    form.querySelectorAll("[data-designs]").forEach(function (field) {
      field.hidden = design !== "" && field.getAttribute("data-designs").split(" ").indexOf(design) < 0;
    });
  }
  form.addEventListener("change", function (event) {
    if (event.target.name === "design") { update(); }
  });
  update();
}());
