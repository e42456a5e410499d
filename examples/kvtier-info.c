// SPDX-License-Identifier: GPL-2.0
/*
 * kvtier-info: the smallest libkvtier program. Built against an installed
 * libkvtier with pkg-config:
 *
 *	cc -o kvtier-info kvtier-info.c $(pkg-config --cflags --libs kvtier)
 *
 * It prints the API version of the headers it was built with, a key made
 * by the library, and what the running kernel offers (or why it cannot be
 * reached: "module not loaded" without /dev/kvtier).
 *
 * Exit status: 0 when the library answered, whether or not the module is
 * loaded; 1 on any other error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <kvtier.h>

int main(void)
{
	struct kvtier_api api;
	struct kvtier_ctx *ctx;
	struct kvtier_key key;
	unsigned int b;
	int ret;

	printf("libkvtier: headers api %d, uapi ioctl magic 0x%x\n",
	       KVTIER_API_VERSION, KVTIER_IOC_MAGIC);
	kvtier_key_chain(NULL, 1, &key);
	printf("libkvtier: kvtier_key_chain(NULL, 1) = %016" PRIx64
	       "%016" PRIx64 "\n", key.k[1], key.k[0]);

	ret = kvtier_open(&ctx, KVTIER_FEATURES_ALL);
	if (ret == -ENOENT) {
		printf("kernel: /dev/kvtier: module not loaded\n");
		return 0;
	}
	if (ret) {
		printf("kernel: /dev/kvtier: %s\n", strerror(-ret));
		return ret == -EACCES || ret == -EPERM ? 0 : 1;
	}
	kvtier_api_info(ctx, &api);
	printf("kernel: api %u, features:", api.api);
	for (b = 0; b < 64; b++)
		if (api.supported & (1ULL << b))
			printf(" %s", kvtier_feature_name(1ULL << b) ?: "?");
	printf(", dram budget %" PRIu64 " MiB, max_pools %u\n",
	       (uint64_t)api.dram_bytes >> 20, api.max_pools);
	kvtier_close(ctx);
	return 0;
}
