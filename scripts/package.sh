#!/usr/bin/env bash
# Builds the Debian package (dpkg-buildpackage + debhelper) from the working
# tree and checks it with lintian.
#
#   scripts/package.sh [OUTDIR]     # default: build-pkg/
#
# The repository's top level has no debian/: deploy/debian/ is the packaging
# tree. A build copy of the tracked and new (not ignored) files gets it as
# debian/, plus debian/sysobs.sysusers from deploy/sysusers.d/. The git
# revision travels in $SYSOBS_REVISION (the copy has no .git). Prints the
# path of the .deb on the last line.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
OUT=${1:-$SRC/build-pkg}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

for c in dpkg-buildpackage dh lintian; do
	command -v "$c" >/dev/null ||
		{ echo "package: $c missing: run ./scripts/deps.sh" >&2; exit 1; }
done

SYSOBS_REVISION=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
	SYSOBS_REVISION=$SYSOBS_REVISION-dirty
fi
export SYSOBS_REVISION

version=$(dpkg-parsechangelog -l deploy/debian/changelog -S Version)
WORK=$OUT/sysobs-$version
rm -rf "$WORK"
mkdir -p "$WORK"
git ls-files -z --cached --others --exclude-standard |
	grep -zv '^deploy/debian/' |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	tar --null -T - -cf - | tar -xf - -C "$WORK"
cp -a deploy/debian "$WORK/debian"
cp deploy/sysusers.d/sysobs.conf "$WORK/debian/sysobs.sysusers"

(cd "$WORK" && DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-parallel=2}" \
	dpkg-buildpackage -b --no-sign) >"$OUT/build.log" 2>&1 || {
	tail -n 40 "$OUT/build.log" >&2
	echo "package: dpkg-buildpackage failed (log: $OUT/build.log)" >&2
	exit 1
}
deb=$(ls -t "$OUT"/sysobs_"${version}"_*.deb | head -n 1)
changes=$(ls -t "$OUT"/sysobs_"${version}"_*.changes | head -n 1)
# lintian: every tag is either fixed or overridden with its reason
# (deploy/debian/sysobs.lintian-overrides); --fail-on warning makes a new
# warning or error fail the build.
lintian --fail-on error,warning --display-info --tag-display-limit 0 "$changes" \
	>"$OUT/lintian.log" 2>&1 || {
	cat "$OUT/lintian.log" >&2
	echo "package: lintian found warnings or errors" >&2
	exit 1
}
[ -s "$OUT/lintian.log" ] && cat "$OUT/lintian.log" >&2
rm -rf "$WORK"
echo "$deb"
