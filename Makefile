# SPDX-License-Identifier: GPL-2.0
#
# kvtier: top-level build and test entry points. See README.md.
#
#   make            build the module, the library, the tools and the selftests
#   make deps       install the Debian packages and kernel-tree files needed
#   make run        boot a VM, load the module, run the demo (tools/vm/demo.sh)
#   make check      W=1/sparse module build, selftests in a VM, persistence
#                   across reboots, checkpatch
#   make check-crash power cuts during demotion, in the VM
#   make bench      boot a VM, load the module, run tools/kvtier-bench
#   make checkpatch checkpatch --strict and kernel-doc on the kernel sources
#   make clean      remove build outputs (build/ and in-tree objects)

SHELL		:= /bin/bash
.SHELLFLAGS	:= -eo pipefail -c

# Recursively expanded on purpose: evaluated when used, i.e. after `deps`
# has installed the kernel. KVER=/KDIR= on the command line override.
KVER		?= $(shell tools/vm/kver)
KDIR		?= /lib/modules/$(KVER)/build

VM		:= tools/vm/kvtier-vm
# Options for the VM of run/check/bench, and its wall-clock limit.
VMFLAGS		?= --numa --cpus 2 --nvme 2
VMTIMEOUT	?= 600

all: kmod lib tools selftests

deps:
	tools/vm/deps.sh

kmod:
	$(MAKE) -C kmod KDIR=$(KDIR)

lib:
	$(MAKE) -C lib

tools: lib
	$(MAKE) -C tools

selftests:
	$(MAKE) -C selftests/kvtier

# check.sh builds everything itself: the module from clean with W=1 C=2,
# then lib, tools and selftests, each build a counted case.
check: deps
	KDIR=$(KDIR) MAKE="$(MAKE)" KVTIER_VM_FLAGS="$(VMFLAGS)" tools/vm/check.sh

# Power cuts during heavy demotion (three QEMU kills and reboots).
check-crash: deps
	$(MAKE) all
	KDIR=$(KDIR) MAKE="$(MAKE)" tools/vm/check.sh crash

run: deps
	$(MAKE) all
	$(VM) $(VMFLAGS) --timeout $(VMTIMEOUT) -- tools/vm/demo.sh

# The 1e6-block LOOKUP point needs 4 GiB of pool DRAM: a larger VM.
BENCHMEM	?= 9216
BENCHPARAMS	?= dram_mb=4400

bench: deps
	$(MAKE) all
	$(VM) $(VMFLAGS) --mem $(BENCHMEM) --timeout $(VMTIMEOUT) \
		--env KVTIER_PARAMS="$(BENCHPARAMS)" -- tools/vm/bench.sh
	@if [ -s build/vm/out/bench.txt ]; then \
		cp build/vm/out/bench.txt build/bench.txt; \
		echo "bench: results saved to build/bench.txt"; \
	fi

# Placement policy lab: tools/policy-sim on the traces in KVTIER_TRACES and
# on a generated one; CSV and SVG plots in build/policy/ (no VM needed).
KVTIER_TRACES	?= ../shared/traces

bench-policy: tools
	KVTIER_TRACES="$(KVTIER_TRACES)" tools/bench-policy.sh

.PHONY: bench-policy

checkpatch:
	@test -e build/ksrc/scripts/checkpatch.pl || tools/vm/deps.sh
	tools/vm/check.sh style

clean:
	-$(MAKE) -C kmod KDIR=$(KDIR) clean
	-$(MAKE) -C lib clean
	-$(MAKE) -C tools clean
	-$(MAKE) -C selftests/kvtier clean
	rm -rf build/check build/vm build/bench.txt

.PHONY: all deps kmod lib tools selftests check check-crash run bench checkpatch clean
