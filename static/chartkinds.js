// lockwarden live client, part 9 of 10: the kinds of chart (data-chart),
// each turning its history JSON into uPlot's columns and saying in its
// tooltip what is under the cursor. charts.js draws and refreshes them.
(function () {
  "use strict";

  var LW = window.lockwarden;
  var num = LW.num;
  var kinds = LW.chartKinds;
  if (!kinds || typeof window.uPlot !== "function") {
    return;
  }

  // HOUR and DAY are the spans' lengths and the steps of their points.
  var SPANS = { "1h": { len: 3600, step: 10 }, "24h": { len: 86400, step: 60 } };

  function bars() {
    return uPlot.paths.bars({ size: [1, 64], gap: 1, align: 1 });
  }

  function barSeries(label, cls, scale) {
    var c = LW.colorOf(cls);
    return { label: label, scale: scale || "y", stroke: c, fill: c, width: 0, paths: bars(), points: { show: false } };
  }

  // make is a uPlot in the plot (or a part of it) with the console's
  // defaults: no legend of its own (the page has one), no zoom, its
  // tooltip, and hooks added by the kind.
  function plotOf(c, el, height, opts) {
    var state = c.state;
    var o = {
      width: Math.max(el.clientWidth, 120),
      height: height,
      tzDate: LW.utc,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false }, sync: opts.sync ? { key: opts.sync } : undefined },
      scales: opts.scales,
      series: [{}].concat(opts.series),
      axes: opts.axes,
      hooks: { setCursor: [LW.tipper(state)], draw: opts.draw ? [opts.draw] : [] }
    };
    return new uPlot(o, opts.data, el);
  }

  function span(c) {
    return SPANS[c.plot.dataset.span] || SPANS["1h"];
  }

  // limiter: a limiter's steps, per second, stacked (acquired, rejected,
  // errors), with its changes marked.
  kinds.limiter = function (c) {
    var hidden = c.plot.dataset.rejectionsHidden === "true";
    var st = c.state;
    var u = null;
    var raw = { t: [], acq: [], rej: [], err: [], step: Number(c.plot.dataset.stepS) || 10 };
    var markers = [];
    c.refreshMs = raw.step >= 60 ? 60000 : 10000;
    st.tip = function (u, t, top) {
      var lines = [];
      var m = LW.markerNear(u, markers, u.cursor.left);
      if (m) {
        lines.push([LW.clockOf(m.t / 1000, true) + " UTC " + m.label, "tip-marker"], m.detail);
      }
      var i = Math.floor((t - raw.t[0]) / raw.step);
      if (i >= 0 && i < raw.t.length) {
        var per = function (n) {
          return LW.numText(n / raw.step) + "/s";
        };
        var from = raw.t[i];
        var when = LW.clockOf(from, raw.step < 60) + "–" + LW.clockOf(from + raw.step, raw.step < 60) + " UTC";
        if (m) {
          lines.push([when, "tip-when"]);
        } else {
          lines.push(when);
        }
        lines.push(["acquired " + raw.acq[i] + " (" + per(raw.acq[i]) + ")", "tip-acquired"]);
        lines.push(hidden ? ["rejected: not visible", "muted"] : ["rejected " + raw.rej[i] + " (" + per(raw.rej[i]) + ")", "tip-rejected"]);
        lines.push(["errors " + raw.err[i], "tip-errors"]);
      }
      return lines;
    };
    c.draw = function (data) {
      var step = num(data.step_s) || raw.step;
      raw = { t: [], acq: [], rej: [], err: [], step: step };
      var s1 = [];
      var s2 = [];
      var s3 = [];
      (Array.isArray(data.points) ? data.points : []).forEach(function (p) {
        var a = num(p.acquired);
        var r = hidden ? 0 : num(p.rejected);
        var e = num(p.errors);
        raw.t.push(num(p.t));
        raw.acq.push(a);
        raw.rej.push(r);
        raw.err.push(e);
        s1.push(a / step);
        s2.push((a + r) / step);
        s3.push((a + r + e) / step);
      });
      markers = Array.isArray(data.markers) ? data.markers : [];
      st.points = raw;
      // Series drawn in order: the whole stack, then its lower parts over it.
      var cols = hidden ? [raw.t, s3, s1] : [raw.t, s3, s2, s1];
      if (u) {
        u.setData(cols);
        return;
      }
      var series = [barSeries("errors", "sw-errors")];
      if (!hidden) {
        series.push(barSeries("rejected", "sw-rejected"));
      }
      series.push(barSeries("acquired", "sw-acquired"));
      u = plotOf(c, c.plot, c.small ? 110 : 240, {
        data: cols,
        series: series,
        scales: {
          x: { time: true, range: function (u, min, max) { return [min, max + raw.step]; } },
          y: { range: function (u, min, max) { return [0, Math.max(max, 1) * (markers.length > 0 ? 1.45 : 1.08)]; } }
        },
        axes: [LW.timeAxis(st, c.small), LW.valueAxis(st, "y", "attempts per second", c.small)],
        draw: function (u) {
          LW.drawMarkers(u, markers, st);
        }
      });
      c.resize = function (w) {
        u.setSize({ width: Math.max(w, 120), height: u.height });
      };
    };
  };

  // holdClient names a hold's client as the page's key does (web's
  // holdClient): app@host pid N, or the holder without a registration.
  function holdClient(h) {
    if (h.client && h.client.app) {
      return h.client.app + "@" + h.client.host + " pid " + h.client.pid;
    }
    return String(h.holder);
  }

  function waitSeries() {
    return [barSeries("p99 under 100 ms", "sw-wait-ok"), barSeries("p99 under 1 s", "sw-wait-warn"),
      barSeries("p99 1 s or more", "sw-wait-bad")];
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
    return plotOf(c, el, height, {
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
      return [to - span(c).len, to];
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
    c.refreshMs = span(c).step >= 60 ? 60000 : 10000;
    var range = function () {
      var to = LW.serverNow() / 1000;
      return [to - span(c).len, to];
    };
    var holdsState = { draws: 0 };
    holdsState.tip = function (u, t, top) {
      var lane = clients.length - 1 - Math.floor(u.posToVal(top, "lanes"));
      var lines = null;
      holds.forEach(function (h) {
        if (h.lane === lane && h.from <= t && t <= h.to) {
          var end = h.running ? "now, still held" : LW.clockOf(h.to, true) + " UTC, " + h.ended;
          lines = [[clients[lane], "tip-client"], "as " + h.holder,
            LW.clockOf(h.from, true) + " UTC → " + end, "held " + LW.durText((h.to - h.from) * 1000)];
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
        return { lane: names[name], holder: String(h.holder), from: Date.parse(h.from) / 1000,
          to: running ? LW.serverNow() / 1000 : Date.parse(h.to) / 1000, running: running, ended: String(h.ended || "") };
      });
      wait.list = Array.isArray(data.wait) ? data.wait : [];
      st.points = { holds: holds, clients: clients, wait: wait.list };
      var r = range();
      if (hu) {
        hu.destroy();
      }
      hu = plotOf({ state: holdsState, small: false }, holdsEl, Math.max(clients.length, 1) * 28 + 36, {
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
          drawHolds(u, holds, clients.length);
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

  // drawHolds paints each hold as a bar in its client's lane and colour;
  // a hold that ended without its holder's release gets a red outline.
  function drawHolds(u, holds, lanes) {
    var ctx = u.ctx;
    var r = uPlot.pxRatio;
    var lo = u.scales.x.min;
    var hi = u.scales.x.max;
    ctx.save();
    holds.forEach(function (h) {
      if (h.to < lo || h.from > hi) {
        return;
      }
      var x0 = u.valToPos(Math.max(h.from, lo), "x", true);
      var x1 = u.valToPos(Math.min(h.to, hi), "x", true);
      var v = lanes - 1 - h.lane;
      var y0 = u.valToPos(v + 0.85, "lanes", true);
      var y1 = u.valToPos(v + 0.15, "lanes", true);
      ctx.fillStyle = LW.colorOf("tl-c" + (h.lane % 8));
      ctx.fillRect(x0, y0, Math.max(x1 - x0, 2 * r), y1 - y0);
      if (h.ended === "expired" || h.ended === "force-unlocked") {
        ctx.strokeStyle = LW.colorOf("sw-broken");
        ctx.lineWidth = 2 * r;
        ctx.strokeRect(x0, y0, Math.max(x1 - x0, 2 * r), y1 - y0);
      }
    });
    ctx.restore();
  }

  LW.startCharts();
})();
