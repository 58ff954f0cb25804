// Confirmation before forgetting: a modal <dialog> (not window.confirm, which a page of
// hostile text must never be able to fire), and for a whole user, the user id typed out.
import { el } from "./dom.js";

export function confirmForget({ title, text, typed }) {
  return new Promise((resolve) => {
    const input = typed
      ? el("input", { name: "typed", autocomplete: "off", "aria-label": "Type to confirm" })
      : null;
    const go = el("button", { type: "submit", class: "danger", text: "Forget", disabled: !!typed });
    const cancel = el("button", { type: "button", text: "Cancel" });
    const form = el(
      "form",
      { method: "dialog" },
      el("h2", { text: title }),
      el("p", { dir: "auto", text }),
      typed ? el("p", {}, "Type ", el("code", { dir: "auto", text: typed }), " to confirm:") : null,
      input,
      el("div", { class: "actions" }, cancel, go),
    );
    const dialog = el("dialog", { class: "confirm" }, form);
    input?.addEventListener("input", () => (go.disabled = input.value !== typed));
    const finish = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      finish(!typed || input.value === typed);
    });
    cancel.addEventListener("click", () => finish(false));
    dialog.addEventListener("cancel", () => finish(false));
    document.body.append(dialog);
    dialog.showModal();
    (input || cancel).focus();
  });
}
