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
	[nvme_part.c]=4 [compress.c]=4					# tiers: NVMe parts, compression
	[tier_nvme.c]=5 [tier_hbm.c]=5					# tiers
	[hbm_emul.c]=6 [hbm_user.c]=6					# HBM backends
	[residency.c]=7							# residency
	[cmd.c]=8 [prefetch.c]=8 [mmap.c]=8 [shrinker.c]=8 [reserve.c]=8		# commands
	[pool.c]=8 [sysfs.c]=8 [main.c]=8 [uring.c]=8 [nvme_store.c]=8
	[census.c]=8
)
top=8
declare -A name=([0]=base [1]="key hash" [2]=index [3]=tier [4]=tier
		 [5]=tier [6]="tier backend" [7]=residency [8]=command)

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
