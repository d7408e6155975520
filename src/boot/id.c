/*
 * Unique ids: rank 0's address, port and a random key in 128 opaque bytes.
 * The listening socket made with the id stays in a per-process list until
 * rank 0 takes it in kinet_boot_init_with_id().
 *
 * Layout: "KNB1", IPv4 address (4, network order), port (2, network
 * order), 2 zero bytes, magic (8, big-endian), zeros.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "boot_internal.h"

static const uint8_t id_tag[4] = {'K', 'N', 'B', '1'};

struct listener {
	uint64_t magic;
	int fd;
	struct listener *next;
};

static pthread_mutex_t listeners_lock = PTHREAD_MUTEX_INITIALIZER;
static struct listener *listeners;

uint64_t boot_random64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = kinet_now_ns() * 0x9e3779b97f4a7c15ull ^ ((uint64_t)getpid() << 32);
	return v ? v : 1;
}

int kinet_boot_get_unique_id(struct kinet_boot_id *id)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t slen = sizeof(sa);
	struct listener *l;
	struct in_addr addr;
	int fd, rc;

	if (!id)
		return KINET_EINVAL("id", "NULL");
	rc = boot_local_addr(&addr);
	if (rc)
		return rc;
	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	rc = boot_listen(&sa, 1024, &fd);
	if (rc)
		return rc;
	if (getsockname(fd, (struct sockaddr *)&sa, &slen) != 0 || !(l = calloc(1, sizeof(*l)))) {
		rc = errno ? -errno : -ENOMEM;
		close(fd);
		return rc;
	}
	l->fd = fd;
	l->magic = boot_random64();
	memset(id, 0, sizeof(*id));
	memcpy(id->internal, id_tag, sizeof(id_tag));
	memcpy(id->internal + 4, &addr.s_addr, 4);
	memcpy(id->internal + 8, &sa.sin_port, 2);
	boot_put64(id->internal + 12, l->magic);
	pthread_mutex_lock(&listeners_lock);
	l->next = listeners;
	listeners = l;
	pthread_mutex_unlock(&listeners_lock);
	return 0;
}

int boot_id_decode(const struct kinet_boot_id *id, struct boot_id_info *info)
{
	if (memcmp(id->internal, id_tag, sizeof(id_tag)) != 0) {
		KINET_ERR("kinet_boot_init_with_id: invalid argument 'id': not made by "
			  "kinet_boot_get_unique_id()");
		return -EINVAL;
	}
	memset(&info->sa, 0, sizeof(info->sa));
	info->sa.sin_family = AF_INET;
	memcpy(&info->sa.sin_addr.s_addr, id->internal + 4, 4);
	memcpy(&info->sa.sin_port, id->internal + 8, 2);
	info->magic = boot_get64(id->internal + 12);
	return 0;
}

int boot_id_take_listener(uint64_t magic)
{
	struct listener **pp, *l;
	int fd = -1;

	pthread_mutex_lock(&listeners_lock);
	for (pp = &listeners; *pp; pp = &(*pp)->next) {
		if ((*pp)->magic == magic) {
			l = *pp;
			*pp = l->next;
			fd = l->fd;
			free(l);
			break;
		}
	}
	pthread_mutex_unlock(&listeners_lock);
	return fd;
}
