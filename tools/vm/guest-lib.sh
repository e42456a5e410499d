# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Helpers for the scripts that run inside the kvtier VM; source it.

# kvtier_deps KO: modprobe the modules KO depends on (insmod does not).
kvtier_deps() {
	local deps
	mapfile -t deps < <(modinfo -F depends "$1" | tr ',' '\n' | sed '/^$/d')
	((${#deps[@]} == 0)) || modprobe -a "${deps[@]}"
}

# kvtier_load KO [PARAM=VALUE...]: load KO with its dependencies.
kvtier_load() {
	kvtier_deps "$1" && insmod "$@"
}
