#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Check the layers of kmod/ (Documentation/design.rst, "Layers"): each file
# calls only files of the layers below its own, or of its own layer where
# that layer is the commands; only block.c touches the free list
# (pool->free), only index.c the key hash (pool->buckets, kvt_block.hnext),
# only policy.c the policy's list (pool->lru), and only
# residency.c puts a block on that list or takes it off.
#
# The call graph is the file-level one: the functions each kmod/*.c defines
# (ctags), and the calls by name of them (name followed by "(") in the other
# files, comments and strings left out. A call through an ops or hook
# pointer is not a call by name, which is how a layer below tells one above.
#
# Usage: tools/layers.sh [-v]	-v also prints the file-level call graph
# Prints each violation; exits 1 if there is one.
set -euo pipefail

cd "$(dirname "$0")/../kmod"

# The layers, bottom up. A file of the top layer (commands) may call any
# file; the others only files of lower layers.
declare -A layer=(
	[fault.c]=0 [events.c]=0 [lat.c]=0				# fault injection, event log, latency
	[index.c]=1							# key hash
	[block.c]=2 [policy.c]=2					# index
	[tier_dram.c]=3							# tiers: DRAM pages
	[nvme_read.c]=4							# tiers: NVMe reads for a caller
	[nvme_part.c]=5 [nvme_direct.c]=5 [compress.c]=5		# tiers: NVMe parts, reads to user, compression
	[tier_nvme.c]=6 [tier_hbm.c]=6 [tier_file.c]=6			# tiers
	[hbm_emul.c]=7 [hbm_user.c]=7					# HBM backends
	[residency.c]=8							# residency
	[cmd.c]=9 [prefetch.c]=9 [mmap.c]=9 [shrinker.c]=9 [reserve.c]=9		# commands
	[pool.c]=9 [sysfs.c]=9 [main.c]=9 [uring.c]=9 [nvme_store.c]=9
	[census.c]=9
)
top=9
declare -A name=([0]=base [1]="key hash" [2]=index [3]=tier [4]=tier
		 [5]=tier [6]=tier [7]="tier backend" [8]=residency [9]=command)

verbose=0
[[ ${1:-} == -v ]] && verbose=1

bad=0
violation() {
	echo "layers: $*"
	bad=1
}

# A C file without comments, strings and character constants.
strip() {
	perl -0777 -pe 's{/\*.*?\*/}{ }gs; s{//[^\n]*}{}g; s{"(\\.|[^"\\\n])*"}{""}g; s{'"'"'(\\.|[^'"'"'\\\n])*'"'"'}{0}g' "$1"
}

files=(*.c)
files=("${files[@]/%.mod.c/}")
declare -A defs
for f in "${files[@]}"; do
	[[ -n $f && -f $f ]] || continue
	if [[ -z ${layer[$f]:-} ]]; then
		violation "$f: in no layer (add it to tools/layers.sh)"
		continue
	fi
	defs[$f]=$(ctags -x --c-kinds=f "$f" 2>/dev/null | awk '{ print $1 }' | sort -u)
done

for f in "${!defs[@]}"; do
	body=$(strip "$f")
	own=" $(echo "${defs[$f]}" | tr '\n' ' ') "
	for g in "${!defs[@]}"; do
		[[ $g == "$f" ]] && continue
		names=()
		for n in ${defs[$g]}; do
			[[ $own == *" $n "* ]] || names+=("$n")
		done
		((${#names[@]})) || continue
		re=$(IFS='|'; echo "${names[*]}")
		called=$(grep -oE "\\b($re)[[:space:]]*\\(" <<<"$body" |
			 sed 's/[[:space:]]*($//' | sort -u | paste -sd' ' || true)
		[[ -n $called ]] || continue
		((verbose)) && echo "calls: $f -> $g: $called"
		lf=${layer[$f]} lg=${layer[$g]}
		if ((lg > lf || (lg == lf && lf != top))); then
			violation "$f (${name[$lf]}) calls $g (${name[$lg]}): $called"
		fi
	done
done

# The free list is the index's: only block.c links and unlinks it.
for f in "${!defs[@]}"; do
	[[ $f == block.c ]] && continue
	n=$(strip "$f" | grep -cE '\bpool(->|\.)free\b' || true)
	((n == 0)) || violation "$f: touches pool->free ($n lines), only block.c may"
done

# The key hash is index.c's: only it reads or links the chains (block.c
# allocates the buckets).
for f in "${!defs[@]}"; do
	[[ $f == index.c ]] && continue
	n=$(strip "$f" | grep -cE '(->|\.)hnext\b|buckets\[' || true)
	((n == 0)) || violation "$f: touches the key hash (buckets[], hnext: $n lines), only index.c may"
done

# The replacement list is the policy's: only policy.c reads or links it.
for f in "${!defs[@]}"; do
	[[ $f == policy.c ]] && continue
	n=$(strip "$f" | grep -cE '(->|\.)lru\b' || true)
	((n == 0)) || violation "$f: touches the policy's list pool->lru ($n lines), only policy.c may"
done

# Whether a block may leave DRAM is the residency layer's to say: only
# residency.c puts blocks on the replacement list or takes them off.
for f in "${!defs[@]}"; do
	[[ $f == policy.c || $f == residency.c ]] && continue
	called=$(strip "$f" | grep -oE '\bkvt_policy_(insert|remove|touch|victim)[[:space:]]*\(' |
		 sed 's/[[:space:]]*($//' | sort -u | paste -sd' ' || true)
	[[ -z $called ]] ||
		violation "$f: changes the replacement list ($called), only residency.c may"
done

if ((bad)); then
	exit 1
fi
echo "layers: ok (${#defs[@]} files)"
