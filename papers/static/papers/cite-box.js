// The Cite box: choosing a style reloads the page with it, and a click in a citation selects
// all of it for copying. No inline handlers: the Content-Security-Policy runs script files only.
document.addEventListener("DOMContentLoaded", () => {
  const picker = document.getElementById("cite-style");
  if (picker) {
    picker.addEventListener("change", () => {
      window.location.href = `?cite_style=${encodeURIComponent(picker.value)}#cite-box`;
    });
  }
  for (const id of ["cite-reference-text", "cite-in-text"]) {
    const field = document.getElementById(id);
    if (field) field.addEventListener("focus", () => field.select());
  }
});
