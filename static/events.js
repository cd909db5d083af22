// lockwarden live client, part 6 of 11: the event lists (events page,
// overview, wall), newest first, and the firing alerts (overview, wall).
(function () {
  "use strict";

  var LW = window.lockwarden;
  var make = LW.make;

  // eventDetail mirrors views.eventDetail.
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
    var link = make("a", { className: "event-name", attrs: { title: String(f.name) }, data: { testid: "event-name" } }, [String(f.name)]);
    link.href = LW.lockURL(String(f.name));
    return make("li", { className: "event event-" + f.type, data: { testid: "event-row", eventType: f.type }, spaced: true }, [
      LW.timeEl(LW.toDate(f.at), "event-time"),
      make("span", { className: "event-type", data: { testid: "event-type" } }, [f.type]),
      link,
      make("span", { className: "event-detail", attrs: { title: eventDetail(f) }, data: { testid: "event-detail" } }, [eventDetail(f)])
    ]);
  }

  function onEvent(f) {
    if (typeof f.name !== "string") {
      return;
    }
    LW.all(document, "[data-events]").forEach(function (list) {
      // The events page's filter (views.eventList): a part of the name,
      // any case, and a type.
      var q = (list.dataset.q || "").toLowerCase();
      if ((q !== "" && String(f.name).toLowerCase().indexOf(q) < 0) || (list.dataset.type && list.dataset.type !== f.type)) {
        return;
      }
      LW.all(list, "[data-empty]").forEach(function (e) {
        list.removeChild(e);
      });
      list.insertBefore(newEventItem(f), list.firstChild);
      var cap = Number(list.dataset.cap) || 200;
      while (list.children.length > cap) {
        list.removeChild(list.lastElementChild);
      }
    });
  }

  // alertClass mirrors views.alertClass.
  function alertClass(a) {
    return a.severity === "critical" ? "banner banner-error alert alert-critical" : "banner warn alert alert-warning";
  }

  // alertLink mirrors views.alertURL: the rule and message link to what
  // the alert is about.
  function alertLink(a) {
    var rule = String(a.rule);
    var name = typeof a.name === "string" ? a.name : "";
    var href = "/status";
    if (rule === "lock-deadlock") {
      href = "/deadlocks";
    } else if (rule.indexOf("lock-") === 0 && name !== "") {
      href = LW.lockURL(name);
    } else if (rule.indexOf("limiter-") === 0 && name !== "") {
      href = LW.limiterURL(name);
    } else if (rule === "auth-failures") {
      href = "/audit";
    }
    var link = make("a", { className: "alert-link", data: { testid: "alert-link" }, spaced: true }, [
      make("strong", { className: "alert-rule" }, [rule]),
      make("span", { className: "alert-message" }, [String(a.message || "")])
    ]);
    link.href = href;
    return link;
  }

  // newAlert mirrors one alert of views.Alerts.
  function newAlert(a) {
    var since = LW.toDate(a.since);
    var el = make("div", {
      className: alertClass(a),
      data: { testid: "alert", rule: String(a.rule), name: String(a.name || ""), severity: String(a.severity) },
      attrs: { role: "alert" },
      spaced: true
    }, [
      alertLink(a),
      make("time", { className: "alert-since", attrs: { datetime: since.toISOString().slice(0, 19) + "Z" } },
        ["· since " + since.toISOString().slice(11, 19) + " UTC"])
    ]);
    return el;
  }

  // onAlerts redraws every alerts box with the firing set, in the order
  // the server sent it (critical first, then oldest), as a reload would.
  function onAlerts(alerts) {
    LW.all(document, "[data-alerts-box]").forEach(function (box) {
      var children = [];
      if (alerts.length > 0) {
        // The wall (quiet) lists the first data-limit and counts the rest.
        var limit = box.dataset.quiet === "true" ? Number(box.dataset.limit) || alerts.length : alerts.length;
        var items = alerts.slice(0, limit).map(newAlert);
        if (alerts.length > limit) {
          items.push(make("p", { className: "alerts-more", data: { testid: "alerts-more" } },
            ["and " + (alerts.length - limit) + (alerts.length - limit === 1 ? " more alert" : " more alerts") + " firing"]));
        }
        children.push(make("section", { className: "alerts", data: { testid: "alerts" }, attrs: { "aria-label": "Alerts" } }, items));
      } else if (box.dataset.quiet !== "true") {
        children.push(make("p", { className: "empty", data: { testid: "alerts-empty" } }, ["No alerts firing."]));
      }
      box.replaceChildren.apply(box, children);
    });
  }

  LW.eventHandlers.push(onEvent);
  LW.alertHandlers.push(onAlerts);
})();
