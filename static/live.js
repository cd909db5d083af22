// lockwarden live client, part 11 of 11: the websocket. One connection per
// page, frames as documented in the console contract, dispatched to the
// handlers the other parts registered; reconnects with backoff.
(function () {
  "use strict";

  var LW = window.lockwarden;
  var body = document.body;
  var all = LW.all;
  var EVENT_TYPES = { "unlock": true, "force-unlock": true, "expired": true };
  var BACKOFF_MIN_MS = 250;
  var BACKOFF_MAX_MS = 5000;
  // The server sends these parts of a stats frame only when one of them
  // changed and in a connection's first stats frame; a frame without them
  // means "as last sent", so they are kept here and filled back in.
  var META_FIELDS = ["kinds", "first_seen", "limiter_info", "holders", "stale"];
  var meta = {};
  // numbers are the counts, availability and leases as of the last stats
  // frame: a delta frame (delta: true) carries only what changed since the
  // previous frame, plus the names that are gone. pttlAt is the frame time
  // each lease was sent at; between sends the lease counts down.
  // who (each lock's holders' identities and instants) follows the same
  // rule, a lock's whole entry at a time.
  // waiters (each lock's count) too, a 0 in a delta meaning none left, and
  // waits (each contended lock's 10 s wait summary), a summary with no
  // contended acquisition meaning its contention left the window.
  // waiting_since (when each lock's longest current waiter queued) as
  // waiters, a 0 meaning nobody waits any more.
  var NUMBER_FIELDS = ["limiters", "locks", "available", "pttl_ms", "who", "waiters", "waits", "waiting_since"];
  var numbers = null;

  var frames = 0;
  var failures = 0;
  var socket = null;
  var leaving = false;

  function setConnection(open) {
    body.dataset.ws = open ? "open" : "closed";
    all(document, "[data-ws-indicator]").forEach(function (el) {
      el.dataset.state = open ? "open" : "closed";
      LW.setText(el, open ? "live" : "offline");
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
    meta = {}; // a new connection's first stats frame carries them all
    numbers = null; // and all the numbers
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
    } else if (f.type === "alerts" && Array.isArray(f.alerts)) {
      LW.alertHandlers.forEach(function (h) {
        h(f.alerts);
      });
    } else if (LW.own(EVENT_TYPES, f.type)) {
      LW.eventHandlers.forEach(function (h) {
        h(f);
      });
    }
  }

  function onStatus(f) {
    var up = f.redis === "up";
    body.dataset.redis = up ? "up" : "down";
    all(document, "[data-redis-indicator]").forEach(function (el) {
      el.dataset.state = up ? "up" : "down";
      LW.setText(el, up ? "redis up" : "redis down");
    });
    // The server renders the banner hidden or shown; keep it current.
    all(document, "[data-redis-banner]").forEach(function (el) {
      el.hidden = up;
    });
  }

  // withMeta fills the parts f left out from the last frame that had them.
  function withMeta(f) {
    META_FIELDS.forEach(function (k) {
      if (LW.own(f, k)) {
        meta[k] = f[k];
      } else if (LW.own(meta, k)) {
        f[k] = meta[k];
      }
    });
  }

  // withNumbers turns a delta frame into the full frame it stands for, so
  // every handler sees whole maps. It returns false for a delta without a
  // full frame before it (it cannot be applied).
  function withNumbers(f) {
    var at = typeof f.at === "number" ? f.at : 0;
    if (f.delta !== true) {
      numbers = { pttlAt: {} };
      NUMBER_FIELDS.forEach(function (k) {
        numbers[k] = Object.assign({}, f[k] !== null && typeof f[k] === "object" ? f[k] : {});
      });
      Object.keys(numbers.pttl_ms).forEach(function (name) {
        numbers.pttlAt[name] = at;
      });
      return true;
    }
    if (numbers === null) {
      return false;
    }
    (Array.isArray(f.removed) ? f.removed : []).forEach(function (name) {
      NUMBER_FIELDS.forEach(function (k) {
        delete numbers[k][name];
      });
      delete numbers.pttlAt[name];
    });
    ["limiters", "locks", "available", "who"].forEach(function (k) {
      if (f[k] !== null && typeof f[k] === "object") {
        Object.assign(numbers[k], f[k]);
      }
    });
    ["waiters", "waiting_since"].forEach(function (k) {
      if (f[k] !== null && typeof f[k] === "object") {
        Object.keys(f[k]).forEach(function (name) {
          if (f[k][name] === 0) {
            delete numbers[k][name];
          } else {
            numbers[k][name] = f[k][name];
          }
        });
      }
    });
    if (f.waits !== null && typeof f.waits === "object") {
      Object.keys(f.waits).forEach(function (name) {
        var w = f.waits[name];
        if (w === null || typeof w !== "object" || !(LW.num(w.contended) > 0)) {
          delete numbers.waits[name];
        } else {
          numbers.waits[name] = w;
        }
      });
    }
    if (f.pttl_ms !== null && typeof f.pttl_ms === "object") {
      Object.keys(f.pttl_ms).forEach(function (name) {
        numbers.pttl_ms[name] = f.pttl_ms[name];
        numbers.pttlAt[name] = at;
      });
    }
    var pttl = {};
    Object.keys(numbers.pttl_ms).forEach(function (name) {
      var v = Number(numbers.pttl_ms[name]);
      pttl[name] = v < 0 ? v : Math.max(0, v - (at - numbers.pttlAt[name]));
    });
    f.limiters = Object.assign({}, numbers.limiters);
    f.locks = Object.assign({}, numbers.locks);
    f.available = Object.assign({}, numbers.available);
    f.who = Object.assign({}, numbers.who);
    f.waiters = Object.assign({}, numbers.waiters);
    f.waiting_since = Object.assign({}, numbers.waiting_since);
    f.waits = Object.assign({}, numbers.waits);
    f.pttl_ms = pttl;
    return true;
  }

  // staleText matches views.staleText: why a row shows its last read.
  function staleText(st) {
    var last = ", last read " + LW.clock(new Date(st.last_read_ms)) + " UTC";
    if (st.cluster_down === true) {
      return "Cluster down: node " + (st.node || "unknown") + " refuses every key (CLUSTERDOWN)" + last;
    }
    return "node " + (st.node || "unknown") + " down" + last;
  }

  // markStale flags the rows of objects whose node did not answer, and
  // clears the flag once they are read again.
  function markStale(stale) {
    all(document, "tr[data-lock], tr[data-limiter]").forEach(function (tr) {
      var name = tr.dataset.lock !== undefined ? tr.dataset.lock : tr.dataset.limiter;
      var st = LW.own(stale, name) ? stale[name] : null;
      var mark = tr.querySelector('[data-testid="stale"]');
      if (!st) {
        if (mark) {
          mark.remove();
        }
        return;
      }
      if (!mark) {
        var link = tr.querySelector("td a");
        if (!link) {
          return;
        }
        mark = LW.make("span", { className: "stale muted", data: { testid: "stale" } });
        link.after(" ", mark);
      }
      var text = staleText(st);
      mark.title = text;
      LW.setText(mark, "(" + text + ")");
    });
  }

  function onStats(f) {
    if (!withNumbers(f)) {
      return;
    }
    withMeta(f);
    if (f.stale !== null && typeof f.stale === "object") {
      markStale(f.stale);
    }
    frames++;
    body.dataset.frames = String(frames);
    all(document, "[data-frame-counter]").forEach(function (el) {
      LW.setText(el, String(frames));
    });
    if (typeof f.at === "number") {
      LW.serverSkew = f.at - Date.now();
    }
    // Counts from a discovery older than the page would undo it.
    if (LW.fresh(f)) {
      all(document, '[data-count="locks"]').forEach(function (el) {
        if (typeof f.lock_count === "number") {
          LW.setText(el, String(f.lock_count));
        }
      });
      all(document, '[data-count="limiters"]').forEach(function (el) {
        if (typeof f.limiter_count === "number") {
          LW.setText(el, String(f.limiter_count));
        }
      });
    }
    LW.statsHandlers.forEach(function (h) {
      h(f);
    });
  }

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
  connect();
})();
