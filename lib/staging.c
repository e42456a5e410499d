// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libkvtier: staging buffers on a pool's NUMA node (libnuma).
 */
#define KVTIER_LIB_INTERNAL
#include <errno.h>
#include <stdlib.h>
#include <numa.h>

#include "kvtier.h"
#include "kvtier_priv.h"

#define KVTIER_STAGING_ALIGN	4096

/* Whether buffers for @pool come from libnuma; fixed for a pool's life. */
static int kvtier_staging_numa(const struct kvtier_pool *pool)
{
	return pool->numa_node >= 0 && numa_available() >= 0;
}

int kvtier_alloc_staging(struct kvtier_pool *pool, size_t size, void **bufp)
{
	void *buf;

	if (!size)
		return -EINVAL;
	if (kvtier_staging_numa(pool)) {
		buf = numa_alloc_onnode(size, pool->numa_node);
		if (!buf)
			return -ENOMEM;
	} else {
		int ret = posix_memalign(&buf, KVTIER_STAGING_ALIGN, size);

		if (ret)
			return -ret;
	}
	*bufp = buf;
	return 0;
}

void kvtier_free_staging(struct kvtier_pool *pool, void *buf, size_t size)
{
	if (!buf)
		return;
	if (kvtier_staging_numa(pool))
		numa_free(buf, size);
	else
		free(buf);
}
