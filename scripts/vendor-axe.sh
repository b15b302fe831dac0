#!/usr/bin/env bash
# Vendors axe-core (Deque, MPL-2.0) from its npm package into tests/browser/axe/, the
# accessibility checker tests/browser/test_accessibility.py injects into each admin page
# (Playwright's add_script_tag). It is test-only: no product page serves or links it. Run it to
# upgrade: change VERSION, run, run the accessibility browser test, commit the files it wrote.
#   scripts/vendor-axe.sh
set -euo pipefail
VERSION=4.14.1
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TARGET="$ROOT/tests/browser/axe"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
# npm pack checks the tarball against the registry's integrity hash.
npm pack --silent "axe-core@$VERSION" >/dev/null
tar xzf "axe-core-$VERSION.tgz"
rm -rf "$TARGET"
mkdir -p "$TARGET"
cp package/axe.min.js package/LICENSE "$TARGET/"
echo "axe-core $VERSION (npm), axe.min.js; MPL-2.0 (LICENSE)" >"$TARGET/VERSION"
echo "axe-core $VERSION vendored into ${TARGET#"$ROOT"/}"
