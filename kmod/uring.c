// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring: IORING_OP_URING_CMD on a pool file.
 *
 * sqe->cmd_op is the ioctl number of PUT, GET, LOOKUP, PREFETCH, RESERVE,
 * COMMIT or ABORT and the SQE's command area is a struct kvtier_uring_cmd
 * pointing at the same struct the ioctl takes. Commands run to completion
 * in the issuing context: LOOKUP (without LOAD or PIN) and PREFETCH never
 * wait, so they complete inline; the others may wait for NVMe, for room or
 * for faults to end (map_sem), so on the first, non-blocking issue they
 * answer -EAGAIN before doing anything and io_uring reissues them from its
 * worker threads, where waiting is allowed (and a killed task's waits end
 * with -EINTR). The CQE's res is the ioctl's return value.
 */
#include <linux/io_uring.h>
#include "kvt.h"

/**
 * kvt_pool_uring_cmd() - file_operations.uring_cmd of a pool file
 * @ioucmd: the command
 * @issue_flags: IO_URING_F_*
 *
 * Return: the command's result (the CQE's res); -EOPNOTSUPP for an
 * operation not taken here, or on a pool fd whose control fd did not
 * negotiate KVTIER_F_URING (and, for RESERVE, COMMIT and ABORT,
 * KVTIER_F_RESERVE: kvt_pool_cmd() checks); -EINVAL for a nonzero reserved field; -EAGAIN
 * to be reissued where it may block.
 */
int kvt_pool_uring_cmd(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	const struct kvtier_uring_cmd *c = ioucmd->cmd;
	struct kvt_handle *h = ioucmd->file->private_data;
	u64 arg = READ_ONCE(c->arg);

	switch (ioucmd->cmd_op) {
	case KVTIER_IOC_PUT:
	case KVTIER_IOC_GET:
	case KVTIER_IOC_LOOKUP:
	case KVTIER_IOC_PREFETCH:
	case KVTIER_IOC_RESERVE:
	case KVTIER_IOC_COMMIT:
	case KVTIER_IOC_ABORT:
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (!(h->features & KVTIER_F_URING))
		return -EOPNOTSUPP;
	if (READ_ONCE(c->reserved))
		return -EINVAL;
	return kvt_pool_cmd(h, ioucmd->cmd_op, u64_to_user_ptr(arg),
			    issue_flags & IO_URING_F_NONBLOCK);
}
