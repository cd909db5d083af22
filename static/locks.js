// lockwarden live client, part 3 of 11: locks (the table, a lock's page,
// lease countdowns and first-seen ages between frames).
(function () {
  "use strict";

  var LW = window.lockwarden;
  var all = LW.all;
  var num = LW.num;
  var own = LW.own;
  var make = LW.make;
  var setField = LW.setField;
  // pttlBase remembers when each countdown element last got a fresh value.
  var pttlBase = new WeakMap();
  // last is the newest frame's holders and who, so hold times age
  // between frames.
  var last = null;

  function lockPresent(f, name) {
    return own(f.pttl_ms, name) || own(f.holders, name);
  }

  // updateLockRows keeps the locks table equal to the frame's lock set,
  // filtered like the server filtered the page. A frame from a discovery
  // older than the page may not know a lock the page listed yet; such a
  // row stays until a fresh frame says the lock is gone.
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
        if (!lockPresent(f, name) && LW.fresh(f)) {
          tbody.removeChild(tr);
        } else {
          rows.set(name, tr);
        }
      });
      // Rows are added only where the page is the whole list by name;
      // on any other page live updates touch just the rows it has.
      var adding = tbody.dataset.partial !== "true";
      Object.keys(f.pttl_ms).sort().forEach(function (name) {
        if (!adding || rows.has(name) || !LW.globMatch(pattern, name)) {
          return;
        }
        var tr = newLockRow(f, name);
        LW.insertSorted(tbody, tr, name, function (r) {
          return r.dataset.lock;
        });
        rows.set(name, tr);
      });
      all(document, "[data-locks-empty]").forEach(function (p) {
        p.hidden = rows.size > 0;
      });
    });
  }

  // newLockRow mirrors views.lockRow, with the kind and first-seen time the
  // frame carries.
  function newLockRow(f, name) {
    var kind = own(f.kinds, name) ? String(f.kinds[name]) : "–";
    var seen = own(f.first_seen, name) && typeof f.first_seen[name] === "number" ? f.first_seen[name] :
      (typeof f.at === "number" ? f.at : Date.now() + LW.serverSkew);
    var link = make("a", { data: { testid: "lock-link" } }, [name]);
    link.href = LW.lockURL(name);
    return make("tr", { data: { testid: "lock-row", lock: name } }, [
      make("td", { className: "stack-head" }, [link]),
      make("td", { className: "kind", data: { field: "kind", label: "Kind" } }, [kind]),
      make("td", { data: { label: "Held by" } }, [make("span", { className: "holder-ids", data: { field: "holders", testid: "lock-holders" } })]),
      make("td", { className: "num", data: { field: "waiters", testid: "lock-waiters", label: "Waiters" } }, ["0"]),
      make("td", { className: "num", data: { field: "longest-wait", testid: "lock-longest-wait", waitingSince: "0", label: "Longest wait" } }, ["–"]),
      make("td", { className: "num", data: { field: "wait10-contended", testid: "lock-wait-contended", label: "Waited (10 s)" } }, ["–"]),
      make("td", { className: "num", data: { field: "wait10-p99", testid: "lock-wait-p99", label: "p99 wait" } }, ["–"]),
      make("td", { className: "num", data: { field: "pttl", testid: "lock-pttl", pttlMs: "-1", label: "Lease left" } }),
      make("td", { data: { field: "age", firstSeen: String(seen), label: "First seen" }, spaced: true }, [
        LW.timeEl(new Date(seen)),
        make("span", { className: "muted", data: { field: "age-text" } }, [LW.ageText(Date.now() + LW.serverSkew - seen)])
      ])
    ]);
  }

  function updateLocks(f) {
    var now = performance.now();
    all(document, "[data-lock]").forEach(function (el) {
      var name = el.dataset.lock;
      var present = lockPresent(f, name);
      all(el, '[data-field="gone"]').forEach(function (g) {
        g.hidden = present || !LW.fresh(f);
      });
      if (!present) {
        return;
      }
      if (own(f.kinds, name)) {
        setField(el, "kind", String(f.kinds[name]));
      }
      if (own(f.pttl_ms, name)) {
        all(el, '[data-field="pttl"]').forEach(function (p) {
          p.dataset.pttlMs = String(num(f.pttl_ms[name]));
          pttlBase.set(p, now);
        });
      }
      if (own(f.holders, name)) {
        var hs = Array.isArray(f.holders[name]) ? f.holders[name] : [];
        setField(el, "holders", LW.holdersText(hs));
        renderWho(el, name, hs, f.who, Date.now() + LW.serverSkew);
        all(el, "tr[data-holder]").forEach(function (tr) {
          var h = hs.find(function (x) {
            return x.id === tr.dataset.holder;
          });
          if (h) {
            setField(tr, "holder-count", num(h.count));
          } else if (all(tr.parentNode, "tr[data-holder]").length > 1 || hs.length === 0) {
            // A past holder leaves the table (the timeline has it): a
            // row without a hold must not offer a force-unlock. The last
            // row stays as the template of the next holder's, hidden.
            if (all(tr.parentNode, "tr[data-holder]").length > 1) {
              tr.parentNode.removeChild(tr);
            } else {
              tr.hidden = true;
            }
          }
        });
        all(el, '[data-field="holders-empty"]').forEach(function (p) {
          p.hidden = hs.length > 0;
        });
      }
      if (own(f.locks, name)) {
        var c = f.locks[name];
        setField(el, "acquired", num(c.acquired));
        setField(el, "rejected", num(c.rejected));
        setField(el, "errors", num(c.errors));
      }
    });
    last = { holders: f.holders, who: f.who };
    tickCountdowns();
  }

  // whoOf is the who entry of holder id of lock name, or null.
  function whoOf(who, name, id) {
    var w = own(who, name) ? who[name] : null;
    return own(w, id) && w[id] !== null && typeof w[id] === "object" && typeof w[id].who === "string" ? w[id] : null;
  }

  // renderWho writes who holds lock name and since when: under the holder
  // ids of a list row (views.holdersWhoText), and in each holder row of a
  // lock's page (views.holderWhoText), adding a row for a new holder.
  function renderWho(el, name, hs, who, now) {
    var parts = [];
    hs.forEach(function (h) {
      var e = whoOf(who, name, h.id);
      if (e) {
        parts.push(LW.whoText(e, now));
      }
    });
    all(el, '[data-testid="lock-holders"]').forEach(function (span) {
      var cell = span.parentNode;
      var div = null;
      Array.prototype.forEach.call(cell.children, function (c) {
        if (c.dataset.testid === "lock-holders-who") {
          div = c;
        }
      });
      if (div === null && parts.length > 0) {
        // Names before ids, as views.lockRow.
        div = make("div", { className: "holder-who", data: { testid: "lock-holders-who" } });
        cell.insertBefore(div, span);
      }
      if (div !== null) {
        LW.setText(div, parts.join("; "));
        div.hidden = parts.length === 0;
      }
    });
    all(el, '[data-field="holder-rows"]').forEach(function (tbody) {
      var rows = all(tbody, "tr[data-holder]");
      hs.forEach(function (h) {
        var e = whoOf(who, name, h.id);
        var tr = rows.find(function (r) {
          return r.dataset.holder === h.id;
        });
        if (!tr && rows.length > 0) {
          tr = newHolderRow(rows[0], h);
          tbody.appendChild(tr);
          rows.push(tr);
        }
        if (!tr || !e) {
          return;
        }
        all(tr, '[data-testid="holder-who"]').forEach(function (d) {
          LW.setText(d, LW.whoText(e, now));
        });
      });
    });
  }

  // newHolderRow is a row for holder h on a lock's page, shaped like the
  // rows the server rendered (proto is one of them): id, who, count and
  // the force-unlock form for this holder.
  function newHolderRow(proto, h) {
    var tr = proto.cloneNode(true);
    tr.dataset.holder = h.id;
    tr.classList.remove("stale");
    tr.hidden = false;
    all(tr, '[data-testid="holder-id"]').forEach(function (c) {
      c.textContent = h.id;
    });
    all(tr, 'input[name="holder"]').forEach(function (i) {
      i.value = h.id;
    });
    all(tr, '[data-testid="holder-mode"]').forEach(function (c) {
      c.textContent = typeof h.mode === "string" ? h.mode : "";
    });
    all(tr, '[data-testid="holder-lease"]').forEach(function (c) {
      c.textContent = "–";
    });
    var idCell = all(tr, '[data-testid="holder-id"]')[0];
    if (idCell && all(tr, '[data-testid="holder-who"]').length === 0) {
      idCell.parentNode.insertBefore(make("div", { className: "holder-who", data: { testid: "holder-who" } }), idCell);
    }
    return tr;
  }

  function tickWho() {
    if (last === null) {
      return;
    }
    var now = Date.now() + LW.serverSkew;
    all(document, "[data-lock]").forEach(function (el) {
      var name = el.dataset.lock;
      if (own(last.holders, name) && Array.isArray(last.holders[name])) {
        renderWho(el, name, last.holders[name], last.who, now);
      }
    });
  }

  function tickCountdowns() {
    var now = performance.now();
    all(document, '[data-field="pttl"]').forEach(function (el) {
      var ms = Number(el.dataset.pttlMs);
      if (!isFinite(ms)) {
        return;
      }
      if (ms < 0) {
        LW.setText(el, LW.pttlText(-1));
        return;
      }
      var base = pttlBase.has(el) ? pttlBase.get(el) : LW.loadedAt;
      LW.setText(el, LW.pttlText(Math.max(0, ms - (now - base))));
    });
  }

  function tickAges() {
    var now = Date.now() + LW.serverSkew;
    all(document, "[data-first-seen]").forEach(function (el) {
      var seen = Number(el.dataset.firstSeen);
      if (!isFinite(seen)) {
        return;
      }
      all(el, '[data-field="age-text"]').forEach(function (t) {
        LW.setText(t, LW.ageText(now - seen));
      });
    });
  }

  LW.statsHandlers.push(updateLockRows, updateLocks);
  setInterval(tickCountdowns, 100);
  setInterval(tickAges, 1000);
  setInterval(tickWho, 1000);
})();
