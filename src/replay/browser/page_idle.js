// Installed by the supervisor's replay client of Playwright MCP (`--init-script`) in every page
// before the page's own scripts (see docs/replay.md, "Browser steps"). It only counts the work a
// page has pending, so that a replayed action may be compared before Playwright MCP's settle
// time is over when nothing in the page can change it before then. It changes nothing the page
// does: every wrapper calls the original at once and returns what it returns.
(() => {
  if (window.__bugattiIdle) return;
  const timers = new Map(); // id -> due (performance.now() ms)
  const intervals = new Map(); // id -> period ms
  let frames = 0; // requestAnimationFrame / requestIdleCallback callbacks pending
  let inflight = 0; // fetch, body reads, XHR not yet done
  let mutations = 0;
  const open = new Set(); // WebSocket, EventSource, Worker: work that can arrive any time
  const now = () => performance.now();
  const wrapTimer = (name, clearName, repeating) => {
    const set = window[name];
    const clear = window[clearName];
    if (typeof set !== "function") return;
    window[name] = function (handler, delay, ...rest) {
      const ms = Math.max(0, Number(delay) || 0);
      let id;
      const run = typeof handler === "function"
        ? function (...args) { if (!repeating) timers.delete(id); return handler.apply(this, args); }
        : handler;
      id = set.call(this, run, delay, ...rest);
      if (repeating) intervals.set(id, ms); else timers.set(id, now() + ms);
      return id;
    };
    window[clearName] = function (id) {
      timers.delete(id);
      intervals.delete(id);
      return clear.call(this, id);
    };
  };
  wrapTimer("setTimeout", "clearTimeout", false);
  wrapTimer("setInterval", "clearInterval", true);
  const wrapFrame = (name, cancelName) => {
    const request = window[name];
    const cancel = window[cancelName];
    if (typeof request !== "function") return;
    const pending = new Set();
    window[name] = function (callback, ...rest) {
      let id;
      const run = function (...args) {
        if (pending.delete(id)) frames -= 1;
        return callback.apply(this, args);
      };
      id = request.call(this, run, ...rest);
      pending.add(id);
      frames += 1;
      return id;
    };
    window[cancelName] = function (id) {
      if (pending.delete(id)) frames -= 1;
      return cancel.call(this, id);
    };
  };
  wrapFrame("requestAnimationFrame", "cancelAnimationFrame");
  wrapFrame("requestIdleCallback", "cancelIdleCallback");
  const track = (promise) => {
    inflight += 1;
    const done = () => { inflight -= 1; };
    promise.then(done, done);
    return promise;
  };
  if (typeof window.fetch === "function") {
    const fetch = window.fetch;
    window.fetch = function (...args) { return track(fetch.apply(this, args)); };
  }
  if (window.Response) {
    for (const method of ["json", "text", "arrayBuffer", "blob", "formData"]) {
      const read = Response.prototype[method];
      if (typeof read !== "function") continue;
      Response.prototype[method] = function (...args) { return track(read.apply(this, args)); };
    }
  }
  if (window.XMLHttpRequest) {
    const send = XMLHttpRequest.prototype.send;
    XMLHttpRequest.prototype.send = function (...args) {
      inflight += 1;
      this.addEventListener("loadend", () => { inflight -= 1; }, { once: true });
      return send.apply(this, args);
    };
  }
  for (const name of ["WebSocket", "EventSource", "Worker", "SharedWorker"]) {
    const Original = window[name];
    if (typeof Original !== "function") continue;
    window[name] = new Proxy(Original, {
      construct(target, args, newTarget) {
        const made = Reflect.construct(target, args, newTarget);
        open.add(made);
        return made;
      },
    });
  }
  const watch = () => {
    new MutationObserver((records) => { mutations += records.length; })
      .observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  };
  if (document.documentElement) watch(); else document.addEventListener("DOMContentLoaded", watch);
  // Whether nothing in this page can change it before `horizon` ms from now: no timer due by
  // then, no repeating timer, no frame callback, request or body read pending, no socket or
  // worker open, no animation running, no frame of another document, every image loaded.
  Object.defineProperty(window, "__bugattiIdle", {
    value: (horizon) => {
      const until = now() + Number(horizon);
      let due = false;
      for (const at of timers.values()) if (at <= until) due = true;
      const live = [...open].some((o) => o.readyState === undefined || o.readyState < 2);
      const busy = due || intervals.size > 0 || frames > 0 || inflight > 0 || live ||
        document.readyState !== "complete" ||
        (document.getAnimations ? document.getAnimations().some((a) => a.playState === "running") : true) ||
        document.querySelector("iframe, frame, object, embed") !== null ||
        [...document.images].some((i) => !i.complete);
      return { idle: !busy, mutations };
    },
  });
})();
