// What every page but sign-in shares: the address's ids, the header, the sign-in check.
import { enc, keyWorks, savedKey, signOut } from "./api.js";
import { el } from "./dom.js";

// The ids in the address: /ui/users/{user}/memories/{memory} and the like.
export function route() {
  const parts = location.pathname.split("/").slice(2).map(decodeURIComponent);
  const at = (name) => {
    const i = parts.indexOf(name);
    return i >= 0 && i + 1 < parts.length ? parts[i + 1] : null;
  };
  return { user: at("users"), memory: at("memories"), message: at("messages") };
}

export const links = {
  users: () => "/ui/users",
  timeline: (user, range) => {
    const path = `/ui/users/${enc(user)}`;
    return range ? `${path}?start=${enc(range.start)}&end=${enc(range.end)}` : path;
  },
  memory: (user, id) => `/ui/users/${enc(user)}/memories/${enc(id)}`,
  message: (user, id, from) =>
    `/ui/users/${enc(user)}/messages/${enc(id)}${from ? `?from=${enc(from)}` : ""}`,
  recall: (user) => `/ui/users/${enc(user)}/recall`,
};

// Sends the tab to sign-in unless it holds a key or the API needs none.
export async function requireSignIn() {
  if (savedKey() || (await keyWorks(null))) return true;
  const next = encodeURIComponent(location.pathname + location.search);
  location.assign(`/ui/?next=${next}`);
  return false;
}

export function header(user) {
  const nav = el(
    "nav",
    { "aria-label": "explorer" },
    el("a", { href: links.users(), text: "Users" }),
    user ? el("a", { href: links.timeline(user), text: "Timeline" }) : null,
    user ? el("a", { href: links.recall(user), text: "Recall" }) : null,
    savedKey()
      ? el("button", {
          type: "button",
          class: "link",
          text: "Sign out",
          onclick: () => {
            signOut();
            location.assign("/ui/");
          },
        })
      : null,
  );
  const title = el("span", { class: "brand", text: "memstream explorer" });
  const who = user ? el("span", { class: "who", dir: "auto", text: user }) : null;
  return el("header", { class: "top" }, title, who, nav);
}

// Renders the page's header, then `body(main)`; an error becomes a notice, not a blank page.
export async function page(user, body) {
  const main = document.querySelector("main");
  document.body.prepend(header(user));
  try {
    await body(main);
  } catch (error) {
    main.append(el("div", { class: "notice error", role: "alert", text: String(error.message) }));
    throw error;
  }
}
