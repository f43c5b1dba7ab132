// netto's web view. The server pushes every snapshot over Server-Sent
// Events; the page draws what it is sent and never polls. Everything from
// the server goes into the page as text (textContent), never as HTML.
"use strict";

const EVENTS = ["net_rx_softirq", "net_tx_softirq", "sock_send", "sock_recv", "net_timers"];
const LABELS = {
  net_rx_softirq: "NET_RX softirq",
  net_tx_softirq: "NET_TX softirq",
  sock_send: "socket send",
  sock_recv: "socket receive",
  net_timers: "network timers",
};
// The exact event each sampled context's time is.
const CONTEXT_EVENTS = {
  net_rx: "net_rx_softirq",
  net_tx: "net_tx_softirq",
  sock_send: "sock_send",
  sock_recv: "sock_recv",
  net_timers: "net_timers",
};
const SVG_NS = "http://www.w3.org/2000/svg";
// What the words on the page mean, as src/frontends/glossary.rs and the
// loss kinds of src/model.rs say them (a test holds the two together):
// each is the tooltip of the word where it shows.
const WORDS = {
  percentOfOneCpu: "100 is one CPU busy for the whole interval; a host with N CPUs goes up to N x 100",
  shareOfEvent: "the program's run time over the time of the network event its hook runs in (an estimate: entering a program is not in BPF statistics, and a program can run outside that event, as tc egress inside a send call)",
  estimate: "estimated from stack samples (the tier does not measure it), shown to its error's precision; a count it cannot know reads -",
  calibration: "this tier's estimate over the exact time in the run's calibration intervals; when applied, the estimate shown is the samples' divided by it, and its error holds the calibration's",
  agreement: "the time the stack samples stand for (samples x sampling period) over the exact time: 1.00 means the samples saw all of it; shares are of the samples either way",
  timerSoftirqOverhead: "the timer softirq's own work around network callbacks (its expiry loop, re-arming the timer), shared out by the callbacks' time; on a virtual machine re-arming the timer is costly, so it can outweigh the callbacks",
  softirqLoop: "samples of a socket call taken in the softirq loop outside any softirq netto saw begin: interrupt time that falls due where interrupts come back on, not the call's; left out of the breakdown",
  skid: "a function that turns interrupts back on: cpu-clock samples that fell due while they were off land here, so its time is mostly its callers' work",
  gapsReused: "sampling gaps the XDP sketch used a second time because a CPU's supply of random gaps ran dry before netto topped it up; 0 means every sampling decision was fresh",
  netCpu: "the network time of a heavy hitter's connection in the interval (under --by flow): its receiving socket's and, where on this host, its sender's or forwarded flow's; - where the connection was folded into other",
  taskWindows: "socket calls switched out midway for which no task storage could be had: the rest of each such call is charged to no event",
  recursion: "runs of netto's programs the kernel skipped because the program was already running on that CPU: transitions or samples not seen",
  sampleHalves: "halves of the sample buffer given up because a writer was still inside when netto read it; their samples count as dropped",
  attributions: "parts of an event's time that could not go to their group because its map was full or busy: they count as unattributed",
  missedSamples: "stack samples the CPU clocks were due for while the CPUs worked (idle time owes none) that never ran: perf throttled sampling (kernel.perf_event_max_sample_rate), the kernel skipped it, or a virtual CPU was not running; estimates from samples read low by as much",
  unsampledCpus: "online CPUs perf would not sample yet (a CPU coming up): netto asks again at every drain",
};
// What a group's id is, by --by: as GroupBy::id_name in
// src/model/attribution.rs says it (a test holds the two together).
const GROUP_IDS = { process: "pid", cgroup: "cgroup path", netns: "netns inode", flow: "flow", port: "port" };
// What a flow's or a port's label is: its rows read by name, the label after.
const TRAFFIC_LABELS = { flow: "namespace", port: "service name" };
// The per-CPU table's short column titles.
const SHORT = {
  net_rx_softirq: "net_rx",
  net_tx_softirq: "net_tx",
  sock_send: "send",
  sock_recv: "recv",
  net_timers: "timers",
};
// Who pays: every event a group's time is split into, and their titles.
const GROUP_COLUMNS = [
  ["total", "total"],
  ["net_rx_softirq", "NET_RX"],
  ["net_tx_softirq", "NET_TX"],
  ["sock_send", "send"],
  ["sock_recv", "receive"],
  ["net_timers", "timers"],
];

// The overhead table's words that need explaining.
const MEANINGS = {
  "samples left out (softirq loop)": WORDS.softirqLoop,
  "lost task windows": WORDS.taskWindows,
  "lost BPF runs": WORDS.recursion,
  "lost sample halves": WORDS.sampleHalves,
  "lost attributions": WORDS.attributions,
  "missed samples": WORDS.missedSamples,
  "unsampled CPUs": WORDS.unsampledCpus,
};

const view = {
  history: [],
  live: true,
  spanS: 300,
  lastTs: -Infinity,
  flameLoading: false,
  flamePaused: false,
  flameWanted: false,
  groupSort: "total",
};

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    node.setAttribute(key, value);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function svgEl(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    node.setAttribute(key, value);
  }
  return node;
}

const pct = (ns, intervalS) => (intervalS > 0 ? (ns / (intervalS * 1e9)) * 100 : 0);
const fmtPct = (value) => value.toFixed(2);
const fmtMs = (ns) => (ns / 1e6).toFixed(1) + " ms";
// A share of stack samples or of a sketch's estimate: to one place (two
// below 1 %), as top writes it; hundreds of samples do not know the
// second place of a share.
const fmtPart = (value) => value.toFixed(value !== 0 && Math.abs(value) < 1 ? 2 : 1);
// Decimal places that show an error to one significant digit (two when
// that digit is a 1), as src/frontends/rounding.rs decides; null for no
// error. An estimate reads no finer than its error.
const decimalsFor = (error) => {
  if (!(Number.isFinite(error) && error > 0)) return null;
  const magnitude = Math.floor(Math.log10(error));
  const leading = Math.floor(error / 10 ** magnitude);
  return leading < 2 ? 1 - magnitude : -magnitude;
};
const fixed = (value, decimals) => {
  if (decimals >= 0) return value.toFixed(decimals);
  const step = 10 ** -decimals;
  return (Math.round(value / step) * step).toFixed(0);
};
// A value to its error's precision, at most `most` places.
const toError = (value, error, most) => {
  const d = decimalsFor(error);
  return fixed(value, d === null ? most : Math.min(d, most));
};
// A % of one CPU as the cards and tables write it: an estimate `~` and to
// its error's precision (a CPU's part to the whole's, which bounds it).
const fmtShare = (time, ns, intervalS) => time.estimated
  ? "~" + toError(pct(ns, intervalS), pct(time.error_ns || 0, intervalS), 2)
  : fmtPct(pct(ns, intervalS));
// A word with its meaning as a tooltip, marked as having one.
const word = (text, meaning) => el("span", { class: "word", title: meaning }, text);
const fmtInt = (n) => Math.round(n).toLocaleString("en-US");
// Seconds, minutes or hours, as src/frontends/calibration_text.rs writes them.
const fmtAge = (seconds) => {
  const s = Math.max(0, seconds);
  if (s < 90) return `${s.toFixed(0)} s`;
  if (s < 90 * 60) return `${(s / 60).toFixed(0)} min`;
  return `${(s / 3600).toFixed(1)} h`;
};

function bar(fraction) {
  const fill = el("span");
  fill.style.width = Math.max(0, Math.min(1, fraction)) * 100 + "%";
  return el("td", { class: "bar" }, fill);
}

function setStatus(text, kind) {
  const status = $("status");
  status.textContent = text;
  status.className = "status " + (kind || "");
}

async function getJSON(path) {
  const response = await fetch(path, { cache: "no-store" });
  if (!response.ok) {
    throw new Error(path + ": HTTP " + response.status);
  }
  return response.json();
}

function showSource(about) {
  const src = about.source;
  view.spanS = about.settings.history_s;
  view.live = src.origin === "live";
  const sampling = src.frequency_hz ? `, sampling at ${src.frequency_hz} Hz` : "";
  $("source").textContent =
    `${src.host} · kernel ${src.kernel} · ${src.backend} backend${sampling} · ` +
    (view.live ? "live" : `replay of ${src.origin.replay}`);
  // The start-up notes, folded to one line: the first note's start and
  // how many there are; a click shows them all.
  const notes = $("notes");
  notes.hidden = src.notes.length === 0;
  const first = src.notes[0] || "";
  const brief = first.length > 90 ? first.slice(0, first.lastIndexOf(" ", 90)) + " …" : first;
  $("notes-summary").textContent = src.notes.length === 1
    ? `start-up note: ${brief}`
    : `${src.notes.length} start-up notes: ${brief}`;
  $("notes-list").replaceChildren(...src.notes.map((note) => el("li", {}, note)));
  const windows = $("flame-window");
  for (const option of windows.options) {
    option.disabled = Number(option.value) > view.spanS;
  }
  if (Number(windows.value) > view.spanS) {
    windows.value = String(about.settings.flame_s);
  }
}

function add(snapshot) {
  if (snapshot.ts <= view.lastTs) {
    return false;
  }
  view.lastTs = snapshot.ts;
  view.history.push(snapshot);
  while (view.history.length > 1 && view.history[0].ts <= snapshot.ts - view.spanS) {
    view.history.shift();
  }
  return true;
}

function render() {
  const latest = view.history[view.history.length - 1];
  if (!latest) {
    $("cards").replaceChildren(el("p", { class: "empty" }, "Waiting for the first interval…"));
    return;
  }
  renderCards(latest);
  renderChart();
  renderCpus(latest);
  renderBreakdown(latest);
  renderGroups(latest);
  renderOverhead(latest);
  renderSketch(latest);
  renderPrograms(latest);
  refreshFlame();
}

function renderCards(s) {
  // Recordings made before tiers are exact throughout.
  const tier = s.tier || "exact";
  // Where the budget took the run, say so and how to measure exactly:
  // on a small host the demo's traffic alone is past serve's 1 %.
  const why = tier !== "exact" && s.budget
    ? `; the ${s.budget.percent} % budget stepped down to it, --budget off measures exactly` : "";
  $("tier").textContent = `tier ${tier}` + (tier === "exact" ? "" : ` (~ estimated from stack samples${why})`)
    + (s.calibrating ? ` (calibration interval: the run is in ${s.calibrating})` : "");
  const cards = EVENTS.map((event) => {
    const time = s.events[event];
    // An estimate is marked and carries its error, to whose precision it
    // reads, and the samples' agreement with the exact time where the run
    // measured that; it counts no runs.
    const mark = time.estimated ? "~" : "";
    // Its error as Calibration::error gives it (older recordings: the
    // samples' Poisson count), and its age, as the terminal front ends
    // write them.
    const c = time.calibration;
    const calibration = c
      ? [" · ", word(c.applied ? "calibrated" : "calibration", WORDS.calibration),
        ` ${c.agreement.toFixed(2)}`
        + ` ± ${(c.agreement_error ?? c.agreement / Math.sqrt(Math.max(c.samples, 1))).toFixed(2)}`
        + (c.applied ? "" : " (not applied)")
        + `, ${fmtAge(s.ts - c.ts)} ago`]
      : [];
    const errorNs = time.error_ns || 0;
    const detail = time.estimated
      ? [word("estimated", WORDS.estimate),
        ` ± ${toError(errorNs / 1e6, errorNs / 1e6, 1)} ms · ~${toError(time.total_ns / 1e6, errorNs / 1e6, 1)} ms`,
        ...calibration]
      : [`${fmtInt(time.count / (s.interval_s || 1))} runs/s · ${fmtMs(time.total_ns)}`];
    const parts = [
      el("div", { class: "name" }, LABELS[event]),
      el("div", {}, el("span", { class: "value", id: "value-" + event }, fmtShare(time, time.total_ns, s.interval_s)), " %"),
      el("div", { class: "runs" }, ...detail),
    ];
    if (event === "net_timers") {
      parts.push(timerCallbacks(s));
    }
    return el("div", { class: "card ev-" + event + (time.estimated ? " estimated" : "") }, ...parts);
  });
  $("cards").replaceChildren(...cards);
}

// Where net_timers goes: its heaviest callback's share, and what the
// timer softirq's own part is where that is the heaviest.
function timerCallbacks(s) {
  const callbacks = Object.entries(s.net_timer_callbacks || {}).sort((a, b) => b[1] - a[1]);
  const total = callbacks.reduce((sum, [, ns]) => sum + ns, 0);
  if (total === 0) {
    return el("div", { class: "runs", id: "timers-split" });
  }
  const [name, ns] = callbacks[0];
  const named = name === "timer_softirq_overhead" ? word(name, WORDS.timerSoftirqOverhead) : name;
  return el("div", { class: "runs", id: "timers-split" }, `${Math.round((ns / total) * 100)} % `, named);
}

function renderChart() {
  const chart = $("chart");
  const [width, height, left, bottom, top] = [900, 260, 48, 22, 8];
  const points = view.history;
  const newest = points[points.length - 1].ts;
  const oldest = Math.min(points[0].ts, newest - 10);
  const series = EVENTS.map((event) => points.map((s) => [s.ts, pct(s.events[event].total_ns, s.interval_s)]));
  const peak = Math.max(1, ...series.flat().map(([, y]) => y)) * 1.1;
  const x = (ts) => left + ((ts - oldest) / (newest - oldest || 1)) * (width - left - 4);
  const y = (value) => height - bottom - (value / peak) * (height - bottom - top);
  const nodes = [];
  for (const fraction of [0, 0.5, 1]) {
    const value = peak * fraction;
    nodes.push(svgEl("line", { class: "grid", x1: left, x2: width, y1: y(value), y2: y(value) }));
    const label = svgEl("text", { x: left - 6, y: y(value) + 4, "text-anchor": "end" });
    label.textContent = value.toFixed(value < 10 ? 1 : 0) + "%";
    nodes.push(label);
  }
  const ago = svgEl("text", { x: left, y: height - 4 });
  ago.textContent = `-${Math.round(newest - oldest)} s`;
  const now = svgEl("text", { x: width - 4, y: height - 4, "text-anchor": "end" });
  now.textContent = "now";
  nodes.push(ago, now);
  EVENTS.forEach((event, i) => {
    const line = svgEl("polyline", {
      class: "line ev-" + event,
      points: series[i].map(([ts, value]) => `${x(ts).toFixed(1)},${y(value).toFixed(1)}`).join(" "),
    });
    const title = svgEl("title");
    title.textContent = LABELS[event];
    line.append(title);
    nodes.push(line);
  });
  chart.replaceChildren(...nodes);
}

function renderCpus(s) {
  const head = el("tr", {}, el("th", {}, "CPU"),
    ...EVENTS.map((e) => el("th", { title: LABELS[e] }, SHORT[e])), el("th", {}, "all"), el("th"));
  const rows = [];
  for (let cpu = 0; cpu < s.cpus; cpu++) {
    const values = EVENTS.map((e) => pct(s.events[e].per_cpu_ns[cpu] || 0, s.interval_s));
    const all = values.reduce((a, b) => a + b, 0);
    const cells = EVENTS.map((e) => el("td", {}, fmtShare(s.events[e], s.events[e].per_cpu_ns[cpu] || 0, s.interval_s)));
    // The sum of estimates: to the precision of their errors together.
    const estimated = EVENTS.filter((e) => s.events[e].estimated);
    const error = Math.sqrt(estimated.reduce((sum, e) => sum + pct(s.events[e].error_ns || 0, s.interval_s) ** 2, 0));
    const total = estimated.length ? "~" + toError(all, error, 2) : fmtPct(all);
    rows.push(el("tr", { id: "cpu-" + cpu }, el("td", {}, cpu), ...cells, el("td", {}, total), bar(all / 100)));
  }
  $("cpus").replaceChildren(el("thead", {}, head), el("tbody", {}, ...rows));
}

function renderBreakdown(s) {
  const table = $("breakdown");
  if (!s.breakdown || s.breakdown.length === 0) {
    table.replaceChildren(el("tbody", {}, el("tr", {}, el("td", { class: "empty" }, "No stack samples in this interval."))));
    return;
  }
  const head = el("tr", {}, el("th", {}, "category"), el("th", {}, "share"), el("th", {}, "CPU time"), el("th", {}, "samples"), el("th"));
  const body = [];
  for (const context of s.breakdown) {
    const event = CONTEXT_EVENTS[context.context];
    const eventNs = event ? s.events[event].total_ns : 0;
    // Samples x period / exact time; absent in old recordings.
    const agreement = context.agreement == null ? []
      : [", ", word("agreement", WORDS.agreement), ` ${context.agreement.toFixed(2)}`];
    body.push(el("tr", { class: "context", id: "context-" + context.context }, el("th", { colspan: 5 }, `${context.context}: ${fmtInt(context.samples)} samples, ${fmtMs(eventNs)} (${fmtPct(pct(eventNs, s.interval_s))} % of one CPU)`, ...agreement)));
    const categories = [...context.categories].sort((a, b) => b.share - a.share);
    for (const c of categories) {
      body.push(el("tr", { class: "category" }, el("td", {}, "  " + c.category), el("td", {}, fmtPart(c.share * 100) + " %"), el("td", {}, fmtMs(c.cpu_ns)), el("td", {}, fmtInt(c.samples)), bar(c.share)));
    }
  }
  table.replaceChildren(el("thead", {}, head), el("tbody", {}, ...body));
}

// A group's time over every event, in ns.
const groupNs = (g) => Object.values(g.events).reduce((x, y) => x + y, 0);

// Who pays (--by): each group's time per event, sorted by the column
// clicked last, what no group claimed below the groups; under --by
// flow|port each group's cost per KiB of its payload too.
function renderGroups(s) {
  const a = s.attribution;
  $("groups-panel").hidden = !a;
  if (!a) {
    return;
  }
  $("groups-by").textContent = a.on
    ? `by ${a.by}, % of one CPU, last interval; click a column to sort`
    : `by ${a.by}: attribution is off in this interval, all time unattributed`;
  const traffic = a.by === "flow" || a.by === "port";
  const columns = traffic ? [...GROUP_COLUMNS, ["ns_per_kib", "ns/KiB"]] : GROUP_COLUMNS;
  const sortKey = columns.some(([key]) => key === view.groupSort) ? view.groupSort : "total";
  // A row's number in column `key`: its ns/KiB (-1, last, where it has
  // none), or its time in ns.
  const value = (r, key) => {
    if (key === "ns_per_kib") {
      return r.ns_per_kib ?? -1;
    }
    return key === "total" ? groupNs(r) : r.events[key] || 0;
  };
  const cell = (r, key) => {
    if (key !== "ns_per_kib") {
      return fmtPct(pct(value(r, key), s.interval_s));
    }
    return r.ns_per_kib == null ? "-" : fmtInt(r.ns_per_kib);
  };
  const head = el("tr", {}, el("th", {}, a.by, el("small", {}, ` (${(traffic ? TRAFFIC_LABELS : GROUP_IDS)[a.by] || "id"})`)), ...columns.map(([key, title]) => {
    const th = el("th", { class: key === sortKey ? "sortable sorted" : "sortable" }, title);
    th.addEventListener("click", () => {
      view.groupSort = key;
      renderGroups(s);
    });
    return th;
  }), el("th"));
  const host = s.interval_s * s.cpus;
  const row = (label, name, r, kind) => el(
    "tr",
    { class: kind },
    el("td", {}, label, el("small", {}, name ? " " + name : "")),
    ...columns.map(([key]) => el("td", {}, cell(r, key))),
    bar(host > 0 ? value(r, "total") / (host * 1e9) : 0),
  );
  const groups = [...a.groups].sort((x, y) => value(y, sortKey) - value(x, sortKey));
  // A flow or a port reads by its name; its label (namespace, service)
  // is the smaller print.
  const rows = groups.map((g) => traffic ? row(g.name, g.label, g, "group") : row(g.label, g.name, g, "group"));
  rows.push(row("unattributed", "", { events: a.unattributed }, "unattributed"));
  $("groups").replaceChildren(el("thead", {}, head), el("tbody", {}, ...rows));
}

function renderOverhead(s) {
  const o = s.overhead;
  // Recordings made before the whole cost was reported add it up here.
  const cost = o.cost_percent ?? pct(o.process_cpu_ns + o.bpf_run_time_ns, s.interval_s);
  const how = !o.bpf_stats ? " (BPF programs not measured)"
    : o.estimated ? ` ± ${toError(o.error_percent, o.error_percent, 2)} % (estimated)` : "";
  const shown = o.estimated ? "~" + toError(cost, o.error_percent, 2) : fmtPct(cost);
  const rows = [
    [el("span", {}, "netto's whole cost, ", word("% of one CPU", WORDS.percentOfOneCpu)), shown + " %" + how],
    ["netto processes", fmtPct(pct(o.process_cpu_ns, s.interval_s)) + " %"],
    ["netto BPF programs", o.bpf_stats
      ? `${o.estimated ? "~" + toError(pct(o.bpf_run_time_ns, s.interval_s), pct(o.bpf_error_ns || 0, s.interval_s), 2) : fmtPct(pct(o.bpf_run_time_ns, s.interval_s))} %`
        // No slice held this interval (or a recording from before the
        // slice was reported): it says nothing of one.
        + (!(o.bpf_stats_held_s > 0) ? "" : ` (priced from ${o.bpf_stats_held_s.toFixed(2)} s of BPF statistics)`)
      : "not measured (--no-bpf-stats)"],
  ];
  // serve splits the whole cost: the budget acts on measuring alone,
  // serving has its own bound (--serve-budget).
  if (o.measuring_percent != null) {
    rows.push(["measuring (what the budget keeps)", fmtPct(o.measuring_percent) + " %"]);
  }
  if (o.serving_percent != null) {
    rows.push(["serving (the HTTP process)", fmtPct(o.serving_percent) + " %"]);
  }
  // serve --otlp-endpoint: its exporter has a bound of its own
  // (--otlp-budget), apart from serving's.
  if (o.otlp) {
    if (o.export_percent != null) {
      rows.push(["exporting (OTLP pushes)", fmtPct(o.export_percent) + " %"]);
    }
    rows.push(["OTLP windows pushed",
      `${o.otlp.sent_windows} sent, ${o.otlp.dropped_windows} dropped`]);
  }
  // Absent without --budget (and in recordings made before it existed).
  const b = s.budget;
  if (b) {
    const state = !b.over ? "kept"
      : s.calibrating ? "over in this calibration interval, not judged"
      : b.at_floor ? "over, every knob at its floor" : "over";
    const asked = (b.asked_frequency_hz == null ? "" : `, sampling asked ${b.asked_frequency_hz} Hz`) +
      (b.asked_sketch_probability == null ? "" : `, sketch asked p=${b.asked_sketch_probability}`);
    rows.push(["budget", `${b.percent} % of one CPU: ${state} (${b.steps_down} steps down, ${b.steps_up} up${asked})`]);
    // What each knob costs, costliest first; one that is off is predicted
    // from its last measured cost and the load since.
    const knobs = [...(b.knobs || [])].sort((x, y) => y.cost_percent - x.cost_percent);
    for (const k of knobs) {
      rows.push([`budget knob ${k.knob}`, `${fmtPct(k.cost_percent)} % (${k.basis})`]);
    }
  }
  if (s.sampling) {
    const sm = s.sampling;
    rows.push(
      ["sampling", `${sm.frequency_hz} Hz, ${sm.transport}, ${(sm.buffer_bytes / 1024).toFixed(0)} KiB buffer`],
      ["samples", fmtInt(sm.samples)],
      ["dropped samples", fmtInt(sm.dropped)],
      ["failed stacks", fmtInt(sm.failed_stacks)],
      [named("samples left out (softirq loop)"), fmtInt(sm.softirq_loop || 0)],
    );
  }
  // Recordings made before losses were counted have none to show.
  const losses = s.losses || {};
  rows.push(
    [named("lost task windows"), fmtInt(losses.task_storage_failures || 0)],
    [named("lost BPF runs"), fmtInt(losses.recursion_misses || 0)],
  );
  if (s.sampling && s.sampling.transport === "mmap") {
    rows.push([named("lost sample halves"), fmtInt(losses.dropped_halves || 0)]);
  }
  if (s.sampling) {
    rows.push(
      [named("missed samples"), fmtInt(losses.missed_samples || 0)],
      [named("unsampled CPUs"), fmtInt(losses.unsampled_cpus || 0)],
    );
  }
  if (s.attribution) {
    rows.push([named("lost attributions"), fmtInt(losses.attribution_misses || 0)]);
  }
  const costly = [...o.programs].sort((a, b) => b.run_time_ns - a.run_time_ns).slice(0, 6);
  for (const p of costly) {
    rows.push([p.name, `${fmtPct(pct(p.run_time_ns, s.interval_s))} % · ${fmtInt(p.run_count)} runs`]);
  }
  $("overhead").replaceChildren(el("tbody", {}, ...rows.map(([name, value]) => el("tr", {}, el("td", {}, name), el("td", {}, value)))));
}

// A row's name: the word with its meaning where it has one.
function named(name) {
  return MEANINGS[name] ? word(name, MEANINGS[name]) : name;
}

// The XDP sketch panel: shown once snapshots carry a sketch.
function renderSketch(s) {
  const panel = $("sketch-panel");
  const sk = s.sketch;
  panel.hidden = !sk;
  if (!sk) {
    return;
  }
  const summary = el("p", {}, `${sk.iface} (${sk.mode}), p=${sk.probability}, ${fmtInt(sk.packets)} packets, ${fmtInt(sk.bytes)} bytes` +
    (sk.cost ? `, ${sk.cost.ns_per_packet.toFixed(1)} ns/packet, ${fmtPct(sk.cost.cpu_percent)} % CPU` : "") + ", ",
    word("gaps reused", WORDS.gapsReused), ` ${fmtInt(sk.gaps_reused || 0)}`);
  // Under --by flow, each heavy hitter's connection's network time.
  const joined = (sk.top || []).some((f) => (f.flows || []).length > 0);
  const groups = (s.attribution && s.attribution.groups) || [];
  const netMs = (f) => {
    const mine = groups.filter((g) => (f.flows || []).includes(g.name));
    if (mine.length === 0) {
      return "-";
    }
    const ns = mine.reduce((sum, g) => sum + groupNs(g), 0);
    return (ns / 1e6).toFixed(3) + " ms";
  };
  const head = el("tr", {}, el("th", {}, "flow"), el("th", {}, "packets"), el("th", {}, "bytes"), el("th", {}, "share"),
    ...(joined ? [el("th", {}, word("net CPU", WORDS.netCpu))] : []));
  const flows = (sk.top || []).map((f) => el("tr", {}, el("td", {}, `${f.flow.proto} ${f.flow.src}:${f.flow.sport} → ${f.flow.dst}:${f.flow.dport}`), el("td", {}, fmtInt(f.packets)), el("td", {}, fmtInt(f.bytes)), el("td", {}, fmtPart(f.share * 100) + " %"),
    ...(joined ? [el("td", {}, netMs(f))] : [])));
  $("sketch").replaceChildren(summary, el("table", {}, el("thead", {}, head), el("tbody", {}, ...flows)));
}

// Where a program runs, as stat writes it: "xdp on eth0 (driver), link".
const attachText = (a) => a.hook + (a.iface ? ` on ${a.iface}` : "") + (a.mode ? ` (${a.mode})` : "") +
  (a.cgroup_id != null ? ` cgroup id ${a.cgroup_id}` : "") + (a.link ? ", link" : ", no link");

// The host's BPF programs on the network path: shown once one that is not
// netto's has run, costliest first, as stat and top list them.
function renderPrograms(s) {
  const n = s.network_programs;
  const shown = n && n.programs.some((p) => !p.own && p.runs > 0);
  $("programs-panel").hidden = !shown;
  if (!shown) {
    return;
  }
  $("programs-basis").textContent = n.basis === "slice"
    ? `last interval, estimated from ${(n.stats_held_s * 1e3).toFixed(0)} ms of BPF statistics`
    : n.basis === "whole_interval" ? "last interval, counted over the whole interval" : "not priced (no BPF statistics)";
  const head = el("tr", {}, el("th", {}, "program"), el("th", {}, "runs/s"), el("th", {}, "ns/run"),
    el("th", {}, word("% of one CPU", WORDS.percentOfOneCpu)), el("th", {}, word("share of event", WORDS.shareOfEvent)), el("th", {}, "where"));
  const programs = [...n.programs].sort((a, b) => b.run_time_ns - a.run_time_ns || a.id - b.id);
  const rows = programs.map((p) => el("tr", {},
    el("td", {}, p.name, el("small", {}, p.own ? " (netto)" : ` ${p.prog_type} #${p.id}`)),
    el("td", {}, fmtInt(s.interval_s > 0 ? p.runs / s.interval_s : 0)),
    el("td", {}, p.ns_per_run == null ? "-" : p.ns_per_run.toFixed(0)),
    el("td", {}, fmtPct(pct(p.run_time_ns, s.interval_s))),
    el("td", {}, p.share_percent == null ? "-" : `~${p.share_percent.toFixed(1)} % of ${p.event}`),
    el("td", {}, p.attach.length ? p.attach.map(attachText).join("; ") : `${p.hook} (not located)`)));
  $("programs").replaceChildren(el("thead", {}, head), el("tbody", {}, ...rows));
}

// The flame graph is inferno's SVG in an <object>, so its own script
// (zoom, search) runs. A new picture loads beside the old one and replaces
// it once drawn; clicking into it (zooming) pauses updates.
function refreshFlame() {
  if (view.flamePaused) {
    return;
  }
  if (view.flameLoading) {
    view.flameWanted = true;
    return;
  }
  view.flameLoading = true;
  view.flameWanted = false;
  const box = $("flame-box");
  const next = el("object", {
    type: "image/svg+xml",
    id: "flame-next",
    data: `/api/v1/flame/svg?seconds=${$("flame-window").value}&weight=${$("flame-weight").value}&at=${view.lastTs}`,
  }, el("p", { class: "empty" }, "No stack samples in this window yet."));
  next.style.position = "absolute";
  next.style.visibility = "hidden";
  const done = (loaded) => {
    next.style.position = "";
    next.style.visibility = "";
    box.replaceChildren(loaded ? next : el("p", { class: "empty" }, "No stack samples in this window yet."));
    next.id = loaded ? "flame" : "";
    if (loaded && next.contentDocument) {
      next.contentDocument.addEventListener("click", () => pauseFlame(true));
    }
    view.flameLoading = false;
    if (view.flameWanted) {
      refreshFlame();
    }
  };
  next.addEventListener("load", () => done(true), { once: true });
  next.addEventListener("error", () => done(false), { once: true });
  box.append(next);
}

function pauseFlame(paused) {
  view.flamePaused = paused;
  $("flame-resume").hidden = !paused;
  if (!paused) {
    refreshFlame();
  }
}

// Older snapshots under the newest: the history arrives after the page
// has painted the newest, which `add` alone would turn away.
function addOlder(snapshots) {
  const newest = view.history[view.history.length - 1];
  const older = snapshots.filter((s) => !newest || s.ts < newest.ts);
  view.history = older.concat(view.history);
  for (const snapshot of view.history) {
    view.lastTs = Math.max(view.lastTs, snapshot.ts);
  }
  while (view.history.length > 1 && view.history[0].ts <= view.lastTs - view.spanS) {
    view.history.shift();
  }
}

async function start() {
  $("one-cpu").title = WORDS.percentOfOneCpu;
  $("flame-resume").addEventListener("click", () => pauseFlame(false));
  $("flame-window").addEventListener("change", () => refreshFlame());
  $("flame-weight").addEventListener("change", () => refreshFlame());
  // The newest snapshot first, and painted at once: it is small, where the
  // history holds minutes of snapshots (none before the first interval).
  try {
    const [about, newest] = await Promise.all([
      getJSON("/api/v1/source"),
      getJSON("/api/v1/snapshot").catch(() => null),
    ]);
    showSource(about);
    if (newest) {
      add(newest);
    }
  } catch (error) {
    setStatus("cannot reach netto: " + error.message, "ended");
    return;
  }
  render();
  try {
    addOlder(await getJSON("/api/v1/history"));
    render();
  } catch (error) {
    // The chart starts from the newest snapshot instead.
  }
  const since = Number.isFinite(view.lastTs) ? `?since=${view.lastTs}` : "";
  const stream = new EventSource("/api/v1/stream" + since);
  // A replay is no live measurement: the badge says which it is.
  stream.addEventListener("open", () => setStatus(view.live ? "live" : "replaying", view.live ? "live" : "replay"));
  stream.addEventListener("snapshot", (message) => {
    if (add(JSON.parse(message.data))) {
      render();
    }
  });
  stream.addEventListener("end", () => {
    stream.close();
    setStatus(view.live ? "measuring stopped" : "replay finished", "ended");
  });
  // EventSource reconnects by itself; say so meanwhile.
  stream.addEventListener("error", () => {
    if (stream.readyState !== EventSource.CLOSED) {
      setStatus("reconnecting…");
    }
  });
}

start();
