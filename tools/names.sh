#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The module (kmod/, kvt_), the library (lib/, kvtier_) and the selftests
# (selftests/kvtier/, kst_) each have names of their own: no function and no
# struct tag may be defined in two of them. Lists the definitions with ctags
# (.c and .h only; generated *.mod.c and main() left out) and exits 1 naming
# every name defined in two of the directories.
#
#   tools/names.sh [-v]     -v: also list every definition, as NAME KIND DIR
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
dirs=(kmod lib selftests/kvtier)

# Universal Ctags (Debian: universal-ctags) for --_xformat and --kinds-C.
ctags=$(command -v ctags-universal || command -v ctags || true)
if [[ -z $ctags ]] || ! "$ctags" --version 2>/dev/null | grep -q '^Universal Ctags'; then
	echo "not ok names: Universal Ctags not found (apt-get install universal-ctags)"
	exit 2
fi

# NAME KIND DIR for each function definition and struct tag, once per dir.
defs() {
	local d

	for d in "${dirs[@]}"; do
		find "$d" -type f \( -name '*.c' -o -name '*.h' \) ! -name '*.mod.c' |
			"$ctags" -L - -x --_xformat='%N %K' --langmap=C:.c.h --languages=C \
				--kinds-C=fs |
			awk -v d="$d" '$1 != "main" && $1 !~ /^__anon/ { print $1, $2, d }'
	done | sort -u
}

list=$(defs)
[[ ${1:-} == -v ]] && echo "$list"

# A name is one name whether a function or a struct: NAME DIR pairs, then
# the names that come in more than one dir.
dups=$(awk '{ print $1, $3 }' <<<"$list" | sort -u |
	awk '{ dirs[$1] = dirs[$1] " " $2; n[$1]++ }
	     END { for (k in n) if (n[k] > 1) print k ":" dirs[k] }' | sort)

if [[ -n $dups ]]; then
	echo "not ok names: defined in two of kmod/, lib/, selftests/:"
	while IFS= read -r l; do
		echo "#   $l"
	done <<<"$dups"
	exit 1
fi
echo "ok names: no function or struct defined in two of kmod/, lib/, selftests/ ($(wc -l <<<"$list") definitions)"
