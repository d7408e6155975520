/*
 * Core's internal objects and helpers (src/core), which providers build on:
 * one header per owner, all of them included here.  Not installed.  What
 * only one provider uses is in that provider's folder
 * (src/provider/soft/soft.h); the ops between core and a provider are in
 * provider.h.
 */
#ifndef KINET_INTERNAL_H
#define KINET_INTERNAL_H

#include "base.h"
#include "cq.h"
#include "ctx.h"
#include "cuda_rt.h"
#include "eth.h"
#include "log.h"
#include "mr.h"
#include "peer.h"
#include "qp.h"
#include "srq.h"

#endif /* KINET_INTERNAL_H */
