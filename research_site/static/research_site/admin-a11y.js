// Names and a shortcut the admin's stock markup lacks, for screen readers and keyboards
// (docs/ACCESSIBILITY.md; checked by axe-core in tests/browser/test_accessibility.py):
// - controls in tabular inlines (a column header, no <label>) are named by their column;
// - autocomplete boxes (select2) are named by their field's label, not by their value alone;
// - the related-objects filter's search icon, an aria-label on a plain span, becomes an image;
// - a list of results gets a "Skip to results" link after "Skip to main content", which puts
//   the focus on the first result's link;
// - a list's filters, first in Django's markup but drawn after the list (CSS `order`), move
//   after it, so Tab reaches the search box and the results before the filter column.
// Django builds some of these after the page loads (select2, inline rows), so the names are
// given again whenever the page's elements change.
"use strict";

(() => {
  let counter = 0;
  const withId = (element) => {
    if (!element.id) element.id = `a11y-name-${++counter}`;
    return element.id;
  };

  // The <th> above a tabular inline's cell, or null.
  const columnHeader = (control) => {
    const cell = control.closest("td");
    const table = cell && cell.closest("table");
    if (!table) return null;
    const field = [...cell.classList].find((name) => name.startsWith("field-"));
    if (field) return table.querySelector(`thead th.column-${CSS.escape(field.slice(6))}`);
    if (cell.classList.contains("delete")) return table.querySelector("thead tr th:last-child");
    return null;
  };

  const nameOf = (control) =>
    (control.id && document.querySelector(`label[for="${CSS.escape(control.id)}"]`)) ||
    columnHeader(control);

  const unnamed = (control) =>
    !control.labels?.length &&
    !control.hasAttribute("aria-label") &&
    !control.hasAttribute("aria-labelledby");

  const nameControls = () => {
    for (const control of document.querySelectorAll(
      ".tabular td :is(input, select, textarea):not([type=hidden])",
    )) {
      const header = columnHeader(control);
      if (header && unnamed(control)) control.setAttribute("aria-labelledby", withId(header));
    }
    for (const select of document.querySelectorAll("select.admin-autocomplete")) {
      const label = nameOf(select);
      const box = select.nextElementSibling;
      if (!label || !box || !box.classList.contains("select2")) continue;
      const labelId = withId(label);
      const rendered = box.querySelector(".select2-selection__rendered");
      const selection = box.querySelector(".select2-selection");
      if (rendered && !rendered.hasAttribute("aria-label")) {
        rendered.setAttribute("aria-label", label.textContent.trim().replace(/:$/, ""));
      }
      if (selection && !selection.dataset.named) {
        const value = rendered ? ` ${withId(rendered)}` : "";
        selection.setAttribute("aria-labelledby", `${labelId}${value}`);
        selection.dataset.named = "true";
      }
    }
    for (const icon of document.querySelectorAll(".help-tooltip[aria-label]:not([role])")) {
      icon.setAttribute("role", "img");
    }
  };

  const addSkipToResults = () => {
    const first = document.querySelector("#result_list tbody tr a[href]");
    const skip = document.querySelector(".skip-to-content-link");
    if (!first || !skip || document.getElementById("skip-to-results")) return;
    const link = document.createElement("a");
    link.id = "skip-to-results";
    link.href = "#result_list";
    link.className = "skip-to-content-link";
    link.textContent = "Skip to results";
    link.addEventListener("click", (event) => {
      event.preventDefault();
      document.querySelector("#result_list tbody tr a[href]")?.focus();
    });
    skip.after(link);
  };

  const filtersAfterList = () => {
    const filters = document.getElementById("changelist-filter");
    const container = filters?.parentElement;
    if (container && container.lastElementChild !== filters) container.append(filters);
  };

  let pending = false;
  const observer = new MutationObserver(() => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      nameControls();
    });
  });
  document.addEventListener("DOMContentLoaded", () => {
    filtersAfterList();
    addSkipToResults();
    nameControls();
    observer.observe(document.body, { childList: true, subtree: true });
  });
  window.addEventListener("load", nameControls);
})();
