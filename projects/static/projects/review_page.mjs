// A review's page in the admin (projects/review/admin.py): screening one record at a time
// without reloading the page, and following a review while a step works.
//
// Screening: the panel's buttons belong to #screening-form, a plain form posting to the
// review's screen/ view (which works without this script). Here a submit of that form goes
// as JSON to the panel's data-json-url instead (projects/review/screening_views.py); the
// answer's `html` replaces the panel, `figures_html` the PRISMA diagram and recall curve,
// and the status line names the recorded paper by its title. Keys, ignored while typing in
// a field: i include, e exclude, m maybe (undecided: the record comes back after the
// others), r the reason box (Enter there excludes with the reason, Esc leaves it). The
// reason goes with an exclusion or a maybe.
const form = document.getElementById("screening-form");
const status = document.getElementById("screening-status");
const KEYS = new Set(["i", "e", "m"]);
let busy = false;

function panel() {
  return document.getElementById("screening-panel");
}

function say(message, isError = false) {
  if (!status) return;
  status.textContent = message;
  status.classList.toggle("errornote", isError);
}

function csrfToken() {
  const field = form && form.querySelector("input[name=csrfmiddlewaretoken]");
  return field ? field.value : "";
}

function replace(id, html) {
  const current = document.getElementById(id);
  if (!current || !html) return;
  const template = document.createElement("template");
  template.innerHTML = html.trim();
  const fresh = template.content.getElementById(id);
  if (fresh) current.replaceWith(fresh);
}

function focusRecord() {
  const record = document.getElementById("screening-record");
  if (record) record.focus();
}

async function refusal(response) {
  const answer = await response.json().catch(() => null);
  if (answer && answer.error && answer.error.message) return answer.error.message;
  if (response.status === 403) return "Refused (403): this server is read-only, or you may not decide here.";
  return `Not recorded: the server answered ${response.status}.`;
}

async function send(button) {
  const current = panel();
  if (busy || !current) return;
  const resolve = button.name === "resolve";
  const [decision, paper] = button.value.split(":");
  const reasonBox = document.getElementById(resolve ? `resolve-reason-${paper}` : "screening-reason");
  busy = true;
  current.setAttribute("aria-busy", "true");
  try {
    const response = await fetch(current.dataset.jsonUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        Accept: "application/json",
        "Content-Type": "application/json",
        "X-CSRFToken": csrfToken(),
      },
      body: JSON.stringify({
        paper: Number(paper),
        decision,
        reason: reasonBox ? reasonBox.value : "",
        resolve,
      }),
    });
    if (!response.ok) {
      say(await refusal(response), true);
      return;
    }
    const answer = await response.json();
    replace("screening-panel", answer.html);
    replace("review-figures", answer.figures_html);
    const finish = document.querySelector("button[data-finish]");
    if (finish && answer.finish_label) finish.textContent = answer.finish_label;
    say(answer.recorded.message);
    focusRecord();
  } catch (error) {
    say(`Not recorded: ${error.message}`, true);
  } finally {
    busy = false;
    const fresh = panel();
    if (fresh) fresh.removeAttribute("aria-busy");
  }
}

function press(key) {
  const button = panel() && panel().querySelector(`button[data-key="${key}"]`);
  if (button && form) form.requestSubmit(button);
}

if (form && panel()) {
  form.addEventListener("submit", (event) => {
    if (!event.submitter || !panel()) return; // no button: let the plain form post
    event.preventDefault();
    send(event.submitter);
  });
  document.addEventListener("keydown", (event) => {
    if (!panel() || event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    const target = event.target instanceof Element ? event.target : null;
    const key = event.key.toLowerCase();
    if (target && target.id === "screening-reason") {
      if (event.key === "Enter") {
        event.preventDefault();
        press("e");
      } else if (event.key === "Escape") {
        event.preventDefault();
        focusRecord();
      }
      return;
    }
    if (target && target.closest("input, textarea, select, [contenteditable]")) return;
    if (KEYS.has(key)) {
      event.preventDefault();
      press(key);
    } else if (key === "r") {
      const reason = document.getElementById("screening-reason");
      if (reason) {
        event.preventDefault();
        reason.focus();
      }
    }
  });
}

// While a step works (planning, searching), ask every two seconds whether it is done, and
// show the result when it is.
const state = document.getElementById("review-state");
if (state && state.dataset.status === "running") {
  const poll = async () => {
    try {
      const response = await fetch(state.dataset.stateUrl, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      if (response.ok && (await response.json()).status !== "running") {
        window.location.reload();
        return;
      }
    } catch {
      // the server restarting: ask again
    }
    setTimeout(poll, 2000);
  };
  setTimeout(poll, 1500);
}
