"use strict";
// A progress line for the admin's long requests (docs/ADMIN.md): exports of selected papers
// and BibTeX imports run in the request, so while it runs the page says what it is doing
// and for how long. An export is a download that leaves the page in place: the response
// sets the cookie named by the form's download_token (papers.curation), and the line then
// says the file is ready.
{
    const TOKEN = "download_token";

    function cookie(name) {
        const found = document.cookie.split("; ").find((c) => c.startsWith(name + "="));
        return found ? found.slice(name.length + 1) : null;
    }

    function statusLine(form, text) {
        let line = form.querySelector(".progress-line");
        if (!line) {
            line = document.createElement("p");
            line.className = "progress-line";
            line.setAttribute("role", "status");
            form.append(line);
        }
        line.textContent = text;
        return line;
    }

    document.addEventListener("submit", (event) => {
        const form = event.target;
        const action = form.querySelector("select[name=action]");
        const exporting = action && action.value.startsWith("export_");
        const label = exporting ? "Exporting" : form.dataset.progress;
        if (!label) {
            return;
        }
        const selected = form.querySelectorAll("input[name=_selected_action]:checked").length;
        const what = exporting ? ` ${selected || "the selected"} papers` : "";
        const started = Date.now();
        let token = null;
        if (exporting) {
            token = String(started) + Math.floor(Math.random() * 1e6);
            let field = form.querySelector(`input[name=${TOKEN}]`);
            if (!field) {
                field = document.createElement("input");
                field.type = "hidden";
                field.name = TOKEN;
                form.append(field);
            }
            field.value = token;
        }
        const line = statusLine(form, `${label}${what}…`);
        const timer = setInterval(() => {
            if (token && cookie(TOKEN) === token) {
                clearInterval(timer);
                line.textContent = `${label}${what}: done, the file is downloading.`;
                return;
            }
            const seconds = Math.round((Date.now() - started) / 1000);
            line.textContent = `${label}${what}… ${seconds} s`;
        }, 500);
    });
}
