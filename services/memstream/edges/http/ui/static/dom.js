// Building the page from data. Text goes in through textContent only: nothing a memory says
// is ever parsed as markup. Links are built from ids by the explorer itself (ui paths).

export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = String(value);
    else if (name === "class") node.className = value;
    else if (name === "href") node.setAttribute("href", safeHref(value));
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// Only the explorer's own pages are linked to: a stored `javascript:` text never becomes one.
function safeHref(value) {
  const text = String(value);
  return text.startsWith("/ui/") ? text : "/ui/";
}

// A block of user text: the browser picks its direction, long words wrap.
export function textBlock(text, tag = "p") {
  return el(tag, { class: "user-text", dir: "auto", text });
}

export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

export function panel(title, ...children) {
  return el("section", { class: "panel" }, el("h2", { text: title }), ...children);
}

// What a page shows when a route is missing (an older server) or fails.
export function unavailable(what, error) {
  const missing = error && (error.status === 404 || error.status === 501);
  const reason = missing ? "this server does not offer it" : error ? error.message : "";
  return el(
    "div",
    { class: "notice", role: "status" },
    el("strong", { text: `${what}: not available` }),
    reason ? el("span", { text: ` (${reason}).` }) : ".",
  );
}

export function when(iso) {
  if (!iso) return "—";
  const at = new Date(iso);
  return Number.isNaN(at.getTime()) ? String(iso) : at.toISOString().replace(".000Z", "Z");
}

// A table; headings of empty strings only (a list of names and values) make no header row.
export function table(headings, rows) {
  const head = headings.some(Boolean)
    ? el("thead", {}, el("tr", {}, headings.map((h) => el("th", { scope: "col", text: h }))))
    : null;
  return el(
    "table",
    {},
    head,
    el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((c) => cellOf(c))))),
  );
}

function cellOf(value) {
  if (value instanceof Node) return el("td", {}, value);
  return el("td", { dir: "auto", text: value === null || value === undefined ? "—" : value });
}

export function score(value) {
  return typeof value === "number" ? value.toFixed(3) : "—";
}
