// Operators' search over users by id prefix, paged; open any user by id when search is absent.
import { api, query } from "./api.js";
import { clear, el, panel, table, unavailable, when } from "./dom.js";
import { links, page, requireSignIn } from "./layout.js";

const PAGE_SIZE = 25;

function results(main) {
  const list = el("div", { id: "results" });
  const more = el("button", { type: "button", hidden: true, text: "More users" });
  let prefix = "";
  let cursor = null;

  async function load(reset) {
    if (reset) {
      clear(list);
      cursor = null;
    }
    let body;
    try {
      body = await api(`/v1/users${query({ prefix, limit: PAGE_SIZE, cursor })}`);
    } catch (error) {
      clear(list).append(unavailable("User search", error));
      more.hidden = true;
      return;
    }
    const rows = body.items.map((u) => [
      el("a", { href: links.timeline(u.user_id), dir: "auto", text: u.user_id }),
      when(u.last_seen),
      u.memories ?? "—",
    ]);
    if (reset && rows.length === 0) list.append(el("p", { text: "No user has that prefix." }));
    else list.append(table(["user", "last seen", "memories"], rows));
    cursor = body.next_cursor;
    more.hidden = !cursor;
  }

  const onsubmit = (event) => {
    event.preventDefault();
    prefix = event.target.prefix.value;
    load(true);
  };
  const search = el(
    "form",
    { role: "search", onsubmit },
    el("label", { for: "prefix", text: "User id starts with" }),
    el("input", { id: "prefix", name: "prefix", autocomplete: "off" }),
    el("button", { type: "submit", text: "Search" }),
  );
  more.addEventListener("click", () => load(false));
  main.append(panel("Users", search, list, more));
  return load(true);
}

function openById(main) {
  const form = el(
    "form",
    {
      onsubmit: (e) => {
        e.preventDefault();
        const id = e.target.user.value.trim();
        if (id) location.assign(links.timeline(id));
      },
    },
    el("label", { for: "user", text: "User id" }),
    el("input", { id: "user", name: "user", autocomplete: "off", required: true }),
    el("button", { type: "submit", text: "Open timeline" }),
  );
  main.append(panel("Open a user", form));
}

if (await requireSignIn()) {
  await page(null, async (main) => {
    openById(main);
    await results(main);
  });
}
