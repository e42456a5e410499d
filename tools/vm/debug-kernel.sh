#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# debug-kernel.sh: build (once) and cache the kvtier debug kernel, a QEMU
# guest kernel from Debian's linux-source-6.1 with `make tinyconfig` plus
# tools/vm/debug.config (virtio-pci, 9p, NVMe, dm, io_uring, crc32c, NUMA,
# memcg, tracing built in; KASAN, UBSAN, lockdep, kmemleak, fault injection).
#
# Usage: debug-kernel.sh           build unless cached; print the cache dir
#        debug-kernel.sh --path    print the cache dir; exit 1 when not built
#        debug-kernel.sh --force   rebuild even when cached
#
# The cache dir is $KVTIER_DEBUG_CACHE (default /var/cache/kvtier/debug-kernel)
# /KEY, KEY the first 16 hex digits of the sha256 of debug.config, the
# linux-source-6.1 package version and $recipe below (bump it when a change
# here changes what is built). It holds:
#   bzImage, vmlinux     the kernel (kvtier-vm --kernel DIR/bzImage)
#   kernelrelease        its `uname -r`
#   cmdline              arguments kvtier-vm adds to the kernel command line
#   mod/lib/modules/REL  modules_install output (modules.builtin, ...)
#   build/               the O= build tree: make -C kmod KDIR=DIR/build
#   build.log, build-time
#   .done                written last: the cache entry is complete
# The source is extracted once per version under
# $KVTIER_DEBUG_CACHE/../src/linux-source-6.1-VERSION (outside the repo).
#
# Environment: KVTIER_DEBUG_JOBS (make -j, default: the number of CPUs),
# KVTIER_DEBUG_NICE=0 to build at normal priority (default: nice -n 19,
# ionice -c3, so that a build does not slow down VMs and other builds).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
frag=$top/tools/vm/debug.config
tarball=/usr/src/linux-source-6.1.tar.xz
cache_root=${KVTIER_DEBUG_CACHE:-/var/cache/kvtier/debug-kernel}
jobs=${KVTIER_DEBUG_JOBS:-$(nproc)}

# The build procedure's version: part of the cache key.
recipe="tinyconfig + fragment, make all, modules_install; v1"

mode=build
case ${1:-} in
'') ;;
--path) mode=path ;;
--force) mode=force ;;
*) echo "usage: ${0##*/} [--path | --force]" >&2; exit 2 ;;
esac

die() {
	echo "debug-kernel: $*" >&2
	exit 1
}

srcver=$(dpkg-query -W -f '${Version}' linux-source-6.1 2>/dev/null || true)
[[ -n $srcver && -r $tarball ]] ||
	die "linux-source-6.1 is not installed (apt-get install linux-source-6.1)"
key=$( {
	echo "linux-source-6.1 $srcver"
	echo "$recipe"
	cat "$frag"
} | sha256sum | cut -c1-16)
dir=$cache_root/$key

# Boot arguments for this kernel. acpi=noirq: with lockdep, KASAN and
# UBSAN under TCG, routing each PCI device's legacy interrupt through
# ACPI's link devices takes 20-30 s per device (a 50-70 s boot instead of
# 12 s); the VM's virtio and NVMe devices use MSI-X and need no INTx.
write_cmdline() {
	echo "acpi=noirq" >"$dir/cmdline"
}

# The cache entry's cmdline follows this script (no rebuild needed).
[[ ! -e $dir/.done ]] || write_cmdline
if [[ $mode == path ]]; then
	[[ -e $dir/.done ]] || exit 1
	echo "$dir"
	exit 0
fi
if [[ $mode == build && -e $dir/.done ]]; then
	echo "$dir"
	exit 0
fi

run=()
[[ ${KVTIER_DEBUG_NICE:-1} == 0 ]] || run=(nice -n 19 ionice -c3)

# 1. The source, once per package version.
src=$(dirname "$cache_root")/src/linux-source-6.1-$srcver
if [[ ! -e $src/Makefile ]]; then
	echo "debug-kernel: extracting $tarball to $src" >&2
	mkdir -p "$(dirname "$src")"
	rm -rf "$src.tmp"
	mkdir "$src.tmp"
	"${run[@]}" tar -C "$src.tmp" --strip-components=1 -xJf "$tarball"
	mv "$src.tmp" "$src"
fi

# 2. The config: tinyconfig + the fragment, olddefconfig, and every option
# the fragment sets must have kept its value (a missing dependency makes
# kconfig drop an option silently).
rm -rf "$dir"
mkdir -p "$dir/build"
log=$dir/build.log
kmake=("${run[@]}" make -C "$src" O="$dir/build")
echo "debug-kernel: building in $dir (log: $log)" >&2
t0=$(date +%s)
{
	"${kmake[@]}" tinyconfig
	"${run[@]}" "$src/scripts/kconfig/merge_config.sh" \
		-m -O "$dir/build" "$dir/build/.config" "$frag"
	"${kmake[@]}" olddefconfig
} >"$log" 2>&1 || die "configuration failed, see $log"

bad=0
while IFS= read -r line; do
	case $line in
	CONFIG_*=*)
		grep -qxF "$line" "$dir/build/.config" || {
			echo "debug-kernel: $line is not in .config: $(grep "^${line%%=*}=\|^# ${line%%=*} " "$dir/build/.config" || echo unset)" >&2
			bad=1
		} ;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }
		opt=${opt%% *}
		if grep -q "^$opt=" "$dir/build/.config"; then
			echo "debug-kernel: $opt should be unset: $(grep "^$opt=" "$dir/build/.config")" >&2
			bad=1
		fi ;;
	esac
done <"$frag"
((!bad)) || die "the fragment did not survive olddefconfig; fix tools/vm/debug.config"

# 3. Build: vmlinux, bzImage, modules; install the modules tree.
"${kmake[@]}" -j"$jobs" all >>"$log" 2>&1 || {
	tail -n 40 "$log" >&2
	die "build failed, see $log"
}
"${kmake[@]}" INSTALL_MOD_PATH="$dir/mod" modules_install >>"$log" 2>&1 ||
	die "modules_install failed, see $log"
t1=$(date +%s)

cp "$dir/build/arch/x86/boot/bzImage" "$dir/build/vmlinux" "$dir/"
cat "$dir/build/include/config/kernel.release" >"$dir/kernelrelease"
write_cmdline
echo "$((t1 - t0)) s, make -j$jobs, $(nproc) CPUs, $(date -u +%FT%TZ)" >"$dir/build-time"
touch "$dir/.done"
echo "debug-kernel: built $(cat "$dir/kernelrelease") in $(((t1 - t0) / 60)) min $(((t1 - t0) % 60)) s" >&2
echo "$dir"
