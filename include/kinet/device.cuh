/*
 * kinet device API: GPU-initiated RDMA from CUDA kernels (C style).
 *
 * Include this from .cu files (nvcc), or from C files compiled with
 * KINET_HOST_EMU defined to run the same code on CPU threads.  The QP and CQ
 * descriptors come from kinet_qp_export()/kinet_cq_export() (host API).
 *
 *   kinet/device/platform.cuh  qualifiers, fences, atomics, timer, groups
 *   kinet/device/wqe.cuh       WQE builders and low-level prepare calls
 *   kinet/device/queue.cuh     reserve / commit / doorbells / CQ / RQ /
 *                              progress / wait (the low level)
 *   kinet/device/ops.cuh       put, get, atomics, signal, send/recv, ...
 *                              in thread, _warp and _block forms
 *   kinet/device/launch.h      kernels as CPU threads under emulation
 *
 * Reference: docs/DEVICE_API.md.
 */
#ifndef KINET_DEVICE_CUH
#define KINET_DEVICE_CUH

#include "kinet/device/launch.h"
#include "kinet/device/ops.cuh"
#include "kinet/device/platform.cuh"
#include "kinet/device/queue.cuh"
#include "kinet/device/types.h"
#include "kinet/device/wqe.cuh"

#endif /* KINET_DEVICE_CUH */
