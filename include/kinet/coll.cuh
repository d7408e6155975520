/*
 * kinet device collectives: a job's ranks from inside CUDA kernels, on a
 * team (host side: kinet/team.h).  C style, thread / _warp / _block forms,
 * built on the device API's verbs (kinet/device.cuh); under KINET_HOST_EMU
 * they run on CPU threads like the rest of it.
 *
 *   kinet/device/coll/types.h     struct kinet_dev_team (kinet_team_export)
 *   kinet/device/coll/team.cuh    heap pointers, put, signal, put_signal,
 *                                 wait_until, quiet, copy; signal rounds
 *   kinet/device/coll/barrier.cuh the team barrier
 *   kinet/device/coll/alltoall.cuh all-to-all and all-to-all(v)
 *
 * Design and memory ordering: docs/architecture/collectives.md; reference:
 * docs/api/kinet_team.3.md.
 */
#ifndef KINET_COLL_CUH
#define KINET_COLL_CUH

#include "kinet/device.cuh"
#include "kinet/device/coll/alltoall.cuh"
#include "kinet/device/coll/barrier.cuh"
#include "kinet/device/coll/team.cuh"
#include "kinet/device/coll/types.h"

#endif /* KINET_COLL_CUH */
