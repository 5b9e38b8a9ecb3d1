#!/usr/bin/env bash
# Assembles a minimal runtime base image from this host's own glibc: the shared libraries the
# given binaries load, the dynamic loader, the CA certificates and a non-root user. For builds
# that cannot pull the Dockerfile's default base (a machine without a registry, like the
# tests'); operators use the public image.
#
#   deploy/local-base.sh IMAGE BINARY...
#   DOCKER_BUILDKIT=1 docker build --build-arg RUNTIME_IMAGE=IMAGE ...
set -euo pipefail

if [ $# -lt 2 ]; then
    echo "usage: $0 IMAGE BINARY..." >&2
    exit 2
fi
image=$1
shift
docker=${DOCKER:-/usr/bin/docker}
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
# mktemp's directory is private; the image's / must not be.
chmod 755 "$root"

# Every library the binaries load (ldd resolves them as the loader would), and the loader.
for binary in "$@"; do
    ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
done | sort -u | while read -r library; do
    cp --parents --dereference "$library" "$root"
done
mkdir -p "$root/etc/ssl/certs" "$root/tmp"
chmod 1777 "$root/tmp"
cp --dereference /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
echo "nonroot:x:65532:65532:nonroot:/data:/sbin/nologin" > "$root/etc/passwd"
echo "nonroot:x:65532:" > "$root/etc/group"
tar -C "$root" -c . | "$docker" import - "$image" > /dev/null
echo "built $image from this host's glibc"
