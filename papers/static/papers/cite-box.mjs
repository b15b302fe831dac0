// The Cite box (papers/cite_box.py): choosing a style shows the paper in it without
// a reload (the box's JSON, the same formatting as the page), Copy puts the text on the
// clipboard, and the style chosen is remembered in localStorage for every paper and visit.
// Where the clipboard cannot be written, the text is selected for Ctrl+C instead.

const STORAGE_KEY = "research-mcp.cite-style";

function remembered() {
  try {
    return window.localStorage.getItem(STORAGE_KEY);
  } catch {
    return null; // storage disabled: the box still works, without remembering
  }
}

function remember(style) {
  try {
    window.localStorage.setItem(STORAGE_KEY, style);
  } catch {
    // storage disabled or full: nothing to remember with
  }
}

function setUp(box) {
  const picker = box.querySelector("#cite-style");
  const errorRow = box.querySelector("#cite-error-row");
  const error = box.querySelector("#cite-error");
  const referenceRow = box.querySelector("#cite-reference-row");
  const reference = box.querySelector("#cite-reference");
  const textRow = box.querySelector("#cite-text-row");
  const textLabel = box.querySelector("#cite-text-label");
  const text = box.querySelector("#cite-reference-text");
  const inTextRow = box.querySelector("#cite-in-text-row");
  const inText = box.querySelector("#cite-in-text");
  const copyButton = box.querySelector("#cite-copy");
  const copyInTextButton = box.querySelector("#cite-copy-in-text");
  const status = box.querySelector("#cite-status");
  let asked = 0;

  const say = (message) => {
    status.textContent = message;
  };

  const show = (cite) => {
    box.dataset.style = cite.style;
    box.dataset.kind = cite.kind;
    const isExport = cite.kind === "export";
    errorRow.hidden = true;
    referenceRow.hidden = isExport;
    inTextRow.hidden = isExport;
    textRow.hidden = false;
    // reference_html is the formatter's HTML with the paper's fields escaped (csl.py).
    reference.innerHTML = cite.reference_html;
    textLabel.textContent = isExport ? `${cite.label}:` : "To copy:";
    text.value = cite.reference;
    text.rows = isExport ? Math.min(14, cite.reference.split("\n").length + 1) : 3;
    inText.value = cite.in_text;
  };

  const fail = (message) => {
    error.textContent = message;
    errorRow.hidden = false;
    for (const row of [referenceRow, textRow, inTextRow]) row.hidden = true;
  };

  const load = async (style) => {
    const ticket = ++asked;
    box.setAttribute("aria-busy", "true");
    say("");
    try {
      const url = new URL(box.dataset.url, window.location.href);
      url.searchParams.set("style", style);
      const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
      const cite = await response.json().catch(() => ({}));
      if (ticket !== asked) return;
      if (!response.ok) fail(cite.error || `The citation could not be loaded (${response.status}).`);
      else show(cite);
    } catch {
      if (ticket === asked) fail("The citation could not be loaded: is the server reachable?");
    } finally {
      if (ticket === asked) box.removeAttribute("aria-busy");
    }
  };

  const copy = async (field, what) => {
    try {
      await navigator.clipboard.writeText(field.value);
      say(`Copied ${what} to the clipboard.`);
    } catch {
      field.focus();
      field.select();
      say(`Copying was refused: the ${what} is selected, press Ctrl+C (⌘C on a Mac).`);
    }
  };

  picker.addEventListener("change", () => {
    remember(picker.value);
    load(picker.value);
  });
  copyButton.addEventListener("click", () => copy(text, box.dataset.kind === "export" ? "entry" : "reference"));
  copyInTextButton.addEventListener("click", () => copy(inText, "in-text citation"));
  for (const field of [text, inText]) field.addEventListener("focus", () => field.select());
  copyButton.hidden = false;
  copyInTextButton.hidden = false;

  // The style remembered wins over the page's default, not over one asked for by the URL.
  const saved = remembered();
  const styleInUrl = new URLSearchParams(window.location.search).has("cite_style");
  const offered = [...picker.options].some((option) => option.value === saved);
  if (saved && offered && !styleInUrl && saved !== box.dataset.style) {
    picker.value = saved;
    load(saved);
  }
}

function setUpAll() {
  const box = document.getElementById("cite-box");
  if (box && box.dataset.url) setUp(box);
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUpAll);
else setUpAll();
