// lockwarden live client, part 4 of 5: the event lists (events page,
// overview, wall), newest first.
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
    var link = make("a", { className: "event-name", data: { testid: "event-name" } }, [String(f.name)]);
    link.href = LW.lockURL(String(f.name));
    return make("li", { className: "event event-" + f.type, data: { testid: "event-row", eventType: f.type }, spaced: true }, [
      LW.timeEl(LW.toDate(f.at), "event-time"),
      make("span", { className: "event-type", data: { testid: "event-type" } }, [f.type]),
      link,
      make("span", { className: "event-detail", data: { testid: "event-detail" } }, [eventDetail(f)])
    ]);
  }

  function onEvent(f) {
    if (typeof f.name !== "string") {
      return;
    }
    LW.all(document, "[data-events]").forEach(function (list) {
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

  LW.eventHandlers.push(onEvent);
})();
