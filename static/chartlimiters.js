// lockwarden live client, part 9 of 11: a limiter's charts (data-chart
// "limiter", "whatif"), each turning its JSON into uPlot's columns and
// saying in its tooltip what is under the cursor; charts.js draws them.
(function () {
  "use strict";

  var LW = window.lockwarden;
  var num = LW.num;
  var kinds = LW.chartKinds;
  if (!kinds || typeof window.uPlot !== "function") {
    return;
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
      var series = [LW.barSeries("errors", "sw-errors")];
      if (!hidden) {
        series.push(LW.barSeries("rejected", "sw-rejected"));
      }
      series.push(LW.barSeries("acquired", "sw-acquired"));
      u = LW.plotOf(c, c.plot, c.small ? 110 : 240, {
        data: cols,
        series: series,
        scales: {
          x: { time: true, range: function (u, min, max) { return [min, max + raw.step]; } },
          y: { range: function (u, min, max) { return [0, Math.max(max, 1) * (markers.length > 0 ? 1.45 : 1.08)]; } }
        },
        axes: [LW.timeAxis(st, c.small), LW.valueAxis(st, "y", "attempts per second", c.small)],
        draw: function (u) {
          LW.drawMarkers(u, markers, st, c.small);
        }
      });
      c.resize = function (w) {
        u.setSize({ width: Math.max(w, 120), height: u.height });
      };
    };
  };

  // whatif: the rejections per minute of the last hour, as they happened
  // (bars) and at the typed settings (a line in its band), from the page.
  kinds.whatif = function (c) {
    var st = c.state;
    var pts = [];
    st.tip = function (u, t) {
      var p = null;
      pts.forEach(function (q) {
        if (q.t <= t && t < q.t + 60) {
          p = q;
        }
      });
      if (p === null) {
        return null;
      }
      return [LW.clockOf(p.t) + "–" + LW.clockOf(p.t + 60) + " UTC, " + num(p.attempts) + " attempts",
        ["happened: " + num(p.actual_rejected) + " rejected, " + num(p.actual_admitted) + " admitted", "tip-rejected"],
        ["these settings: " + num(p.rejected) + " rejected, " + num(p.admitted) + " admitted", "tip-predicted"],
        ["could be " + num(p.low) + " to " + num(p.high) + " rejected", "muted"]];
    };
    c.draw = function (data) {
      pts = Array.isArray(data.points) ? data.points : [];
      st.points = pts;
      var col = function (k) {
        return pts.map(function (p) { return num(p[k]); });
      };
      // Every minute is drawn at its middle: its bar centred there, the
      // line and its band through it.
      var mid = pts.map(function (p) { return num(p.t) + 30; });
      var predicted = LW.colorOf("sw-predicted");
      var u = LW.plotOf(c, c.plot, 220, {
        data: [mid, col("actual_rejected"), col("high"), col("low"), col("rejected")],
        series: [
          LW.barSeries("rejected, as it happened", "sw-rejected", "y", 0),
          { label: "could be, high", stroke: "transparent", points: { show: false } },
          { label: "could be, low", stroke: "transparent", points: { show: false } },
          { label: "rejected at these settings", stroke: predicted, width: 2.5, points: { show: pts.length < 20, fill: predicted } }
        ],
        bands: [{ series: [2, 3], fill: LW.colorOf("sw-band") }],
        scales: {
          x: { time: true, range: function (u, min, max) { return [min - 30, max + 30]; } },
          y: { range: function (u, min, max) { return [0, Math.max(max, 1) * 1.1]; } }
        },
        axes: [LW.timeAxis(st, false), LW.valueAxis(st, "y", "rejected per minute", false)]
      });
      c.resize = function (w) {
        u.setSize({ width: Math.max(w, 120), height: u.height });
      };
    };
  };
})();
