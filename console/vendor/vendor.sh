#!/usr/bin/env bash
# Re-vendors the console's npm packages into console/assets/vendor at the versions pinned in
# package-lock.json: `bash console/vendor/vendor.sh`. The console ships these files as they
# are, so it needs no network and no bundler at build or run time. Browsers resolve no bare
# module names without an import map (which the console's Content-Security-Policy would
# refuse inline), so each `from "preact"` becomes a relative import.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/../assets/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$here/package.json" "$here/package-lock.json" "$work/"
(cd "$work" && npm ci --silent --no-audit --no-fund --ignore-scripts)
m="$work/node_modules"
mkdir -p "$out"
cp "$m/preact/dist/preact.module.js" "$out/preact.js"
sed -e 's#from"preact"#from"./preact.js"#g; s#from "preact"#from "./preact.js"#g' \
  "$m/preact/hooks/dist/hooks.module.js" > "$out/preact-hooks.js"
cp "$m/htm/dist/htm.module.js" "$out/htm.js"
cp "$m/node-diff3/dist/diff3.mjs" "$out/diff3.js"
# Source maps are not shipped: drop the comments that name them.
sed -i -e '/^\/\/# sourceMappingURL=/d' "$out"/*.js
for f in "$out"/*.js; do
  if grep -Eq "from ?\"[a-z@]" "$f"; then echo "$f still imports a bare module name" >&2; exit 1; fi
done
cp "$m/preact/LICENSE" "$out/LICENSE-preact.txt"
cp "$m/htm/LICENSE" "$out/LICENSE-htm.txt"
cp "$m/node-diff3/LICENSE.md" "$out/LICENSE-node-diff3.txt"
ls -l "$out"
