// lockwarden live client, part 7 of 11: lists the frames do not carry
// whole. A list's footer ("N shown of M") follows the rows the other parts
// add and drop. Pages whose rows come from what frames do not carry (the
// clients' heartbeats and holdings from the registry, the families'
// readings) are read again while the badge says live: the page is fetched
// and each [data-live-list] part replaces the one shown, as a reload would,
// without losing the reader's place or a half-typed form. The parts are
// the server's own rendering of the same page (templ escaped every value),
// parsed inert by DOMParser: no script in them runs.
(function () {
  "use strict";

  var LW = window.lockwarden;
  var all = LW.all;
  var own = LW.own;
  // REREAD_MS spaces the re-reads: a registry beat is a few seconds apart,
  // and each read is the page rendered from the console's latest snapshot
  // (no Redis read).
  var REREAD_MS = 2000;

  // listNames are the names of the frame's objects of a list, with a
  // function giving each one's kind.
  function listNames(f, list) {
    if (list === "limiters" && f.limiter_info !== null && typeof f.limiter_info === "object") {
      return { names: Object.keys(f.limiter_info), kind: function (n) { return String(f.limiter_info[n].kind); } };
    }
    if (list === "locks" && f.pttl_ms !== null && typeof f.pttl_ms === "object") {
      var seen = {};
      Object.keys(f.pttl_ms).concat(Object.keys(f.holders || {})).forEach(function (n) {
        seen[n] = true;
      });
      return { names: Object.keys(seen), kind: function (n) { return own(f.kinds, n) ? String(f.kinds[n]) : ""; } };
    }
    return null;
  }

  // updatePager keeps "N shown of M" true: N is the table's rows, M the
  // frame's objects the page's filter (name pattern, kind) lets through,
  // as the server counted them; a frame from a discovery older than the
  // page keeps the page's counts.
  function updatePager(f) {
    if (!LW.fresh(f)) {
      return;
    }
    all(document, "[data-pager]").forEach(function (nav) {
      // A search (?q=) looks at who holds and waits, which the frames do
      // not say of every object: its page keeps the server's counts.
      if (nav.dataset.q) {
        return;
      }
      var list = listNames(f, nav.dataset.pager);
      var tbody = document.querySelector(nav.dataset.pager === "locks" ? "tbody[data-locks]" : "tbody[data-limiters]");
      if (list === null || tbody === null) {
        return;
      }
      var shown = all(tbody, "tr").filter(function (tr) {
        return tr.dataset.lock !== undefined || tr.dataset.limiter !== undefined;
      }).length;
      var match = nav.dataset.match || "";
      var kind = nav.dataset.kind || "";
      var total = list.names.filter(function (n) {
        return LW.globMatch(match, n) && (kind === "" || list.kind(n) === kind);
      }).length;
      LW.setField(nav, "pager-shown", String(shown));
      LW.setField(nav, "pager-total", String(Math.max(total, shown)));
    });
  }

  // busy is whether someone is using a form in el: focus inside it, or
  // text typed into one of its fields.
  function busy(el) {
    var a = document.activeElement;
    if (a && a !== document.body && el.contains(a)) {
      return true;
    }
    return all(el, "input[type=text], textarea").some(function (i) {
      return i.value !== "";
    });
  }

  // swap puts fresh in place of old; where old is busy, its keyed children
  // (data-live-key) that are busy stay, and the rest is swapped around them.
  function swap(old, fresh) {
    if (!busy(old)) {
      old.replaceWith(document.importNode(fresh, true));
      return;
    }
    var keep = new Map();
    Array.prototype.slice.call(old.children).forEach(function (c) {
      if (c.dataset.liveKey !== undefined && busy(c)) {
        keep.set(c.dataset.liveKey, c);
      }
    });
    if (keep.size === 0) {
      return; // the form is not in a keyed part: leave the list as it is
    }
    old.replaceChildren.apply(old, Array.prototype.slice.call(fresh.children).map(function (c) {
      return keep.get(c.dataset.liveKey) || document.importNode(c, true);
    }));
  }

  var rereads = 0;

  function reread() {
    var lists = all(document, "[data-live-list]");
    if (lists.length === 0) {
      return;
    }
    if (document.body.dataset.ws !== "open" || document.hidden) {
      setTimeout(reread, REREAD_MS);
      return;
    }
    var src = lists[0].dataset.liveSrc || location.pathname + location.search;
    fetch(src, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) {
        return r.ok ? r.text() : null;
      })
      .then(function (html) {
        if (html === null) {
          return;
        }
        var doc = new DOMParser().parseFromString(html, "text/html");
        lists.forEach(function (old) {
          all(doc, "[data-live-list]").forEach(function (fresh) {
            if (fresh.dataset.liveList === old.dataset.liveList) {
              swap(old, fresh);
            }
          });
        });
        rereads++;
        document.body.dataset.rereads = String(rereads);
      })
      .catch(function () {})
      .then(function () {
        setTimeout(reread, REREAD_MS);
      });
  }

  setTimeout(reread, REREAD_MS);
  LW.statsHandlers.push(updatePager);
})();
