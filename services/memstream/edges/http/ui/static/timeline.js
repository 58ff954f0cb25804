// A user's timeline: the tree drawn along time, one row per level, fetched for the range in
// view only (level by level, paged), so a user with years of messages opens as fast as one
// with a week. Zooming changes the address (?start=&end=), so every view can be linked to.
import { api, allPages, enc, sinceSignIn } from "./api.js";
import { clear, el, panel, table, textBlock, unavailable, when } from "./dom.js";
import { confirmForget } from "./confirm.js";
import { links, page, requireSignIn, route } from "./layout.js";

const DAY = 86_400_000;
// Per level: its name, the widest range (days) it is drawn for, and how far a node may
// reach past its end time (the API selects by end time; a month ends after the range does).
const LEVELS = [
  { level: 5, name: "Months", widest: Infinity, reach: 31 },
  { level: 4, name: "Weeks", widest: 1100, reach: 7 },
  { level: 3, name: "Days", widest: 400, reach: 1 },
  { level: 2, name: "Sessions", widest: 45, reach: 1 },
  { level: 1, name: "Exchanges", widest: 2, reach: 0 },
];
const MOST_PER_LEVEL = 2000;
const LISTED = 200;

const { user } = route();

function rangeFromAddress() {
  const params = new URLSearchParams(location.search);
  const start = Date.parse(params.get("start") || "");
  const end = Date.parse(params.get("end") || "");
  return start < end ? { start, end } : null;
}

async function overviewOf() {
  try {
    return { overview: await api(`/v1/users/${enc(user)}/overview`) };
  } catch (error) {
    if (error.status === 404 && !error.message.includes("Not Found")) return { unknown: true };
    return { error };
  }
}

// The whole span of the user's memories: from the overview, else from the months (few).
async function wholeSpan(overview) {
  if (overview?.first_at && overview?.last_at) {
    return { start: Date.parse(overview.first_at), end: Date.parse(overview.last_at) };
  }
  const months = await allPages(`/v1/users/${enc(user)}/memories`, { level: 5, limit: 500 });
  if (months.length === 0) return null;
  return {
    start: Math.min(...months.map((m) => Date.parse(m.t_start))),
    end: Math.max(...months.map((m) => Date.parse(m.t_end))),
  };
}

function padded({ start, end }) {
  const pad = Math.max((end - start) * 0.02, 60_000);
  return { start: start - pad, end: end + pad };
}

async function nodesIn(level, range) {
  const nodes = await allPages(
    `/v1/users/${enc(user)}/memories`,
    {
      level: level.level,
      start: new Date(range.start).toISOString(),
      end: new Date(range.end + level.reach * DAY).toISOString(),
      limit: 500,
    },
    MOST_PER_LEVEL,
  );
  return nodes.filter((n) => Date.parse(n.t_start) <= range.end && Date.parse(n.t_end) >= range.start);
}

function place(bar, range, from, to) {
  const span = range.end - range.start;
  const left = Math.max(0, (from - range.start) / span);
  const right = Math.min(1, (to - range.start) / span);
  bar.style.left = `${(left * 100).toFixed(3)}%`;
  bar.style.width = `max(3px, ${((right - left) * 100).toFixed(3)}%)`;
}

function bar(node, level, range, zoom) {
  const from = Date.parse(node.t_start);
  const to = Date.parse(node.t_end);
  const label = `${when(node.t_start)} – ${when(node.t_end)}: ${node.text.slice(0, 200)}`;
  const classes = `bar level-${level.level}${node.degraded ? " degraded" : ""}`;
  const element =
    level.level >= 3
      ? el("button", {
          type: "button",
          class: classes,
          title: label,
          "aria-label": `zoom to ${when(node.t_start)}`,
          onclick: () => zoom(padded({ start: from, end: Math.max(to, from + 3_600_000) })),
        })
      : el("a", { class: classes, title: label, href: links.memory(user, node.id) });
  place(element, range, from, to);
  return element;
}

function row(level, nodes, count, range, zoom) {
  const track = el("div", { class: "track" }, nodes.map((n) => bar(n, level, range, zoom)));
  const total = count === undefined ? "" : ` · ${count} in all`;
  const caption = `${level.name} (L${level.level}) · ${nodes.length} in view${total}`;
  return el("div", { class: "row", "data-level": level.level }, el("div", { class: "label", text: caption }), track);
}

function pendingRow(overview, range) {
  const windows = (overview?.pending_windows || []).filter(
    (w) => Date.parse(w.start) <= range.end && (!w.end || Date.parse(w.end) >= range.start),
  );
  if (windows.length === 0) return null;
  const bars = windows.map((w) => {
    const b = el("span", { class: "bar pending", title: `L${w.level} window pending since ${when(w.start)}` });
    place(b, range, Date.parse(w.start), w.end ? Date.parse(w.end) : range.end);
    return b;
  });
  const label = el("div", { class: "label", text: `Pending windows · ${windows.length}` });
  return el("div", { class: "row" }, label, el("div", { class: "track" }, bars));
}

// Marks along the axis: month starts over a wide range, day starts over a narrower one,
// hours within a day or two; never more than about a dozen labels.
function ticks(range) {
  const span = range.end - range.start;
  const marks = [];
  const at = new Date(range.start);
  if (span > 60 * DAY) {
    at.setUTCHours(0, 0, 0, 0);
    at.setUTCDate(1);
    const step = Math.max(1, Math.ceil(span / (30 * DAY) / 12));
    for (; at.getTime() <= range.end; at.setUTCMonth(at.getUTCMonth() + step)) marks.push([at.getTime(), at.toISOString().slice(0, 7)]);
  } else if (span > 2 * DAY) {
    at.setUTCHours(0, 0, 0, 0);
    const step = Math.max(1, Math.ceil(span / DAY / 12));
    for (; at.getTime() <= range.end; at.setUTCDate(at.getUTCDate() + step)) marks.push([at.getTime(), at.toISOString().slice(5, 10)]);
  } else {
    at.setUTCMinutes(0, 0, 0);
    const step = Math.max(1, Math.ceil(span / 3_600_000 / 12));
    for (; at.getTime() <= range.end; at.setUTCHours(at.getUTCHours() + step)) marks.push([at.getTime(), at.toISOString().slice(11, 16)]);
  }
  const labels = marks
    .filter(([t]) => t >= range.start)
    .map(([t, text]) => {
      const label = el("span", { class: "tick", text });
      label.style.left = `${(((t - range.start) / span) * 100).toFixed(3)}%`;
      return label;
    });
  return el("div", { class: "row" }, el("div", { class: "label", text: "UTC" }), el("div", { class: "ticks" }, labels));
}

function listing(nodes) {
  const shown = nodes.slice(0, LISTED);
  const items = shown.map((n) =>
    el(
      "li",
      { class: n.degraded ? "degraded" : null },
      el("a", { href: links.memory(user, n.id), text: `${n.level_name} · ${when(n.t_start)}` }),
      textBlock(n.text.length > 400 ? `${n.text.slice(0, 400)}…` : n.text),
    ),
  );
  const more = nodes.length > shown.length ? el("p", { text: `…and ${nodes.length - shown.length} more: zoom in.` }) : null;
  return panel("In view", el("ol", { class: "memories" }, items), more);
}

function stateOf(overview) {
  const counts = overview.counts || {};
  return panel(
    "Consolidation",
    table(
      ["level", "memories"],
      [5, 4, 3, 2, 1].map((l) => [LEVELS[5 - l].name, counts[String(l)] ?? 0]),
    ),
    el("p", { text: `Last written: ${when(overview.last_written_at)} · degraded: ${overview.degraded}` }),
    el("p", { text: `Pending windows: ${(overview.pending_windows || []).length}` }),
  );
}

async function knowledge() {
  const [entities, facts] = await Promise.allSettled([
    api(`/v1/users/${enc(user)}/entities?limit=10`),
    api(`/v1/users/${enc(user)}/facts`),
  ]);
  const names =
    entities.status === "fulfilled"
      ? el("ul", {}, entities.value.entities.map((e) => el("li", { dir: "auto", text: `${e.name} (${e.kind}, ${e.mentions})` })))
      : unavailable("Entities", entities.reason);
  const held = facts.status === "fulfilled" ? facts.value.facts.slice(0, 30) : [];
  const current =
    facts.status === "rejected"
      ? unavailable("Facts", facts.reason)
      : held.length
        ? el("ul", {}, held.map((f) => el("li", { dir: "auto", text: `${f.text} (since ${when(f.valid_from)})` })))
        : el("p", { text: "No fact holds now." });
  return panel("What it knows", el("h3", { text: "Entities" }), names, el("h3", { text: "Current facts" }), current);
}

function forgetUser(main) {
  const status = el("p", { role: "status" });
  const button = el("button", {
    type: "button",
    class: "danger",
    text: "Forget this user…",
    onclick: async () => {
      const sure = await confirmForget({
        title: "Forget this user",
        text: "Every memory, message and fact of this user is deleted from every store.",
        typed: user,
      });
      if (!sure) return;
      status.textContent = "Forgetting…";
      const done = await api(`/v1/users/${enc(user)}`, { method: "DELETE" });
      status.textContent = `Forgotten: ${done.redis_keys} keys and ${done.qdrant_points} vectors deleted.`;
      location.assign(links.timeline(user));
    },
  });
  main.append(panel("Forget", button, status));
}

async function draw(main, overviewResult) {
  const overview = overviewResult.overview;
  const view = el("div", { id: "timeline-view" });
  main.append(view);
  const whole = await wholeSpan(overview);
  if (!whole) {
    view.append(el("p", { class: "notice", text: "No memories for this user yet." }));
    return;
  }
  const render = async () => {
    const range = rangeFromAddress() || padded(whole);
    const visible = LEVELS.filter((l) => range.end - range.start <= l.widest * DAY);
    const nodes = await Promise.all(visible.map((l) => nodesIn(l, range)));
    const zoom = (to) => {
      history.pushState(null, "", links.timeline(user, { start: new Date(to.start).toISOString(), end: new Date(to.end).toISOString() }));
      render();
    };
    const span = range.end - range.start;
    const controls = el(
      "div",
      { class: "controls" },
      el("button", { type: "button", text: "Whole span", onclick: () => zoom(padded(whole)) }),
      el("button", { type: "button", text: "Zoom out", onclick: () => zoom({ start: range.start - span, end: range.end + span }) }),
      el("span", { class: "range", text: `${when(new Date(range.start).toISOString())} → ${when(new Date(range.end).toISOString())}` }),
    );
    const counts = overview?.counts || {};
    const rows = visible.map((l, i) => row(l, nodes[i], counts[String(l.level)], range, zoom));
    const hint = visible.length < LEVELS.length ? el("p", { class: "hint", text: "Click a month, week or day to zoom in; sessions and exchanges appear as the range narrows." }) : null;
    const axis = el("div", { class: "axis", id: "axis" }, ticks(range), rows, pendingRow(overview, range));
    clear(view).append(...[controls, axis, hint, listing(nodes[nodes.length - 1])].filter(Boolean));
  };
  window.addEventListener("popstate", render);
  await render();
}

if (await requireSignIn()) {
  await page(user, async (main) => {
    main.append(el("h1", { dir: "auto", text: `Timeline of ${user}` }));
    const overviewResult = await overviewOf();
    const side = el("aside", { class: "side" });
    if (overviewResult.unknown) {
      main.append(el("p", { class: "notice", text: "No memories for this user." }));
      return;
    }
    await draw(main, overviewResult);
    main.dataset.ready = "true";
    performance.mark("timeline-interactive");
    window.memstreamTimings = { signInToInteractiveMs: sinceSignIn() };
    main.append(side);
    side.append(overviewResult.overview ? stateOf(overviewResult.overview) : unavailable("The consolidation overview", overviewResult.error));
    side.append(await knowledge());
    forgetUser(side);
  });
}
