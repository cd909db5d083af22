// lockwarden live client, part 5 of 11: wait statistics. Frames carry each
// contended lock's wait summary over the last 10 s (live.js keeps the
// whole map across deltas); the /locks rows and the wall show it, the wall
// keeps its locks in the order its data-sort names, and a lock's page
// reads its three windows again from the API when the summary changes.
(function () {
  "use strict";

  var LW = window.lockwarden;
  var all = LW.all;
  var own = LW.own;
  var num = LW.num;
  var make = LW.make;

  // waitMSText mirrors views.waitMSText.
  function waitMSText(w, ms) {
    if (!(num(w.contended) > 0)) {
      return "–";
    }
    return LW.durText(ms);
  }

  // contendedText mirrors views.contendedText, waitedText views.waitedText.
  function contendedText(w) {
    var a = num(w.acquired);
    var c = num(w.contended);
    return a <= 0 ? String(c) : c + " (" + Math.floor((100 * c) / a) + "%)";
  }

  function waitedText(w) {
    return num(w.contended) > 0 ? contendedText(w) : "–";
  }

  // summaryOf is lock name's 10 s summary in f, {} when it had no
  // contended acquisition.
  function summaryOf(f, name) {
    var w = f.waits !== null && typeof f.waits === "object" && own(f.waits, name) ? f.waits[name] : null;
    return w !== null && typeof w === "object" ? w : {};
  }

  // setWaitCells fills the cells of views.lockWaitCells.
  function setWaitCells(el, w) {
    LW.setField(el, "wait10-contended", waitedText(w));
    LW.setField(el, "wait10-p99", waitMSText(w, num(w.p99_ms)));
  }

  // fillWindow writes one window of the API's wait_windows into the lock
  // page's row for it (views.lockWaits).
  function fillWindow(table, w) {
    all(table, 'tr[data-window-s="' + num(w.window_s) + '"]').forEach(function (tr) {
      LW.setField(tr, "wait-acquired", String(num(w.acquired)));
      LW.setField(tr, "wait-contended", contendedText(w));
      LW.setField(tr, "wait-p50", waitMSText(w, num(w.p50_ms)));
      LW.setField(tr, "wait-p99", waitMSText(w, num(w.p99_ms)));
      LW.setField(tr, "wait-max", waitMSText(w, num(w.max_ms)));
    });
  }

  // reloadWindows reads name's wait windows and refills its Waits table.
  function reloadWindows(table, name) {
    LW.fetchLock("waits", name, function (l) {
      if (l && Array.isArray(l.wait_windows)) {
        l.wait_windows.forEach(function (w) {
          if (w !== null && typeof w === "object") {
            fillWindow(table, w);
          }
        });
        table.dataset.reloads = String(num(Number(table.dataset.reloads)) + 1);
      }
    });
  }

  function updateWaits(f) {
    all(document, "[data-lock]").forEach(function (el) {
      var name = el.dataset.lock;
      if (!own(f.pttl_ms, name) && !own(f.holders, name)) {
        return;
      }
      var w = summaryOf(f, name);
      setWaitCells(el, w);
      setLongestWait(el, f, name);
      all(el, "table[data-wait-windows]").forEach(function (table) {
        // The 10 s row at once from the frame; all three windows from the
        // API whenever the summary changed (also when contention left).
        var key = JSON.stringify(w);
        if (num(w.contended) > 0) {
          fillWindow(table, Object.assign({ window_s: 10 }, w));
        }
        if (table.dataset.summary !== key) {
          table.dataset.summary = key;
          reloadWindows(table, name);
        }
      });
    });
  }

  function byName(a, b) {
    return a < b ? -1 : a > b ? 1 : 0;
  }

  // sinceOf is when lock name's longest current waiter queued, 0 when
  // nobody waits (or none says since when).
  function sinceOf(f, name) {
    var s = f.waiting_since !== null && typeof f.waiting_since === "object" && own(f.waiting_since, name) ? num(f.waiting_since[name]) : 0;
    return s > 0 ? s : 0;
  }

  // tierOf places a lock in the contention order: 0 in a deadlock, 1 with
  // a current waiter, 2 the rest (web/listing's contentionKey).
  function tierOf(f, name, dead) {
    return dead.has(name) ? 0 : sinceOf(f, name) > 0 ? 1 : 2;
  }

  // byContention mirrors web/listing's contention order: deadlocked locks
  // first, then those with a current waiter, the longest waiting first;
  // then the most contended acquisitions over 10 s, the highest p99 wait,
  // and by name.
  function byContention(f) {
    var dead = new Set(Array.isArray(f.deadlocked) ? f.deadlocked : []);
    return function (a, b) {
      var ta = tierOf(f, a, dead);
      var tb = tierOf(f, b, dead);
      if (ta !== tb) {
        return ta - tb;
      }
      if (ta < 2 && sinceOf(f, a) !== sinceOf(f, b)) {
        return (sinceOf(f, a) || Infinity) - (sinceOf(f, b) || Infinity);
      }
      var wa = summaryOf(f, a);
      var wb = summaryOf(f, b);
      return num(wb.contended) - num(wa.contended) || num(wb.p99_ms) - num(wa.p99_ms) || byName(a, b);
    };
  }

  // setLongestWait writes how long lock name's longest current waiter has
  // waited at the frame's time (views.longestWaitText).
  function setLongestWait(el, f, name) {
    var since = sinceOf(f, name);
    all(el, '[data-field="longest-wait"]').forEach(function (c) {
      c.dataset.waitingSince = String(since);
      var ms = since > 0 && typeof f.at === "number" ? Math.max(0, f.at - since) : -1;
      LW.setText(c, ms < 0 ? "–" : LW.ageText(ms));
      c.classList.toggle("bad", ms >= 60000);
    });
  }

  // firstOf is the first k of names in cmp's order, without sorting them
  // all: the wall shows ten of what may be thousands of locks, five
  // frames a second.
  function firstOf(names, cmp, k) {
    var out = [];
    names.forEach(function (n) {
      if (out.length === k && cmp(n, out[k - 1]) >= 0) {
        return;
      }
      var i = out.length;
      while (i > 0 && cmp(n, out[i - 1]) < 0) {
        i--;
      }
      out.splice(i, 0, n);
      if (out.length > k) {
        out.pop();
      }
    });
    return out;
  }

  // newWallRow mirrors views.wallLockRow.
  function newWallRow(name) {
    return make("tr", { data: { testid: "wall-lock", lock: name } }, [
      make("td", { className: "name", attrs: { title: name }, data: { testid: "wall-lock-name" } }, [name]),
      make("td", { className: "num", data: { field: "waiters", testid: "lock-waiters" } }, ["0"]),
      make("td", { className: "num", data: { field: "wait10-contended", testid: "lock-wait-contended" } }, ["–"]),
      make("td", { className: "num", data: { field: "wait10-p99", testid: "lock-wait-p99" } }, ["–"])
    ]);
  }

  // updateWall keeps the wall's locks the first data-limit of the frame's
  // locks in the order of data-sort, moving rows only where it changed. A
  // frame from a discovery older than the page keeps the page's rows.
  function updateWall(f) {
    if (f.pttl_ms === null || typeof f.pttl_ms !== "object") {
      return;
    }
    all(document, "tbody[data-wall-locks]").forEach(function (tbody) {
      var limit = Number(tbody.dataset.limit) || 10;
      var rows = new Map();
      Array.prototype.slice.call(tbody.children).forEach(function (tr) {
        rows.set(tr.dataset.lock, tr);
      });
      var names = Object.keys(f.pttl_ms);
      if (!LW.fresh(f)) {
        rows.forEach(function (tr, name) {
          if (!own(f.pttl_ms, name)) {
            names.push(name);
          }
        });
      }
      var shown = firstOf(names, tbody.dataset.sort === "contention" ? byContention(f) : byName, limit);
      var counts = f.waiters !== null && typeof f.waiters === "object" ? f.waiters : {};
      shown.forEach(function (name, i) {
        var tr = rows.get(name) || newWallRow(name);
        rows.delete(name);
        setWaitCells(tr, summaryOf(f, name));
        LW.setField(tr, "waiters", String(own(counts, name) ? num(counts[name]) : 0));
        if (tbody.children[i] !== tr) {
          tbody.insertBefore(tr, tbody.children[i] || null);
        }
      });
      rows.forEach(function (tr) {
        tbody.removeChild(tr);
      });
      all(document, "[data-wall-locks-empty]").forEach(function (p) {
        p.hidden = tbody.children.length > 0;
      });
    });
  }

  LW.statsHandlers.push(updateWaits, updateWall);
})();
