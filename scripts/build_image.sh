#!/usr/bin/env bash
# Builds the sysobs container image (OCI archive) from the project's own
# .deb on a Debian base made here: nothing is pulled from a registry.
#
#   scripts/build_image.sh [OUTDIR]   # default: build-image/
#
# 1. scripts/package.sh builds the .deb from the working tree;
# 2. mmdebstrap makes a Debian 12 root of the essential set plus that .deb and
#    its dependencies, from Debian's archive (documentation and locales left
#    out), as a tarball;
# 3. buildah puts the tarball in an image from scratch, entrypoint sysobsd,
#    and writes it as OUTDIR/sysobs-<version>.oci.tar, named
#    localhost/sysobs:<version> (load it with `podman load -i`, `ctr -n k8s.io
#    images import`, or push it to a registry of your own with skopeo).
# Prints the archive's path on the last line. Needs root (mmdebstrap's root
# mode, buildah's vfs storage) and mmdebstrap, buildah (scripts/deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-$PWD/build-image}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
for c in mmdebstrap buildah dpkg-parsechangelog; do
	command -v "$c" >/dev/null || { echo "build_image: $c missing: run ./scripts/deps.sh" >&2; exit 1; }
done
version=$(dpkg-parsechangelog -l deploy/debian/changelog -S Version)
# SYSOBS_DEB=path: an already built .deb (scripts/package.sh prints it)
deb=${SYSOBS_DEB:-$(./scripts/package.sh "$OUT/pkg" | tail -1)}
[ -f "$deb" ] || { echo "build_image: no .deb from scripts/package.sh" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sysobs-image.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cp "$deb" "$WORK/"
# The essential set (dpkg, a libc, coreutils: Debian's floor), sysobs's
# dependencies from the archive, then sysobs itself with dpkg inside the root
# (mmdebstrap's --include of a local .deb fails in root mode with Debian 12's
# apt: "cannot stat pathname /tmp/apt-dpkg-install-..."). The entrypoint
# needs no shell.
# (the sysusers alternative: systemd-standalone-sysusers, not all of systemd)
deps=$(dpkg-deb -f "$deb" Depends | sed 's/systemd | systemd-standalone-sysusers/systemd-standalone-sysusers/;
	s/([^)]*)//g; s/|[^,]*//g; s/ //g')
name=$(basename "$deb")
mmdebstrap --mode=root --variant=essential --include="$deps" \
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
	--customize-hook="copy-in $WORK/$name /tmp" \
	--customize-hook="chroot \"\$1\" dpkg -i /tmp/$name" \
	--customize-hook='rm -rf "$1"/tmp/*.deb "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
	--customize-hook='mkdir -p "$1"/var/lib/sysobs "$1"/etc/sysobs' \
	bookworm "$WORK/rootfs.tar" >&2

BS=(--root "$WORK/storage" --runroot "$WORK/run" --storage-driver vfs)
export BUILDAH_ISOLATION=chroot
c=$(buildah "${BS[@]}" from scratch)
buildah "${BS[@]}" add "$c" "$WORK/rootfs.tar" / >/dev/null
buildah "${BS[@]}" config --entrypoint '["/usr/sbin/sysobsd"]' \
	--cmd '["--config","/etc/sysobs/sysobsd.ini"]' --port 9559/tcp \
	--label org.opencontainers.image.title=sysobs \
	--label org.opencontainers.image.version="$version" "$c"
buildah "${BS[@]}" commit -q "$c" "localhost/sysobs:$version" >/dev/null
img=$OUT/sysobs-$version.oci.tar
rm -f "$img"
buildah "${BS[@]}" push -q "localhost/sysobs:$version" "oci-archive:$img:localhost/sysobs:$version" >&2
echo "$img"
