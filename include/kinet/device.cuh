/*
 * kinet device API: GPU-initiated RDMA from CUDA kernels (C style).
 *
 * Include this from .cu files (nvcc), or from C files compiled with
 * KINET_HOST_EMU defined to run the same code on CPU threads.  The QP and CQ
 * descriptors come from kinet_qp_export()/kinet_cq_export() (host API).
 *
 * The API, one concept per header under kinet/device/:
 *   types.h         descriptors (struct kinet_dev_qp, kinet_dev_cq, ...)
 *   platform.cuh    KINET_DEV_FN, statuses, the clock, system fences
 *   launch.h        kernels as CPU threads under emulation
 *   high level (thread, _warp and _block forms):
 *   rma.cuh         put, put_inline, get, write_imm
 *   atomic.cuh      fetch_add, compare_swap
 *   signal.cuh      signal, put_signal, signal_wait_until
 *   msg.cuh         send, send_imm, post_recv, recv
 *   completion.cuh  test, wait, quiet, fence
 *   sem.cuh         GPU semaphores: item status, packet info, custom info
 *   eth.cuh         Ethernet queues: receive, send, timed send, poll, wait
 *   low level (the caller orders):
 *   wqe.cuh         WQE builders and prepare calls
 *   sq.cuh          send queue: reserve, commit, progress, tickets
 *   rq.cuh          receive queue: reserve, prepare, commit, poll
 *   doorbell.cuh    send and receive doorbells
 *   cq.cuh          CQE snapshot, poll, consume
 *   error.cuh       sticky QP errors, the context's error record
 * Everything under kinet/device/impl/ (names kinet_devi_*, KINET_DEVI_*)
 * is the implementation: not API, it may change without notice.
 *
 * Reference: docs/DEVICE_API.md.
 */
#ifndef KINET_DEVICE_CUH
#define KINET_DEVICE_CUH

#include "kinet/device/atomic.cuh"
#include "kinet/device/completion.cuh"
#include "kinet/device/cq.cuh"
#include "kinet/device/doorbell.cuh"
#include "kinet/device/error.cuh"
#include "kinet/device/eth.cuh"
#include "kinet/device/launch.h"
#include "kinet/device/msg.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/rma.cuh"
#include "kinet/device/rq.cuh"
#include "kinet/device/sem.cuh"
#include "kinet/device/signal.cuh"
#include "kinet/device/sq.cuh"
#include "kinet/device/types.h"
#include "kinet/device/wqe.cuh"

#endif /* KINET_DEVICE_CUH */
