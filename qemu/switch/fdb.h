/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A small learned-address table (MAC -> port, gpu_id -> port): open
 * addressing with linear probing and backward-shift deletion, a fixed
 * capacity so a flood of random sources cannot grow memory.
 */
#ifndef CNUAS_FDB_H
#define CNUAS_FDB_H

#include <stdbool.h>
#include <stdint.h>

struct fdb_entry {
	uint64_t key;
	uint64_t seen_ns;	/* last time the key was (re)learned */
	uint32_t port;		/* 0 = empty slot */
};

struct fdb {
	struct fdb_entry *slots;
	uint32_t mask;		/* slot count - 1 (power of two) */
	uint32_t count, capacity;
};

bool fdb_init(struct fdb *t, uint32_t capacity);
void fdb_destroy(struct fdb *t);
/* Entry for @key or NULL. */
struct fdb_entry *fdb_find(struct fdb *t, uint64_t key);
/* Insert or update; false when the table is full (nothing learned). */
bool fdb_learn(struct fdb *t, uint64_t key, uint32_t port, uint64_t now);
void fdb_remove(struct fdb *t, uint64_t key);
/* Remove every entry pointing at @port. */
void fdb_remove_port(struct fdb *t, uint32_t port);
/* Remove entries older than @max_age at @now. */
void fdb_expire(struct fdb *t, uint64_t now, uint64_t max_age);

#endif
