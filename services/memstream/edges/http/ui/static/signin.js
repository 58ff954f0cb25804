// Sign-in: a key for this tab only; skipped when the API needs none (loopback `memstream up`).
import { keyWorks, signIn } from "./api.js";

const params = new URLSearchParams(location.search);
const form = document.getElementById("signin");
const message = document.getElementById("message");

// Only the explorer's own pages are gone back to after sign-in.
function next() {
  const target = params.get("next") || "";
  return target.startsWith("/ui/") && !target.startsWith("//") ? target : "/ui/users";
}

function say(text) {
  message.textContent = text;
  message.hidden = !text;
}

async function start() {
  if (await keyWorks(null)) {
    signIn("");
    location.replace(next());
    return;
  }
  if (params.get("expired")) say("The key was refused: sign in again.");
  form.hidden = false;
  form.elements.key.focus();
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const key = form.elements.key.value.trim();
  if (!key) {
    say("Enter an API key.");
    return;
  }
  say("Checking the key…");
  try {
    if (!(await keyWorks(key))) {
      say("That API key was not accepted. Check it and try again.");
      return;
    }
  } catch (error) {
    say(`The API did not answer: ${error.message}`);
    return;
  }
  signIn(key);
  location.assign(next());
});

start().catch((error) => say(`The API did not answer: ${error.message}`));
