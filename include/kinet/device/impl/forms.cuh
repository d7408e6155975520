/*
 * kinet device API, implementation: the thread, _warp and _block forms of
 * a verb, generated from its one definition.
 *
 * Each verb is written once, as kinet_devi_<verb>_g(group, args...), the
 * group being KINET_DEVI_GROUP_THREAD, _WARP or _BLOCK (a constant in each
 * form, so the group tests fold away).  KINET_DEVI_FORMS then defines
 *   kinet_dev_<verb>(args...)        group THREAD
 *   kinet_dev_<verb>_warp(args...)   group WARP
 *   kinet_dev_<verb>_block(args...)  group BLOCK
 * KINET_DEVI_FORMS_ONE does the same for a verb whose thread form is a
 * function of its own (kinet_devi_<verb>_one: what rank 0 of a group runs,
 * with the thread form's exact outputs on every path).
 *
 * params: the forms' parameter list, parenthesised; args: the names passed
 * on, parenthesised (constants allowed: send and send_imm share a generic).
 */
#ifndef KINET_DEVICE_IMPL_FORMS_CUH
#define KINET_DEVICE_IMPL_FORMS_CUH

#include "kinet/device/platform.cuh"

#define KINET_DEVI_ARGS(...) __VA_ARGS__

#define KINET_DEVI_FORM(name, group, generic, params, args)                                                  \
	KINET_DEV_FN int name params                                                                         \
	{                                                                                                    \
		return generic(group, KINET_DEVI_ARGS args);                                                 \
	}

#define KINET_DEVI_GROUP_FORMS(verb, generic, params, args)                                                  \
	KINET_DEVI_FORM(kinet_dev_##verb##_warp, KINET_DEVI_GROUP_WARP, generic, params, args)               \
	KINET_DEVI_FORM(kinet_dev_##verb##_block, KINET_DEVI_GROUP_BLOCK, generic, params, args)

#define KINET_DEVI_FORMS(verb, generic, params, args)                                                        \
	KINET_DEVI_FORM(kinet_dev_##verb, KINET_DEVI_GROUP_THREAD, generic, params, args)                    \
	KINET_DEVI_GROUP_FORMS(verb, generic, params, args)

#define KINET_DEVI_FORMS_ONE(verb, one, generic, params, args)                                               \
	KINET_DEV_FN int kinet_dev_##verb params                                                             \
	{                                                                                                    \
		return one(KINET_DEVI_ARGS args);                                                            \
	}                                                                                                    \
	KINET_DEVI_GROUP_FORMS(verb, generic, params, args)

#endif /* KINET_DEVICE_IMPL_FORMS_CUH */
