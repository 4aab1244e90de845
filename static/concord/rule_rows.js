// Rule rows (templates/studies/_rule_rows.html): each row shows only the fields its "Expected" choice uses.
// Without JavaScript every field shows and the server reads the ones that choice needs.
(function () {
  "use strict";
  function show(row) {
    var expects = row.querySelector("[data-expects]");
    row.querySelectorAll("[data-for]").forEach(function (part) {
      part.hidden = !expects.value || part.getAttribute("data-for").split(" ").indexOf(expects.value) < 0;
    });
  }
  document.querySelectorAll("[data-rule-row]").forEach(function (row) {
    show(row);
    row.querySelector("[data-expects]").addEventListener("change", function () { show(row); });
  });
}());
