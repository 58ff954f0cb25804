// One memory: its text, facts, validity, place in the tree, derivation and source messages,
// with forgetting a message from here. At /ui/users/{u}/messages/{m}?from={node} it first
// walks down from `from` to the exchange (L1) holding message m, then shows that.
import { api, enc, query } from "./api.js";
import { el, panel, table, textBlock, unavailable, when } from "./dom.js";
import { confirmForget } from "./confirm.js";
import { links, page, requireSignIn, route } from "./layout.js";

const POLL_MS = 500;
const FORGET_TIMEOUT_MS = 180_000;
const { user, memory, message } = route();

const detailOf = (id) => api(`/v1/memories/${enc(id)}${query({ user_id: user })}`);

// From a summary down its children to the exchange that cites `messageId`.
async function exchangeHolding(messageId, fromId) {
  let detail = await detailOf(fromId);
  while (detail.memory.level > 1) {
    const child = detail.children.find((c) => c.source_ids.includes(messageId));
    if (!child) return null;
    detail = await detailOf(child.id);
  }
  return detail.memory.source_ids.includes(messageId) ? detail.memory.id : null;
}

function sourceLink(messageId, fromId) {
  return el("a", { class: "source", href: links.message(user, messageId, fromId), dir: "auto", text: messageId });
}

function facts(node) {
  if (!node.facts.length) return null;
  const rows = node.facts.map((f) => [textBlock(f.text, "span"), el("span", {}, f.source_ids.map((s) => sourceLink(s, node.id)))]);
  return panel("Facts of this summary", table(["fact", "cited messages"], rows));
}

async function validity(node) {
  let body;
  try {
    body = await api(`/v1/users/${enc(user)}/facts?history=true`);
  } catch (error) {
    return panel("Facts and their validity", unavailable("Facts", error));
  }
  const sources = new Set(node.source_ids);
  const mine = body.facts.filter((f) => f.source_ids.some((s) => sources.has(s)));
  if (!mine.length) return panel("Facts and their validity", el("p", { text: "No fact was read from its messages." }));
  const rows = mine.map((f) => [textBlock(f.text, "span"), when(f.valid_from), f.valid_to ? when(f.valid_to) : "holds", f.certainty]);
  return panel("Facts and their validity", table(["fact", "from", "until", "certainty"], rows));
}

function tree(detail) {
  const { memory: node, children, ancestors } = detail;
  const up = ancestors.map((a) => el("li", {}, el("a", { href: links.memory(user, a.id), text: `${a.level_name} · ${when(a.t_start)}` })));
  const down = children.map((c) =>
    el("li", {}, el("a", { href: links.memory(user, c.id), text: `${c.level_name} · ${when(c.t_start)}` }), textBlock(c.text.slice(0, 300))),
  );
  return panel(
    "In the tree",
    el("h3", { text: "Above" }),
    up.length ? el("ul", { class: "ancestors" }, up) : el("p", { text: "Nothing: the top." }),
    el("h3", { text: `Below (${children.length})` }),
    down.length ? el("ul", { class: "children" }, down) : el("p", { text: node.level === 1 ? "Nothing: an exchange." : "No children." }),
  );
}

function derivation(node) {
  const d = node.derivation;
  if (!d) return panel("Derivation", el("p", { text: "Not recorded for this memory." }));
  const rows = Object.entries(d).map(([name, value]) => [name, value]);
  return panel("Derivation", table(["", ""], rows));
}

async function waitForgotten(handle, status) {
  const started = performance.now();
  while (performance.now() - started < FORGET_TIMEOUT_MS) {
    const state = await api(handle);
    if (state.status === "done") return true;
    status.textContent = `Forgetting… pending for ${Math.round((performance.now() - started) / 1000)} s`;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return false;
}

function forgetButton(node, messageId, status) {
  return el("button", {
    type: "button",
    class: "danger",
    text: `Forget message ${messageId}…`,
    onclick: async () => {
      const sure = await confirmForget({
        title: "Forget this message",
        text: `Message ${messageId} is deleted everywhere; the memories above it are written again without it.`,
      });
      if (!sure) return;
      status.textContent = "Forgetting…";
      const reply = await api(`/v1/users/${enc(user)}/messages:forget`, { method: "POST", body: { message_ids: [messageId] } });
      const done = await waitForgotten(reply.handles[0], status);
      status.textContent = done ? "Forgotten." : "Still pending: check again later.";
      if (done) location.replace(node.parent_id ? links.memory(user, node.parent_id) + "?forgot=" + enc(messageId) : links.timeline(user));
    },
  });
}

function sources(node) {
  if (node.level === 1) {
    const status = el("p", { role: "status", id: "forget-status" });
    return panel(
      "Source messages",
      table(["message", "time"], node.source_ids.map((s) => [s, when(node.t_start)])),
      textBlock(node.text, "blockquote"),
      el("div", { class: "actions" }, node.source_ids.map((s) => forgetButton(node, s, status))),
      status,
    );
  }
  const cited = node.source_ids.map((s) => el("li", {}, sourceLink(s, node.id)));
  return panel(`Source messages (${node.source_ids.length})`, el("ul", { class: "sources" }, cited));
}

async function show(main, id) {
  let detail;
  try {
    detail = await detailOf(id);
  } catch (error) {
    if (error.status !== 404) throw error;
    main.append(el("p", { class: "notice", text: "This memory is gone (forgotten, or rewritten under a new id)." }));
    main.append(el("a", { href: links.timeline(user), text: "Back to the timeline" }));
    return;
  }
  const node = detail.memory;
  const forgot = new URLSearchParams(location.search).get("forgot");
  const parts = [
    el("h1", { text: `${node.level_name} (L${node.level}) · ${when(node.t_start)} – ${when(node.t_end)}` }),
    forgot ? el("p", { class: "notice", role: "status", dir: "auto", text: `Message ${forgot} was forgotten; this is the memory above it now.` }) : null,
    el("p", { class: "meta", text: `version ${node.version}${node.degraded ? " · degraded (a fallback wrote it)" : ""} · id ${node.id}` }),
    panel("Text", textBlock(node.text, "div")),
    facts(node),
    await validity(node),
    sources(node),
    tree(detail),
    derivation(node),
  ];
  main.append(...parts.filter(Boolean)); // append() would write a null as the text "null"
}

if (await requireSignIn()) {
  await page(user, async (main) => {
    if (message) {
      const from = new URLSearchParams(location.search).get("from");
      const found = from ? await exchangeHolding(message, from) : null;
      if (found) location.replace(links.memory(user, found));
      else main.append(el("p", { class: "notice", dir: "auto", text: `No memory holds message ${message} any more.` }));
      return;
    }
    await show(main, memory);
    main.dataset.ready = "true";
  });
}
