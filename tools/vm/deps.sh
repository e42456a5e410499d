#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install what kvtier needs on Debian 12 and extract the few kernel-tree files
# it uses (kselftest harness, checkpatch) into build/ksrc/.
#
# Idempotent and fast when everything is in place: apt is not touched unless a
# package is missing, and tar runs only when an extracted file is missing.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)

pkgs=(
	gcc make pkg-config sparse kmod cpio
	linux-headers-amd64 linux-image-amd64 linux-source-6.1
	qemu-system-x86 busybox-static
	liburing-dev libnvme-dev libnuma-dev
	fio dmsetup gnuplot-nox
	# make install's checks (dkms build), tools/trace, the Python binding
	dkms bpftrace python3 man-db
	# python/examples/kv_events_publisher.py and its tests
	python3-zmq python3-msgpack
	# tools/names.sh and tools/layers.sh (check.sh's style step)
	universal-ctags
	# the debug-kernel lane builds a kernel (tools/vm/debug-kernel.sh)
	flex bison bc libelf-dev libssl-dev xz-utils
)

missing=()
for p in "${pkgs[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	[[ "$status" == "ii "* ]] || missing+=("$p")
done

if ((${#missing[@]})); then
	if ((EUID != 0)); then
		echo "deps: missing packages: ${missing[*]}; run 'make deps' as root" >&2
		exit 1
	fi
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The kernel build tree and image must be the same ABI version.
kver=$("$top/tools/vm/kver")

# Files from the kernel tree, relative to its top. Never committed: build/
# is ignored.
tarball=/usr/src/linux-source-6.1.tar.xz
prefix=linux-source-6.1
files=(
	tools/testing/selftests/kselftest_harness.h
	tools/testing/selftests/kselftest.h
	scripts/checkpatch.pl
	scripts/spelling.txt
	scripts/const_structs.checkpatch
	scripts/kernel-doc
)
ksrc=$top/build/ksrc

want=()
for f in "${files[@]}"; do
	[[ -e "$ksrc/$f" ]] || want+=("$prefix/$f")
done

if ((${#want[@]})); then
	echo "deps: extracting ${#want[@]} files from $tarball"
	mkdir -p "$ksrc"
	tar -xJf "$tarball" -C "$ksrc" --strip-components=1 "${want[@]}"
fi

echo "deps: ok (KVER=$kver)"
