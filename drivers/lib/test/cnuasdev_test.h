/* SPDX-License-Identifier: (GPL-2.0 OR MIT) */
/*
 * What the libcnuasdev test programs share: CHECK and its failure count,
 * error names, a byte pattern and a digest of buffers (FNV-1a, 64 bits).
 *
 *   cnuasdev_suite [SPEC]            the cross-backend suite, one line a case
 *   cnuasdev_hostdev_fake_smoke      selection, capabilities and error paths
 *                                    with no device at all (Soft-GPU only)
 *   cnuasdev_bench [SPEC [SECONDS]]  copy bandwidth and queue throughput,
 *                                    every figure checked by a digest
 *
 * Each exits 0 when every check passed, 1 on a mismatch, 2 when it cannot
 * run where it is (usage, a device that is not idle, devices present).
 */
#ifndef CNUASDEV_TEST_H
#define CNUASDEV_TEST_H

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnuasdev.h"

static int failures;
static unsigned long checks;

#define CHECK(cond, ...)						\
	do {								\
		checks++;						\
		if (!(cond)) {						\
			fprintf(stderr, "FAIL %s:%d: ", __func__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			failures++;					\
		}							\
	} while (0)

/* A code's name: "OK", "EINVAL", ... */
#define E(code) cnuasdev_strerror(code)

static inline void pattern(void *buf, size_t len, uint32_t salt)
{
	uint8_t *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 7 + salt * 131 + (i >> 8));
}

static inline uint64_t digest(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

#endif /* CNUASDEV_TEST_H */
