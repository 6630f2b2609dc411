#!/bin/sh
# Copies the noVNC release pinned here into ../static/novnc: its ES modules
# (core/, vendor/pako), its licences and AUTHORS, with a VERSION file the
# tests check against the files. The tarball comes from the npm registry
# (npm pack, no install, no scripts run) and must match the integrity
# pinned below. Run from pkg/view (go generate ./pkg/view); needs npm.
set -eu
version=1.7.0
integrity=sha512-ucEJOx4T2avIRCleodk7YobZj5O2Ga2AeLfQ69A/yjG9HHba2+PDgwSkN3FttrmG+70ZGx21sElNFouK13RzyA==
cd "$(dirname "$0")"
dst=$(pwd)/../static/novnc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@novnc/novnc@$version" >/dev/null)
tgz=$tmp/novnc-novnc-$version.tgz
got=sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)
if [ "$got" != "$integrity" ]; then
	echo "noVNC $version: integrity $got, want $integrity" >&2
	exit 1
fi
tar -xzf "$tgz" -C "$tmp"
rm -rf "$dst"
mkdir -p "$dst"
cp -R "$tmp/package/core" "$tmp/package/vendor" "$tmp/package/LICENSE.txt" "$tmp/package/AUTHORS" "$dst/"
mkdir -p "$dst/docs"
cp "$tmp"/package/docs/LICENSE.* "$dst/docs/"
{
	echo "@novnc/novnc $version $integrity"
	(cd "$dst" && find . -type f ! -name VERSION | LC_ALL=C sort | xargs sha256sum)
} >"$dst/VERSION"
