// lockwarden live client, part 4 of 11: waiters and deadlocks. Frames count
// each lock's waiters (a delta sends 0 once the last one left) and the
// wait-for cycles; a lock's page reads its queue again from the API when
// the count changes, and the deadlock banner follows the cycle count.
(function () {
  "use strict";

  var LW = window.lockwarden;
  var all = LW.all;
  var own = LW.own;
  var make = LW.make;

  // deadlockText mirrors views.deadlockBannerText.
  function deadlockText(n) {
    if (n === 1) {
      return "1 deadlock: two or more holders each wait for the other's lock, and nothing ends it but a force-unlock.";
    }
    return n + " deadlocks: holders wait for each other's locks, and nothing ends them but a force-unlock.";
  }

  function updateBanner(f) {
    var n = typeof f.deadlocks === "number" ? f.deadlocks : 0;
    all(document, "[data-deadlock-banner]").forEach(function (b) {
      b.hidden = n === 0;
      if (n > 0) {
        LW.setField(b, "deadlock-text", deadlockText(n));
      }
    });
  }

  // waiterRow mirrors views.waitersTable's rows.
  function waiterRow(w, i) {
    var remaining = typeof w.remaining_ms === "number" ? w.remaining_ms : 0;
    var stale = remaining <= 0;
    var who = [make("code", { data: { testid: "waiter-id" } }, [String(w.id)])];
    if (w.owner && w.owner !== w.id) {
      who.push(make("div", { className: "muted" }, ["as ", make("code", { data: { testid: "waiter-owner" } }, [String(w.owner)])]));
    }
    if (w.who) {
      who.push(make("div", { className: "muted", data: { testid: "waiter-who" } }, [String(w.who)]));
    }
    var waiting = typeof w.waiting_ms === "number" ? LW.ageText(w.waiting_ms) : "–";
    return make("tr", { className: stale ? "stale" : "", data: { testid: "waiter-row", waiter: String(w.id), stale: String(stale) } }, [
      make("td", { className: "num" }, [String(i + 1)]),
      make("td", {}, who),
      make("td", { className: "num", data: { testid: "waiter-waiting" } }, [waiting]),
      make("td", { className: "num", data: { testid: "waiter-remaining" } }, [stale ? "timed out (stale)" : LW.pttlText(remaining)]),
      make("td", {}, [make("code", { data: { testid: "waiter-channel" } }, [String(w.channel || "")])])
    ]);
  }

  // reloadWaiters reads name's queue and refills el's waiters table.
  function reloadWaiters(el, name) {
    LW.fetchLock("waiters", name, function (l) {
      var ws = l && Array.isArray(l.waiters) ? l.waiters : [];
      all(el, '[data-field="waiter-rows"]').forEach(function (tbody) {
        while (tbody.firstChild) {
          tbody.removeChild(tbody.firstChild);
        }
        ws.forEach(function (w, i) {
          tbody.appendChild(waiterRow(w, i));
        });
      });
      all(el, '[data-field="waiters-empty"]').forEach(function (p) {
        p.hidden = ws.length > 0;
      });
      if (l) {
        LW.setField(el, "waiters-total", String(LW.num(l.waiters_total)));
        el.dataset.waitersShown = String(LW.num(l.waiters_total));
      }
    });
  }

  function updateWaiters(f) {
    var counts = f.waiters !== null && typeof f.waiters === "object" ? f.waiters : {};
    all(document, "[data-lock]").forEach(function (el) {
      var name = el.dataset.lock;
      if (!own(f.pttl_ms, name) && !own(f.holders, name)) {
        return;
      }
      var n = own(counts, name) ? LW.num(counts[name]) : 0;
      LW.setField(el, "waiters", String(n));
      if (all(el, '[data-field="waiter-rows"]').length === 0) {
        return;
      }
      if (el.dataset.waitersShown === undefined) {
        el.dataset.waitersShown = String(all(el, '[data-testid="waiter-row"]').length);
      }
      if (el.dataset.waitersShown !== String(n)) {
        el.dataset.waitersShown = String(n);
        reloadWaiters(el, name);
      }
    });
  }

  LW.statsHandlers.push(updateBanner, updateWaiters);
})();
