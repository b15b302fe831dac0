#!/usr/bin/env bash
# Vendors pdf.js (Mozilla, Apache-2.0) from its npm package into papers/static/papers/pdfjs/,
# the files the admin's paper reading page loads (no CDN). Run it to upgrade: change VERSION,
# run, check the reading page's browser test, commit the files it wrote.
#   scripts/vendor-pdfjs.sh
set -euo pipefail
VERSION=6.5.438
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TARGET="$ROOT/papers/static/papers/pdfjs"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
# npm pack checks the tarball against the registry's integrity hash.
npm pack --silent "pdfjs-dist@$VERSION" >/dev/null
tar xzf "pdfjs-dist-$VERSION.tgz"
rm -rf "$TARGET"
mkdir -p "$TARGET"
cp package/build/pdf.min.mjs package/build/pdf.worker.min.mjs package/web/pdf_viewer.css \
  package/LICENSE "$TARGET/"
echo "pdfjs-dist $VERSION (npm), build/pdf.min.mjs, build/pdf.worker.min.mjs, web/pdf_viewer.css; Apache-2.0 (LICENSE)" >"$TARGET/VERSION"
echo "pdf.js $VERSION vendored into ${TARGET#"$ROOT"/}"
