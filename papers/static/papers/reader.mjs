// The paper reading page's PDF (projects/reading.py): pages drawn by pdf.js with a text
// layer to select from, the stored annotations drawn over them in their colours, the
// annotation list that jumps to each one, and "Highlight selection", which asks the server
// (create_highlight's service) to find and store the selected text. `config.focus` (the
// page's `?page=&quote=`) opens the PDF at a page and flashes the quote's line boxes.
// The highlight bar opens next to the selection, inside its page, at every width. "Find"
// selects each match in turn (Enter, Shift+Enter), and "Highlight match" (or Alt+Enter in
// the find box) stores it through the same request as a selection: a highlight without a
// mouse.
// Pages are drawn lazily: page 1 first, the others as they come near the view, their
// frames sized from page 1 until then so the scroll height is right. Around them: the page
// number ("n / N", a box to jump to a page), zoom (−, +, fit width), full width (the record
// column hidden) and the PDF's outline, when it has one.
// Before pdf.js has drawn anything, page 1 is shown as a picture the server drew
// (papers/pdf/page_image.py) in a frame of page 1's final size: the canvas replaces it in
// place once drawn, the text layer comes over it meanwhile.
// Page 1 waits for nothing else: pdf.js and its worker are started from the page's <head>
// (reader-start.mjs), the PDF is preloaded there, and the annotations and the text layer
// come in beside the drawing. The `reader:*` performance marks (pdf.js loaded, document
// open, page 1 loaded, its canvas and text layer done) say where the time goes
// (benchmarks/bench_pages.py reports them).
import { loadingPdfjs, worker } from "./reader-start.mjs";

performance.mark("reader:start");
const config = JSON.parse(document.getElementById("reader-config").textContent);
// Asked for at once: page 1 is drawn without waiting for them (showAnnotations).
const loadingAnnotations = fetch(config.annotations, { credentials: "same-origin" })
  .then((response) => (response.ok ? response.json() : Promise.reject(new Error(`HTTP ${response.status}`))));
const pagesElement = document.getElementById("pdf-pages");
const statusElement = document.getElementById("reader-status");
const listElement = document.getElementById("annotation-list");
const bar = document.getElementById("highlight-bar");
const frames = new Map(); // page number -> {frame, viewport, page, rendered}
let annotations = [];
let pending = null; // the last selection on a page, kept while the highlight bar is used
let pointerDown = false; // the bar waits for the end of a drag
const textLayers = new Map(); // .textLayer div -> its endOfContent div
let lastRange = null;
const finder = { query: "", matches: [], current: -1 }; // matches: [{page, nth}]
const view = { scale: 1, fit: true, first: null }; // first: page 1's viewport at scale 1
let pdfjs = null;
let pdfDocument = null;
let observer = null;
let focusMark = null; // `config.focus`'s quote, drawn again after a zoom
// Until the PDF is loaded, Enter in the find or page box must not submit (reload) the page.
for (const id of ["find-form", "page-form"]) {
  document.getElementById(id)?.addEventListener("submit", (event) => event.preventDefault());
}

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
  if (!entry?.page) return; // drawn when its page is loaded (loadPage)
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

async function jumpTo(annotation, behavior = "smooth") {
  const entry = frames.get(annotation.page);
  if (!entry) return;
  await loadPage(entry);
  const marks = entry.frame.querySelectorAll(`[data-annotation="${annotation.annotation_id}"]`);
  (marks[0] || entry.frame).scrollIntoView({ behavior, block: "center" });
  for (const mark of marks) {
    mark.classList.remove("flash");
    void mark.offsetWidth; // restart the animation
    mark.classList.add("flash");
  }
}

async function showFocus(focus) {
  const entry = frames.get(focus.page);
  if (!entry) return "";
  // Drawn as an annotation of its own (not stored): the quote's boxes, flashed.
  focusMark = { annotation_id: "focus", kind: "focus", page: focus.page, rects: focus.rects || [],
    color: "#ff8c00", text: "" };
  await loadPage(entry);
  drawMarks(entry); // once: a page loaded just now has drawn its marks, the focus among them
  renderPage(entry);
  // At once, not smoothly: scrolling past the pages before it would render each of them.
  await jumpTo({ annotation_id: "focus", page: focus.page }, "instant");
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
    jumpTo(annotation).catch((error) => say(`${error}`, true));
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

// A page's frame at the current scale: sized from its own viewport once it is loaded, from
// page 1's before (a placeholder), with the variables pdf.js's text layer sizes itself by.
// A page of another size than page 1 has its own size from the server (config.pageSizes,
// in PDF points) before it is loaded, so it does not grow or shrink when drawn.
function sizeFrame(entry) {
  const { frame } = entry;
  entry.viewport = (entry.page || view.first).getViewport({ scale: view.scale });
  const known = entry.page ? null : config.pageSizes?.[entry.number];
  frame.style.width = `${known ? known[0] * view.scale : entry.viewport.width}px`;
  frame.style.height = `${known ? known[1] * view.scale : entry.viewport.height}px`;
  for (const [name, value] of [["--scale-factor", view.scale], ["--user-unit", 1],
    ["--total-scale-factor", view.scale], ["--scale-round-x", "1px"], ["--scale-round-y", "1px"]]) {
    frame.style.setProperty(name, value);
  }
}

function drawMarks(entry) {
  entry.frame.querySelector(".marks").replaceChildren();
  for (const annotation of annotations) if (annotation.page === entry.number) drawAnnotation(annotation);
  if (focusMark?.page === entry.number) drawAnnotation(focusMark);
}

// pdf.js's page object, fetched when the page is first needed (drawn, searched, jumped to).
function loadPage(entry) {
  entry.loading ??= pdfDocument.getPage(entry.number).then((page) => {
    entry.page = page;
    sizeFrame(entry);
    drawMarks(entry);
    return page;
  });
  return entry.loading;
}

function renderPage(entry) {
  entry.rendering ??= drawPage(entry).catch((error) => {
    if (error?.name !== "RenderingCancelledException" && error?.name !== "AbortException") throw error;
  });
  return entry.rendering;
}

async function drawPage(entry) {
  const generation = entry.generation; // a zoom while drawing makes this drawing stale
  await loadPage(entry);
  if (generation !== entry.generation) return;
  const outputScale = window.devicePixelRatio || 1;
  const canvas = document.createElement("canvas");
  canvas.width = Math.floor(entry.viewport.width * outputScale);
  canvas.height = Math.floor(entry.viewport.height * outputScale);
  canvas.setAttribute("role", "presentation");
  const slot = entry.frame.querySelector(".canvas-slot");
  // Page 1's picture from the server stays over the canvas until the canvas is drawn.
  const picture = slot.querySelector(".page-image");
  if (picture) slot.replaceChildren(canvas, picture);
  else slot.replaceChildren(canvas);
  const transform = outputScale !== 1 ? [outputScale, 0, 0, outputScale, 0, 0] : undefined;
  entry.task = entry.page.render({ canvas, canvasContext: canvas.getContext("2d"), viewport: entry.viewport, transform });
  if (picture) entry.task.promise.then(() => picture.remove(), () => {});
  // The text layer is laid out while the canvas is drawn, not after it: the page is
  // selectable as soon as it shows.
  const layer = entry.frame.querySelector(".textLayer");
  entry.textLayer = new pdfjs.TextLayer({
    textContentSource: entry.page.streamTextContent(),
    container: layer,
    viewport: entry.viewport,
  });
  await Promise.all([
    entry.task.promise.then(() => performance.mark(`reader:canvas-${entry.number}`)),
    entry.textLayer.render().then(() => performance.mark(`reader:text-${entry.number}`)),
  ]);
  if (generation !== entry.generation) return;
  trackSelection(layer);
  entry.frame.dataset.rendered = "true";
}

// Back to an undrawn frame at the current scale (after a zoom): drawn again when in view.
function resetPage(entry) {
  entry.generation += 1;
  entry.task?.cancel();
  entry.textLayer?.cancel();
  entry.task = entry.textLayer = entry.rendering = null;
  sizeFrame(entry);
  entry.frame.querySelector(".canvas-slot").replaceChildren();
  const layer = entry.frame.querySelector(".textLayer");
  textLayers.delete(layer);
  const fresh = document.createElement("div");
  fresh.className = "textLayer";
  layer.replaceWith(fresh);
  delete entry.frame.dataset.rendered;
  if (entry.page) drawMarks(entry);
}

// Chromium resolves a drag over the empty space of a text layer (between columns, past a
// line's end) to some far-away point of the page's text, so the selection jumped back to
// the abstract or on past the column and the highlight stored more than was dragged over.
// As pdf.js's own viewer (TextLayerBuilder) does: an `endOfContent` box covering the layer
// while selecting, kept in the DOM just after the span where the selection ends, so that
// empty space resolves to that point.
function trackSelection(layer) {
  const end = document.createElement("div");
  end.className = "endOfContent";
  layer.append(end);
  textLayers.set(layer, end);
  layer.addEventListener("mousedown", () => layer.classList.add("selecting"));
}

function resetLayer(layer, end) {
  layer.append(end);
  end.style.width = "";
  end.style.height = "";
  layer.classList.remove("selecting");
}

function keepSelectionEnd() {
  const selection = document.getSelection();
  if (!selection || selection.rangeCount === 0) {
    for (const [layer, end] of textLayers) resetLayer(layer, end);
    lastRange = null;
    return;
  }
  const range = selection.getRangeAt(0);
  for (const [layer, end] of textLayers) {
    if (range.intersectsNode(layer)) layer.classList.add("selecting");
    else resetLayer(layer, end);
  }
  const movedStart = lastRange && (range.compareBoundaryPoints(Range.END_TO_END, lastRange) === 0
    || range.compareBoundaryPoints(Range.START_TO_END, lastRange) === 0);
  let anchor = movedStart ? range.startContainer : range.endContainer;
  if (anchor.nodeType === Node.TEXT_NODE) anchor = anchor.parentNode;
  if (!movedStart && range.endOffset === 0) {
    // The selection ends at the start of a node: keep the box after the text before it.
    while (anchor && !anchor.previousSibling) anchor = anchor.parentNode;
    anchor = anchor?.previousSibling;
    while (anchor?.childNodes?.length) anchor = anchor.lastChild;
  }
  const layer = anchor?.parentElement?.closest(".textLayer");
  const end = textLayers.get(layer);
  if (end && anchor.parentElement) {
    end.style.width = layer.style.width;
    end.style.height = layer.style.height;
    anchor.parentElement.insertBefore(end, movedStart ? anchor : anchor.nextSibling);
  }
  lastRange = range.cloneRange();
}

function frameOf(node) {
  return (node?.nodeType === Node.TEXT_NODE ? node.parentElement : node)?.closest(".page-frame");
}

function selectedQuote() {
  const selection = window.getSelection();
  if (!selection || selection.isCollapsed || selection.rangeCount === 0) return null;
  // The text exactly as selected; the server keeps line breaks' hyphens out of the stored
  // text (papers.pdf.locate.passage_text), so nothing is rewritten here.
  const text = selection.toString().replace(/\s+/g, " ").trim();
  const start = frameOf(selection.anchorNode);
  const end = frameOf(selection.focusNode);
  if (!text || !start || start !== end) return null;
  return { text, page: Number(start.dataset.page), range: selection.getRangeAt(0) };
}

// The bar goes into the selection's page, just below the selection's last line (above its
// first when there is no room below), so it is next to the selection at every width and
// scrolls with it.
function placeBar(quote) {
  const frame = frames.get(quote.page)?.frame;
  if (!frame) return;
  if (bar.parentElement !== frame && !bar.contains(document.activeElement)) frame.append(bar);
  bar.hidden = false;
  const lines = [...quote.range.getClientRects()].filter((r) => r.width > 0 && r.height > 0);
  if (!lines.length) return;
  const box = frame.getBoundingClientRect();
  const last = lines[lines.length - 1];
  const first = lines[0];
  const width = Math.min(bar.offsetWidth, box.width);
  let top = last.bottom - box.top + 6;
  if (top + bar.offsetHeight > box.height && first.top - box.top - bar.offsetHeight - 6 >= 0) {
    top = first.top - box.top - bar.offsetHeight - 6;
  }
  const left = Math.max(0, Math.min(last.left - box.left, box.width - width));
  bar.style.top = `${Math.round(top)}px`;
  bar.style.left = `${Math.round(left)}px`;
}

function showBar() {
  const quote = selectedQuote();
  if (quote) {
    pending = quote;
    placeBar(quote);
  } else if (!bar.contains(document.activeElement) && !finder.selecting) {
    pending = null; // a click elsewhere on the page, not choosing a colour or comment
    bar.hidden = true;
  }
}

// The selection's line boxes in PDF points, so that the server highlights the words where
// they were selected (the same words may occur elsewhere on the page). Trimmed to the
// middle half of each line's height, clear of the lines above and below.
function pdfBoxes(quote) {
  const entry = frames.get(quote.page);
  if (!entry || !quote.range) return [];
  const box = entry.frame.getBoundingClientRect();
  const boxes = [];
  for (const line of quote.range.getClientRects()) {
    if (line.width <= 0 || line.height <= 0) continue;
    const inset = line.height / 4;
    const [x0, y0] = entry.viewport.convertToPdfPoint(line.left - box.left, line.top + inset - box.top);
    const [x1, y1] = entry.viewport.convertToPdfPoint(line.right - box.left, line.bottom - inset - box.top);
    boxes.push([Math.min(x0, x1), Math.min(y0, y1), Math.max(x0, x1), Math.max(y0, y1)].map((v) => Math.round(v * 100) / 100));
  }
  return boxes.slice(0, 200);
}

async function highlight(quote = pending) {
  if (!quote) {
    say("Select text on one page, or find it, first.", true);
    return;
  }
  const response = await fetch(config.annotations, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    body: JSON.stringify({
      page: quote.page,
      text: quote.text,
      rects: pdfBoxes(quote),
      color: document.getElementById("highlight-colour")?.value,
      comment: document.getElementById("highlight-comment")?.value || "",
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
  say(`Highlight saved on page ${answer.page}: “${answer.text}”.`);
}

// --- find ---------------------------------------------------------------------------------
// Matched as the server matches quotes (papers.pdf.locate.text_key): letters and digits
// only, case-folded, so 'corpus' finds 'cor-' + 'pus' across a line break.

function textKey(text) {
  return (text.normalize("NFKC").toLowerCase().match(/[\p{L}\p{N}]/gu) || []).join("");
}

const pageKeys = new Map(); // page number -> the page's text key (from pdf.js's text content)

async function pageKey(number) {
  if (!pageKeys.has(number)) {
    const content = await (await loadPage(frames.get(number))).getTextContent();
    pageKeys.set(number, textKey(content.items.map((item) => item.str || "").join("")));
  }
  return pageKeys.get(number);
}

function occurrences(haystack, needle) {
  const found = [];
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + 1)) found.push(at);
  return found;
}

// The DOM range of the `nth` occurrence of `key` in a rendered page's text layer.
function rangeOnPage(number, key, nth) {
  const layer = frames.get(number).frame.querySelector(".textLayer");
  const walker = document.createTreeWalker(layer, NodeFilter.SHOW_TEXT);
  const positions = []; // key character -> [text node, offset]
  let keyText = "";
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const value = node.nodeValue;
    for (let offset = 0; offset < value.length; offset += 1) {
      const part = textKey(value[offset]);
      for (const char of part) {
        keyText += char;
        positions.push([node, offset]);
      }
    }
  }
  const at = occurrences(keyText, key)[nth];
  if (at === undefined) return null;
  const [startNode, startOffset] = positions[at];
  const [endNode, endOffset] = positions[at + key.length - 1];
  const range = document.createRange();
  range.setStart(startNode, startOffset);
  range.setEnd(endNode, endOffset + 1);
  return range;
}

async function findMatches(query) {
  const key = textKey(query);
  finder.query = query;
  finder.matches = [];
  finder.current = -1;
  if (!key) return;
  for (const number of frames.keys()) {
    const count = occurrences(await pageKey(number), key).length;
    for (let nth = 0; nth < count; nth += 1) finder.matches.push({ page: number, nth });
  }
}

async function findNext(backwards = false) {
  const input = document.getElementById("find-input");
  const status = document.getElementById("find-status");
  const query = input.value.trim();
  if (!textKey(query)) {
    status.textContent = "Type a word or phrase to find.";
    return null;
  }
  if (query !== finder.query) await findMatches(query);
  const total = finder.matches.length;
  if (!total) {
    finder.current = -1;
    status.textContent = `“${query}” is not in the PDF.`;
    return null;
  }
  if (finder.current < 0) finder.current = backwards ? total - 1 : 0;
  else finder.current = (finder.current + (backwards ? total - 1 : 1)) % total;
  const match = finder.matches[finder.current];
  const entry = frames.get(match.page);
  await renderPage(entry);
  const range = rangeOnPage(match.page, textKey(query), match.nth);
  if (!range) {
    status.textContent = `Match ${finder.current + 1} of ${total} is on page ${match.page}.`;
    entry.frame.scrollIntoView({ block: "center" });
    return null;
  }
  // Shown as the selection (so "Highlight selection" works on it too), focus kept here.
  finder.selecting = true;
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  (range.startContainer.parentElement || entry.frame).scrollIntoView({ block: "center" });
  const quote = { text: range.toString().replace(/\s+/g, " ").trim(), page: match.page, range };
  finder.found = quote;
  if (bar) placeBar(quote);
  pending = quote;
  setTimeout(() => { finder.selecting = false; }, 0); // after this selection's selectionchange
  status.textContent = `Match ${finder.current + 1} of ${total}, page ${match.page}.`;
  return quote;
}

function setUpFind() {
  const form = document.getElementById("find-form");
  if (!form) return;
  const input = document.getElementById("find-input");
  const run = (backwards) => findNext(backwards).catch((error) => say(`Find failed: ${error}`, true));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    run(false);
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && event.altKey && bar) {
      event.preventDefault();
      highlightFound();
    } else if (event.key === "Enter" && event.shiftKey) {
      event.preventDefault();
      run(true);
    }
  });
  input.addEventListener("input", () => { finder.query = ""; });
  document.getElementById("find-previous").addEventListener("click", () => run(true));
  document.getElementById("highlight-match")?.addEventListener("click", highlightFound);
}

function highlightFound() {
  if (!finder.found) {
    say("Find a word or phrase first (type it, then Enter).", true);
    return;
  }
  const quote = finder.found;
  finder.found = null;
  highlight(quote).catch((error) => say(`The highlight was not saved: ${error}`, true));
}

// --- page number, jump, zoom, full width, outline --------------------------------------------

const pageInput = document.getElementById("page-input");
const pageStatus = document.getElementById("page-status");

// The scroll box the pages are in: #pdf-pages in two columns, the window below 1024 px.
function scroller() {
  return pagesElement.scrollHeight > pagesElement.clientHeight + 2 ? pagesElement : null;
}

// The page at the top of the view (the last one once scrolled to the end).
function currentPage() {
  const box = scroller();
  const atEnd = box
    ? box.scrollTop + box.clientHeight >= box.scrollHeight - 2
    : window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 2;
  const top = Math.max(box ? box.getBoundingClientRect().top : 0, 0) + 20;
  let current = 1;
  for (const [number, entry] of frames) {
    const rect = entry.frame.getBoundingClientRect();
    if (rect.height === 0) continue;
    if (atEnd ? rect.top < window.innerHeight : rect.top <= top) current = number;
    else break;
  }
  return current;
}

function showPageNumber() {
  if (!pageInput || !frames.size) return;
  const current = String(currentPage());
  if (document.activeElement !== pageInput && pageInput.value !== current) pageInput.value = current;
  pageInput.dataset.current = current;
}

let numberQueued = false;
function queuePageNumber() {
  if (numberQueued) return;
  numberQueued = true;
  requestAnimationFrame(() => {
    numberQueued = false;
    showPageNumber();
  });
}

// Scrolls a page to the top of the view, at `top` (PDF points from its bottom) if given:
// inside the pages' box when it scrolls (the window stays put), else the window.
async function goToPage(number, top = null) {
  const entry = frames.get(number);
  await loadPage(entry);
  const y = top === null ? 0 : Math.max(0, entry.viewport.convertToViewportPoint(0, top)[1]);
  const box = scroller();
  if (box) {
    const padding = parseFloat(getComputedStyle(box).paddingTop) || 0;
    box.scrollTop += entry.frame.getBoundingClientRect().top + y - box.getBoundingClientRect().top - padding;
  } else {
    window.scrollBy({ top: entry.frame.getBoundingClientRect().top + y, behavior: "instant" });
  }
  renderPage(entry);
  showPageNumber();
}

function setUpPageJump() {
  const form = document.getElementById("page-form");
  if (!form) return;
  const total = frames.size;
  document.getElementById("page-total").textContent = `/ ${total}`;
  pageInput.setAttribute("aria-label", `Page number, 1 to ${total}`);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const typed = pageInput.value.trim();
    const number = /^\d+$/.test(typed) ? Number(typed) : NaN;
    if (!(number >= 1 && number <= total)) {
      pageStatus.textContent = `“${typed}” is not a page of this PDF: type a number from 1 to ${total}.`;
      pageStatus.classList.add("errornote");
      return;
    }
    pageStatus.textContent = "";
    pageStatus.classList.remove("errornote");
    goToPage(number).catch((error) => say(`${error}`, true));
  });
  pageInput.addEventListener("blur", () => {
    if (!pageStatus.textContent) pageInput.value = pageInput.dataset.current || "1";
  });
  pagesElement.addEventListener("scroll", queuePageNumber, { passive: true });
  window.addEventListener("scroll", queuePageNumber, { passive: true });
  window.addEventListener("resize", queuePageNumber);
  showPageNumber();
}

const ZOOM_STEP = 1.25;
const MIN_SCALE = 0.25;
const MAX_SCALE = 4;

function fitScale() {
  const natural = view.first.getViewport({ scale: 1 }).width;
  return Math.max(MIN_SCALE, Math.min(MAX_SCALE, (pagesElement.clientWidth - 24) / natural));
}

function showZoom() {
  const level = document.getElementById("zoom-level");
  if (level) level.textContent = `${Math.round(view.scale * 100)}%`;
  document.getElementById("zoom-fit")?.setAttribute("aria-pressed", String(view.fit));
  const out = document.getElementById("zoom-out");
  const into = document.getElementById("zoom-in");
  if (out) out.disabled = view.scale <= MIN_SCALE + 1e-6;
  if (into) into.disabled = view.scale >= MAX_SCALE - 1e-6;
}

// Every frame resized to the new scale and the visible pages drawn again; the page at the
// top of the view stays there. Highlights are drawn from their PDF coordinates, so they
// stay over their text at every scale.
function setScale(scale, fit = false) {
  view.fit = fit;
  const next = Math.max(MIN_SCALE, Math.min(MAX_SCALE, scale));
  if (Math.abs(next - view.scale) < 1e-3) {
    showZoom();
    return;
  }
  // Where the view's top is on the page at the top, kept there at the new scale.
  const current = currentPage();
  const entry = frames.get(current);
  const box = scroller();
  const offset = Math.max(box ? box.getBoundingClientRect().top : 0, 0) - entry.frame.getBoundingClientRect().top;
  const top = offset > 0 ? entry.viewport.convertToPdfPoint(0, offset)[1] : null;
  view.scale = next;
  if (bar && !bar.hidden) {
    bar.hidden = true;
    pending = null;
  }
  finder.found = null; // its range was in the text layer drawn at the old scale
  for (const each of frames.values()) resetPage(each);
  showZoom();
  goToPage(current, top).catch((error) => say(`${error}`, true));
  // Observed anew, so that the pages now in view are reported (and drawn) again.
  for (const each of frames.values()) {
    observer.unobserve(each.frame);
    observer.observe(each.frame);
  }
}

function setUpZoom() {
  document.getElementById("zoom-out")?.addEventListener("click", () => setScale(view.scale / ZOOM_STEP));
  document.getElementById("zoom-in")?.addEventListener("click", () => setScale(view.scale * ZOOM_STEP));
  document.getElementById("zoom-fit")?.addEventListener("click", () => setScale(fitScale(), true));
  let resized = null;
  window.addEventListener("resize", () => {
    clearTimeout(resized);
    resized = setTimeout(() => { if (view.fit) setScale(fitScale(), true); }, 200);
  });
  showZoom();
}

// "Full width": the record column hidden, the PDF given the page's width; remembered.
const WIDE_KEY = "reader-full-width";
const room = document.querySelector(".reading-room");
const wideButton = document.getElementById("full-width");

function setWide(wide) {
  room?.classList.toggle("wide", wide);
  wideButton?.setAttribute("aria-pressed", String(wide));
  try {
    if (wide) localStorage.setItem(WIDE_KEY, "1");
    else localStorage.removeItem(WIDE_KEY);
  } catch { /* storage refused: the choice lasts for this page */ }
}

function storedWide() {
  try {
    return localStorage.getItem(WIDE_KEY) === "1";
  } catch {
    return false;
  }
}

wideButton?.addEventListener("click", () => {
  setWide(wideButton.getAttribute("aria-pressed") !== "true");
  if (view.first && view.fit) setScale(fitScale(), true);
});
if (storedWide()) setWide(true);

// The outline's destination: a page and, when the destination says, the height on it.
async function goToDestination(dest) {
  const explicit = typeof dest === "string" ? await pdfDocument.getDestination(dest) : dest;
  if (!Array.isArray(explicit) || !explicit.length) {
    say("This outline entry leads to no page of the PDF.", true);
    return;
  }
  const [ref, mode] = explicit;
  const index = typeof ref === "object" && ref !== null ? await pdfDocument.getPageIndex(ref) : Number(ref);
  const number = index + 1;
  if (!frames.has(number)) {
    say("This outline entry leads to no page of the PDF.", true);
    return;
  }
  const name = mode?.name;
  let top = null;
  if (name === "XYZ") top = explicit[3];
  else if (name === "FitH" || name === "FitBH") top = explicit[2];
  await goToPage(number, typeof top === "number" ? top : null);
}

function outlineList(items) {
  const list = document.createElement("ul");
  for (const item of items) {
    const entry = document.createElement("li");
    const link = document.createElement("a");
    link.textContent = item.title || "(untitled)";
    if (item.url) {
      link.href = item.url;
      link.rel = "noopener noreferrer";
      link.target = "_blank";
    } else {
      link.href = "#";
      link.addEventListener("click", (event) => {
        event.preventDefault();
        goToDestination(item.dest).catch((error) => say(`${error}`, true));
      });
    }
    entry.append(link);
    if (item.items?.length) entry.append(outlineList(item.items));
    list.append(entry);
  }
  return list;
}

// Shown before the pages are sized, so that "fit width" fits the column left beside it.
function showOutline(outline) {
  const panel = document.getElementById("pdf-outline");
  if (!panel) return;
  if (!outline?.length) {
    panel.hidden = true; // this PDF has none (the page shows the panel when the server found one)
    return;
  }
  panel.querySelector("nav").replaceChildren(outlineList(outline));
  panel.hidden = false;
}

// The stored annotations, drawn on the pages loaded so far and listed; they arrive
// while page 1 is drawn, which does not wait for them. A highlight made meanwhile is kept.
function showAnnotations(listed) {
  const known = new Set(listed.map((annotation) => annotation.annotation_id));
  annotations = [...listed, ...annotations.filter((annotation) => !known.has(annotation.annotation_id))];
  for (const entry of frames.values()) if (entry.page) drawMarks(entry);
  showList();
}

async function main() {
  pdfjs = await loadingPdfjs;
  performance.mark("reader:pdfjs");
  pdfjs.GlobalWorkerOptions.workerSrc = config.worker;
  if (worker) pdfjs.GlobalWorkerOptions.workerPort = worker;
  say("Loading the PDF…");
  // isEvalSupported: false: pdf.js would otherwise try `new Function` for fonts, which
  // the Content-Security-Policy (no 'unsafe-eval') refuses and reports.
  const document_ = await pdfjs.getDocument({ url: config.pdf, withCredentials: true, isEvalSupported: false })
    .promise;
  performance.mark("reader:document");
  pdfDocument = document_;
  const annotationsShown = loadingAnnotations.then(
    (listed) => showAnnotations(listed.annotations),
    (error) => {
      const failed = document.createElement("li");
      failed.className = "errornote";
      failed.textContent = `The annotations could not be loaded: ${error.message || error}`;
      listElement.replaceChildren(failed);
    },
  );
  // Only page 1 is fetched before drawing: the other frames take its size until theirs
  // are loaded, as they come near the view.
  const [first, outline] = await Promise.all([
    document_.getPage(1), document_.getOutline().catch(() => null)]);
  performance.mark("reader:page1");
  showOutline(outline);
  view.first = first;
  view.scale = fitScale();
  view.fit = true;
  // Page 1's frame may be in the page already, its picture shown (paper_read.html): kept,
  // given the same size pdf.js's page has, and drawn over.
  const shown = document.getElementById("page-1");
  for (let number = 1; number <= document_.numPages; number += 1) {
    let frame = number === 1 ? shown : null;
    if (!frame) {
      frame = document.createElement("div");
      frame.className = "page-frame";
      frame.id = `page-${number}`;
      frame.dataset.page = number;
      frame.innerHTML = '<div class="canvas-slot"></div><div class="marks"></div><div class="textLayer"></div>';
      frame.setAttribute("aria-label", `Page ${number}`);
      frame.setAttribute("role", "region");
    }
    const entry = { number, frame, viewport: null, page: number === 1 ? first : null, generation: 0,
      loading: number === 1 ? Promise.resolve(first) : null, rendering: null, task: null, textLayer: null };
    sizeFrame(entry);
    if (frame !== shown) pagesElement.append(frame);
    frames.set(number, entry);
  }
  drawMarks(frames.get(1)); // the annotations, if they came before page 1 (else when they come)
  await renderPage(frames.get(1));
  await annotationsShown;
  observer = new IntersectionObserver(
    (entries) => {
      for (const seen of entries) {
        if (seen.isIntersecting) renderPage(frames.get(Number(seen.target.dataset.page)));
      }
    },
    { rootMargin: "600px 0px" },
  );
  for (const entry of frames.values()) observer.observe(entry.frame);
  const opened = config.focus ? await showFocus(config.focus) : "";
  say(`${document_.numPages} page${document_.numPages === 1 ? "" : "s"}.${opened}`);
  setUpPageJump();
  setUpZoom();
  document.addEventListener("selectionchange", keepSelectionEnd);
  document.addEventListener("pointerup", () => {
    pointerDown = false;
    for (const [layer, end] of textLayers) if (document.getSelection()?.isCollapsed) resetLayer(layer, end);
    if (bar) showBar();
  });
  setUpFind();
  if (bar) {
    document.addEventListener("pointerdown", (event) => {
      if (!bar.contains(event.target)) pointerDown = true;
    });
    // While dragging, the bar stays out of the way; it opens when the selection is made.
    document.addEventListener("selectionchange", () => {
      if (!pointerDown) showBar();
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
