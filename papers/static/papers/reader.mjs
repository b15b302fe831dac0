// The paper reading page's PDF (projects/reading.py): pages drawn by pdf.js with a text
// layer to select from, the stored annotations drawn over them in their colours, the
// annotation list that jumps to each one, and "Highlight selection", which asks the server
// (create_highlight's service) to find and store the selected text. `config.focus` (the
// page's `?page=&quote=`) opens the PDF at a page and flashes the quote's line boxes.
const script = document.getElementById("reader-script");
const config = JSON.parse(document.getElementById("reader-config").textContent);
const pagesElement = document.getElementById("pdf-pages");
const statusElement = document.getElementById("reader-status");
const listElement = document.getElementById("annotation-list");
const bar = document.getElementById("highlight-bar");
const frames = new Map(); // page number -> {frame, viewport, page, rendered}
let annotations = [];
let pending = null; // the last selection on a page, kept while the highlight bar is used

function say(message, isError = false) {
  statusElement.textContent = message;
  statusElement.classList.toggle("errornote", isError);
}

function csrfToken() {
  const field = document.querySelector("input[name=csrfmiddlewaretoken]");
  if (field) return field.value;
  const cookie = document.cookie.split("; ").find((c) => c.startsWith("csrftoken="));
  return cookie ? decodeURIComponent(cookie.split("=")[1]) : "";
}

function drawAnnotation(annotation) {
  const entry = frames.get(annotation.page);
  if (!entry) return;
  for (const rect of annotation.rects || []) {
    // Stored in PDF points, origin bottom-left: the viewport turns them into CSS pixels.
    const [x0, y0] = entry.viewport.convertToViewportPoint(rect[0], rect[1]);
    const [x1, y1] = entry.viewport.convertToViewportPoint(rect[2], rect[3]);
    const mark = document.createElement("div");
    mark.className = `mark mark-${annotation.kind}`;
    mark.dataset.annotation = annotation.annotation_id;
    mark.style.left = `${Math.min(x0, x1)}px`;
    mark.style.top = `${Math.min(y0, y1)}px`;
    mark.style.width = `${Math.abs(x1 - x0)}px`;
    mark.style.height = `${Math.abs(y1 - y0)}px`;
    mark.style.setProperty("--mark-colour", annotation.color);
    mark.title = annotation.comment || annotation.text || "";
    entry.frame.querySelector(".marks").append(mark);
  }
}

function jumpTo(annotation, behavior = "smooth") {
  const entry = frames.get(annotation.page);
  if (!entry) return;
  const marks = entry.frame.querySelectorAll(`[data-annotation="${annotation.annotation_id}"]`);
  (marks[0] || entry.frame).scrollIntoView({ behavior, block: "center" });
  for (const mark of marks) {
    mark.classList.remove("flash");
    void mark.offsetWidth; // restart the animation
    mark.classList.add("flash");
  }
}

function showFocus(pdfjs, focus) {
  const entry = frames.get(focus.page);
  if (!entry) return "";
  // Drawn as an annotation of its own (not stored): the quote's boxes, flashed.
  drawAnnotation({ annotation_id: "focus", kind: "focus", page: focus.page, rects: focus.rects || [],
    color: "#ff8c00", text: "" });
  renderPage(pdfjs, entry);
  // At once, not smoothly: scrolling past the pages before it would render each of them.
  jumpTo({ annotation_id: "focus", page: focus.page }, "instant");
  return focus.rects?.length ? ` Opened at page ${focus.page}, the quote marked.` : ` Opened at page ${focus.page}.`;
}

function listAnnotation(annotation) {
  const item = document.createElement("li");
  const link = document.createElement("a");
  link.href = `#page-${annotation.page}`;
  link.dataset.annotation = annotation.annotation_id;
  const swatch = document.createElement("span");
  swatch.className = "swatch";
  swatch.style.background = annotation.color;
  link.append(swatch, ` p. ${annotation.page}: `, annotation.text || annotation.comment || annotation.kind);
  link.addEventListener("click", (event) => {
    event.preventDefault();
    jumpTo(annotation);
  });
  item.append(link);
  if (annotation.comment && annotation.text) {
    const comment = document.createElement("div");
    comment.className = "help";
    comment.textContent = annotation.comment;
    item.append(comment);
  }
  return item;
}

function showList() {
  listElement.replaceChildren();
  const sorted = [...annotations].sort((a, b) => a.page - b.page || a.annotation_id - b.annotation_id);
  for (const annotation of sorted) listElement.append(listAnnotation(annotation));
  if (!sorted.length) {
    const empty = document.createElement("li");
    empty.className = "help";
    empty.textContent = config.canAnnotate ? "None yet: select text in the PDF to highlight it." : "None.";
    listElement.append(empty);
  }
}

async function renderPage(pdfjs, entry) {
  if (entry.rendered) return;
  entry.rendered = true;
  const outputScale = window.devicePixelRatio || 1;
  const canvas = document.createElement("canvas");
  canvas.width = Math.floor(entry.viewport.width * outputScale);
  canvas.height = Math.floor(entry.viewport.height * outputScale);
  canvas.setAttribute("role", "presentation");
  entry.frame.querySelector(".canvas-slot").append(canvas);
  const transform = outputScale !== 1 ? [outputScale, 0, 0, outputScale, 0, 0] : undefined;
  await entry.page.render({ canvas, canvasContext: canvas.getContext("2d"), viewport: entry.viewport, transform }).promise;
  const textLayer = new pdfjs.TextLayer({
    textContentSource: entry.page.streamTextContent(),
    container: entry.frame.querySelector(".textLayer"),
    viewport: entry.viewport,
  });
  await textLayer.render();
  entry.frame.dataset.rendered = "true";
}

function selectedQuote() {
  const selection = window.getSelection();
  if (!selection || selection.isCollapsed) return null;
  const text = selection.toString().replace(/\s+/g, " ").trim();
  const start = selection.anchorNode?.parentElement?.closest(".page-frame");
  const end = selection.focusNode?.parentElement?.closest(".page-frame");
  if (!text || !start || start !== end) return null;
  return { text, page: Number(start.dataset.page) };
}

async function highlight() {
  const quote = pending;
  if (!quote) {
    say("Select text on one page first.", true);
    return;
  }
  const response = await fetch(config.annotations, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    body: JSON.stringify({
      page: quote.page,
      text: quote.text,
      color: document.getElementById("highlight-colour").value,
      comment: document.getElementById("highlight-comment").value,
    }),
  });
  const answer = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) {
    say(answer.error || `The highlight was not saved (HTTP ${response.status}).`, true);
    return;
  }
  annotations.push(answer);
  drawAnnotation(answer);
  showList();
  window.getSelection().removeAllRanges();
  document.getElementById("highlight-comment").value = "";
  pending = null;
  bar.hidden = true;
  say(`Highlight saved on page ${answer.page}.`);
}

async function main() {
  const pdfjs = await import(script.dataset.pdfjs);
  pdfjs.GlobalWorkerOptions.workerSrc = config.worker;
  say("Loading the PDF…");
  const [document_, listed] = await Promise.all([
    // isEvalSupported: false: pdf.js would otherwise try `new Function` for fonts, which
    // the Content-Security-Policy (no 'unsafe-eval') refuses and reports.
    pdfjs.getDocument({ url: config.pdf, withCredentials: true, isEvalSupported: false })
      .promise,
    fetch(config.annotations, { credentials: "same-origin" }).then((r) => r.json()),
  ]);
  annotations = listed.annotations;
  const first = await document_.getPage(1);
  const natural = first.getViewport({ scale: 1 });
  const scale = Math.max(0.5, Math.min(1.6, (pagesElement.clientWidth - 24) / natural.width));
  const observer = new IntersectionObserver(
    (entries) => {
      for (const seen of entries) {
        if (seen.isIntersecting) renderPage(pdfjs, frames.get(Number(seen.target.dataset.page)));
      }
    },
    { rootMargin: "600px 0px" },
  );
  for (let number = 1; number <= document_.numPages; number += 1) {
    const page = number === 1 ? first : await document_.getPage(number);
    const viewport = page.getViewport({ scale });
    const frame = document.createElement("div");
    frame.className = "page-frame";
    frame.id = `page-${number}`;
    frame.dataset.page = number;
    frame.style.width = `${viewport.width}px`;
    frame.style.height = `${viewport.height}px`;
    for (const [name, value] of [["--scale-factor", scale], ["--user-unit", 1], ["--total-scale-factor", scale],
      ["--scale-round-x", "1px"], ["--scale-round-y", "1px"]]) frame.style.setProperty(name, value);
    frame.innerHTML = '<div class="canvas-slot"></div><div class="marks"></div><div class="textLayer"></div>';
    frame.setAttribute("aria-label", `Page ${number}`);
    pagesElement.append(frame);
    frames.set(number, { frame, viewport, page, rendered: false });
    observer.observe(frame);
  }
  for (const annotation of annotations) drawAnnotation(annotation);
  showList();
  await renderPage(pdfjs, frames.get(1));
  const opened = config.focus ? showFocus(pdfjs, config.focus) : "";
  say(`${document_.numPages} page${document_.numPages === 1 ? "" : "s"}.${opened}`);
  if (bar) {
    document.addEventListener("selectionchange", () => {
      const quote = selectedQuote();
      if (quote) {
        pending = quote;
        bar.hidden = false;
      } else if (!bar.contains(document.activeElement)) {
        pending = null; // a click elsewhere on the page, not choosing a colour or comment
        bar.hidden = true;
      }
    });
    document.getElementById("highlight-button").addEventListener("click", () => {
      highlight().catch((error) => say(`The highlight was not saved: ${error}`, true));
    });
  }
  document.body.dataset.readerReady = "true";
}

main().catch((error) => {
  say(`The PDF could not be shown: ${error.message || error}`, true);
  document.body.dataset.readerReady = "error";
});
