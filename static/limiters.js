// lockwarden live client, part 2 of 11: limiters (tables, wall tiles, the
// detail page's numbers, sparklines and rolling summaries).
(function () {
  "use strict";

  var LW = window.lockwarden;
  var all = LW.all;
  var num = LW.num;
  var own = LW.own;
  var make = LW.make;
  var setField = LW.setField;
  // sparkLast remembers when each sparkline last got a point.
  var sparkLast = new WeakMap();

  // limiterCounts is a limiter's window, zero when it exists but saw no
  // traffic, null when the frame does not know it.
  function limiterCounts(f, name) {
    if (own(f.limiters, name)) {
      return f.limiters[name];
    }
    if (own(f.available, name)) {
      return { acquired: 0, rejected: 0, errors: 0 };
    }
    return null;
  }

  var ratioWarn = 0.05;
  var ratioBad = 0.2;
  (function () {
    var el = document.querySelector("[data-ratio-warn]");
    if (el) {
      ratioWarn = Number(el.dataset.ratioWarn) || ratioWarn;
      ratioBad = Number(el.dataset.ratioBad) || ratioBad;
    }
  })();

  // setRatio colours data-field="ratio" only: limiters whose rejections
  // are not visible render no such field, so they never get a made-up 0 %.
  function setRatio(root, c) {
    var total = num(c.acquired) + num(c.rejected) + num(c.errors);
    var r = total === 0 ? 0 : num(c.rejected) / total;
    var cls = "ratio-ok";
    if (total === 0) {
      cls = "ratio-idle";
    } else if (r >= ratioBad) {
      cls = "ratio-bad";
    } else if (r >= ratioWarn) {
      cls = "ratio-warn";
    }
    all(root, '[data-field="ratio"]').forEach(function (el) {
      LW.setText(el, total === 0 ? "–" : (r * 100).toFixed(1) + "%");
      ["ratio-idle", "ratio-ok", "ratio-warn", "ratio-bad"].forEach(function (k) {
        el.classList.toggle(k, k === cls);
      });
    });
  }

  function info(f, name) {
    return own(f.limiter_info, name) ? f.limiter_info[name] : null;
  }

  function updateLimiters(f) {
    all(document, "[data-limiter]").forEach(function (el) {
      var name = el.dataset.limiter;
      var c = limiterCounts(f, name);
      if (c === null) {
        return;
      }
      setField(el, "acquired", num(c.acquired));
      setField(el, "rejected", num(c.rejected));
      setField(el, "errors", num(c.errors));
      if (own(f.available, name)) {
        setField(el, "available", num(f.available[name]));
      }
      var i = info(f, name);
      if (i !== null && typeof i.grants === "number") {
        setField(el, "grants", i.grants);
      }
      setRatio(el, c);
      all(el, "[data-spark]").forEach(function (svg) {
        extendSpark(svg, f.at, c);
      });
    });
  }

  function parseSeries(s) {
    if (!s) {
      return [];
    }
    return s.split(",").map(Number).filter(function (v) {
      return isFinite(v);
    });
  }

  // extendSpark adds one point per data-step-ms; the first frame only marks
  // the time, because the server-drawn line already ends at page load.
  function extendSpark(svg, at, c) {
    if (typeof at !== "number") {
      return;
    }
    var last = sparkLast.get(svg);
    var step = Number(svg.dataset.stepMs) || 1000;
    if (last === undefined) {
      sparkLast.set(svg, at);
      return;
    }
    if (at - last < step) {
      return;
    }
    sparkLast.set(svg, at);
    var cap = Number(svg.dataset.cap) || 60;
    var acq = parseSeries(svg.dataset.acquired);
    var rej = parseSeries(svg.dataset.rejected);
    acq.push(num(c.acquired));
    rej.push(num(c.rejected));
    acq = acq.slice(-cap);
    rej = rej.slice(-cap);
    svg.dataset.acquired = acq.join(",");
    svg.dataset.rejected = rej.join(",");
    drawSpark(svg, acq, rej, cap);
  }

  // drawSpark mirrors views/spark.go: 120x30 box, right-aligned, shared scale.
  function drawSpark(svg, acq, rej, cap) {
    var w = 120;
    var h = 30;
    var max = 1;
    acq.concat(rej).forEach(function (v) {
      if (v > max) {
        max = v;
      }
    });
    var stepX = w / (cap - 1);
    function points(vs) {
      var offset = cap - vs.length;
      return vs.map(function (v, i) {
        var x = (offset + i) * stepX;
        var y = h - 1 - (v / max) * (h - 2);
        return x.toFixed(1) + "," + y.toFixed(1);
      }).join(" ");
    }
    all(svg, "polyline[data-series]").forEach(function (line) {
      line.setAttribute("points", points(line.dataset.series === "rejected" ? rej : acq));
    });
  }

  function updateRolling(f) {
    if (typeof f.at !== "number") {
      return;
    }
    all(document, "[data-rolling]").forEach(function (tbody) {
      var c = limiterCounts(f, tbody.dataset.rolling);
      if (c === null) {
        return;
      }
      var first = tbody.firstElementChild;
      if (first && first.dataset.at === String(f.at)) {
        return;
      }
      var hidden = tbody.dataset.rejectionsHidden === "true";
      var cells = [c.acquired, c.rejected, c.errors].map(function (v, i) {
        if (i === 1 && hidden) {
          return make("td", { className: "num muted" }, ["–"]);
        }
        return make("td", { className: "num" }, [String(num(v))]);
      });
      var tr = make("tr", { data: { testid: "rolling-row", at: String(f.at) } },
        [make("td", {}, [LW.timeEl(new Date(f.at))])].concat(cells));
      tbody.insertBefore(tr, tbody.firstChild);
      var cap = Number(tbody.dataset.cap) || 50;
      while (tbody.children.length > cap) {
        tbody.removeChild(tbody.lastElementChild);
      }
    });
  }

  // newLimiterRow mirrors views.limiterTableRow for a limiter discovered
  // after the page loaded; the numbers fill in from the same frame.
  function newLimiterRow(name, i) {
    var link = make("a", { data: { testid: "limiter-link" } }, [name]);
    link.href = LW.limiterURL(name);
    var rate = String(num(i.rate));
    if (i.kind === "counter") {
      rate = i.limit_known ? String(num(i.limit)) : "not registered";
    }
    var avail = make("td", { className: "num", data: { field: i.available_unknown ? "available-unknown" : "available", testid: "limiter-available" } },
      [i.available_unknown ? "unknown" : "0"]);
    var rejected;
    if (i.rejections_hidden) {
      var parts = [];
      if (typeof i.grants === "number") {
        parts.push(make("span", { data: { field: "grants", testid: "limiter-grants" } }, [String(i.grants)]));
        parts.push(i.kind === "counter" ? " admitted · " : " granted · ");
      }
      parts.push(make("span", { className: "muted", data: { testid: "rejections-not-visible" } },
        [i.kind === "counter" && !i.limit_known ? "rejections not visible (limit not registered)" : "rejections not visible"]));
      rejected = make("td", { className: "num", data: { testid: "rejected-hidden" } }, parts);
    } else {
      rejected = make("td", { className: "num warn", data: { field: "rejected", testid: "rejected" } }, ["0"]);
    }
    return make("tr", { data: { testid: "limiter-row", limiter: name, kind: String(i.kind) } }, [
      make("td", {}, [link]),
      make("td", { className: "kind", data: { field: "kind" } }, [String(i.kind)]),
      make("td", { className: "num" }, [
        make("span", { className: "muted" }, [i.kind === "token-bucket" ? "capacity " : ""]),
        make("span", { data: { testid: "limiter-rate" } }, [rate])
      ]),
      make("td", { className: "num" }, [
        make("span", { className: "muted" }, [i.kind === "token-bucket" ? "refill " : ""]),
        make("span", { data: { testid: "limiter-interval" } }, [LW.numText(i.interval_ms)])
      ]),
      make("td", { className: "num", data: { testid: "limiter-per-second" } }, [LW.numText(i.per_second)]),
      avail,
      make("td", { className: "num ok", data: { field: "acquired", testid: "acquired" } }, ["0"]),
      rejected,
      make("td", { className: "num bad", data: { field: "errors", testid: "errors" } }, ["0"]),
      make("td", {}, [])
    ]);
  }

  // updateLimiterRows adds rows to the limiters page for limiters the
  // page did not know, and drops rows of limiters that are gone, once the
  // frame's discovery is at least as new as the page.
  function updateLimiterRows(f) {
    if (document.body.dataset.page !== "limiters" || f.limiter_info === null || typeof f.limiter_info !== "object") {
      return;
    }
    all(document, "tbody[data-limiters]").forEach(function (tbody) {
      var rows = new Map();
      Array.prototype.slice.call(tbody.children).forEach(function (tr) {
        var name = tr.dataset.limiter;
        if (name === undefined) {
          return;
        }
        if (!own(f.limiter_info, name) && LW.fresh(f)) {
          tbody.removeChild(tr);
        } else {
          rows.set(name, tr);
        }
      });
      // Rows are added only where the page is the whole list by name;
      // on any other page live updates touch just the rows it has.
      var adding = tbody.dataset.partial !== "true";
      var pattern = tbody.dataset.match || "";
      Object.keys(f.limiter_info).sort().forEach(function (name) {
        if (!adding || rows.has(name) || !LW.globMatch(pattern, name)) {
          return;
        }
        var tr = newLimiterRow(name, f.limiter_info[name]);
        LW.insertSorted(tbody, tr, name, function (r) {
          return r.dataset.limiter;
        });
        rows.set(name, tr);
      });
      all(document, "[data-limiters-empty]").forEach(function (p) {
        p.hidden = rows.size > 0;
      });
    });
  }

  LW.statsHandlers.push(updateLimiterRows, updateLimiters, updateRolling);
})();
