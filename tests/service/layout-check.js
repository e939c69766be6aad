// Injected into a saved job page and run by headless Chromium: checks
// what only a browser's layout can tell (docs/reports.md) and writes the
// findings into a pre element with the id layout-check, one "ok NAME" or
// "not ok NAME: WHY" line each, for the test to read from the dumped DOM.
(function () {
  var out = [];
  function check(name, cond, why) {
    out.push((cond ? "ok " : "not ok ") + name + (cond ? "" : ": " + why));
  }
  function luma(c) {
    var m = c.match(/\d+(\.\d+)?/g).map(Number);
    return 0.2126 * m[0] + 0.7152 * m[1] + 0.0722 * m[2];
  }
  function box(e) {
    var b = e.getBoundingClientRect();
    return { l: b.left, r: b.right, t: b.top, b: b.bottom };
  }
  function meets(a, b) {
    return a.l < b.r && b.l < a.r && a.t < b.b && b.t < a.b;
  }

  var ul = document.querySelector("ul.outcome");
  var id = document.querySelector("table.identity");
  check("outcome-first", ul && id &&
        (ul.compareDocumentPosition(id) & Node.DOCUMENT_POSITION_FOLLOWING),
        "no ul.outcome before the identity table");

  // the strongest level drawn darkest
  var cells = document.querySelectorAll("#heatmap-0 .cells rect[class^=h]");
  var none = document.querySelector("#heatmap-0 .legend rect.h0");
  var lo = null, hi = null;
  cells.forEach(function (c) {
    var k = +c.getAttribute("class").slice(1);
    if (lo === null || k < +lo.getAttribute("class").slice(1)) lo = c;
    if (hi === null || k > +hi.getAttribute("class").slice(1)) hi = c;
  });
  // the strongest cell darker than the weakest, or than the legend's
  // lowest level when every cell has one weight
  var ref = lo && hi && lo.getAttribute("class") !== hi.getAttribute("class")
            ? lo : none;
  check("heatmap-darkest-strongest", hi && ref &&
        luma(getComputedStyle(hi).fill) < luma(getComputedStyle(ref).fill),
        hi && ref ? getComputedStyle(ref).fill + " vs " +
        getComputedStyle(hi).fill : "no cells");

  // no text of the pictures runs past their edges
  ["topology-0", "migrations-0", "topology-1", "migrations-1"].forEach(
    function (sid) {
      var svg = document.getElementById(sid);
      if (!svg) return;
      var s = box(svg), bad = [];
      svg.querySelectorAll("text").forEach(function (t) {
        var b = box(t);
        if (b.r > s.r + 1 || b.l < s.l - 1 || b.b > s.b + 1)
          bad.push(t.textContent.slice(0, 40));
      });
      check("unclipped-" + sid, bad.length === 0, bad.join(" | "));
    });

  // move labels touch no mark; ticks are round and evenly spaced
  ["migrations-0", "migrations-1"].forEach(function (sid) {
    var svg = document.getElementById(sid);
    if (!svg) return;
    var marks = Array.prototype.map.call(
      svg.querySelectorAll("circle.migration"), box), hit = [];
    var labels = svg.querySelectorAll("text.move, text[font-size='8']");
    var boxes = Array.prototype.map.call(labels, box);
    labels.forEach(function (t, i) {
      var b = boxes[i];
      if (marks.some(function (m) { return meets(b, m); }) ||
          boxes.some(function (o, j) { return j !== i && meets(b, o); }))
        hit.push(t.textContent);
    });
    check("labels-clear-" + sid, hit.length === 0, hit.join(" "));
    var v = Array.prototype.map.call(svg.querySelectorAll("text.tick"),
      function (t) { return parseFloat(t.textContent); });
    var step = v[1] - v[0], m = step / Math.pow(10,
      Math.floor(Math.log10(step)));
    check("round-ticks-" + sid, v.length >= 2 && v[0] === 0 &&
          [1, 2, 2.5, 5].some(function (x) { return Math.abs(m - x) < 1e-9; })
          && v.every(function (x, i) {
            return Math.abs(x - i * step) < 1e-9 * (1 + x); }),
          v.join(","));
  });

  // two runs compared: the columns side by side, neither over the other
  var cols = document.querySelectorAll(".compare > div");
  if (cols.length === 2) {
    var ca = box(cols[0]), cb = box(cols[1]);
    check("compare-columns-apart", ca.r <= cb.l + 1 && ca.t === cb.t,
          JSON.stringify([ca, cb]));
  }
  // a list fits the window: no page-wide horizontal scrolling
  if (document.querySelector("table.jobs, table.apps, table.models"))
    check("list-fits", document.documentElement.scrollWidth <=
          window.innerWidth + 1, document.documentElement.scrollWidth +
          " > " + window.innerWidth);

  var pre = document.createElement("pre");
  pre.id = "layout-check";
  pre.textContent = out.join("\n");
  document.body.appendChild(pre);
})();
