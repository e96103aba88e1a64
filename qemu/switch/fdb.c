// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Learned-address table; see fdb.h.  Slots are at least twice the capacity,
 * so the load factor stays at or below 1/2 and probe chains stay short; a
 * slot with port 0 is empty (port 0 is the switch itself and is never
 * learned).
 */
#include <stdlib.h>
#include <string.h>

#include "fdb.h"

/*
 * The murmur3 finalizer's first half: MACs differ mostly in their low bytes
 * and gpu_ids are small integers, and the mask keeps only low bits, so the
 * key's bits are mixed before masking.
 */
static uint32_t fdb_hash(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (uint32_t)key;
}

/*
 * Twice the capacity rounded up to a power of two, at least 16: 4096 entries
 * take 8192 slots of 24 bytes, 192 KiB.  Returns false when out of memory.
 */
bool fdb_init(struct fdb *t, uint32_t capacity)
{
	uint32_t slots = 16;

	while (slots < capacity * 2)
		slots <<= 1;
	t->slots = calloc(slots, sizeof(*t->slots));
	if (!t->slots)
		return false;
	t->mask = slots - 1;
	t->count = 0;
	t->capacity = capacity;
	return true;
}

void fdb_destroy(struct fdb *t)
{
	free(t->slots);
	t->slots = NULL;
}

/*
 * The probe ends at an empty slot, and one always exists because the table is
 * never more than half full.
 */
struct fdb_entry *fdb_find(struct fdb *t, uint64_t key)
{
	uint32_t i = fdb_hash(key) & t->mask;

	while (t->slots[i].port) {
		if (t->slots[i].key == key)
			return &t->slots[i];
		i = (i + 1) & t->mask;
	}
	return NULL;
}

/*
 * A known key is updated in place (a MAC that moves port, a refreshed age,
 * docs/switch.md "Forwarding"); a new one takes the empty slot that ended its
 * probe chain.
 */
bool fdb_learn(struct fdb *t, uint64_t key, uint32_t port, uint64_t now)
{
	uint32_t i = fdb_hash(key) & t->mask;

	while (t->slots[i].port) {
		if (t->slots[i].key == key) {
			t->slots[i].port = port;
			t->slots[i].seen_ns = now;
			return true;
		}
		i = (i + 1) & t->mask;
	}
	/* Full: a flood of random sources must not grow memory or evict. */
	if (t->count >= t->capacity)
		return false;
	t->slots[i].key = key;
	t->slots[i].port = port;
	t->slots[i].seen_ns = now;
	t->count++;
	return true;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void fdb_delete_slot(struct fdb *t, uint32_t hole)
{
	uint32_t j = hole;

	t->count--;
	for (;;) {
		uint32_t home;

		j = (j + 1) & t->mask;
		if (!t->slots[j].port)
			break;
		home = fdb_hash(t->slots[j].key) & t->mask;
		/*
		 * Move j into the hole unless its home lies cyclically in
		 * (hole, j].
		 *
		 * The two cases spell the interval out: without wrap-around
		 * (j > hole) it is plain; when the probe wrapped past the end
		 * (j < hole) it is (hole, mask] plus [0, j].
		 */
		if ((j > hole && (home <= hole || home > j)) ||
		    (j < hole && (home <= hole && home > j))) {
			t->slots[hole] = t->slots[j];
			hole = j;
		}
	}
	memset(&t->slots[hole], 0, sizeof(t->slots[hole]));
}

void fdb_remove(struct fdb *t, uint64_t key)
{
	struct fdb_entry *e = fdb_find(t, key);

	if (e)
		fdb_delete_slot(t, (uint32_t)(e - t->slots));
}

/* Remove the entries of @port, or (port 0) those at least @max_age old. */
static void fdb_remove_if(struct fdb *t, uint32_t port, uint64_t now, uint64_t max_age)
{
	uint32_t i = 0;

	/* A deletion may shift a later entry into slot i: re-check i then. */
	while (i <= t->mask) {
		struct fdb_entry *e = &t->slots[i];

		if (e->port && ((port && e->port == port) ||
				(!port && now - e->seen_ns >= max_age))) {
			fdb_delete_slot(t, i);
			continue;
		}
		i++;
	}
}

/* Port 0 means "by age" to fdb_remove_if(), and no entry has port 0. */
void fdb_remove_port(struct fdb *t, uint32_t port)
{
	if (port)
		fdb_remove_if(t, port, 0, 0);
}

void fdb_expire(struct fdb *t, uint64_t now, uint64_t max_age)
{
	fdb_remove_if(t, 0, now, max_age);
}
