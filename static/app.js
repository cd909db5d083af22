// lockwarden live client: one websocket, frames as documented in the console
// contract, and in-place updates of whatever the current page shows.
// Elements are found by data attributes and matched to names by comparing
// dataset values, never by building selectors from names; everything from
// the server is written with textContent.
(function () {
  "use strict";

  var body = document.body;
  var hasOwn = Object.prototype.hasOwnProperty;
  var EVENT_TYPES = { "unlock": true, "force-unlock": true, "expired": true };
  var BACKOFF_MIN_MS = 250;
  var BACKOFF_MAX_MS = 5000;

  var frames = 0;
  var failures = 0;
  var socket = null;
  var leaving = false;
  // serverSkew is server time minus browser time, learnt from frames, so
  // ages computed here agree with the server's clock.
  var serverSkew = 0;
  // pttlBase remembers when each countdown element last got a fresh value.
  var pttlBase = new WeakMap();
  // sparkLast remembers when each sparkline last got a point.
  var sparkLast = new WeakMap();
  var loadedAt = performance.now();

  function own(obj, key) {
    return obj !== null && typeof obj === "object" && hasOwn.call(obj, key);
  }

  function all(root, selector) {
    return Array.prototype.slice.call(root.querySelectorAll(selector));
  }

  function setText(el, text) {
    if (el.textContent !== text) {
      el.textContent = text;
    }
  }

  function setField(root, field, value) {
    all(root, '[data-field="' + field + '"]').forEach(function (el) {
      setText(el, String(value));
    });
  }

  function num(v) {
    return typeof v === "number" && isFinite(v) ? v : 0;
  }

  function pad2(n) {
    return n < 10 ? "0" + n : String(n);
  }

  // The formats below mirror views/format.go.
  function pttlText(ms) {
    if (ms < 0) {
      return "no expiry";
    }
    if (ms < 60000) {
      return (ms / 1000).toFixed(1) + " s";
    }
    if (ms < 3600000) {
      return Math.floor(ms / 60000) + "m " + pad2(Math.floor(ms / 1000) % 60) + "s";
    }
    return Math.floor(ms / 3600000) + "h " + pad2(Math.floor(ms / 60000) % 60) + "m";
  }

  function ageText(ms) {
    var s = Math.floor(ms / 1000);
    if (s < 0) {
      return "0s";
    }
    if (s < 60) {
      return s + "s";
    }
    if (s < 3600) {
      return Math.floor(s / 60) + "m " + pad2(s % 60) + "s";
    }
    return Math.floor(s / 3600) + "h " + pad2(Math.floor(s / 60) % 60) + "m";
  }

  function toDate(at) {
    if (typeof at === "number") {
      return new Date(at);
    }
    if (typeof at === "string") {
      var t = Date.parse(at);
      if (!isNaN(t)) {
        return new Date(t);
      }
    }
    return new Date(Date.now() + serverSkew);
  }

  function clock(d) {
    return d.toISOString().slice(11, 23);
  }

  function holdersText(hs) {
    if (!Array.isArray(hs) || hs.length === 0) {
      return "–";
    }
    return hs.map(function (h) {
      return String(h.id) + " ×" + num(h.count);
    }).join(", ");
  }

  function lockURL(name) {
    return "/locks/" + encodeURIComponent(name);
  }

  // make builds an element: props.className, props.data (dataset entries),
  // props.attrs (plain attributes), then children (nodes or text).
  function make(tag, props, children) {
    var el = document.createElement(tag);
    if (props.className) {
      el.className = props.className;
    }
    Object.keys(props.data || {}).forEach(function (k) {
      el.dataset[k] = props.data[k];
    });
    Object.keys(props.attrs || {}).forEach(function (k) {
      el.setAttribute(k, props.attrs[k]);
    });
    (children || []).forEach(function (c, i) {
      if (i > 0 && props.spaced) {
        el.appendChild(document.createTextNode(" "));
      }
      el.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return el;
  }

  function timeEl(d, className) {
    return make("time", { className: className, attrs: { datetime: d.toISOString() } }, [clock(d)]);
  }

  // globMatch follows Redis's MATCH rules (* ? [set] [^set] [a-z] \x) so the
  // script adds exactly the rows a reload would show. A step budget keeps a
  // pathological pattern from freezing the page; past it a name is shown.
  function globMatch(pattern, name) {
    var p = Array.from(pattern);
    var s = Array.from(name);
    var budget = 100000;

    function match(pi, si) {
      while (pi < p.length) {
        if (--budget < 0) {
          return true;
        }
        var c = p[pi];
        if (c === "*") {
          while (pi + 1 < p.length && p[pi + 1] === "*") {
            pi++;
          }
          if (pi + 1 === p.length) {
            return true;
          }
          for (var k = si; k <= s.length; k++) {
            if (match(pi + 1, k)) {
              return true;
            }
          }
          return false;
        }
        if (si >= s.length) {
          return false;
        }
        if (c === "?") {
          pi++;
          si++;
          continue;
        }
        if (c === "[") {
          var j = pi + 1;
          var negate = false;
          var hit = false;
          if (p[j] === "^") {
            negate = true;
            j++;
          }
          while (j < p.length && p[j] !== "]") {
            if (p[j] === "\\" && j + 1 < p.length) {
              if (p[j + 1] === s[si]) {
                hit = true;
              }
              j += 2;
            } else if (j + 2 < p.length && p[j + 1] === "-" && p[j + 2] !== "]") {
              var lo = p[j];
              var hi = p[j + 2];
              if (lo > hi) {
                var tmp = lo;
                lo = hi;
                hi = tmp;
              }
              if (s[si] >= lo && s[si] <= hi) {
                hit = true;
              }
              j += 3;
            } else {
              if (p[j] === s[si]) {
                hit = true;
              }
              j++;
            }
          }
          if (hit === negate) {
            return false;
          }
          pi = j + 1;
          si++;
          continue;
        }
        if (c === "\\" && pi + 1 < p.length) {
          pi++;
          c = p[pi];
        }
        if (c !== s[si]) {
          return false;
        }
        pi++;
        si++;
      }
      return si === s.length;
    }

    if (pattern === "" || pattern === "*") {
      return true;
    }
    return match(0, 0);
  }

  // ---- connection ----

  function setConnection(open) {
    body.dataset.ws = open ? "open" : "closed";
    all(document, "[data-ws-indicator]").forEach(function (el) {
      el.dataset.state = open ? "open" : "closed";
      setText(el, open ? "live" : "offline");
    });
  }

  function wsURL() {
    return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
  }

  function reconnectLater() {
    if (leaving) {
      return;
    }
    var delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * Math.pow(2, failures));
    failures = Math.min(failures + 1, 10);
    // Jitter spreads a room of wall displays after a server restart.
    setTimeout(connect, delay / 2 + Math.random() * delay / 2);
  }

  function connect() {
    var ws;
    try {
      ws = new WebSocket(wsURL());
    } catch (e) {
      reconnectLater();
      return;
    }
    socket = ws;
    ws.onopen = function () {
      failures = 0;
      setConnection(true);
    };
    ws.onmessage = function (ev) {
      var frame;
      try {
        frame = JSON.parse(ev.data);
      } catch (e) {
        return;
      }
      if (frame !== null && typeof frame === "object") {
        handle(frame);
      }
    };
    ws.onclose = function () {
      if (socket === ws) {
        socket = null;
        setConnection(false);
        reconnectLater();
      }
    };
  }

  function handle(f) {
    if (f.type === "stats") {
      onStats(f);
    } else if (f.type === "status") {
      onStatus(f);
    } else if (own(EVENT_TYPES, f.type)) {
      onEvent(f);
    }
  }

  function onStatus(f) {
    var up = f.redis === "up";
    body.dataset.redis = up ? "up" : "down";
    all(document, "[data-redis-indicator]").forEach(function (el) {
      el.dataset.state = up ? "up" : "down";
      setText(el, up ? "redis up" : "redis down");
    });
  }

  // ---- stats frames ----

  function onStats(f) {
    frames++;
    body.dataset.frames = String(frames);
    all(document, "[data-frame-counter]").forEach(function (el) {
      setText(el, String(frames));
    });
    if (typeof f.at === "number") {
      serverSkew = f.at - Date.now();
    }
    all(document, '[data-count="locks"]').forEach(function (el) {
      if (typeof f.lock_count === "number") {
        setText(el, String(f.lock_count));
      }
    });
    all(document, '[data-count="limiters"]').forEach(function (el) {
      if (typeof f.limiter_count === "number") {
        setText(el, String(f.limiter_count));
      }
    });
    updateLimiters(f);
    updateRolling(f);
    updateLockRows(f);
    updateLocks(f);
  }

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
      setText(el, total === 0 ? "–" : (r * 100).toFixed(1) + "%");
      ["ratio-idle", "ratio-ok", "ratio-warn", "ratio-bad"].forEach(function (k) {
        el.classList.toggle(k, k === cls);
      });
    });
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
      var cells = [c.acquired, c.rejected, c.errors].map(function (v) {
        return make("td", { className: "num" }, [String(num(v))]);
      });
      var tr = make("tr", { data: { testid: "rolling-row", at: String(f.at) } },
        [make("td", {}, [timeEl(new Date(f.at))])].concat(cells));
      tbody.insertBefore(tr, tbody.firstChild);
      var cap = Number(tbody.dataset.cap) || 50;
      while (tbody.children.length > cap) {
        tbody.removeChild(tbody.lastElementChild);
      }
    });
  }

  function lockPresent(f, name) {
    return own(f.pttl_ms, name) || own(f.holders, name);
  }

  // updateLockRows keeps the locks table equal to the frame's lock set,
  // filtered like the server filtered the page.
  function updateLockRows(f) {
    if (f.pttl_ms === null || typeof f.pttl_ms !== "object") {
      return;
    }
    all(document, "tbody[data-locks]").forEach(function (tbody) {
      var pattern = tbody.dataset.match || "";
      var rows = new Map();
      Array.prototype.slice.call(tbody.children).forEach(function (tr) {
        var name = tr.dataset.lock;
        if (name === undefined) {
          return;
        }
        if (!lockPresent(f, name)) {
          tbody.removeChild(tr);
        } else {
          rows.set(name, tr);
        }
      });
      Object.keys(f.pttl_ms).sort().forEach(function (name) {
        if (rows.has(name) || !globMatch(pattern, name)) {
          return;
        }
        var tr = newLockRow(name, f.at);
        var before = null;
        Array.prototype.some.call(tbody.children, function (row) {
          if (row.dataset.lock !== undefined && row.dataset.lock > name) {
            before = row;
            return true;
          }
          return false;
        });
        tbody.insertBefore(tr, before);
        rows.set(name, tr);
      });
      all(document, "[data-locks-empty]").forEach(function (p) {
        p.hidden = rows.size > 0;
      });
    });
  }

  function newLockRow(name, at) {
    var seen = typeof at === "number" ? at : Date.now() + serverSkew;
    var link = make("a", { data: { testid: "lock-link" } }, [name]);
    link.href = lockURL(name);
    return make("tr", { data: { testid: "lock-row", lock: name } }, [
      make("td", {}, [link]),
      make("td", { className: "kind", data: { field: "kind" } }, ["–"]),
      make("td", { data: { field: "holders", testid: "lock-holders" } }),
      make("td", { className: "num", data: { field: "pttl", testid: "lock-pttl", pttlMs: "-1" } }),
      make("td", { data: { field: "age", firstSeen: String(seen) }, spaced: true }, [
        timeEl(new Date(seen)),
        make("span", { className: "muted", data: { field: "age-text" } }),
      ]),
    ]);
  }

  function updateLocks(f) {
    var now = performance.now();
    all(document, "[data-lock]").forEach(function (el) {
      var name = el.dataset.lock;
      var present = lockPresent(f, name);
      all(el, '[data-field="gone"]').forEach(function (g) {
        g.hidden = present;
      });
      if (!present) {
        return;
      }
      if (own(f.pttl_ms, name)) {
        all(el, '[data-field="pttl"]').forEach(function (p) {
          p.dataset.pttlMs = String(num(f.pttl_ms[name]));
          pttlBase.set(p, now);
        });
      }
      if (own(f.holders, name)) {
        var hs = Array.isArray(f.holders[name]) ? f.holders[name] : [];
        setField(el, "holders", holdersText(hs));
        all(el, "tr[data-holder]").forEach(function (tr) {
          var h = hs.find(function (x) {
            return x.id === tr.dataset.holder;
          });
          tr.classList.toggle("stale", !h);
          if (h) {
            setField(tr, "holder-count", num(h.count));
          }
        });
      }
      if (own(f.locks, name)) {
        var c = f.locks[name];
        setField(el, "acquired", num(c.acquired));
        setField(el, "rejected", num(c.rejected));
        setField(el, "errors", num(c.errors));
      }
    });
    tickCountdowns();
  }

  // ---- between frames ----

  function tickCountdowns() {
    var now = performance.now();
    all(document, '[data-field="pttl"]').forEach(function (el) {
      var ms = Number(el.dataset.pttlMs);
      if (!isFinite(ms)) {
        return;
      }
      if (ms < 0) {
        setText(el, pttlText(-1));
        return;
      }
      var base = pttlBase.has(el) ? pttlBase.get(el) : loadedAt;
      setText(el, pttlText(Math.max(0, ms - (now - base))));
    });
  }

  function tickAges() {
    var now = Date.now() + serverSkew;
    all(document, "[data-first-seen]").forEach(function (el) {
      var seen = Number(el.dataset.firstSeen);
      if (!isFinite(seen)) {
        return;
      }
      all(el, '[data-field="age-text"]').forEach(function (t) {
        setText(t, ageText(now - seen));
      });
    });
  }

  // ---- events ----

  function eventDetail(f) {
    switch (f.type) {
      case "unlock":
        return JSON.stringify(String(f.message === undefined ? "" : f.message)) + " on " + String(f.channel || "");
      case "force-unlock":
        return f.holder ? "broken by the console, holder " + String(f.holder) : "broken by the console";
      case "expired":
        return "lease ran out";
    }
    return "";
  }

  function newEventItem(f) {
    var link = make("a", { className: "event-name", data: { testid: "event-name" } }, [String(f.name)]);
    link.href = lockURL(String(f.name));
    return make("li", { className: "event event-" + f.type, data: { testid: "event-row", eventType: f.type }, spaced: true }, [
      timeEl(toDate(f.at), "event-time"),
      make("span", { className: "event-type", data: { testid: "event-type" } }, [f.type]),
      link,
      make("span", { className: "event-detail", data: { testid: "event-detail" } }, [eventDetail(f)]),
    ]);
  }

  function onEvent(f) {
    if (typeof f.name !== "string") {
      return;
    }
    all(document, "[data-events]").forEach(function (list) {
      all(list, "[data-empty]").forEach(function (e) {
        list.removeChild(e);
      });
      list.insertBefore(newEventItem(f), list.firstChild);
      var cap = Number(list.dataset.cap) || 200;
      while (list.children.length > cap) {
        list.removeChild(list.lastElementChild);
      }
    });
  }

  // ---- start ----

  window.addEventListener("pagehide", function () {
    leaving = true;
    if (socket) {
      socket.close(1001);
    }
  });
  window.addEventListener("pageshow", function (ev) {
    // A page restored from the back/forward cache needs its socket back.
    if (ev.persisted && socket === null) {
      leaving = false;
      connect();
    }
  });

  setConnection(false);
  setInterval(tickCountdowns, 100);
  setInterval(tickAges, 1000);
  connect();
})();
