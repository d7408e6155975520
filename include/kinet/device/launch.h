/*
 * kinet device API: "run this kernel on the GPU or on CPU threads".
 *
 * Under KINET_HOST_EMU, kinet_emu_launch(nblocks, fn, arg) runs fn(arg) on
 * nblocks CPU threads (one per "block" of one thread each, so warp and
 * block forms are groups of one) and joins them; kinet_dev_block_id() and
 * kinet_dev_grid_blocks() give each its block index and the block count.
 * With nvcc the same two functions read blockIdx.x / gridDim.x, and the
 * program launches with <<<...>>> as usual.
 */
#ifndef KINET_DEVICE_LAUNCH_H
#define KINET_DEVICE_LAUNCH_H

#include "kinet/device/platform.cuh"

#if defined(KINET_HOST_EMU)
#include <pthread.h>
#include <stdlib.h>

struct kinet_emu_block {
	void (*fn)(void *);
	void *arg;
	unsigned block;
	unsigned nblocks;
};

#ifdef __cplusplus
extern "C" {
#endif
/* Counts emulated device threads in libkinet: its engine threads stop
 * spinning when the polling threads outnumber the cores. */
KINET_API void kinet_emu_threads_add(int delta);
/* The calling emulated thread's block index and block count, kept in
 * libkinet (one per thread for the whole program, whichever file the
 * device code is in). */
KINET_API void kinet_emu_block_enter(unsigned block, unsigned nblocks);
KINET_API unsigned kinet_emu_block_id(void);
KINET_API unsigned kinet_emu_grid_blocks(void);
#ifdef __cplusplus
}
#endif

static inline unsigned kinet_dev_block_id(void)
{
	return kinet_emu_block_id();
}

static inline unsigned kinet_dev_grid_blocks(void)
{
	return kinet_emu_grid_blocks();
}

static inline void *kinet_devi_emu_block_main(void *p)
{
	struct kinet_emu_block *b = (struct kinet_emu_block *)p;
	kinet_emu_block_enter(b->block, b->nblocks);
	b->fn(b->arg);
	return NULL;
}

/* Runs fn(arg) as nblocks concurrent CPU threads; 0 or a negative errno. */
static inline int kinet_emu_launch(unsigned nblocks, void (*fn)(void *), void *arg)
{
	struct kinet_emu_block *b = (struct kinet_emu_block *)calloc(nblocks, sizeof(*b));
	pthread_t *t = (pthread_t *)calloc(nblocks, sizeof(*t));
	unsigned started = 0;
	int err = 0;
	if (!b || !t) {
		free(b);
		free(t);
		return -ENOMEM;
	}
	kinet_emu_threads_add((int)nblocks);
	for (; started < nblocks; started++) {
		b[started].fn = fn;
		b[started].arg = arg;
		b[started].block = started;
		b[started].nblocks = nblocks;
		err = pthread_create(&t[started], NULL, kinet_devi_emu_block_main, &b[started]);
		if (err)
			break;
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	kinet_emu_threads_add(-(int)nblocks);
	free(b);
	free(t);
	return -err;
}

#else

KINET_DEV_FN unsigned kinet_dev_block_id(void)
{
	return blockIdx.x;
}

KINET_DEV_FN unsigned kinet_dev_grid_blocks(void)
{
	return gridDim.x;
}

#endif

#endif /* KINET_DEVICE_LAUNCH_H */
