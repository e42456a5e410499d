# SPDX-License-Identifier: GPL-2.0
#
# kvtier: top-level build and test entry points. See README.md and
# Documentation/dev/testing.rst.
#
#   make            build the module, the library, the tools and the selftests
#   make deps       install the Debian packages and kernel-tree files needed
#   make run        boot a VM, load the module, run the demo (tools/vm/demo.sh)
#   make check      W=1/sparse module build, selftests in a VM, persistence
#                   across reboots, checkpatch
#   make check-crash power cuts during demotion, in the VM
#   make bench      boot a VM, load the module, run tools/kvtier-bench,
#                   the prefetch comparison (TRACE=FILE: a Mooncake trace)
#                   and the weights demo;
#                   build/bench.txt, and build/bench-latency.svg (gnuplot)
#   make checkpatch checkpatch --strict and kernel-doc on the kernel sources
#   make install    install (DESTDIR, PREFIX); make uninstall; make dkms-install
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

# The 1e6-block LOOKUP point needs 4 GiB of pool DRAM: a larger VM. No
# discards: a discarded range is a hole in the emulated drive's backing
# file, which the tier's next writes would pay to allocate and fio's not.
BENCHMEM	?= 9216
BENCHPARAMS	?= dram_mb=4400 discard=0
BENCHTIMEOUT	?= 1200

bench: deps
	$(MAKE) all
	$(VM) $(VMFLAGS) --mem $(BENCHMEM) --timeout $(BENCHTIMEOUT) \
		--env KVTIER_PARAMS="$(BENCHPARAMS)" \
		$(if $(TRACE),--env KVTIER_TRACE="$(abspath $(TRACE))") \
		-- tools/vm/bench.sh
	@if [ -s build/vm/out/bench.txt ]; then \
		cp build/vm/out/bench.txt build/bench.txt; \
	else \
		: >build/bench.txt; \
	fi
	@# The key hash timed natively on the host (kmod/index.c, unchanged).
	tools/index-bench | tee -a build/bench.txt
	@echo "bench: results saved to build/bench.txt"
	@if [ -s build/vm/out/latency.csv ]; then \
		cp build/vm/out/latency.csv build/latency.csv; \
		tools/bench-plot.sh build/latency.csv build/bench-latency.svg; \
	fi

# Placement policy lab: tools/policy-sim on the traces in KVTIER_TRACES and
# on a generated one; CSV and SVG plots in build/policy/ (no VM needed).
KVTIER_TRACES	?= ../shared/traces

bench-policy: tools
	KVTIER_TRACES="$(KVTIER_TRACES)" tools/bench-policy.sh

.PHONY: bench-policy

# ---- install, uninstall, dkms ----------------------------------------------
#
#   make install [DESTDIR=DIR] [PREFIX=/usr/local]
#       the module to /lib/modules/$(KVER)/updates (kernel paths ignore
#       PREFIX), libkvtier (.so with soname and links, .a), kvtier.h and
#       linux/kvtier.h, kvtier.pc, kvtierctl, the man pages, the Python
#       binding, the examples, tools/trace (kvtier-trace, kvtier-lat.bt);
#       under $(SYSCONFDIR): the udev rule giving /dev/kvtier to group
#       kvtier, and a commented modprobe.d file (not replaced when present). Without DESTDIR also: depmod, ldconfig,
#       groupadd --system kvtier, udev reload.
#   make uninstall      the same paths; the group and an edited modprobe.d
#                       file stay.
#   make dkms-install   sources to /usr/src/kvtier-VERSION; dkms add, build,
#                       install for $(KVER). DKMSFLAGS= passes dkms options
#                       (--dkmstree, --sourcetree, ...); DKMS_STEPS= the
#                       steps (default "add build install").
#   make dkms-uninstall dkms remove --all, and the sources.
#
# KO= installs that kvtier.ko instead of building kmod/kvtier.ko.
PREFIX		?= /usr/local
DESTDIR		?=
SYSCONFDIR	?= /etc
MANDIR		?= $(PREFIX)/share/man
DOCDIR		?= $(PREFIX)/share/doc/kvtier
DATADIR		?= $(PREFIX)/share/kvtier
INSTALL_MOD_DIR	?= updates
KVTIER_VERSION	:= $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"$$/\1/p' dkms.conf)
# Debian's python3 reads /usr/lib/python3/dist-packages and
# /usr/local/lib/python3.X/dist-packages.
PYTHON3		?= /usr/bin/python3
PYTHONDIR	?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python$(shell $(PYTHON3) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)/dist-packages)
DKMS_SRC	= /usr/src/kvtier-$(KVTIER_VERSION)
DKMS_STEPS	?= add build install
DKMSFLAGS	?=
KMOD_SRCS	= kmod/Kbuild kmod/Makefile $(filter-out %.mod.c,$(wildcard kmod/*.c)) $(wildcard kmod/*.h)
MAN_PAGES	= $(wildcard man/*.[1-9])
# The function names in the NAME line of each man3 page become links
# (man kvtier_put shows libkvtier-blocks(3)).
man_links	= sed -n '/^\.SH NAME/{n;s/ *\\-.*//;s/,/ /g;p;q}' $(1)

install: install-kmod install-user

install-kmod: $(if $(KO),,kmod)
	install -D -m 0644 $(or $(KO),kmod/kvtier.ko) \
		$(DESTDIR)/lib/modules/$(KVER)/$(INSTALL_MOD_DIR)/kvtier.ko
	$(if $(DESTDIR),,depmod -a $(KVER))

install-user: lib tools
	$(MAKE) -C lib install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	$(MAKE) -C tools install PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	install -d $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man4 \
		$(DESTDIR)$(MANDIR)/man8
	@set -e; for p in $(MAN_PAGES); do \
		s=$${p##*.}; \
		echo "install -m 0644 $$p $(DESTDIR)$(MANDIR)/man$$s/"; \
		install -m 0644 $$p $(DESTDIR)$(MANDIR)/man$$s/; \
		[ $$s = 3 ] || continue; \
		for f in $$($(call man_links,$$p)); do \
			[ $$f.3 = $${p##*/} ] || \
			echo ".so man3/$${p##*/}" > $(DESTDIR)$(MANDIR)/man3/$$f.3; \
		done; \
	done
	install -D -m 0644 python/kvtier.py $(DESTDIR)$(PYTHONDIR)/kvtier.py
	install -m 0755 tools/trace/kvtier-trace $(DESTDIR)$(PREFIX)/sbin/kvtier-trace
	install -D -m 0644 tools/trace/kvtier-lat.bt $(DESTDIR)$(DATADIR)/kvtier-lat.bt
	install -d $(DESTDIR)$(DOCDIR)/examples
	install -m 0644 examples/kvtier-info.c python/examples/connector.py \
		python/examples/kv_events_publisher.py $(DESTDIR)$(DOCDIR)/examples/
	install -D -m 0644 dist/60-kvtier.rules \
		$(DESTDIR)$(SYSCONFDIR)/udev/rules.d/60-kvtier.rules
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/modprobe.d/kvtier.conf ]; then \
		echo "install: $(DESTDIR)$(SYSCONFDIR)/modprobe.d/kvtier.conf exists, kept"; \
	else \
		echo "install -D -m 0644 dist/kvtier.modprobe.conf $(DESTDIR)$(SYSCONFDIR)/modprobe.d/kvtier.conf"; \
		install -D -m 0644 dist/kvtier.modprobe.conf \
			$(DESTDIR)$(SYSCONFDIR)/modprobe.d/kvtier.conf; \
	fi
ifeq ($(DESTDIR),)
	-ldconfig
	getent group kvtier >/dev/null || groupadd --system kvtier
	-if [ -d /run/udev ] && command -v udevadm >/dev/null; then \
		udevadm control --reload-rules && \
		udevadm trigger --subsystem-match=misc --sysname-match=kvtier; \
	fi
endif

uninstall:
	rm -f $(DESTDIR)/lib/modules/$(KVER)/$(INSTALL_MOD_DIR)/kvtier.ko
	rmdir $(DESTDIR)/lib/modules/$(KVER)/$(INSTALL_MOD_DIR) 2>/dev/null || true
	$(MAKE) -C lib uninstall PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	rmdir $(DESTDIR)$(PREFIX)/include/linux 2>/dev/null || true
	$(MAKE) -C tools uninstall PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)
	@set -e; for p in $(MAN_PAGES); do \
		s=$${p##*.}; \
		rm -f $(DESTDIR)$(MANDIR)/man$$s/$${p##*/}; \
		[ $$s = 3 ] || continue; \
		for f in $$($(call man_links,$$p)); do \
			[ $$f.3 = $${p##*/} ] || rm -f $(DESTDIR)$(MANDIR)/man3/$$f.3; \
		done; \
	done
	rm -f $(DESTDIR)$(PYTHONDIR)/kvtier.py $(DESTDIR)$(PYTHONDIR)/__pycache__/kvtier.*.pyc \
		$(DESTDIR)$(PREFIX)/sbin/kvtier-trace \
		$(DESTDIR)$(DATADIR)/kvtier-lat.bt
	rmdir $(DESTDIR)$(DATADIR) 2>/dev/null || true
	rm -f $(DESTDIR)$(DOCDIR)/examples/kvtier-info.c \
		$(DESTDIR)$(DOCDIR)/examples/connector.py \
		$(DESTDIR)$(DOCDIR)/examples/kv_events_publisher.py
	rmdir $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) 2>/dev/null || true
	rm -f $(DESTDIR)$(SYSCONFDIR)/udev/rules.d/60-kvtier.rules
	@if cmp -s dist/kvtier.modprobe.conf $(DESTDIR)$(SYSCONFDIR)/modprobe.d/kvtier.conf; then \
		rm -f $(DESTDIR)$(SYSCONFDIR)/modprobe.d/kvtier.conf; \
	elif [ -e $(DESTDIR)$(SYSCONFDIR)/modprobe.d/kvtier.conf ]; then \
		echo "uninstall: $(DESTDIR)$(SYSCONFDIR)/modprobe.d/kvtier.conf was edited, kept"; \
	fi
ifeq ($(DESTDIR),)
	-depmod -a $(KVER)
	-ldconfig
endif

dkms-src:
	install -d $(DESTDIR)$(DKMS_SRC)/kmod $(DESTDIR)$(DKMS_SRC)/uapi/linux
	install -m 0644 dkms.conf $(DESTDIR)$(DKMS_SRC)/dkms.conf
	install -m 0644 $(KMOD_SRCS) $(DESTDIR)$(DKMS_SRC)/kmod/
	install -m 0644 uapi/linux/kvtier.h $(DESTDIR)$(DKMS_SRC)/uapi/linux/

dkms-install: dkms-src
	@set -e; for s in $(DKMS_STEPS); do \
		case $$s in add) k=;; *) k="-k $(KVER)";; esac; \
		if [ $$s = add ] && dkms status $(DKMSFLAGS) -m kvtier -v $(KVTIER_VERSION) | grep -q .; then \
			echo "dkms: kvtier/$(KVTIER_VERSION) already added"; continue; \
		fi; \
		echo "dkms $$s $(DKMSFLAGS) -m kvtier -v $(KVTIER_VERSION) $$k"; \
		dkms $$s $(DKMSFLAGS) -m kvtier -v $(KVTIER_VERSION) $$k; \
	done

dkms-uninstall:
	-dkms remove $(DKMSFLAGS) -m kvtier -v $(KVTIER_VERSION) --all
	rm -rf $(DESTDIR)$(DKMS_SRC)

.PHONY: install install-kmod install-user uninstall dkms-src dkms-install dkms-uninstall

# ---- debug-kernel lane -----------------------------------------------------
#
#   make debug-kernel   build and cache (once per tools/vm/debug.config) a
#                       guest kernel from linux-source-6.1 with KASAN, UBSAN,
#                       lockdep, kmemleak and fault injection
#                       (tools/vm/debug-kernel.sh; /var/cache/kvtier/debug-kernel/,
#                       KVTIER_DEBUG_CACHE= elsewhere)
#   make check-debug    check.sh's kmod, vm (+ kmemleak scan), persist,
#                       crash and smp steps on that kernel, with a
#                       1,000,000-call fuzz burst (KVTIER_FUZZ_CALLS=);
#                       builds the kernel first if needed.
#                       Logs in build/check-debug/debug/.
# `make check` runs the lane too, building the kernel in the background from
# its start when it is not cached (about 12 minutes of 2 cores, once);
# KVTIER_CHECK_DEBUG=0 leaves the lane out with a "check: SKIP: debug-kernel
# lane" line, which is a failure in CI (CI=true).
debug-kernel: deps
	tools/vm/debug-kernel.sh

check-debug: debug-kernel
	$(MAKE) lib tools selftests
	KVTIER_FUZZ_CALLS=$${KVTIER_FUZZ_CALLS:-1000000} \
	KVTIER_TEST_TIMEOUT_MIN=$${KVTIER_TEST_TIMEOUT_MIN:-7200} \
	KVTIER_DEBUG_TEST_TIMEOUT=$${KVTIER_DEBUG_TEST_TIMEOUT:-7500} \
	KVTIER_DEBUG_VM_TIMEOUT=$${KVTIER_DEBUG_VM_TIMEOUT:-14400} \
	KVTIER_DEBUG_REQUIRED=1 KVTIER_CHECK_LOGS=$(CURDIR)/build/check-debug \
		MAKE="$(MAKE)" KVTIER_VM_FLAGS="$(VMFLAGS)" tools/vm/check.sh debug

.PHONY: debug-kernel check-debug

checkpatch:
	@test -e build/ksrc/scripts/checkpatch.pl || tools/vm/deps.sh
	tools/vm/check.sh style

clean:
	-$(MAKE) -C kmod KDIR=$(KDIR) clean
	-$(MAKE) -C lib clean
	-$(MAKE) -C tools clean
	-$(MAKE) -C selftests/kvtier clean
	rm -rf build/check build/vm build/bench.txt build/latency.csv build/bench-latency.svg \
		build/check-debug build/vm-debug

.PHONY: all deps kmod lib tools selftests check check-crash run bench checkpatch clean
