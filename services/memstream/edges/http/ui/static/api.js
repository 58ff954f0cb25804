// The JSON API as the pages use it: the bearer key of this tab, and errors with their status.
// The key lives in sessionStorage: per tab, gone when the tab closes, never in an address.

const KEY = "memstream.key";
const SIGNED_IN_AT = "memstream.signedInAt";

export class ApiError extends Error {
  constructor(status, detail) {
    super(detail || `HTTP ${status}`);
    this.status = status;
  }
}

export function savedKey() {
  return sessionStorage.getItem(KEY);
}

export function signIn(key) {
  sessionStorage.setItem(KEY, key);
  sessionStorage.setItem(SIGNED_IN_AT, String(performance.timeOrigin + performance.now()));
}

export function signOut() {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(SIGNED_IN_AT);
}

// Milliseconds since the sign-in of this tab (for the benchmark's mark), or null.
export function sinceSignIn() {
  const at = Number(sessionStorage.getItem(SIGNED_IN_AT));
  return at ? performance.timeOrigin + performance.now() - at : null;
}

// Whether `key` (or none) opens the API: 401 means no; any other answer means the gate let
// the request through, whatever the route made of it.
export async function keyWorks(key) {
  const headers = key ? { Authorization: `Bearer ${key}` } : {};
  const reply = await fetch("/v1/users?limit=1", { headers, cache: "no-store" });
  return reply.status !== 401;
}

function problem(body, status) {
  if (body && typeof body.detail === "string") return body.detail;
  if (body && Array.isArray(body.detail)) {
    return body.detail.map((d) => `${(d.loc || []).join(".")}: ${d.msg}`).join("; ");
  }
  return `HTTP ${status}`;
}

export async function api(path, { method = "GET", body } = {}) {
  const headers = { Accept: "application/json" };
  const key = savedKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const reply = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store",
  });
  let parsed = null;
  try {
    parsed = await reply.json();
  } catch {
    parsed = null;
  }
  if (reply.status === 401) {
    // The key went stale (or was never given): back to sign-in, then back here.
    signOut();
    const next = encodeURIComponent(location.pathname + location.search);
    location.assign(`/ui/?next=${next}&expired=1`);
  }
  if (!reply.ok) throw new ApiError(reply.status, problem(parsed, reply.status));
  return parsed;
}

export const enc = encodeURIComponent;

export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : "";
}

// Every item of a paged route, following next_cursor up to `most` items.
export async function allPages(path, params, most = 5000) {
  const items = [];
  let cursor = null;
  do {
    const page = await api(path + query({ ...params, cursor }));
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor && items.length < most);
  return items;
}
