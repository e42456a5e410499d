// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe tier: reads made for a caller that may give them up.
 *
 * A part read (nvme_part.c) and a read into user memory (nvme_direct.c)
 * are waited for by the GET that made them, and a fatal signal ends that
 * wait: the read then lives on until its bios end, since they still write
 * into its pages. struct kvt_crd is what the two share: a reference for
 * the caller and one for the bios, a completion, and the device counted in
 * its inflight (which detach waits for) until the last reference goes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bio.h>
#include "nvme.h"

/* The last reference went: what holds the read, the pool, the device go. */
static void kvt_crd_release(struct kvt_crd *crd)
{
	struct kvt_nvme *nvme = crd->nvme;
	struct kvt_pool *pool = crd->pool;

	crd->free(crd);
	kvt_pool_put(pool);
	/* Detach flushes nvme->wq after this, so nvme outlives the wake. */
	if (atomic_dec_and_test(&nvme->inflight))
		wake_up_all(&nvme->idle);
}

static void kvt_crd_free_work(struct work_struct *work)
{
	kvt_crd_release(container_of(work, struct kvt_crd, free_work));
}

/*
 * A bio ended, or the submitter is done: after the last, wake the caller,
 * and free the read if the caller gave it up (from the device's workqueue:
 * freeing may sleep).
 */
static void kvt_crd_io_put(struct kvt_crd *crd)
{
	if (!atomic_dec_and_test(&crd->pending))
		return;
	if (crd->ended)
		crd->ended(crd);
	complete_all(&crd->done);
	if (refcount_dec_and_test(&crd->refs))
		queue_work(crd->nvme->wq, &crd->free_work);
}

static void kvt_crd_end_io(struct bio *bio)
{
	struct kvt_crd *crd = bio->bi_private;

	if (bio->bi_status) {
		WRITE_ONCE(crd->status, blk_status_to_errno(bio->bi_status));
		atomic64_inc(&crd->nvme->io_errors);
	}
	bio_put(bio);
	kvt_crd_io_put(crd);
}

/**
 * kvt_crd_init() - a read for a caller, about to be submitted
 * @crd: the read
 * @nvme: its device, already counted in its inflight
 * @pool: its pool, referenced here
 * @ended: called once its last bio ended, before the caller is woken (in
 *	   a bio's completion), or NULL
 * @free: frees what holds @crd (in process context)
 */
void kvt_crd_init(struct kvt_crd *crd, struct kvt_nvme *nvme,
		  struct kvt_pool *pool, void (*ended)(struct kvt_crd *crd),
		  void (*free)(struct kvt_crd *crd))
{
	crd->nvme = nvme;
	crd->pool = pool;
	kref_get(&pool->ref);
	crd->status = 0;
	crd->bytes = 0;
	crd->ended = ended;
	crd->free = free;
	atomic_set(&crd->pending, 1);
	init_completion(&crd->done);
	refcount_set(&crd->refs, 2);
	INIT_WORK(&crd->free_work, kvt_crd_free_work);
}

/**
 * kvt_crd_submit() - read pages of the device into a read's pages
 * @crd: the read, initialized
 * @off: the device byte to start at
 * @pages: where the bytes go, a page each
 * @nr: how many
 */
void kvt_crd_submit(struct kvt_crd *crd, u64 off, struct page **pages,
		    u32 nr)
{
	struct bio *bio = NULL;
	u32 i = 0;

	while (i < nr) {
		if (!bio) {
			bio = bio_alloc(crd->nvme->bdev,
					min_t(u32, BIO_MAX_VECS, nr - i),
					REQ_OP_READ, GFP_NOIO);
			bio->bi_iter.bi_sector = KVT_SECTORS(off +
						((u64)i << PAGE_SHIFT));
			bio->bi_private = crd;
			bio->bi_end_io = kvt_crd_end_io;
		}
		if (bio_add_page(bio, pages[i], PAGE_SIZE, 0) == PAGE_SIZE) {
			crd->bytes += PAGE_SIZE;
			i++;
			continue;
		}
		atomic_inc(&crd->pending);
		submit_bio(bio);
		bio = NULL;
	}
	if (bio) {
		atomic_inc(&crd->pending);
		submit_bio(bio);
	}
}

/**
 * kvt_crd_submitted() - a read's bios are all submitted
 * @crd: the read
 */
void kvt_crd_submitted(struct kvt_crd *crd)
{
	kvt_crd_io_put(crd);
}

/**
 * kvt_crd_wait() - wait for a read's bios to end
 * @crd: the read
 *
 * Return: 0, the bytes counted in the device's bytes_read; -EINTR when
 * killed; -EIO when a bio failed.
 */
int kvt_crd_wait(struct kvt_crd *crd)
{
	if (wait_for_completion_killable(&crd->done))
		return -EINTR;
	if (READ_ONCE(crd->status))
		return -EIO;
	atomic64_add(crd->bytes, &crd->nvme->bytes_read);
	return 0;
}

/**
 * kvt_crd_put() - the caller gives a read up, ended or not
 * @crd: the read
 *
 * If some of its bios are still in flight (the caller was killed), the last
 * of them frees it, from the device's workqueue.
 */
void kvt_crd_put(struct kvt_crd *crd)
{
	if (refcount_dec_and_test(&crd->refs))
		kvt_crd_release(crd);
}
