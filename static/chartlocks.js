// lockwarden live client, part 10 of 11: a lock's charts (data-chart
// "lock", "waits"): its holders in a lane per client, its waits per minute.
// The last chart part: it starts the page's charts once all are known.
(function () {
  "use strict";

  var LW = window.lockwarden;
  var num = LW.num;
  var kinds = LW.chartKinds;
  if (!kinds || typeof window.uPlot !== "function") {
    return;
  }

  // holdClient names a hold's client as the page's key does (web's
  // holdClient): app@host pid N, or the holder without a registration.
  function holdClient(h) {
    if (h.client && h.client.app) {
      return h.client.app + "@" + h.client.host + " pid " + h.client.pid;
    }
    return String(h.holder);
  }

  function waitSeries() {
    return [LW.barSeries("p99 under 100 ms", "sw-wait-ok"), LW.barSeries("p99 under 1 s", "sw-wait-warn"),
      LW.barSeries("p99 1 s or more", "sw-wait-bad")];
  }

  // waitCols splits the minutes by p99 class into three bar series.
  function waitCols(wait) {
    var t = [];
    var cols = [[], [], []];
    wait.forEach(function (m) {
      var k = num(m.p99_ms) >= 1000 ? 2 : num(m.p99_ms) >= 100 ? 1 : 0;
      t.push(num(m.t));
      cols.forEach(function (col, i) {
        col.push(i === k ? num(m.contended) : null);
      });
    });
    return [t].concat(cols);
  }

  function waitTip(wait, t) {
    var m = null;
    wait.forEach(function (w) {
      if (num(w.t) <= t && t < num(w.t) + 60) {
        m = w;
      }
    });
    if (m === null) {
      return null;
    }
    return [LW.clockOf(m.t) + " UTC", num(m.acquired) + " acquired, " + num(m.contended) + " waited",
      "wait p50 " + num(m.p50_ms) + " ms · p99 " + num(m.p99_ms) + " ms · max " + num(m.max_ms) + " ms"];
  }

  // waitsPlot is a lock's waits per minute over [from, to] in el.
  function waitsPlot(c, el, height, wait, range, sync, ySize) {
    var st = c.state;
    st.tip = function (u, t) {
      return waitTip(wait.list, t);
    };
    return LW.plotOf(c, el, height, {
      data: waitCols(wait.list),
      series: waitSeries(),
      sync: sync,
      scales: { x: { time: true, range: range }, y: { range: function (u, min, max) { return [0, Math.max(max, 1) * 1.1]; } } },
      axes: [LW.timeAxis(st, c.small), LW.valueAxis(st, "y", "waited per min", c.small, ySize)]
    });
  }

  // waits: the overview's thumbnail of a lock's waits over the day.
  kinds.waits = function (c) {
    var wait = { list: [] };
    var u = null;
    c.refreshMs = 60000;
    var range = function () {
      var to = LW.serverNow() / 1000;
      return [to - LW.chartSpan(c).len, to];
    };
    c.draw = function (data) {
      wait.list = Array.isArray(data.wait) ? data.wait : [];
      c.state.points = wait.list;
      if (u) {
        u.setData(waitCols(wait.list));
        return;
      }
      u = waitsPlot(c, c.plot, 110, wait, range, null, 36);
      c.resize = function (w) {
        u.setSize({ width: Math.max(w, 120), height: u.height });
      };
    };
  };

  // lock: a lock's holds, a lane and colour per client, and its waits per
  // minute beneath on the same time axis (the cursor moves on both).
  kinds.lock = function (c) {
    var st = c.state;
    var holdsEl = LW.make("div", { className: "chart-holds", data: { testid: "chart-holds" } });
    var waitsEl = LW.make("div", { className: "chart-waits", data: { testid: "chart-waits" } });
    c.plot.append(holdsEl, waitsEl);
    var holds = [];
    var clients = [];
    var wait = { list: [] };
    var hu = null;
    var wu = null;
    var sync = "lock-" + Math.random().toString(36).slice(2);
    var ySize = 168;
    c.refreshMs = LW.chartSpan(c).step >= 60 ? 60000 : 10000;
    var range = function () {
      var to = LW.serverNow() / 1000;
      return [to - LW.chartSpan(c).len, to];
    };
    var holdsState = { draws: 0 };
    holdsState.tip = function (u, t, top) {
      var lane = clients.length - 1 - Math.floor(u.posToVal(top, "lanes"));
      var lines = null;
      holds.forEach(function (h) {
        if (h.lane === lane && h.from <= t && t <= h.lived) {
          var end = h.running ? "now, still held" : LW.clockOf(h.to, true) + " UTC, " + h.ended;
          lines = [[clients[lane], "tip-client"], "as " + h.holder,
            LW.clockOf(h.from, true) + " UTC → " + end, "held " + LW.durText((h.to - h.from) * 1000)];
          if (h.lived > h.to) {
            lines.push("worked on past its lease until " + LW.clockOf(h.lived, true) + " UTC");
          }
        }
      });
      return lines;
    };
    c.draw = function (data) {
      var names = {};
      clients = [];
      holds = (Array.isArray(data.holds) ? data.holds : []).map(function (h) {
        var name = holdClient(h);
        if (!LW.own(names, name)) {
          names[name] = clients.length;
          clients.push(name);
        }
        var running = !h.to;
        var to = running ? LW.serverNow() / 1000 : Date.parse(h.to) / 1000;
        var worked = h.worked_to ? Date.parse(h.worked_to) / 1000 : 0;
        return { lane: names[name], holder: String(h.holder), from: Date.parse(h.from) / 1000,
          to: to, lived: worked > to ? worked : to, running: running, ended: String(h.ended || ""),
          shared: h.mode === "read" };
      });
      wait.list = Array.isArray(data.wait) ? data.wait : [];
      st.points = { holds: holds, clients: clients, wait: wait.list, overlaps: overlapsOf(holds) };
      var r = range();
      if (hu) {
        hu.destroy();
      }
      hu = LW.plotOf({ state: holdsState, small: false }, holdsEl, Math.max(clients.length, 1) * 28 + 36, {
        data: [r, [null, null]],
        series: [{ scale: "lanes", paths: function () { return null; }, points: { show: false } }],
        sync: sync,
        scales: { x: { time: true, range: range }, lanes: { auto: false, range: [0, Math.max(clients.length, 1)] } },
        axes: [LW.timeAxis(st, false), {
          scale: "lanes",
          stroke: LW.colorOf("sw-axis"),
          font: LW.chartFont(12),
          label: "held by",
          labelFont: LW.chartFont(12),
          labelSize: 18,
          size: ySize,
          grid: { show: false },
          ticks: { show: false },
          splits: function () {
            return clients.map(function (x, i) { return i + 0.5; });
          },
          values: function (u, splits) {
            return splits.map(function (s) {
              var name = clients[clients.length - 1 - Math.floor(s)] || "";
              return name.length > 22 ? name.slice(0, 21) + "…" : name;
            });
          }
        }],
        draw: function (u) {
          drawHolds(u, holds, clients.length, st.points.overlaps);
        }
      });
      if (wait.list.length > 0) {
        if (wu) {
          wu.setData(waitCols(wait.list));
        } else {
          wu = waitsPlot(c, waitsEl, 130, wait, range, sync, ySize);
        }
      }
      c.resize = function (w) {
        [hu, wu].forEach(function (u) {
          if (u) {
            u.setSize({ width: Math.max(w, 120), height: u.height });
          }
        });
      };
    };
  };

  // overlapsOf is when two holders held at once ({from, to} in s):
  // exclusion broken, unless both were readers of a read-write lock, who
  // share it. A hold runs as long as its holder worked under it (lived:
  // past its lease when a late release or renewal was heard).
  function overlapsOf(holds) {
    var out = [];
    holds.forEach(function (a, i) {
      holds.slice(i + 1).forEach(function (b) {
        var from = Math.max(a.from, b.from);
        var to = Math.min(a.lived, b.lived);
        if (a.holder !== b.holder && !(a.shared && b.shared) && to > from) {
          out.push({ from: from, to: to });
        }
      });
    });
    return out;
  }

  // drawHolds paints each hold as a bar in its client's lane and colour;
  // a hold that ended without its holder's release gets a red outline,
  // and the time its holder worked on past that end a red hatch.
  function drawHolds(u, holds, lanes, overlaps) {
    var ctx = u.ctx;
    var r = uPlot.pxRatio;
    var lo = u.scales.x.min;
    var hi = u.scales.x.max;
    ctx.save();
    holds.forEach(function (h) {
      if (h.lived < lo || h.from > hi) {
        return;
      }
      var x0 = u.valToPos(Math.max(h.from, lo), "x", true);
      var x1 = u.valToPos(Math.min(h.to, hi), "x", true);
      var v = lanes - 1 - h.lane;
      var y0 = u.valToPos(v + 0.85, "lanes", true);
      var y1 = u.valToPos(v + 0.15, "lanes", true);
      ctx.fillStyle = LW.colorOf("tl-c" + (h.lane % 8));
      ctx.fillRect(x0, y0, Math.max(x1 - x0, 2 * r), y1 - y0);
      if (h.ended === "expired" || h.ended === "force-unlocked" || h.ended === "evicted") {
        ctx.strokeStyle = LW.colorOf("sw-broken");
        ctx.lineWidth = 2 * r;
        ctx.strokeRect(x0, y0, Math.max(x1 - x0, 2 * r), y1 - y0);
      }
      if (h.lived > h.to && h.to < hi) {
        var w0 = u.valToPos(Math.max(h.to, lo), "x", true);
        var w1 = u.valToPos(Math.min(h.lived, hi), "x", true);
        ctx.strokeStyle = LW.colorOf("sw-broken");
        ctx.lineWidth = r;
        ctx.setLineDash([4 * r, 3 * r]);
        ctx.strokeRect(w0, y0, Math.max(w1 - w0, 2 * r), y1 - y0);
        ctx.setLineDash([]);
      }
    });
    // Two holders at once: the time they overlapped, in red across the
    // lanes (a lease that ran out under a holder that worked on).
    ctx.fillStyle = LW.colorOf("sw-overlap");
    overlaps.forEach(function (o) {
      var from = Math.max(o.from, lo);
      var to = Math.min(o.to, hi);
      if (to <= from) {
        return;
      }
      var x0 = u.valToPos(from, "x", true);
      var x1 = u.valToPos(to, "x", true);
      ctx.fillRect(x0, u.bbox.top, Math.max(x1 - x0, 2 * r), u.bbox.height);
    });
    ctx.restore();
  }

  LW.startCharts();
})();
