// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libkvtier: a mover copy for an arena in CUDA device memory.
 *
 * No build dependency on CUDA: the CUDA runtime is opened at run time with
 * dlopen(3), and the one call needed, cudaMemcpy(), is declared here with
 * the ABI the CUDA runtime has had since its first version (enum
 * cudaMemcpyKind values 1 = host to device, 2 = device to host; 0 is
 * cudaSuccess). A runtime that has CUDA gets a device arena with
 * cudaMalloc() (slots x block size bytes) and passes it as the copy's
 * argument:
 *
 *	struct kvtier_cuda_arena a;
 *	kvtier_mover_cuda_init(&a, dev_ptr);
 *	kvtier_mover_open(pool, mover_fd, kvtier_mover_cuda, &a, &m);
 */
#define KVTIER_LIB_INTERNAL
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "kvtier.h"
#include "kvtier_priv.h"

#define KVTIER_CUDA_H2D	1
#define KVTIER_CUDA_D2H	2

typedef int (*kvtier_cuda_memcpy_fn)(void *dst, const void *src, size_t count,
				     int kind);

static const char * const kvtier_cudart_names[] = {
	"libcudart.so", "libcudart.so.12", "libcudart.so.11.0",
	"libcudart.so.11", "libcudart.so.10.2",
};

int kvtier_mover_cuda_init(struct kvtier_cuda_arena *a, void *device_base)
{
	void *lib = NULL;
	size_t i;

	memset(a, 0, sizeof(*a));
	for (i = 0; !lib && i < sizeof(kvtier_cudart_names) /
			      sizeof(kvtier_cudart_names[0]); i++)
		lib = dlopen(kvtier_cudart_names[i], RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return -ENOENT;
	a->memcpy_fn = dlsym(lib, "cudaMemcpy");
	if (!a->memcpy_fn) {
		dlclose(lib);
		return -ENOSYS;
	}
	a->lib = lib;
	a->base = device_base;
	return 0;
}

void kvtier_mover_cuda_fini(struct kvtier_cuda_arena *a)
{
	if (a->lib)
		dlclose(a->lib);
	memset(a, 0, sizeof(*a));
}

int kvtier_mover_cuda(void *arg, uint32_t op, uint32_t slot, void *dram,
		      uint64_t bytes)
{
	struct kvtier_cuda_arena *a = arg;
	kvtier_cuda_memcpy_fn cpy = (kvtier_cuda_memcpy_fn)a->memcpy_fn;
	char *dev = (char *)a->base + (size_t)slot * bytes;

	if (!cpy)
		return -ENODEV;
	if (op == KVTIER_MOVE_TO_DEV)
		return cpy(dev, dram, bytes, KVTIER_CUDA_H2D) ? -EIO : 0;
	return cpy(dram, dev, bytes, KVTIER_CUDA_D2H) ? -EIO : 0;
}
