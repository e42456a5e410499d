#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""What an NVMe controller offers hosts that share a namespace.

Usage: nvme-passthru.py /dev/nvmeXnY

Sends, through the kernel's NVMe passthrough (NVME_IOCTL_ADMIN_CMD,
NVME_IOCTL_IO_CMD), an Identify Controller, then a Compare and a
Reservation Register of the namespace's first block, and prints one
"name value" line each (nvme-tcp.sh reads them):

  compare no|yes                 ONCS bit 0
  fused_compare_write no|yes     FUSES bit 0
  reservations no|yes            ONCS bit 5
  atomic_write_blocks N          AWUPF + 1: blocks a write keeps whole
                                 through a power failure
  compare_cmd S                  ok, invalid_opcode or status 0xNNNN
  resv_register_cmd S            the same

Exit status: 0 once every command got an answer, 1 if one could not be
sent at all.
"""
import ctypes
import fcntl
import mmap
import os
import struct
import sys


class PassthruCmd(ctypes.Structure):
    """struct nvme_passthru_cmd (<linux/nvme_ioctl.h>)."""

    _fields_ = [
        ("opcode", ctypes.c_uint8),
        ("flags", ctypes.c_uint8),
        ("rsvd1", ctypes.c_uint16),
        ("nsid", ctypes.c_uint32),
        ("cdw2", ctypes.c_uint32),
        ("cdw3", ctypes.c_uint32),
        ("metadata", ctypes.c_uint64),
        ("addr", ctypes.c_uint64),
        ("metadata_len", ctypes.c_uint32),
        ("data_len", ctypes.c_uint32),
        ("cdw10", ctypes.c_uint32),
        ("cdw11", ctypes.c_uint32),
        ("cdw12", ctypes.c_uint32),
        ("cdw13", ctypes.c_uint32),
        ("cdw14", ctypes.c_uint32),
        ("cdw15", ctypes.c_uint32),
        ("timeout_ms", ctypes.c_uint32),
        ("result", ctypes.c_uint32),
    ]


assert ctypes.sizeof(PassthruCmd) == 72

# _IOWR('N', 0x41 / 0x43, struct nvme_passthru_cmd)
NVME_IOCTL_ADMIN_CMD = 0xC0484E41
NVME_IOCTL_IO_CMD = 0xC0484E43
NVME_IOCTL_ID = 0x4E40  # _IO('N', 0x40): the namespace id

ADMIN_IDENTIFY = 0x06
IO_COMPARE = 0x05
IO_RESV_REGISTER = 0x0D
SC_INVALID_OPCODE = 0x01


def submit(fd, req, op, nsid, buf, length, cdw10=0, cdw12=0):
    """One command; its NVMe status (0: success)."""
    cmd = PassthruCmd()
    cmd.opcode = op
    cmd.nsid = nsid
    cmd.addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    cmd.data_len = length
    cmd.cdw10 = cdw10
    cmd.cdw12 = cdw12
    cmd.timeout_ms = 10000
    return fcntl.ioctl(fd, req, cmd, True)


def status_name(st):
    if st == 0:
        return "ok"
    if st & 0x7FF == SC_INVALID_OPCODE:  # SCT 0 (generic), SC 1
        return "invalid_opcode"
    return "status 0x%04x" % st


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    dev = sys.argv[1]
    name = os.path.basename(dev)
    with open("/sys/block/%s/queue/logical_block_size" % name) as f:
        lbs = int(f.read())
    buf = mmap.mmap(-1, 4096)
    fd = os.open(dev, os.O_RDONLY)
    try:
        nsid = fcntl.ioctl(fd, NVME_IOCTL_ID)
        st = submit(fd, NVME_IOCTL_ADMIN_CMD, ADMIN_IDENTIFY, 0, buf, 4096,
                    cdw10=1)
        if st:
            print("identify controller: %s" % status_name(st))
            return 1
        oncs, fuses = struct.unpack_from("<HH", buf, 520)
        awupf = struct.unpack_from("<H", buf, 528)[0]
        print("compare %s" % ("yes" if oncs & 1 else "no"))
        print("fused_compare_write %s" % ("yes" if fuses & 1 else "no"))
        print("reservations %s" % ("yes" if oncs & (1 << 5) else "no"))
        print("atomic_write_blocks %d" % (awupf + 1))

        # Compare the first block with zeros (NLB 0: one block).
        buf.seek(0)
        buf.write(bytes(4096))
        st = submit(fd, NVME_IOCTL_IO_CMD, IO_COMPARE, nsid, buf, lbs)
        print("compare_cmd %s" % status_name(st))
        # Register key 0x6b7674 (RREGA 0: register; data CRKEY, NRKEY).
        buf.seek(0)
        buf.write(struct.pack("<QQ", 0, 0x6B7674))
        st = submit(fd, NVME_IOCTL_IO_CMD, IO_RESV_REGISTER, nsid, buf, 16)
        print("resv_register_cmd %s" % status_name(st))
    except OSError as e:
        print("passthrough: %s" % e)
        return 1
    finally:
        os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
