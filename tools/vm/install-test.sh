#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# `check.sh install`: what `make install` and `make dkms-install` produce,
# tested on the host (no module is loaded). One TAP line per case:
#
#  - make install into a DESTDIR with PREFIX=/opt/kvtier: the module, the
#    library (file, soname link, dev link, SONAME), headers, kvtier.pc,
#    kvtierctl, man pages, Python binding, udev rule, modprobe.d file;
#  - kvtier.pc names PREFIX's paths; examples/kvtier-info.c compiles and
#    links with `pkg-config --cflags --libs kvtier` (PKG_CONFIG_PATH and
#    PKG_CONFIG_SYSROOT_DIR into the DESTDIR) and runs, taking
#    libkvtier.so.1 from the DESTDIR; the installed Python binding imports;
#  - each man page renders with `man --warnings -l` (and groff -ww) without
#    a warning;
#  - the udev rule names the device of uapi/linux/kvtier.h; the modprobe.d
#    example lists every parameter `modinfo` reports, and parses once
#    uncommented;
#  - make uninstall leaves no file in the DESTDIR;
#  - make dkms-install with the dkms tree, source tree and install tree in
#    a scratch directory: dkms add, build (against the installed headers of
#    KVER) and install; the built module's vermagic is KVER's;
#    make dkms-uninstall empties the scratch directory again.
#
# Usage: install-test.sh [TOP]. Environment: KVTIER_KO (the module to
# install; default kmod/kvtier.ko, built if missing), KDIR, MAKE.
set -uo pipefail

top=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
cd "$top" || exit 1
make=${MAKE:-make}
kver=$(tools/vm/kver)
ko=${KVTIER_KO:-$top/kmod/kvtier.ko}
work=$top/build/install-test
prefix=/opt/kvtier
dest=$work/dest
n=0
nfail=0

ok() {
	n=$((n + 1))
	echo "ok $n - $1"
}

not_ok() {
	n=$((n + 1))
	nfail=$((nfail + 1))
	echo "not ok $n - $1"
	if [[ -n ${2:-} && -s $2 ]]; then
		sed 's/^/#   /' "$2" | tail -n 30
	fi
}

# check NAME CMD...: one case, its output shown on failure.
check() {
	local name=$1 log=$work/case.log
	shift
	if "$@" >"$log" 2>&1; then
		ok "$name"
	else
		not_ok "$name" "$log"
	fi
}

rm -rf "$work"
mkdir -p "$work"

if [[ ! -e $ko ]]; then
	"$make" kmod >"$work/kmod.log" 2>&1 || not_ok "make kmod (for the install)" "$work/kmod.log"
fi

# 1. make install into a DESTDIR.
check "make install DESTDIR=... PREFIX=$prefix" \
	"$make" install DESTDIR="$dest" PREFIX="$prefix" KO="$ko"

libdir=$dest$prefix/lib
pydir=$(find "$dest$prefix/lib" -maxdepth 2 -path "*/python3*/dist-packages" 2>/dev/null | head -n 1)
files=(
	"/lib/modules/$kver/updates/kvtier.ko"
	"$prefix/lib/libkvtier.so.1.0.0" "$prefix/lib/libkvtier.so.1"
	"$prefix/lib/libkvtier.so" "$prefix/lib/libkvtier.a"
	"$prefix/lib/pkgconfig/kvtier.pc"
	"$prefix/include/kvtier.h" "$prefix/include/linux/kvtier.h"
	"$prefix/sbin/kvtierctl" "$prefix/sbin/kvtier-trace"
	"$prefix/share/kvtier/kvtier-lat.bt"
	"$prefix/share/man/man8/kvtierctl.8" "$prefix/share/man/man4/kvtier.4"
	"$prefix/share/man/man3/libkvtier.3" "$prefix/share/man/man3/kvtier_put.3"
	"$prefix/share/man/man3/kvtier_events_open.3"
	"$prefix/share/doc/kvtier/examples/kv_events_publisher.py"
	"/etc/udev/rules.d/60-kvtier.rules" "/etc/modprobe.d/kvtier.conf"
)
missing=()
for f in "${files[@]}"; do
	[[ -e $dest$f ]] || missing+=("$f")
done
[[ -n $pydir && -e $pydir/kvtier.py ]] || missing+=("$prefix/lib/python3.X/dist-packages/kvtier.py")
if ((${#missing[@]})); then
	printf '%s\n' "${missing[@]}" >"$work/case.log"
	not_ok "installed files present (${#missing[@]} missing)" "$work/case.log"
else
	ok "installed files present (${#files[@]} checked, and kvtier.py)"
fi

lib_links() {
	[[ -L $libdir/libkvtier.so.1 && $(readlink "$libdir/libkvtier.so.1") == libkvtier.so.1.0.0 ]] &&
		[[ -L $libdir/libkvtier.so && $(readlink "$libdir/libkvtier.so") == libkvtier.so.1 ]] &&
		[[ -f $libdir/libkvtier.so.1.0.0 && ! -L $libdir/libkvtier.so.1.0.0 ]] &&
		readelf -d "$libdir/libkvtier.so.1.0.0" | grep -F '(SONAME)' | grep -qF '[libkvtier.so.1]'
}
check "libkvtier.so -> .so.1 -> .so.1.0.0, SONAME libkvtier.so.1" lib_links

export PKG_CONFIG_PATH=$libdir/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest
pc_paths() {
	[[ $(PKG_CONFIG_SYSROOT_DIR='' pkg-config --variable=prefix kvtier) == "$prefix" ]] &&
		[[ $(PKG_CONFIG_SYSROOT_DIR='' pkg-config --variable=libdir kvtier) == "$prefix/lib" ]] &&
		[[ $(PKG_CONFIG_SYSROOT_DIR='' pkg-config --variable=includedir kvtier) == "$prefix/include" ]] &&
		[[ $(pkg-config --modversion kvtier) == 1.0.0 ]]
}
check "kvtier.pc: prefix, libdir, includedir of PREFIX, version 1.0.0" pc_paths

build_example() {
	# shellcheck disable=SC2046
	cc -Wall -Wextra -Werror -o "$work/kvtier-info" examples/kvtier-info.c \
		$(pkg-config --cflags --libs kvtier)
}
check "cc examples/kvtier-info.c \$(pkg-config --cflags --libs kvtier)" build_example

run_example() {
	local out
	LD_LIBRARY_PATH=$libdir ldd "$work/kvtier-info" | grep -F "libkvtier.so.1 => $libdir/libkvtier.so.1" || return 1
	out=$(LD_LIBRARY_PATH=$libdir "$work/kvtier-info") || return 1
	echo "$out"
	grep -q '^libkvtier: headers api [0-9]' <<<"$out" &&
		grep -q '^kernel: ' <<<"$out"
}
check "kvtier-info runs on the installed libkvtier.so.1" run_example
LD_LIBRARY_PATH=$libdir "$work/kvtier-info" 2>&1 | sed 's/^/# /'

py_import() {
	# Without -B: its __pycache__ must go at uninstall too.
	PYTHONPATH=$pydir LD_LIBRARY_PATH=$libdir PYTHONDONTWRITEBYTECODE='' /usr/bin/python3 -c \
		'import kvtier; print(kvtier.__file__, kvtier.API_VERSION, kvtier.tier_name(2))' |
		grep -F "$pydir/kvtier.py 1 dram"
}
check "python3: import kvtier from the DESTDIR, on its libkvtier.so.1" py_import

# 2. Man pages.
render() {
	local page=$1 out
	# man resolves .so requests relative to the man root.
	out=$(cd "$dest$prefix/share/man" && MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null) || return 1
	[[ -z $out ]] || { echo "$out"; return 1; }
	out=$(cd "$dest$prefix/share/man" && groff -ww -z -man -t "$page" 2>&1)
	[[ -z $out ]] || { echo "$out"; return 1; }
	[[ $(cd "$dest$prefix/share/man" && MANWIDTH=80 man -l "$page" 2>/dev/null | wc -l) -gt 5 ]]
}
for p in man/*.[1-9]; do
	s=${p##*.}
	check "man -l ${p#man/}: renders without warnings" render "man$s/${p##*/}"
done
stubs() {
	local f bad=0
	for f in "$dest$prefix"/share/man/man3/kvtier_*.3; do
		render "man3/${f##*/}" || { echo "$f"; bad=1; }
	done
	return $bad
}
check "man3 kvtier_*.3 links (one per function) render" stubs

# Every function libkvtier exports has a man3 page of its name.
man_coverage() {
	local f bad=0
	for f in $(sed -n 's/^[[:space:]]*\(kvtier_[a-z0-9_]*\);/\1/p' lib/libkvtier.map); do
		[[ -e $dest$prefix/share/man/man3/$f.3 ]] || { echo "no man page for $f"; bad=1; }
	done
	return $bad
}
check "every function of lib/libkvtier.map has a man page" man_coverage

# 3. udev rule and modprobe.d example.
udev_rule() {
	local name
	name=$(sed -n 's/^#define KVTIER_DEVICE_NAME[[:space:]]*"\(.*\)"/\1/p' uapi/linux/kvtier.h)
	[[ -n $name ]] && grep -q "^KERNEL==\"$name\", SUBSYSTEM==\"misc\", GROUP=\"kvtier\", MODE=\"0660\"" \
		"$dest/etc/udev/rules.d/60-kvtier.rules"
}
check "udev rule: /dev/$(sed -n 's/^#define KVTIER_DEVICE_NAME[[:space:]]*"\(.*\)"/\1/p' uapi/linux/kvtier.h) to group kvtier, 0660" udev_rule

modprobe_conf() {
	local conf=$dest/etc/modprobe.d/kvtier.conf p bad=0
	grep -q '^[^#]' "$conf" && { echo "an uncommented line"; return 1; }
	while IFS= read -r p; do
		[[ -n $p ]] || continue
		if ! grep -q "^#options kvtier $p=" "$conf"; then
			echo "parameter $p is not in the example"
			bad=1
		fi
	done < <(modinfo -F parm "$ko" | sed 's/:.*//')
	sed 's/^#options/options/' "$conf" >"$work/modprobe-on.conf"
	modprobe -C "$work/modprobe-on.conf" -c >"$work/modprobe-c.txt" 2>&1 || bad=1
	for p in $(modinfo -F parm "$ko" | sed 's/:.*//'); do
		grep -q "^options kvtier $p=" "$work/modprobe-c.txt" || { echo "modprobe -c: no $p"; bad=1; }
	done
	return $bad
}
check "modprobe.d example: commented out, lists every parameter, parses" modprobe_conf

# 4. make uninstall.
uninstall_clean() {
	"$make" uninstall DESTDIR="$dest" PREFIX="$prefix" || return 1
	find "$dest" ! -type d >"$work/left.txt"
	cat "$work/left.txt"
	[[ ! -s $work/left.txt ]]
}
check "make uninstall leaves no file in the DESTDIR" uninstall_clean

# 5. DKMS, everything in a scratch directory.
scratch=$work/dkms
dkmsflags="--dkmstree $scratch/var/lib/dkms --sourcetree $scratch/usr/src --installtree $scratch/lib/modules --no-depmod"
mkdir -p "$scratch/var/lib/dkms" "$scratch/usr/src" "$scratch/lib/modules/$kver"
# dkms signs what it builds, with a key it creates in /var/lib/dkms unless
# told another: keep that in the scratch tree too.
export mok_signing_key=$work/mok.key mok_certificate=$work/mok.pub
if ! command -v dkms >/dev/null; then
	not_ok "dkms installed (make deps)"
else
	check "make dkms-install (dkms add, build, install for $kver, in a scratch tree)" \
		"$make" dkms-install DESTDIR="$scratch" DKMSFLAGS="$dkmsflags"
	built() {
		local k
		k=$(find "$scratch/lib/modules/$kver" -name 'kvtier.ko*' | head -n 1)
		[[ -n $k ]] || { echo "no kvtier.ko under $scratch/lib/modules/$kver"; return 1; }
		echo "$k"
		modinfo -F vermagic "$k" | grep -q "^$kver "
	}
	check "dkms: kvtier.ko installed, vermagic $kver" built
	dkms_clean() {
		"$make" dkms-uninstall DESTDIR="$scratch" DKMSFLAGS="$dkmsflags" || return 1
		find "$scratch" ! -type d >"$work/left.txt"
		rm -f "$mok_signing_key" "$mok_certificate"
		cat "$work/left.txt"
		[[ ! -s $work/left.txt ]]
	}
	check "make dkms-uninstall leaves no file in the scratch tree" dkms_clean
fi

echo "1..$n"
((nfail == 0))
