// lockwarden live client, part 8 of 11: charts. The history charts (a
// limiter's hour and day, the overview's day tiles, a lock's holders and
// waits, the what-if) are drawn by uPlot (static/vendor/uplot): canvas
// charts with time and value axes, fast enough for a wall of them, and no
// inline code or style (uPlot sets element styles through the CSSOM, which
// the CSP allows; its stylesheet is a file). Hand-drawn SVG would need
// every tick, label and readout written and kept here; uPlot has them.
// This part adds what the console needs on top: clock labels in UTC, units
// on the value axis, change markers labelled with who changed what, a
// tooltip pinned to the plot's far side, and a redraw after each history
// flush while the page is live. chartlimiters.js and chartlocks.js
// describe each kind of chart.
(function () {
  "use strict";

  var LW = window.lockwarden;
  var make = LW.make;
  // kinds are the chart kinds by data-chart, registered by the chart parts.
  var kinds = {};
  var charts = [];
  var colors = {};
  LW.chartKinds = kinds;

  function pad2(n) {
    return n < 10 ? "0" + n : String(n);
  }

  // clockOf is a Unix time (s) as a UTC clock, to the second when asked.
  LW.clockOf = function (s, seconds) {
    var d = new Date(s * 1000);
    var t = pad2(d.getUTCHours()) + ":" + pad2(d.getUTCMinutes());
    return seconds ? t + ":" + pad2(d.getUTCSeconds()) : t;
  };

  var MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

  // compact is a value-axis number: 950, 1.2k, 3.4M.
  LW.compact = function (v) {
    var a = Math.abs(v);
    if (a >= 1e6) {
      return Math.round(v / 1e5) / 10 + "M";
    }
    if (a >= 1e4) {
      return Math.round(v / 1e3) + "k";
    }
    if (a >= 1e3) {
      return Math.round(v / 100) / 10 + "k";
    }
    return LW.numText(v);
  };

  // colorOf reads a colour from app.css, where the legend's swatches get
  // theirs: one place defines each colour, for the page and the canvas.
  LW.colorOf = function (cls) {
    if (!LW.own(colors, cls)) {
      var probe = make("span", { className: "chart-probe " + cls });
      document.body.appendChild(probe);
      colors[cls] = getComputedStyle(probe).backgroundColor;
      probe.remove();
    }
    return colors[cls];
  };

  function fontFamily() {
    return getComputedStyle(document.body).fontFamily;
  }

  LW.chartFont = function (px) {
    return px + "px " + fontFamily();
  };

  // timeAxis labels the x axis with UTC clocks, the date under midnight.
  LW.timeAxis = function (state, small) {
    return {
      stroke: LW.colorOf("sw-axis"),
      grid: { stroke: LW.colorOf("sw-grid"), width: 1 },
      ticks: { stroke: LW.colorOf("sw-grid"), width: 1, size: 4 },
      font: LW.chartFont(small ? 11 : 12),
      space: small ? 56 : 72,
      size: small ? 24 : 40,
      values: function (u, splits, ax, space, incr) {
        var out = splits.map(function (s) {
          var t = LW.clockOf(s, incr < 60);
          var d = new Date(s * 1000);
          if (!small && incr >= 3600 && d.getUTCHours() === 0) {
            t += "\n" + MONTHS[d.getUTCMonth()] + " " + d.getUTCDate();
          }
          return t;
        });
        state.xTicks = out;
        return out;
      }
    };
  };

  // valueAxis is a y axis with its unit as its label.
  LW.valueAxis = function (state, scale, unit, small, size) {
    return {
      scale: scale,
      stroke: LW.colorOf("sw-axis"),
      grid: { stroke: LW.colorOf("sw-grid"), width: 1 },
      ticks: { show: false },
      font: LW.chartFont(small ? 11 : 12),
      label: small ? null : unit,
      labelFont: LW.chartFont(12),
      labelSize: 18,
      size: size || (small ? 36 : 56),
      space: small ? 18 : 32,
      values: function (u, splits) {
        var out = splits.map(LW.compact);
        state.yTicks = out;
        state.yLabel = unit;
        return out;
      }
    };
  };

  // tzDate makes uPlot place its ticks on UTC hours and minutes.
  LW.utc = function (ts) {
    return uPlot.tzDate(new Date(ts * 1000), "Etc/UTC");
  };

  // tipper shows state.tip(u, t, top)'s lines in a box pinned to the
  // plot's top corner away from the cursor, so it never hides what it
  // describes. A line is text or [text, class].
  LW.tipper = function (state) {
    return function (u) {
      var tip = state.tipEl;
      if (!tip) {
        tip = state.tipEl = make("div", { className: "chart-tip", data: { testid: "chart-tip" } });
        tip.hidden = true;
        u.over.appendChild(tip);
      }
      var left = u.cursor.left;
      var lines = left === null || left < 0 ? null : state.tip(u, u.posToVal(left, "x"), u.cursor.top);
      if (!lines || lines.length === 0) {
        tip.hidden = true;
        return;
      }
      tip.replaceChildren.apply(tip, lines.map(function (l, i) {
        var text = Array.isArray(l) ? l[0] : l;
        var cls = Array.isArray(l) ? l[1] : "";
        return make(i === 0 ? "strong" : "div", { className: cls }, [text]);
      }));
      var right = left < u.over.clientWidth / 2;
      tip.classList.toggle("tip-right", right);
      tip.classList.toggle("tip-left", !right);
      // Below the rows of change labels, which it would hide.
      [1, 2, 3].forEach(function (n) {
        tip.classList.toggle("tip-below-" + n, (state.markerRows || 0) === n);
      });
      tip.hidden = false;
    };
  };

  // markerNear is the marker whose line is within 8 px of the cursor.
  LW.markerNear = function (u, markers, left) {
    var near = null;
    markers.forEach(function (m) {
      if (Math.abs(u.valToPos(m.t / 1000, "x") - left) <= 8) {
        near = m;
      }
    });
    return near;
  };

  // drawMarkers draws each change as a dashed line over the plot with its
  // label ("14:05 admin: rate 20 → 40") in a box at the top, boxes that
  // would overlap moved a row down (three rows, then left to the tooltip);
  // a thumbnail (linesOnly) has no room for labels.
  LW.drawMarkers = function (u, markers, state, linesOnly) {
    var ctx = u.ctx;
    var r = uPlot.pxRatio;
    var top = u.bbox.top;
    var left = u.bbox.left;
    var right = left + u.bbox.width;
    var rowH = 20 * r;
    var rows = [];
    var drawn = [];
    ctx.save();
    ctx.font = LW.chartFont(12 * r);
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";
    markers.forEach(function (m) {
      var t = m.t / 1000;
      if (t < u.scales.x.min || t > u.scales.x.max) {
        return;
      }
      var x = Math.round(u.valToPos(t, "x", true));
      ctx.strokeStyle = LW.colorOf("sw-marker");
      ctx.lineWidth = 2 * r;
      ctx.setLineDash([5 * r, 3 * r]);
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + u.bbox.height);
      ctx.stroke();
      if (linesOnly) {
        return; // a thumbnail: the tooltip names the change
      }
      var text = LW.clockOf(t) + " " + m.label;
      var pad = 5 * r;
      var maxW = Math.max(u.bbox.width / 2, 80 * r);
      while (text.length > 4 && ctx.measureText(text).width + 2 * pad > maxW) {
        text = text.slice(0, -2) + "…";
      }
      var w = ctx.measureText(text).width + 2 * pad;
      var bx = x + 3 * r;
      if (bx + w > right) {
        bx = Math.max(left, x - 3 * r - w);
      }
      var row = 0;
      while (row < rows.length && rows[row] > bx - 4 * r) {
        row++;
      }
      if (row >= 3) {
        return; // the tooltip still names it
      }
      rows[row] = bx + w;
      var by = top + 3 * r + row * (rowH + 3 * r);
      ctx.setLineDash([]);
      ctx.fillStyle = LW.colorOf("sw-label-bg");
      ctx.fillRect(bx, by, w, rowH);
      ctx.lineWidth = r;
      ctx.strokeRect(bx, by, w, rowH);
      ctx.fillStyle = LW.colorOf("sw-label-text");
      ctx.fillText(text, bx + pad, by + rowH / 2);
      drawn.push({ label: text, x: bx / r, y: by / r, w: w / r, h: rowH / r, lineX: x / r });
    });
    ctx.restore();
    state.markers = drawn;
    state.markerRows = rows.length;
  };

  // SPANS are the spans' lengths and the steps of their points (s).
  var SPANS = { "1h": { len: 3600, step: 10 }, "24h": { len: 86400, step: 60 } };

  LW.chartSpan = function (c) {
    return SPANS[c.plot.dataset.span] || SPANS["1h"];
  };

  // barSeries is a series of bars starting at their x (a step's start),
  // or centred on it (align 0).
  LW.barSeries = function (label, cls, scale, align) {
    var col = LW.colorOf(cls);
    return { label: label, scale: scale || "y", stroke: col, fill: col, width: 0, points: { show: false },
      paths: uPlot.paths.bars({ size: [1, 64], gap: 1, align: align === 0 ? 0 : 1 }) };
  };

  // plotOf is a uPlot in el with the console's defaults: no legend of its
  // own (the page has one), no zoom, the tooltip, and the kind's draw hook.
  LW.plotOf = function (c, el, height, opts) {
    return new uPlot({
      width: Math.max(el.clientWidth, 120),
      height: height,
      tzDate: LW.utc,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false }, sync: opts.sync ? { key: opts.sync } : undefined },
      scales: opts.scales,
      series: [{}].concat(opts.series),
      bands: opts.bands,
      axes: opts.axes,
      hooks: { setCursor: [LW.tipper(c.state)], draw: opts.draw ? [opts.draw] : [] }
    }, opts.data, el);
  };

  LW.serverNow = function () {
    return Date.now() + LW.serverSkew;
  };

  // live is whether the badge says live: charts follow the history only
  // then, as the numbers beside them follow the frames.
  function live() {
    return document.body.dataset.ws === "open" && !document.hidden;
  }

  // load fetches a chart's history and draws it, then waits for the next
  // flush: the console serves every history read at the newest flush
  // (History-Through), so asking before it would get the same answer.
  function load(c) {
    fetch(c.src, { credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) {
          return null;
        }
        c.through = Number(r.headers.get("History-Through")) || 0;
        return r.json();
      })
      .then(function (data) {
        if (data !== null && typeof data === "object") {
          drew(c, data);
        }
      })
      .catch(function () {})
      .then(function () {
        schedule(c);
      });
  }

  // drew draws data and counts it (data-drawn, for the browser tests).
  function drew(c, data) {
    c.draw(data);
    c.state.draws++;
    c.plot.dataset.drawn = String(c.state.draws);
    if (typeof data.summary === "string" && c.summary) {
      LW.setText(c.summary, data.summary);
    }
  }

  function schedule(c) {
    var every = c.refreshMs;
    var due = c.through > 0 ? c.through + every + 1500 - LW.serverNow() : every;
    setTimeout(function wait() {
      if (live()) {
        load(c);
      } else {
        setTimeout(wait, 2000);
      }
    }, Math.min(Math.max(due, 2000), 2 * every));
  }

  // chartOf is a plot's chart, for the browser tests: what it drew.
  LW.chartOf = function (plot) {
    var found = null;
    charts.forEach(function (c) {
      if (c.plot === plot) {
        found = c.state;
      }
    });
    return found;
  };

  // startCharts draws every chart of the page, from its data-src (then
  // after each flush) or its data-points (a what-if: drawn once);
  // chartlocks.js, the last chart part, calls it.
  LW.startCharts = function () {
    if (typeof window.uPlot !== "function") {
      return; // the summaries beside the plots still say it all
    }
    LW.all(document, "[data-chart]").forEach(function (plot) {
      var kind = kinds[plot.dataset.chart];
      if (!kind) {
        return;
      }
      var fig = plot.closest("figure") || plot.parentNode;
      var c = {
        plot: plot,
        src: plot.dataset.src || "",
        small: plot.dataset.small === "true",
        summary: fig.querySelector("[data-chart-summary]"),
        through: 0,
        state: { draws: 0, xTicks: [], yTicks: [], yLabel: "", markers: [] }
      };
      kind(c);
      charts.push(c);
      if (typeof ResizeObserver === "function") {
        new ResizeObserver(function () {
          if (c.resize) {
            c.resize(plot.clientWidth);
          }
        }).observe(plot);
      }
      if (c.src) {
        load(c);
      } else if (plot.dataset.points) {
        try {
          drew(c, { points: JSON.parse(plot.dataset.points) });
        } catch (e) {
          // a page that says nothing drawable keeps its summary
        }
      }
    });
  };
})();
