/*
 * The per-thread libfabric call depth (fabric_guard.h).  Thread-local:
 * libfabric enumerates verbs devices in the thread that calls it, and
 * another thread of the process opening its own verbs device meanwhile
 * must still see the devices.
 */
#include "fabric_guard.h"

static _Thread_local int depth;

void kinet_fabric_enter(void)
{
	depth++;
}

void kinet_fabric_leave(void)
{
	depth--;
}

int kinet_fabric_call_depth(void)
{
	return depth;
}
