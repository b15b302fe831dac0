// The project picker (papers.pickers.ProjectPicker): an ARIA combobox. Typing part of a
// project's name lists the matches (the projects app's match endpoint, which checks what
// this user may see); arrow keys move through them, Enter or a click chooses, Escape closes.
// The form submits the chosen project's id: the field's name moves from the text box to a
// hidden input. A form sent with text but no choice is stopped with a message, the text kept.
// A module, so a page with several pickers still runs this once.

const DELAY_MS = 150;

function setUp(root) {
  const input = root.querySelector("input[role=combobox]");
  const value = root.querySelector(".project-picker-value");
  const listbox = root.querySelector("[role=listbox]");
  const status = root.querySelector(".project-picker-status");
  if (!input || !value || !listbox || !status || root.dataset.ready) return;
  root.dataset.ready = "true";
  value.name = input.name;
  input.removeAttribute("name");
  let options = [];
  let active = -1;
  let timer = 0;
  let asked = 0;

  const say = (text, isError = false) => {
    status.textContent = text;
    status.classList.toggle("error", isError);
    if (isError) input.setAttribute("aria-invalid", "true");
    else input.removeAttribute("aria-invalid");
  };

  const close = () => {
    listbox.hidden = true;
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
    active = -1;
  };

  const highlight = (index) => {
    const items = listbox.querySelectorAll("[role=option]");
    items.forEach((item, i) => item.setAttribute("aria-selected", String(i === index)));
    active = index;
    if (index < 0) {
      input.removeAttribute("aria-activedescendant");
      return;
    }
    input.setAttribute("aria-activedescendant", items[index].id);
    items[index].scrollIntoView({ block: "nearest" });
  };

  const choose = (project) => {
    clearTimeout(timer);
    asked += 1; // a lookup still under way must not reopen the list
    input.value = project.name;
    value.value = project.id;
    close();
    say(`Chosen: ${project.name}`);
  };

  const show = (projects, typed) => {
    options = projects;
    listbox.replaceChildren(
      ...projects.map((project, i) => {
        const item = document.createElement("li");
        item.id = `${listbox.id}-${i}`;
        item.setAttribute("role", "option");
        item.setAttribute("aria-selected", "false");
        item.dataset.projectId = project.id;
        const count = document.createElement("span");
        count.className = "count";
        count.textContent = ` · ${project.paper_count} paper${project.paper_count === 1 ? "" : "s"}`;
        item.append(project.name, count);
        // mousedown, not click: the box must not lose focus (and close) first.
        item.addEventListener("mousedown", (event) => {
          event.preventDefault();
          choose(project);
        });
        return item;
      }),
    );
    listbox.hidden = projects.length === 0;
    input.setAttribute("aria-expanded", String(projects.length > 0));
    active = -1;
    if (projects.length === 0) say(typed ? `No project matches “${typed}”.` : "No projects.", true);
    else say(`${projects.length} project${projects.length === 1 ? "" : "s"}: arrow keys to move, Enter to choose.`);
  };

  const matches = async (typed) => {
    const url = new URL(root.dataset.source, window.location.href);
    url.searchParams.set("q", typed);
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(body.error || `the server answered ${response.status}`);
    return body.projects;
  };

  const look = async () => {
    const typed = input.value.trim();
    const ticket = ++asked;
    try {
      const projects = await matches(typed);
      if (ticket === asked) show(projects, typed);
    } catch (error) {
      if (ticket === asked) say(`Projects could not be listed: ${error.message}`, true);
    }
  };

  input.addEventListener("input", () => {
    value.value = "";
    close(); // its options were for the text before this change
    clearTimeout(timer);
    timer = setTimeout(look, DELAY_MS);
  });
  input.addEventListener("keydown", (event) => {
    const open = !listbox.hidden;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      if (!open) {
        look();
        return;
      }
      const step = event.key === "ArrowDown" ? 1 : -1;
      highlight((active + step + options.length) % options.length);
    } else if (event.key === "Enter" && open && active >= 0) {
      event.preventDefault();
      choose(options[active]);
    } else if (event.key === "Escape" && open) {
      event.preventDefault();
      close();
    }
  });
  input.addEventListener("blur", close);

  const form = input.form;
  if (!form) return;
  form.addEventListener("submit", async (event) => {
    const typed = input.value.trim();
    if (!typed || value.value) return;
    // Text but no choice: accept it only when it is exactly one project's name.
    event.preventDefault();
    try {
      const exact = (await matches(typed)).filter((p) => p.name.toLowerCase() === typed.toLowerCase());
      if (exact.length === 1) {
        choose(exact[0]);
        form.requestSubmit(event.submitter || undefined);
        return;
      }
      say(`Choose a project from the list: none is named “${typed}”.`, true);
    } catch (error) {
      say(`Projects could not be listed: ${error.message}`, true);
    }
    input.focus();
  });
}

function setUpAll() {
  document.querySelectorAll(".project-picker").forEach(setUp);
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUpAll);
else setUpAll();
