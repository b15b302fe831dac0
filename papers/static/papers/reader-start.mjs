// The reading page's first steps (projects/templates/projects/paper_read.html loads this
// from its <head>, `async`): pdf.js's module and its worker are started while the page is
// still being parsed, not once reader.mjs runs after it. The worker is 1.3 MB of script
// that compiles on its own thread; pdf.js asks for the PDF only once the worker answers,
// so every millisecond it starts earlier is one off the first page. reader.mjs imports
// both from here (one module instance: the same worker).
export const loadingPdfjs = import("./pdfjs/pdf.min.mjs");
export const worker = startWorker();

function startWorker() {
  try {
    return new Worker(new URL("./pdfjs/pdf.worker.min.mjs", import.meta.url), { type: "module" });
  } catch {
    return null; // pdf.js then starts its own (GlobalWorkerOptions.workerSrc)
  }
}
