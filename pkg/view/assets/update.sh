#!/bin/sh
# Copies the xterm.js release pinned in package-lock.json into ../static/xterm,
# with a VERSION file the tests check against the lock. Run from pkg/view
# (go generate ./pkg/view, or make view-assets); needs npm and the registry.
set -eu
cd "$(dirname "$0")"
npm ci --ignore-scripts --no-audit --no-fund
src=node_modules/@xterm/xterm
dst=../static/xterm
mkdir -p "$dst"
cp "$src/lib/xterm.js" "$src/css/xterm.css" "$src/LICENSE" "$dst/"
version=$(node -p 'require("./node_modules/@xterm/xterm/package.json").version')
{
	echo "@xterm/xterm $version"
	(cd "$dst" && sha256sum xterm.js xterm.css LICENSE)
} >"$dst/VERSION"
