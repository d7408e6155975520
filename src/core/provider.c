/*
 * The provider registry: providers add themselves at load time, contexts
 * find theirs by name.  Core holds no provider symbol.
 */
#include <pthread.h>
#include <string.h>

#include "provider.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kinet_provider *registry;

void kinet_provider_register(struct kinet_provider *prov)
{
	pthread_mutex_lock(&registry_lock);
	prov->next = registry;
	registry = prov;
	pthread_mutex_unlock(&registry_lock);
}

const struct kinet_provider *kinet_provider_find(const char *name)
{
	const struct kinet_provider *p;

	pthread_mutex_lock(&registry_lock);
	for (p = registry; p; p = p->next)
		if (!strcmp(p->name, name))
			break;
	pthread_mutex_unlock(&registry_lock);
	return p;
}
