/*
 * Error codes to text.  Own static strings rather than strerror(), which is
 * not thread-safe and whose wording differs between C libraries.
 */
#include <errno.h>

#include "internal.h"

const char *kinet_strerror(int err)
{
	/* The magnitude in unsigned arithmetic: -INT_MIN has no int. */
	unsigned int e = err < 0 ? 0u - (unsigned int)err : (unsigned int)err;

	switch (e) {
	case 0:
		return "success";
	case EPERM:
		return "operation not permitted";
	case ENOENT:
		return "no such key or object";
	case EINTR:
		return "interrupted";
	case EIO:
		return "I/O error (error completion)";
	case ENXIO:
		return "no such device or address";
	case EAGAIN:
		return "resource temporarily unavailable, try again";
	case ENOMEM:
		return "out of memory or queue full";
	case EACCES:
		return "access right missing";
	case EFAULT:
		return "bad address";
	case EBUSY:
		return "resource busy";
	case EEXIST:
		return "already exists";
	case ENODEV:
		return "no such device or provider";
	case EINVAL:
		return "invalid argument";
	case ENOSPC:
		return "no space left";
	case EPIPE:
		return "broken pipe";
	case ERANGE:
		return "outside the registered range";
	case ENOSYS:
		return "function not implemented";
	case EOVERFLOW:
		return "completion queue overrun";
	case EPROTO:
		return "protocol error";
	case EOPNOTSUPP:
		return "operation not supported";
	case ECONNREFUSED:
		return "connection refused";
	case ECONNRESET:
		return "connection reset by peer";
	case ENOTCONN:
		return "not connected";
	case ETIMEDOUT:
		return "timed out";
	case EHOSTUNREACH:
		return "peer unreachable by any available transport";
	case EADDRINUSE:
		return "address already in use";
	case EALREADY:
		return "already in progress";
	case ECANCELED:
		return "canceled";
	default:
		return "unknown error";
	}
}
