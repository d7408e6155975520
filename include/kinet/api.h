/*
 * KINET_API marks what libkinet exports: the library is built with hidden
 * visibility, so only functions declared with it are part of the ABI.
 */
#ifndef KINET_API_H
#define KINET_API_H

#ifndef KINET_API
#if defined(__GNUC__) || defined(__clang__)
#define KINET_API __attribute__((visibility("default")))
#else
#define KINET_API
#endif
#endif

#endif /* KINET_API_H */
