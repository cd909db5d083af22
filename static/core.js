// lockwarden live client, part 1 of 11: shared helpers. The parts are loaded
// in order by the layout (core, limiters, locks, events, live) and meet in
// one namespace, window.lockwarden. Elements are found by data attributes
// and matched to names by comparing dataset values, never by building
// selectors from names; everything from the server is written with
// textContent.
(function () {
  "use strict";

  var hasOwn = Object.prototype.hasOwnProperty;
  var LW = {
    // serverSkew is server time minus browser time, learnt from frames, so
    // ages computed here agree with the server's clock.
    serverSkew: 0,
    loadedAt: performance.now(),
    // renderedAt is when the server rendered the page (its clock): frames
    // built from an older discovery must not undo what the page shows.
    renderedAt: Number(document.body.dataset.renderedAt) || 0,
    // statsHandlers run in order on every stats frame; eventHandlers on
    // every lock event; alertHandlers on every alerts frame. The page
    // parts register themselves.
    statsHandlers: [],
    eventHandlers: [],
    // alertHandlers run on every "alerts" frame (the whole firing set).
    alertHandlers: []
  };
  window.lockwarden = LW;

  LW.own = function (obj, key) {
    return obj !== null && typeof obj === "object" && hasOwn.call(obj, key);
  };

  LW.all = function (root, selector) {
    return Array.prototype.slice.call(root.querySelectorAll(selector));
  };

  LW.setText = function (el, text) {
    if (el.textContent !== text) {
      el.textContent = text;
    }
  };

  LW.setField = function (root, field, value) {
    LW.all(root, '[data-field="' + field + '"]').forEach(function (el) {
      LW.setText(el, String(value));
    });
  };

  LW.num = function (v) {
    return typeof v === "number" && isFinite(v) ? v : 0;
  };

  // fresh reports whether a frame's object set is at least as new as the
  // page: the sampler discovers every second, the page discovered on load.
  LW.fresh = function (f) {
    return typeof f.discovered_at !== "number" || f.discovered_at >= LW.renderedAt;
  };

  // The formats below mirror views/format.go and views/words.

  // durText mirrors words.Duration (views.durText): "850 ms", "4.2 s",
  // "12 s", "3 min 12 s", "2 h 5 min", "3 d 4 h"; "–" below zero.
  LW.durText = function (ms) {
    var second = 1000;
    var minute = 60 * second;
    var hour = 60 * minute;
    var day = 24 * hour;
    function two(n1, u1, n2, u2) {
      return n2 === 0 ? n1 + " " + u1 : n1 + " " + u1 + " " + n2 + " " + u2;
    }
    ms = Math.floor(ms);
    if (ms < 0) {
      return "–";
    }
    if (ms < second) {
      return ms + " ms";
    }
    if (ms < 10 * second) {
      return String(Math.floor(ms / 100) / 10) + " s";
    }
    if (ms < minute) {
      return Math.floor(ms / second) + " s";
    }
    if (ms < hour) {
      return two(Math.floor(ms / minute), "min", Math.floor((ms % minute) / second), "s");
    }
    if (ms < day) {
      return two(Math.floor(ms / hour), "h", Math.floor((ms % hour) / minute), "min");
    }
    return two(Math.floor(ms / day), "d", Math.floor((ms % day) / hour), "h");
  };

  // pttlText mirrors views.pttlText: tenths of a second under a minute.
  LW.pttlText = function (ms) {
    if (ms < 0) {
      return "no expiry";
    }
    if (ms < 60000) {
      return (ms / 1000).toFixed(1) + " s";
    }
    return LW.durText(ms);
  };

  LW.ageText = function (ms) {
    return LW.durText(Math.max(0, ms));
  };

  // agoText mirrors views.agoText: "4.2 s ago", "3 min 12 s ago".
  LW.agoText = function (ms) {
    if (ms < 0) {
      return "never";
    }
    return LW.durText(ms) + " ago";
  };

  // whoText mirrors views.holderWhoText from a frame's who entry (the
  // holder in words and its instants) at server time now.
  LW.whoText = function (e, now) {
    var s = String(e.who);
    // A hold younger than the clock skew between browser and Redis reads
    // "held 0 ms", as the server renders it, rather than nothing.
    if (typeof e.held_since === "number" && e.held_since > 0) {
      s += ", held " + LW.durText(Math.max(0, now - e.held_since));
      if (e.since_seen === true) {
        s += " (since the console first saw it)";
      }
    }
    if (typeof e.renewed_at === "number" && e.renewed_at > 0) {
      s += ", renewed " + LW.agoText(Math.max(0, now - e.renewed_at));
    }
    return s;
  };

  // numText mirrors views.num: at most two decimals, no trailing zeros.
  LW.numText = function (v) {
    if (typeof v !== "number" || !isFinite(v)) {
      return "–";
    }
    return String(Math.round(v * 100) / 100);
  };

  LW.toDate = function (at) {
    if (typeof at === "number") {
      return new Date(at);
    }
    if (typeof at === "string") {
      var t = Date.parse(at);
      if (!isNaN(t)) {
        return new Date(t);
      }
    }
    return new Date(Date.now() + LW.serverSkew);
  };

  LW.clock = function (d) {
    return d.toISOString().slice(11, 23);
  };

  LW.holdersText = function (hs) {
    if (!Array.isArray(hs) || hs.length === 0) {
      return "–";
    }
    return hs.map(function (h) {
      var s = String(h.id) + " ×" + LW.num(h.count);
      if (typeof h.mode === "string" && h.mode !== "") {
        s += " (" + h.mode + ")";
      }
      return s;
    }).join(", ");
  };

  LW.lockURL = function (name) {
    return "/locks/" + encodeURIComponent(name);
  };

  // fetchLock reads GET /api/locks/{name} and passes its JSON (null for
  // an error answer) to fn; nothing on a network error. One request per
  // purpose and lock at a time, so a burst of frames sends one.
  var fetching = {};
  LW.fetchLock = function (purpose, name, fn) {
    var key = purpose + "\u0000" + name;
    if (fetching[key]) {
      return;
    }
    fetching[key] = true;
    fetch(LW.lockURL(name).replace(/^\/locks\//, "/api/locks/"), { credentials: "same-origin" })
      .then(function (r) {
        return r.ok ? r.json() : null;
      })
      .then(fn)
      .catch(function () {})
      .then(function () {
        delete fetching[key];
      });
  };

  LW.limiterURL = function (name) {
    return "/limiters/" + encodeURIComponent(name);
  };

  // make builds an element: props.className, props.data (dataset entries),
  // props.attrs (plain attributes), then children (nodes or text).
  LW.make = function (tag, props, children) {
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
  };

  LW.timeEl = function (d, className) {
    return LW.make("time", { className: className, attrs: { datetime: d.toISOString() } }, [LW.clock(d)]);
  };

  // insertSorted puts row into tbody before the first row whose key (read
  // by keyOf) sorts after name, so live rows land where a reload puts them.
  LW.insertSorted = function (tbody, row, name, keyOf) {
    var before = null;
    Array.prototype.some.call(tbody.children, function (r) {
      var k = keyOf(r);
      if (k !== undefined && k > name) {
        before = r;
        return true;
      }
      return false;
    });
    tbody.insertBefore(row, before);
  };

  // globMatch follows Redis's MATCH rules (* ? [set] [^set] [a-z] \x) so the
  // script adds exactly the rows a reload would show. A step budget keeps a
  // pathological pattern from freezing the page; past it a name is shown.
  LW.globMatch = function (pattern, name) {
    var p = Array.from(pattern);
    var s = Array.from(name);
    var budget = 100000;

    function matchClass(pi, ch) {
      var j = pi + 1;
      var negate = false;
      var hit = false;
      if (p[j] === "^") {
        negate = true;
        j++;
      }
      while (j < p.length && p[j] !== "]") {
        if (p[j] === "\\" && j + 1 < p.length) {
          hit = hit || p[j + 1] === ch;
          j += 2;
        } else if (j + 2 < p.length && p[j + 1] === "-" && p[j + 2] !== "]") {
          var lo = p[j] < p[j + 2] ? p[j] : p[j + 2];
          var hi = p[j] < p[j + 2] ? p[j + 2] : p[j];
          hit = hit || (ch >= lo && ch <= hi);
          j += 3;
        } else {
          hit = hit || p[j] === ch;
          j++;
        }
      }
      return { ok: hit !== negate, next: j + 1 };
    }

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
        if (c === "[") {
          var m = matchClass(pi, s[si]);
          if (!m.ok) {
            return false;
          }
          pi = m.next;
          si++;
          continue;
        }
        if (c === "\\" && pi + 1 < p.length) {
          pi++;
          c = p[pi];
        } else if (c === "?") {
          c = s[si];
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
  };
})();
