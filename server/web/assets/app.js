// huitian's web page: the cluster's cards, the queue, each job's backfill
// contract and the backfill measures, read from the service's own Connect
// JSON API (POST /huitian.v1.PlannerService/<Method>), so that the page sees
// exactly what every other client sees and needs the same token.
//
// No library and no build step: the page draws four views with the DOM and
// SVG (see server/web/README.md). Data from the API only ever reaches the
// page as text nodes and attribute values, never as markup.
"use strict";

(() => {
  const API = "/huitian.v1.PlannerService/";
  const POLL_MS = 2000;
  const HISTORY_POINTS = 360;
  const TOKEN_KEY = "huitian.token";
  const CLUSTER_KEY = "huitian.cluster";

  // ---------------------------------------------------------------- API

  class APIError extends Error {
    constructor(code, message) {
      super(message);
      this.code = code;
    }
  }

  // call makes one unary Connect call with JSON, with the session's token.
  async function call(method, body) {
    const headers = { "Content-Type": "application/json" };
    const tok = sessionStorage.getItem(TOKEN_KEY);
    if (tok) headers.Authorization = "Bearer " + tok;
    let resp;
    try {
      resp = await fetch(API + method, { method: "POST", headers, body: JSON.stringify(body) });
    } catch (e) {
      throw new APIError("unavailable", "the service does not answer (" + e.message + ")");
    }
    const text = await resp.text();
    let msg = {};
    if (text) {
      try {
        msg = JSON.parse(text);
      } catch (e) {
        throw new APIError("unknown", "HTTP " + resp.status + ": not a Connect answer");
      }
    }
    if (!resp.ok) throw new APIError(msg.code || "unknown", msg.message || "HTTP " + resp.status);
    return msg;
  }

  // listAll pages through ListJobs.
  async function listAll(cluster) {
    const jobs = [];
    let pageToken = "";
    let planTime;
    for (let i = 0; i < 100; i++) {
      const r = await call("ListJobs", { clusterId: cluster, pageSize: 1000, pageToken });
      jobs.push(...(r.jobs || []));
      planTime = planTime || r.planTime;
      pageToken = r.nextPageToken || "";
      if (!pageToken) break;
    }
    return { jobs, planTime };
  }

  // ---------------------------------------------------------- formatting

  // seconds reads a protobuf JSON Duration ("3900.5s").
  function seconds(d) {
    if (d === undefined || d === null) return undefined;
    return parseFloat(String(d).replace(/s$/, ""));
  }

  function ms(ts) {
    return ts ? Date.parse(ts) : undefined;
  }

  // fmtDur writes a duration in words: "45 s", "12 min", "2 h 10 min".
  function fmtDur(s) {
    if (s === undefined || isNaN(s)) return "–";
    const neg = s < 0 ? "−" : "";
    s = Math.abs(s);
    if (s < 60) return neg + Math.round(s) + " s";
    const m = Math.round(s / 60);
    if (m < 60) return neg + m + " min";
    return neg + Math.floor(m / 60) + " h " + (m % 60) + " min";
  }

  function fmtPct(p) {
    return ((p || 0) * 100).toFixed(1) + " %";
  }

  function pad(n) {
    return String(n).padStart(2, "0");
  }

  // fmtTime writes a timestamp in UTC, the clock of the plans (the demo's
  // clock is simulated, so the browser's clock means nothing here).
  function fmtTime(ts) {
    if (!ts) return "–";
    const d = new Date(ts);
    return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()) + " " +
      pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + " UTC";
  }

  // fmtAt writes a time relative to the plan's now: "in 2 h 10 min (… UTC)".
  function fmtAt(ts, now) {
    if (!ts) return "–";
    if (!now) return fmtTime(ts);
    const s = (ms(ts) - ms(now)) / 1000;
    const rel = Math.abs(s) < 1 ? "now" : s > 0 ? "in " + fmtDur(s) : fmtDur(-s) + " ago";
    return rel + " (" + fmtTime(ts) + ")";
  }

  // set says whether an enum holds a value: the service writes fields at
  // their default too ("…_UNSPECIFIED", as proto3 JSON with defaults).
  function set(enumName) {
    return !!enumName && !/_UNSPECIFIED$/.test(enumName);
  }

  function words(enumName, prefix) {
    if (!set(enumName)) return "–";
    return enumName.replace(prefix, "").toLowerCase().replace(/_/g, " ");
  }
  const stateWord = (s) => words(s, "JOB_STATE_");
  const kindWord = (k) => words(k, "ALLOCATION_KIND_");
  const fragWord = (f) => words(f, "FRAGMENT_CLASS_");
  const reasonWord = (r) => words(r, "PENDING_REASON_");

  // fmtReserved names a reserved job's cards: on a flat cluster a
  // reservation is a count, any of its cards free by then.
  function fmtReserved(j) {
    return j.cards && j.cards.length ? fmtCards(j.cards) : "any " + (j.requestedCards || "?") + " cards";
  }

  function fmtCards(cards) {
    if (!cards || !cards.length) return "–";
    const byNode = new Map();
    for (const c of cards) {
      if (!byNode.has(c.node)) byNode.set(c.node, []);
      byNode.get(c.node).push(c.index || 0);
    }
    const parts = [];
    for (const [node, idx] of byNode) {
      idx.sort((a, b) => a - b);
      const runs = [];
      for (let i = 0; i < idx.length; ) {
        let j = i;
        while (j + 1 < idx.length && idx[j + 1] === idx[j] + 1) j++;
        runs.push(i === j ? String(idx[i]) : idx[i] + "–" + idx[j]);
        i = j + 1;
      }
      parts.push(node + " " + runs.join(","));
    }
    return parts.join("; ");
  }

  // ---------------------------------------------------------------- DOM

  // h builds an element: h("td", {class: "x"}, "text", child, …).
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") el.className = v;
      else if (k === "text") el.textContent = v;
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  const SVG = "http://www.w3.org/2000/svg";
  function s(tag, attrs) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    return el;
  }

  const main = document.getElementById("main");
  const banner = document.getElementById("banner");
  const tokenForm = document.getElementById("token-form");
  const planInfo = document.getElementById("plan-info");
  const clusterInput = document.getElementById("cluster-input");

  function showBanner(text) {
    banner.textContent = text;
    banner.hidden = !text;
  }

  // -------------------------------------------------------------- state

  function currentCluster() {
    const q = new URLSearchParams(location.search).get("cluster");
    if (q) {
      localStorage.setItem(CLUSTER_KEY, q);
      return q;
    }
    return localStorage.getItem(CLUSTER_KEY) || "";
  }

  function jobHref(id, cluster) {
    return "/jobs/" + encodeURIComponent(id) + "?cluster=" + encodeURIComponent(cluster);
  }

  function link(id, cluster) {
    return h("a", { href: jobHref(id, cluster), "data-nav": true, class: "job-link", "data-job": id }, id);
  }

  function loadHistory(cluster) {
    try {
      return JSON.parse(sessionStorage.getItem("huitian.history." + cluster) || "[]");
    } catch (e) {
      return [];
    }
  }

  function saveHistory(cluster, hist) {
    try {
      sessionStorage.setItem("huitian.history." + cluster, JSON.stringify(hist));
    } catch (e) {
      // Storage full: the history lives on in memory.
    }
  }

  // record appends the status's measures to the cluster's history, one
  // point per plan.
  function record(cluster, st) {
    const hist = loadHistory(cluster);
    const t = ms(st.lastPlanTime);
    if (t === undefined || (hist.length && hist[hist.length - 1].t >= t)) return hist;
    const m = st.measures || {};
    const tu = st.tuner || {};
    hist.push({
      t,
      completion: m.completionRate,
      utilization: m.utilization,
      headDelay: seconds(m.mainWaitDelta),
      maxRuntime: seconds(tu.maxBackfillRuntime),
      protection: st.tuner ? tu.protectionFraction || 0 : undefined,
      epsilon: st.tuner ? tu.epsilon || 0 : undefined,
    });
    while (hist.length > HISTORY_POINTS) hist.shift();
    saveHistory(cluster, hist);
    return hist;
  }

  // ------------------------------------------------------------- views

  function clusterPrompt() {
    main.replaceChildren(
      h("section", { class: "panel" },
        h("h2", {}, "Which cluster?"),
        h("p", {}, "Type a cluster id above (the id the resource manager sends in its Plan requests), or open the URL that ",
          h("code", {}, "huitian serve"), " printed.")));
  }

  // cardView says how to draw each card: who holds it, who reserves it,
  // and the class it was idle in.
  function cardView(status, jobs) {
    const key = (c) => c.node + "/" + (c.index || 0);
    const holder = new Map();
    const reserver = new Map();
    for (const j of jobs) {
      const st = j.state;
      if (st === "JOB_STATE_RUNNING" || st === "JOB_STATE_STARTING") {
        for (const c of j.cards || []) holder.set(key(c), j);
      } else if (st === "JOB_STATE_RESERVED") {
        for (const c of j.cards || []) reserver.set(key(c), j);
      }
    }
    return (card) => {
      const k = key(card.card);
      const j = holder.get(k);
      const r = reserver.get(k);
      let cat;
      let text;
      if (j) {
        cat = j.kind === "ALLOCATION_KIND_BACKFILL" ? "backfill" : "regular";
        text = k + ": " + cat + (j.state === "JOB_STATE_STARTING" ? ", starting, " : ", ") + j.jobId +
          (j.user ? " (" + j.user + (j.jobClass ? ", " + j.jobClass : "") + ")" : "");
        if (cat === "backfill" && set(j.fragment)) text += ", on " + fragWord(j.fragment) + " capacity";
      } else if (!card.usable) {
        cat = "unusable";
        text = k + ": unusable (unhealthy or unschedulable)";
      } else if (set(card.idle)) {
        cat = fragWord(card.idle).replace(" ", "-");
        text = k + ": idle, " + fragWord(card.idle);
      } else {
        cat = "idle";
        text = k + ": idle, not classified (freed since the plan, or the policy does not classify)";
      }
      if (r) text += "; reserved for " + r.jobId + " from " + fmtTime(r.estimatedStart);
      return { cat, text, job: j, reserved: r, starting: j && j.state === "JOB_STATE_STARTING" };
    };
  }

  const CATEGORIES = [
    ["regular", "regular"],
    ["backfill", "backfill"],
    ["free", "idle: free node"],
    ["intra-node", "idle: intra-node leftover"],
    ["cross-node", "idle: cross-node fragment"],
    ["temporal", "idle: temporal fragment"],
    ["idle", "idle, not classified"],
    ["unusable", "unusable"],
  ];

  function gridPanel(cluster, status, jobs) {
    const view = cardView(status, jobs);
    const counts = {};
    let reserved = 0;
    const nodes = new Map();
    for (const c of status.cards || []) {
      const v = view(c);
      counts[v.cat] = (counts[v.cat] || 0) + 1;
      if (v.reserved) reserved++;
      if (!nodes.has(c.card.node)) nodes.set(c.card.node, []);
      const cls = "card c-" + v.cat + (v.reserved ? " reserved" : "") + (v.starting ? " starting" : "");
      const label = String(c.card.index || 0);
      const el = v.job
        ? h("a", { class: cls, href: jobHref(v.job.jobId, cluster), "data-nav": true, "data-job": v.job.jobId,
          "data-kind": v.cat, title: v.text, "aria-label": v.text }, label)
        : h("span", { class: cls, title: v.text, "aria-label": v.text, "data-kind": v.cat }, label);
      nodes.get(c.card.node).push(el);
    }
    const rows = [];
    for (const [node, cards] of nodes) {
      rows.push(h("div", { class: "node" }, h("div", { class: "node-name", title: node }, node), h("div", { class: "cards" }, cards)));
    }
    const legend = h("ul", { class: "legend" },
      CATEGORIES.filter(([cat]) => counts[cat] || ["regular", "backfill"].includes(cat)).map(([cat, label]) =>
        h("li", {}, h("span", { class: "card mini c-" + cat }), label + " " + (counts[cat] || 0))),
      h("li", {}, h("span", { class: "card mini c-idle reserved" }), "reserved (outline) " + reserved),
      h("li", {}, h("span", { class: "card mini c-backfill starting" }), "starting now (dashed)"));
    const body = (status.cards || []).length
      ? [legend, h("div", { id: "grid", class: "grid" }, rows)]
      : [h("p", { class: "muted" }, "No card map yet: the service draws it from the plans it has made since it started.")];
    const frags = (status.fragments || []).map((f) =>
      h("tr", {}, h("td", {}, fragWord(f.fragment)), h("td", { class: "num" }, f.cards || 0), h("td", { class: "num" }, f.nodes || 0),
        h("td", { class: "num" }, ((f.cardSeconds || 0) / 3600).toFixed(1))));
    return h("section", { class: "panel", id: "cluster-panel" },
      h("h2", {}, "Cards"),
      ...body,
      frags.length ? h("details", {},
        h("summary", {}, "Idle capacity the last plan found, by class"),
        h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "class"), h("th", {}, "cards"), h("th", {}, "nodes"), h("th", {}, "card-hours"))),
          h("tbody", {}, frags))) : null);
  }

  function quantileWord(j) {
    const q = j.estimate && j.estimate.quantile;
    return q ? "p" + Math.round(q * 100) : "";
  }

  function queuePanel(cluster, jobs, now) {
    const waiting = jobs.filter((j) => j.state === "JOB_STATE_PENDING" || j.state === "JOB_STATE_RESERVED");
    waiting.sort((a, b) => (a.queuePosition || 1e9) - (b.queuePosition || 1e9) || (a.jobId < b.jobId ? -1 : 1));
    const rows = waiting.map((j) => {
      const res = j.state === "JOB_STATE_RESERVED";
      const q = quantileWord(j);
      return h("tr", { "data-job": j.jobId, class: res ? "is-reserved" : "" },
        h("td", { class: "num" }, j.queuePosition || "–"),
        h("td", {}, link(j.jobId, cluster)),
        h("td", {}, j.user || "–"),
        h("td", {}, j.jobClass || "–"),
        h("td", { class: "num" }, j.requestedCards || "–"),
        h("td", {}, res ? h("span", { class: "tag reserved" }, "reserved") : "pending"),
        h("td", {}, res ? fmtReserved(j) + " · " + fmtPct(j.reservationConfidence) + " sure" : "–"),
        h("td", {}, j.estimatedStart ? fmtAt(j.estimatedStart, now) + (q ? " · " + q : "") : "unknown"),
        h("td", { class: "why", title: j.message || "" }, reasonWord(j.pendingReason)));
    });
    return h("section", { class: "panel", id: "queue-panel" },
      h("h2", {}, "Queue ", h("span", { class: "muted" }, "(" + waiting.length + " waiting)")),
      rows.length ? h("table", { class: "jobs" },
        h("thead", {}, h("tr", {}, ["#", "job", "user", "class", "cards", "state", "reservation (cards · confidence)",
          "estimated start · runtime quantile", "why it waits"].map((t) => h("th", {}, t)))),
        h("tbody", {}, rows)) : h("p", { class: "muted" }, "Nobody waits."));
  }

  function runningPanel(cluster, jobs, now) {
    const run = jobs.filter((j) => j.state === "JOB_STATE_RUNNING" || j.state === "JOB_STATE_STARTING");
    // Backfill first: theirs is the contract people look for.
    run.sort((a, b) => (a.kind === b.kind ? (a.jobId < b.jobId ? -1 : 1) : a.kind === "ALLOCATION_KIND_BACKFILL" ? -1 : 1));
    const rows = run.map((j) => {
      const bf = j.kind === "ALLOCATION_KIND_BACKFILL";
      return h("tr", { "data-job": j.jobId, "data-kind": bf ? "backfill" : "regular" },
        h("td", {}, link(j.jobId, cluster)),
        h("td", {}, j.user || "–"),
        h("td", {}, h("span", { class: "tag " + (bf ? "backfill" : "regular") }, kindWord(j.kind)), j.state === "JOB_STATE_STARTING" ? " (starting)" : ""),
        h("td", {}, fmtCards(j.cards)),
        h("td", {}, j.startTime ? fmtAt(j.startTime, now) : "–"),
        h("td", {}, bf ? (j.protectedUntil ? fmtAt(j.protectedUntil, now) : "not protected") : "–"),
        h("td", {}, bf ? (j.retentionUnbounded ? "until it ends" : fmtDur(seconds(j.expectedRetention))) : "–"),
        h("td", { class: "num" }, bf ? fmtPct(j.preemptionProbability) : "–"));
    });
    return h("section", { class: "panel", id: "running-panel" },
      h("h2", {}, "Running ", h("span", { class: "muted" }, "(" + run.length + ")")),
      rows.length ? h("table", { class: "jobs" },
        h("thead", {}, h("tr", {}, ["job", "user", "terms", "cards", "started", "protected until", "expected to keep its cards",
          "preemption probability"].map((t) => h("th", {}, t)))),
        h("tbody", {}, rows)) : h("p", { class: "muted" }, "Nothing runs."));
  }

  // chart draws one measure's history as a small SVG line.
  function chart(id, title, hist, field, fmt, fixed) {
    const pts = hist.filter((p) => p[field] !== undefined && p[field] !== null && !isNaN(p[field]));
    const last = pts.length ? pts[pts.length - 1][field] : undefined;
    const W = 280, H = 80, P = 4;
    const svg = s("svg", { viewBox: "0 0 " + W + " " + H, class: "spark", role: "img", "aria-label": title });
    if (pts.length) {
      let lo = fixed ? fixed[0] : Math.min(...pts.map((p) => p[field]));
      let hi = fixed ? fixed[1] : Math.max(...pts.map((p) => p[field]));
      if (hi === lo) {
        hi += 1;
        lo -= fixed ? 0 : 1;
      }
      const t0 = pts[0].t, t1 = pts[pts.length - 1].t;
      const R = 64; // room on the right for the range labels
      const x = (t) => (t1 === t0 ? W - R : P + ((t - t0) / (t1 - t0)) * (W - R - P));
      const y = (v) => H - P - ((v - lo) / (hi - lo)) * (H - 2 * P);
      svg.append(s("line", { x1: 0, x2: W - R, y1: y(lo), y2: y(lo), class: "axis" }));
      svg.append(s("polyline", { points: pts.map((p) => x(p.t).toFixed(1) + "," + y(p[field]).toFixed(1)).join(" "), class: "line" }));
      const lp = pts[pts.length - 1];
      svg.append(s("circle", { cx: x(lp.t), cy: y(lp[field]), r: 3, class: "dot" }));
      const lab = (v, yy) => {
        const t = s("text", { x: W - 2, y: yy, "text-anchor": "end", class: "tick" });
        t.textContent = fmt(v);
        return t;
      };
      svg.append(lab(hi, 12), lab(lo, H - 6));
    }
    const span = pts.length > 1 ? "over " + fmtDur((pts[pts.length - 1].t - pts[0].t) / 1000) + " of plans" : "";
    return h("figure", { class: "measure", id },
      h("figcaption", {}, title),
      h("div", { class: "value" }, last === undefined ? "no data yet" : fmt(last)),
      svg,
      h("div", { class: "muted small" }, span));
  }

  function measuresPanel(status, hist) {
    const pct = (v) => (v * 100).toFixed(1) + " %";
    const m = status.measures || {};
    const note = [];
    if (!status.measures) note.push("The last plan's policy does not measure backfill (only the huitian policy does).");
    if (m.backfillJobs !== undefined || m.mainJobs !== undefined) {
      note.push("Window: " + (m.backfillJobs || 0) + " backfill jobs, " + (m.mainJobs || 0) + " main jobs.");
    }
    return h("section", { class: "panel", id: "measures-panel" },
      h("h2", {}, "Backfill measures ", h("span", { class: "muted" }, "(since this tab opened, one point per plan)")),
      h("div", { class: "measures" },
        chart("m-completion", "Backfill completion rate", hist, "completion", pct, [0, 1]),
        chart("m-utilization", "Backfill utilization of idle cards", hist, "utilization", pct, [0, 1]),
        chart("m-head-delay", "Head delay (main jobs' start past their reservation)", hist, "headDelay", fmtDur),
        chart("m-max-runtime", "Tuner: longest backfill runtime", hist, "maxRuntime", fmtDur),
        chart("m-protection", "Tuner: protection (share of runtime)", hist, "protection", pct, [0, 1]),
        chart("m-epsilon", "Tuner: risk tolerance ε", hist, "epsilon", (v) => v.toFixed(3), [0, 1])),
      note.length ? h("p", { class: "muted small" }, note.join(" ")) : null);
  }

  function setPlanInfo(status, cluster) {
    if (!status) {
      planInfo.textContent = "";
      return;
    }
    const st = status.lastStats || {};
    planInfo.textContent = cluster + " · plan of " + fmtTime(status.lastPlanTime) + " · " + words(status.lastPolicy, "POLICY_") +
      (st.solver ? " (" + st.solver + (st.fallback ? ", fell back to greedy" : "") + ")" : "") + " · " + (status.plans || 0) + " plans";
  }

  async function renderHome(cluster) {
    const [status, list] = await Promise.all([
      call("GetStatus", { clusterId: cluster, includeCards: true }),
      listAll(cluster),
    ]);
    const hist = record(cluster, status);
    setPlanInfo(status, cluster);
    const now = status.lastPlanTime;
    const open = new Set([...main.querySelectorAll("details[open]")].map((d) => d.parentElement && d.parentElement.id));
    main.replaceChildren(
      gridPanel(cluster, status, list.jobs),
      measuresPanel(status, hist),
      queuePanel(cluster, list.jobs, now),
      runningPanel(cluster, list.jobs, now));
    for (const d of main.querySelectorAll("details")) if (open.has(d.parentElement.id)) d.open = true;
    main.dataset.planTime = now || "";
    main.dataset.view = "home";
  }

  // contract writes the sentence a user reads first, as `huitian job` does.
  function contract(j, now) {
    const st = j.state;
    if (st === "JOB_STATE_RUNNING" || st === "JOB_STATE_STARTING") {
      let t = (st === "JOB_STATE_STARTING" ? "Starts now as " : "Runs as ") + kindWord(j.kind) + " on " + fmtCards(j.cards) + ".";
      if (j.kind === "ALLOCATION_KIND_BACKFILL") {
        t += j.protectedUntil ? " Protected from preemption until " + fmtTime(j.protectedUntil) + "." : " Not protected from preemption.";
        t += j.retentionUnbounded
          ? " No reservation claims its cards: it keeps them until it ends."
          : " Expected to keep its cards " + fmtDur(seconds(j.expectedRetention)) + (j.claimedBy ? " (then " + j.claimedBy + " is reserved on them)" : "") + ".";
        t += " " + fmtPct(j.preemptionProbability) + " chance of preemption.";
      }
      return t;
    }
    if (st === "JOB_STATE_RESERVED") {
      return "Waits with a reservation on " + fmtReserved(j) + " from " + fmtAt(j.estimatedStart, now) + ", " +
        fmtPct(j.reservationConfidence) + " sure the cards are free by then.";
    }
    if (st === "JOB_STATE_PENDING") {
      return "Waits (" + reasonWord(j.pendingReason) + "); " + (j.estimatedStart ? "estimated to start " + fmtAt(j.estimatedStart, now) : "no start estimate yet") + ".";
    }
    if (st === "JOB_STATE_SUSPENDED") return "Suspended by checkpoint: it yielded its cards and waits to resume.";
    if (st === "JOB_STATE_REQUEUED") return "Preempted and requeued: it yielded its cards and waits again.";
    if (st === "JOB_STATE_FINISHED") return "Finished (" + words(j.exit, "EXIT_STATE_") + ").";
    return "";
  }

  async function renderJob(cluster, id) {
    const r = await call("GetJobInsight", { clusterId: cluster, jobId: id });
    const j = r.insight || {};
    const now = j.planTime;
    const bf = j.kind === "ALLOCATION_KIND_BACKFILL";
    const running = j.state === "JOB_STATE_RUNNING" || j.state === "JOB_STATE_STARTING";
    const e = j.estimate || {};
    const rows = [
      ["state", "job-state", stateWord(j.state)],
      ["terms", "job-kind", kindWord(j.kind)],
      ["user · class", "job-user", (j.user || "–") + " · " + (j.jobClass || "–")],
      ["cards asked", "job-requested", j.requestedCards || "–"],
      [j.state === "JOB_STATE_RESERVED" ? "cards reserved" : "cards", "job-cards", j.state === "JOB_STATE_RESERVED" ? fmtReserved(j) : fmtCards(j.cards)],
      ["started", "job-start", j.startTime ? fmtAt(j.startTime, now) : "–"],
      ["protected until", "job-protected", j.protectedUntil ? fmtAt(j.protectedUntil, now) : bf && running ? "not protected" : "–"],
      ["expected to keep its cards", "job-retention",
        bf && running ? (j.retentionUnbounded ? "until it ends" : fmtDur(seconds(j.expectedRetention))) : "–"],
      ["claimed by", "job-claimed-by", j.claimedBy ? link(j.claimedBy, cluster) : "–"],
      ["preemption probability", "job-probability", bf ? fmtPct(j.preemptionProbability) : "–"],
      ["idle class it runs on", "job-fragment", bf ? fragWord(j.fragment) : "–"],
      ["queue position", "job-position", j.queuePosition || "–"],
      ["reservation", "job-reservation", j.state === "JOB_STATE_RESERVED"
        ? "from " + fmtAt(j.estimatedStart, now) + ", confidence " + fmtPct(j.reservationConfidence) : "none"],
      ["why it waits", "job-pending", reasonWord(j.pendingReason)],
      ["estimated start", "job-estimated-start", j.estimatedStart ? fmtAt(j.estimatedStart, now) : "–"],
      ["runtime estimate", "job-estimate", e.source
        ? "p" + Math.round((e.quantile || 0) * 100) + " quantile, from " + e.source + " (" + (e.historySize || 0) + " finished jobs)" + (e.unreliable ? ", unreliable: the time limit is used" : "")
        : "the user's time limit"],
      ["progress", "job-progress", fmtPct(j.progress)],
      ["planner says", "job-message", j.message || "–"],
      ["as of plan", "job-plan-time", fmtTime(j.planTime)],
      ["last event", "job-event-time", j.eventTime ? fmtTime(j.eventTime) : "–"],
    ];
    if (set(j.exit)) rows.push(["exit", "job-exit", words(j.exit, "EXIT_STATE_")]);
    main.replaceChildren(
      h("section", { class: "panel", id: "job-panel" },
        h("p", {}, h("a", { href: "/?cluster=" + encodeURIComponent(cluster), "data-nav": true }, "← cluster " + cluster)),
        h("h2", {}, "Job ", h("code", { id: "job-id" }, j.jobId || id), " ",
          h("span", { class: "tag " + (bf ? "backfill" : set(j.kind) ? "regular" : "waiting") }, set(j.kind) ? kindWord(j.kind) : stateWord(j.state))),
        h("p", { class: "contract", id: "job-contract" }, contract(j, now)),
        h("dl", { class: "fields" }, rows.map(([k, fid, v]) => [h("dt", {}, k), h("dd", { id: fid }, v)]))));
    main.dataset.planTime = now || "";
    main.dataset.view = "job";
  }

  // ------------------------------------------------------------ routing

  let timer = 0;
  let generation = 0;

  async function refresh() {
    const gen = ++generation;
    clearTimeout(timer);
    const cluster = currentCluster();
    if (document.activeElement !== clusterInput) clusterInput.value = cluster;
    if (!cluster) {
      clusterPrompt();
      setPlanInfo(null);
      return;
    }
    const m = location.pathname.match(/^\/jobs\/([^/]+)$/);
    try {
      if (m) await renderJob(cluster, decodeURIComponent(m[1]));
      else await renderHome(cluster);
      if (gen !== generation) return;
      showBanner("");
      tokenForm.hidden = true;
    } catch (e) {
      if (gen !== generation) return;
      if (e.code === "unauthenticated") {
        tokenForm.hidden = false;
        showBanner(sessionStorage.getItem(TOKEN_KEY) ? "The token was refused; type another." : "This service needs a token.");
        document.getElementById("token-input").focus();
        main.replaceChildren();
        return; // polling resumes when a token is given
      }
      if (e.code === "not_found") {
        showBanner(m ? "No job " + m[1] + " in cluster " + cluster + "'s plans or events." : "Cluster " + cluster + " has no plans yet; waiting for its resource manager.");
      } else if (e.code === "permission_denied") {
        showBanner("This token may not read cluster " + cluster + ".");
      } else {
        showBanner(e.message + " — retrying.");
      }
    }
    if (gen === generation) timer = setTimeout(refresh, POLL_MS);
  }

  function navigate(href) {
    history.pushState(null, "", href);
    refresh();
  }

  document.addEventListener("click", (ev) => {
    const a = ev.target.closest && ev.target.closest("a[data-nav]");
    if (!a || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey) return;
    ev.preventDefault();
    navigate(a.getAttribute("href"));
  });
  window.addEventListener("popstate", refresh);

  document.getElementById("cluster-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const id = clusterInput.value.trim();
    if (id) navigate("/?cluster=" + encodeURIComponent(id));
  });
  tokenForm.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const input = document.getElementById("token-input");
    const tok = input.value.trim();
    if (!tok) return;
    sessionStorage.setItem(TOKEN_KEY, tok);
    input.value = "";
    document.getElementById("sign-out").hidden = false;
    refresh();
  });
  const signOut = document.getElementById("sign-out");
  signOut.hidden = !sessionStorage.getItem(TOKEN_KEY);
  signOut.addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    signOut.hidden = true;
    refresh();
  });

  refresh();
})();
