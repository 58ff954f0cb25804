// Recall, explained: what recall returns for a query and why (the trace of POST /v1/recall
// with explain), drawn as tables and a bar chart of the stages' times.
import { api, ApiError } from "./api.js";
import { clear, el, panel, score, table, textBlock, unavailable, when } from "./dom.js";
import { links, page, requireSignIn, route } from "./layout.js";

const { user } = route();

async function recall(body) {
  try {
    return await api("/v1/recall", { method: "POST", body: { ...body, explain: true } });
  } catch (error) {
    // A server without the trace refuses the unknown field: recall without it.
    if (!(error instanceof ApiError) || error.status !== 422 || !error.message.includes("explain")) throw error;
    return api("/v1/recall", { method: "POST", body });
  }
}

function memories(result) {
  const items = result.memories.map((m) =>
    el(
      "li",
      {},
      el("a", { href: links.memory(user, m.id), text: `${m.level_name} · ${when(m.t_start)} · score ${score(m.score)}` }),
      textBlock(m.text.length > 300 ? `${m.text.slice(0, 300)}…` : m.text),
    ),
  );
  const empty = el("p", { text: "Nothing recalled." });
  return panel(`Recalled (${result.memories.length} memories, ${result.tokens} tokens)`, items.length ? el("ol", { class: "memories" }, items) : empty);
}

function plan(p) {
  const rows = [
    ["complexity", p.complexity],
    ["keywords", p.keywords.join(", ")],
    ["levels", p.levels.join(", ")],
    ["state question", String(p.state_question)],
    ["query time", when(p.query_time)],
    ["time range", p.time_range ? `${when(p.time_range.start)} → ${when(p.time_range.end)}` : "—"],
    ["entities", p.entities.join(", ") || "—"],
    ["top k / pool", `${p.top_k} / ${p.pool}`],
  ];
  return panel("Plan", table(["", ""], rows));
}

const SHOWN = 15;

// The first rows of a long table, the rest folded under a <details> (no script needed).
function folded(headings, rows) {
  if (rows.length <= SHOWN) return table(headings, rows);
  const rest = el("details", {}, el("summary", { text: `${rows.length - SHOWN} more` }), table(headings, rows.slice(SHOWN)));
  return el("div", {}, table(headings, rows.slice(0, SHOWN)), rest);
}

const memoryLink = (id, level) => el("a", { href: links.memory(user, id), text: `L${level} ${id.slice(0, 12)}` });

function leaves(trace) {
  const rows = trace.leaves.map((l) => [
    l.rank,
    memoryLink(l.id, l.level),
    l.source,
    score(l.dense),
    score(l.lexical),
    score(l.fused),
    score(l.rerank),
    l.returned ? "yes" : "no",
    (l.entities || []).join(", ") || "—",
    textBlock(l.text.slice(0, 160), "span"),
  ]);
  const headings = ["rank", "memory", "found by", "dense", "lexical", "fused", "rerank", "returned", "names", "text"];
  return panel(`Leaves (${rows.length})`, folded(headings, rows));
}

function climbed(trace) {
  if (!trace.climbed.length) return panel("Climbed", el("p", { text: "No ancestor was climbed to." }));
  const rows = trace.climbed.map((c) => [memoryLink(c.id, c.level), c.from_ids.length, c.returned ? "yes" : "no"]);
  return panel(`Climbed (${rows.length})`, folded(["ancestor", "from leaves", "returned"], rows));
}

function dropped(trace) {
  if (!trace.dropped.length) return panel("Dropped", el("p", { text: "Nothing was dropped." }));
  const rows = trace.dropped.map((d) => [memoryLink(d.id, d.level), d.stage, d.reason]);
  return panel(`Dropped (${rows.length})`, folded(["memory", "stage", "reason"], rows));
}

function stages(timings) {
  const entries = Object.entries(timings);
  const longest = Math.max(1e-9, ...entries.map(([, ms]) => ms));
  const bars = entries.map(([stage, ms]) => {
    const fill = el("span", { class: "fill" });
    fill.style.width = `${((ms / longest) * 100).toFixed(1)}%`;
    return el("div", { class: "stage" }, el("span", { class: "name", text: stage }), el("span", { class: "gauge" }, fill), el("span", { class: "ms", text: `${ms.toFixed(1)} ms` }));
  });
  return panel("Stage times", el("div", { class: "stages" }, bars));
}

function explained(result) {
  const trace = result.trace;
  if (!trace) return [unavailable("The recall trace", new ApiError(501)), stages(result.timings_ms || {})];
  const facts = trace.facts.length
    ? table(["fact", "from", "until"], trace.facts.map((f) => [textBlock(f.text, "span"), when(f.valid_from), f.valid_to ? when(f.valid_to) : "holds"]))
    : el("p", { text: "No fact joined." });
  return [
    el("p", { class: "meta", text: `${trace.tokens} of ${trace.max_tokens} tokens` }),
    el("div", { class: "pair" }, plan(trace.plan), stages(trace.timings_ms)),
    leaves(trace),
    climbed(trace),
    dropped(trace),
    panel("Facts", facts),
  ];
}

function form(out) {
  const submit = async (event) => {
    event.preventDefault();
    const f = event.target;
    const body = { user_id: user, query: f.query.value };
    if (f.at.value) body.query_time = new Date(f.at.value).toISOString();
    if (f.budget.value) body.max_tokens = Number(f.budget.value);
    clear(out).append(el("p", { role: "status", text: "Recalling…" }));
    try {
      const result = await recall(body);
      clear(out).append(memories(result), ...explained(result));
      out.dataset.ready = "true";
    } catch (error) {
      clear(out).append(el("div", { class: "notice error", role: "alert", text: error.message }));
    }
  };
  return el(
    "form",
    { id: "recall", onsubmit: submit },
    el("div", { class: "field wide" }, el("label", { for: "query", text: "Query" }), el("input", { id: "query", name: "query", required: true, autocomplete: "off", dir: "auto" })),
    el("div", { class: "field" }, el("label", { for: "at", text: "Query time (optional, local)" }), el("input", { id: "at", name: "at", type: "datetime-local" })),
    el("div", { class: "field" }, el("label", { for: "budget", text: "Token budget (optional)" }), el("input", { id: "budget", name: "budget", type: "number", min: "1" })),
    el("button", { type: "submit", text: "Recall" }),
  );
}

if (await requireSignIn()) {
  await page(user, async (main) => {
    const out = el("div", { id: "recall-result" });
    main.append(el("h1", { dir: "auto", text: `Recall for ${user}` }), form(out), out);
  });
}
