// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu_host_ops [-p DEVPREFIX] [-s SEED]: the op runner of the
 * cnuasgpu_host differential check.  Reads op lines on stdin, does each with
 * the raw UAPI of cnuasgpu_host.ko (default nodes /dev/cnuasgpu_hostN) and
 * prints one answer line per op: "ok key=value ...", "err ERRNO_NAME", or
 * "skip" (the op names a symbol that is not bound or a file slot that is
 * not open; nothing was called).  Blank lines and lines starting with '#'
 * get no answer.  The harness compares the answers with its reference model
 * (harness/models/gpu_host.ts); docs/devices.md lists every op line.
 *
 * Symbols: $N a handle, #N a DMA-BUF fd, %N a mapping; the op that makes
 * one names it.  A handle reference is $N (its number, even after it was
 * freed), "bad" (a number not live in that file, picked with -s SEED) or
 * "0".  key=value modifiers set a field of the ioctl's struct raw (names as
 * in the uapi headers); "arg=null|bad" passes a NULL or PROT_NONE argument,
 * "ioc_size=N" changes the command's size bits.  Pointer values: null, bad
 * (a PROT_NONE page), kern (0xffff800000000000); a submit op's host also
 * takes wrap (2^64 - 4096).
 *
 * The byte pattern and the digest (harness/models/gpu_host_bytes.ts):
 * pattern(seed, n) is a xorshift32 stream whose state starts at
 * seed ^ 0xA5A5A5A5 (1 if that is 0); per byte s ^= s << 13; s ^= s >> 17;
 * s ^= s << 5 and the byte is the low 8 bits of s.  The digest is FNV-1a 64
 * (basis 0xcbf29ce484222325, prime 0x100000001b3), 16 lower-case hex digits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cnuasgpu_host.h"

#define PG		4096u
#define SLOTS		4
#define HBUF		(64u * PG)
#define CBUF		(1u << 20)
#define BADPAGES	16u
#define MAXTOK		4096
#define MAXMOD		16
#define KERN_ADDR	0xffff800000000000ull
#define WRAP_ADDR	(0ull - 4096ull)
#define MAXCOMPS	4096

enum kind { K_NONE, K_ALLOC, K_IMPORT, K_PIN };

struct hsym {
	int bound, live, slot, kind;
	uint32_t number;
	uint64_t offset, size;
	void *buf;
	size_t buflen;
};

struct fsym { int bound, open, fd; };
struct msym { int bound, live; uint8_t *addr; size_t len; };

struct mod { const char *key, *val; };
struct mods { int n; struct mod m[MAXMOD]; };

struct field { const char *name; size_t off, width; };
#define FLD(s, f) { #f, offsetof(struct s, f), sizeof(((struct s *)0)->f) }

static const struct field caps_f[] = {
	FLD(cnuasgpu_caps, size), FLD(cnuasgpu_caps, version), FLD(cnuasgpu_caps, kind),
	FLD(cnuasgpu_caps, caps), FLD(cnuasgpu_caps, devmem_size),
	FLD(cnuasgpu_caps, pinned_max), FLD(cnuasgpu_caps, queue_depth),
	FLD(cnuasgpu_caps, batch_max), FLD(cnuasgpu_caps, page_size),
	{ "reserved0", offsetof(struct cnuasgpu_caps, reserved) + 0, 4 },
	{ "reserved1", offsetof(struct cnuasgpu_caps, reserved) + 4, 4 },
	{ "reserved2", offsetof(struct cnuasgpu_caps, reserved) + 8, 4 },
	{ "reserved3", offsetof(struct cnuasgpu_caps, reserved) + 12, 4 },
	{ "reserved4", offsetof(struct cnuasgpu_caps, reserved) + 16, 4 },
	{ NULL, 0, 0 } };
static const struct field alloc_f[] = { FLD(cnuasgpu_alloc, flags), { NULL, 0, 0 } };
static const struct field free_f[] = { FLD(cnuasgpu_free, reserved), { NULL, 0, 0 } };
static const struct field copy_f[] = {
	FLD(cnuasgpu_copy, reserved), FLD(cnuasgpu_copy, user_ptr), { NULL, 0, 0 } };
static const struct field export_f[] = {
	FLD(cnuasgpu_export, flags), FLD(cnuasgpu_export, fd), FLD(cnuasgpu_export, reserved),
	{ NULL, 0, 0 } };
static const struct field import_f[] = {
	FLD(cnuasgpu_import, size), FLD(cnuasgpu_import, flags), FLD(cnuasgpu_import, handle),
	FLD(cnuasgpu_import, offset), FLD(cnuasgpu_import, length), { NULL, 0, 0 } };
static const struct field pin_f[] = {
	FLD(cnuasgpu_pin, size), FLD(cnuasgpu_pin, flags), FLD(cnuasgpu_pin, handle),
	FLD(cnuasgpu_pin, reserved), { NULL, 0, 0 } };
static const struct field unpin_f[] = {
	FLD(cnuasgpu_unpin, size), FLD(cnuasgpu_unpin, flags), FLD(cnuasgpu_unpin, reserved),
	{ NULL, 0, 0 } };
static const struct field submit_f[] = {
	FLD(cnuasgpu_submit, size), FLD(cnuasgpu_submit, op_size), FLD(cnuasgpu_submit, ops_ptr),
	FLD(cnuasgpu_submit, count), FLD(cnuasgpu_submit, flags),
	FLD(cnuasgpu_submit, first_seq), FLD(cnuasgpu_submit, reserved), { NULL, 0, 0 } };
static const struct field op_f[] = {
	FLD(cnuasgpu_op, opcode), FLD(cnuasgpu_op, flags), FLD(cnuasgpu_op, pin_handle),
	FLD(cnuasgpu_op, host), FLD(cnuasgpu_op, value), FLD(cnuasgpu_op, reserved),
	{ NULL, 0, 0 } };
static const struct field reap_f[] = {
	FLD(cnuasgpu_reap, size), FLD(cnuasgpu_reap, comp_size), FLD(cnuasgpu_reap, comps_ptr),
	FLD(cnuasgpu_reap, timeout_ms), FLD(cnuasgpu_reap, seq), FLD(cnuasgpu_reap, count),
	FLD(cnuasgpu_reap, flags), FLD(cnuasgpu_reap, submitted),
	FLD(cnuasgpu_reap, completed), FLD(cnuasgpu_reap, reaped), { NULL, 0, 0 } };

static const char *prefix = "/dev/cnuasgpu_host";
static uint32_t rnd_state = 1;
static int slot_fd[SLOTS] = { -1, -1, -1, -1 };
static uint64_t last_seq[SLOTS];
static uint8_t *hbuf[SLOTS], *cbuf, *badpage, *ropage;
static int devnull = -1;
static struct hsym *hs;
static struct fsym *fs;
static struct msym *ms;
static size_t nhs, nfs, nms;
static union { uint8_t raw[4096]; uint64_t align; } argbuf;
static struct cnuasgpu_completion comps[MAXCOMPS];

/* Thrown out of an op: print "err BADLINE" (a line the runner cannot read). */
static int bad_line;

static uint32_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state;
}

static void pattern(uint8_t *p, uint32_t seed, size_t n)
{
	uint32_t s = seed ^ 0xA5A5A5A5u;

	if (!s)
		s = 1;
	for (size_t i = 0; i < n; i++) {
		s ^= s << 13;
		s ^= s >> 17;
		s ^= s << 5;
		p[i] = (uint8_t)s;
	}
}

static uint64_t fnv1a64(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static const char *errname(int e)
{
	static char buf[16];

	switch (e) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EINTR: return "EINTR";
	case EIO: return "EIO";
	case ENXIO: return "ENXIO";
	case E2BIG: return "E2BIG";
	case EBADF: return "EBADF";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case EXDEV: return "EXDEV";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case ENOTTY: return "ENOTTY";
	case ENOSPC: return "ENOSPC";
	case ERANGE: return "ERANGE";
	case EOVERFLOW: return "EOVERFLOW";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ETIMEDOUT: return "ETIMEDOUT";
	case ECANCELED: return "ECANCELED";
	case EMSGSIZE: return "EMSGSIZE";
	default:
		snprintf(buf, sizeof(buf), "E%d", e);
		return buf;
	}
}

static void *grow(void *p, size_t *n, size_t want, size_t elem)
{
	size_t nn = *n;

	if (want < nn)
		return p;
	while (nn <= want)
		nn = nn ? nn * 2 : 256;
	p = realloc(p, nn * elem);
	if (!p) {
		perror("realloc");
		exit(2);
	}
	memset((char *)p + *n * elem, 0, (nn - *n) * elem);
	*n = nn;
	return p;
}

static uint64_t num(const char *s)
{
	char *end;
	uint64_t v;

	if (!s) {
		bad_line = 1;
		return 0;
	}
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || end == s)
		bad_line = 1;
	return v;
}

static uint64_t value(const char *s)
{
	if (!strcmp(s, "null"))
		return 0;
	if (!strcmp(s, "bad"))
		return (uintptr_t)badpage;
	if (!strcmp(s, "kern"))
		return KERN_ADDR;
	if (!strcmp(s, "wrap"))
		return WRAP_ADDR;
	return num(s);
}

/* Symbol number of "$N", "#N" or "%N" (bad_line if it is not one). */
static size_t symno(const char *t, char sigil)
{
	if (!t || t[0] != sigil) {
		bad_line = 1;
		return 0;
	}
	return (size_t)num(t + 1);
}

static struct hsym *hsym(size_t n) { hs = grow(hs, &nhs, n, sizeof(*hs)); return &hs[n]; }
static struct fsym *fsym(size_t n) { fs = grow(fs, &nfs, n, sizeof(*fs)); return &fs[n]; }
static struct msym *msym(size_t n) { ms = grow(ms, &nms, n, sizeof(*ms)); return &ms[n]; }

static int live_in(int slot, uint32_t number)
{
	for (size_t i = 0; i < nhs; i++)
		if (hs[i].live && hs[i].slot == slot && hs[i].number == number)
			return 1;
	return 0;
}

static void kill_live(int slot, uint32_t number)
{
	for (size_t i = 0; i < nhs; i++) {
		struct hsym *h = &hs[i];

		if (!h->live || h->slot != slot || (number && h->number != number))
			continue;
		h->live = 0;
		if (h->buf)
			munmap(h->buf, h->buflen);
		h->buf = NULL;
	}
}

/* A handle reference in slot `slot`: 0 on success, -1 for an unbound symbol. */
static int handle_ref(int slot, const char *t, uint32_t *out, struct hsym **sym)
{
	uint32_t v;

	if (sym)
		*sym = NULL;
	if (t && !strcmp(t, "bad")) {
		do
			v = rnd();
		while (!v || live_in(slot, v));
		*out = v;
		return 0;
	}
	if (t && !strcmp(t, "0")) {
		*out = 0;
		return 0;
	}
	size_t n = symno(t, '$');
	if (bad_line || n >= nhs || !hs[n].bound)
		return -1;
	*out = hs[n].number;
	if (sym)
		*sym = &hs[n];
	return 0;
}

/* Positional tokens into pos (at most maxpos), key=value ones into m. */
static void split_mods(char **tok, int ntok, char **pos, int maxpos, int *npos, struct mods *m)
{
	*npos = 0;
	m->n = 0;
	for (int i = 0; i < ntok; i++) {
		char *eq = strchr(tok[i], '=');

		if (!eq) {
			if (*npos == maxpos) {
				bad_line = 1;
				return;
			}
			pos[(*npos)++] = tok[i];
			continue;
		}
		if (m->n == MAXMOD) {
			bad_line = 1;
			return;
		}
		*eq = 0;
		m->m[m->n].key = tok[i];
		m->m[m->n].val = eq + 1;
		m->n++;
	}
}

static const char *get_mod(const struct mods *m, const char *key)
{
	for (int i = 0; i < m->n; i++)
		if (!strcmp(m->m[i].key, key))
			return m->m[i].val;
	return NULL;
}

/* Set the struct fields the modifiers name; others must be in `extra`. */
static void apply_mods(void *s, const struct field *tbl, const struct mods *m,
		       const char *const *extra)
{
	for (int i = 0; i < m->n; i++) {
		const struct field *f = tbl;
		int known = 0;

		for (; f && f->name; f++)
			if (!strcmp(f->name, m->m[i].key))
				break;
		if (f && f->name) {
			uint64_t v = value(m->m[i].val);

			memcpy((char *)s + f->off, &v, f->width); /* little-endian */
			continue;
		}
		for (const char *const *e = extra; e && *e; e++)
			known |= !strcmp(*e, m->m[i].key);
		known |= !strcmp(m->m[i].key, "arg") || !strcmp(m->m[i].key, "ioc_size");
		if (!known)
			bad_line = 1;
	}
}

static int xioctl(int fd, unsigned long cmd, void *arg, const struct mods *m)
{
	const char *sz = get_mod(m, "ioc_size"), *a = get_mod(m, "arg");

	if (sz)
		cmd = (cmd & ~((unsigned long)_IOC_SIZEMASK << _IOC_SIZESHIFT)) |
		      ((unsigned long)(num(sz) & _IOC_SIZEMASK) << _IOC_SIZESHIFT);
	if (a)
		arg = !strcmp(a, "null") ? NULL : (void *)badpage;
	if (bad_line)
		return -1;
	return ioctl(fd, cmd, arg) < 0 ? errno : 0;
}

static void *zarg(size_t n)
{
	memset(argbuf.raw, 0, sizeof(argbuf.raw));
	(void)n;
	return argbuf.raw;
}

static int slot_of(const char *t)
{
	uint64_t f = num(t);

	if (f >= SLOTS)
		bad_line = 1;
	return bad_line ? -1 : (int)f;
}

/* The open fd of slot `t`, or -1 (the op is skipped). */
static int fd_of(const char *t, int *slot)
{
	*slot = slot_of(t);
	return *slot < 0 ? -1 : slot_fd[*slot];
}

/* Nothing is printed for a line that turned out malformed: run_line says BADLINE. */
#define SKIP() do { if (!bad_line) puts("skip"); return; } while (0)
#define ERR(e) do { if (!bad_line) printf("err %s\n", errname(e)); return; } while (0)

static void op_open(char **p, int np)
{
	char path[256];
	int slot = slot_of(np > 1 ? p[1] : NULL);
	uint64_t node = num(np > 2 ? p[2] : "0");

	if (bad_line)
		return;
	if (slot_fd[slot] >= 0)
		SKIP();
	snprintf(path, sizeof(path), "%s%" PRIu64, prefix, node);
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		ERR(errno);
	slot_fd[slot] = fd;
	last_seq[slot] = 0;
	puts("ok");
}

static void op_close(char **p, int np)
{
	int slot, fd = fd_of(np > 1 ? p[1] : NULL, &slot);

	if (bad_line)
		return;
	if (fd < 0)
		SKIP();
	close(fd);
	slot_fd[slot] = -1;
	kill_live(slot, 0);
	puts("ok");
}

static void op_caps(char **p, int np, struct mods *m)
{
	int slot, fd = fd_of(np > 1 ? p[1] : NULL, &slot), e;
	struct cnuasgpu_caps *c = zarg(sizeof(*c));

	if (bad_line)
		return;
	if (fd < 0)
		SKIP();
	c->size = sizeof(*c);
	apply_mods(c, caps_f, m, NULL);
	if ((e = xioctl(fd, CNUASGPU_IOC_CAPS, c, m)))
		ERR(e);
	printf("ok size=%u version=%u kind=%u caps=0x%02x devmem_size=%" PRIu64
	       " pinned_max=%" PRIu64 " queue_depth=%u batch_max=%u page_size=%u reserved=%u\n",
	       c->size, c->version, c->kind, c->caps, (uint64_t)c->devmem_size,
	       (uint64_t)c->pinned_max, c->queue_depth, c->batch_max, c->page_size,
	       c->reserved[0] | c->reserved[1] | c->reserved[2] | c->reserved[3] |
	       c->reserved[4]);
}

static void op_info(char **p, int np, struct mods *m)
{
	int slot, fd = fd_of(np > 1 ? p[1] : NULL, &slot), e;
	struct cnuasgpu_info *i = zarg(sizeof(*i));

	if (bad_line)
		return;
	if (fd < 0)
		SKIP();
	apply_mods(i, NULL, m, NULL);
	if ((e = xioctl(fd, CNUASGPU_IOC_INFO, i, m)))
		ERR(e);
	printf("ok abi_version=%u fw_version=0x%08x gpu_id=%u sm_count=%u lanes_per_sm=%u "
	       "tensor_size=%u devmem_size=%" PRIu64 " devmem_used=%" PRIu64
	       " alloc_limit=%" PRIu64 " link_up=%u reserved=%u\n",
	       i->abi_version, i->fw_version, i->gpu_id, i->sm_count, i->lanes_per_sm,
	       i->tensor_size, (uint64_t)i->devmem_size, (uint64_t)i->devmem_used,
	       (uint64_t)i->alloc_limit, i->link_up, i->reserved);
}

static void op_alloc(char **p, int np, struct mods *m)
{
	int slot, fd = fd_of(np > 1 ? p[1] : NULL, &slot), e;
	struct cnuasgpu_alloc *a = zarg(sizeof(*a));
	size_t out;

	if (np != 5)
		bad_line = 1;
	if (bad_line)
		return;
	a->size = num(p[2]);
	a->align = num(p[3]);
	out = symno(p[4], '$');
	if (bad_line)
		return;
	if (fd < 0)
		SKIP();
	apply_mods(a, alloc_f, m, NULL);
	if ((e = xioctl(fd, CNUASGPU_IOC_ALLOC, a, m)))
		ERR(e);
	struct hsym *h = hsym(out);

	*h = (struct hsym){ .bound = 1, .live = 1, .slot = slot, .kind = K_ALLOC,
			    .number = a->handle, .offset = a->offset, .size = a->size };
	printf("ok handle=%u offset=%" PRIu64 " size=%" PRIu64 "\n", a->handle,
	       (uint64_t)a->offset, (uint64_t)a->size);
}

static void op_free_unpin(char **p, int np, struct mods *m, int unpin)
{
	int slot, fd = fd_of(np > 1 ? p[1] : NULL, &slot), e;
	uint32_t handle;

	if (np != 3)
		bad_line = 1;
	if (bad_line)
		return;
	if (fd < 0 || handle_ref(slot, p[2], &handle, NULL))
		SKIP();
	if (unpin) {
		struct cnuasgpu_unpin *u = zarg(sizeof(*u));

		u->size = sizeof(*u);
		u->handle = handle;
		apply_mods(u, unpin_f, m, NULL);
		e = xioctl(fd, CNUASGPU_IOC_UNPIN, u, m);
	} else {
		struct cnuasgpu_free *f = zarg(sizeof(*f));

		f->handle = handle;
		apply_mods(f, free_f, m, NULL);
		e = xioctl(fd, CNUASGPU_IOC_FREE, f, m);
	}
	if (bad_line)
		return;
	if (e)
		ERR(e);
	kill_live(slot, handle);
	puts("ok");
}

static void op_copy(char **p, int np, struct mods *m, int to)
{
	int slot, fd = fd_of(np > 1 ? p[1] : NULL, &slot), e;
	struct cnuasgpu_copy *c = zarg(sizeof(*c));
	uint32_t handle;

	if (np != (to ? 6 : 5))
		bad_line = 1;
	if (bad_line)
		return;
	if (fd < 0 || handle_ref(slot, p[2], &handle, NULL))
		SKIP();
	c->handle = handle;
	c->offset = num(p[3]);
	c->size = num(p[4]);
	c->user_ptr = (uintptr_t)cbuf;
	if (to)
		pattern(cbuf, (uint32_t)num(p[5]), c->size < CBUF ? c->size : CBUF);
	apply_mods(c, copy_f, m, NULL);
	if ((e = xioctl(fd, to ? CNUASGPU_IOC_COPY_TO_DEV : CNUASGPU_IOC_COPY_FROM_DEV, c, m)))
		ERR(e);
	if (to)
		puts("ok");
	else
		printf("ok digest=%016" PRIx64 "\n",
		       fnv1a64(cbuf, c->size < CBUF ? c->size : CBUF));
}

static void op_export(char **p, int np, struct mods *m)
{
	int slot, fd = fd_of(np > 1 ? p[1] : NULL, &slot), e;
	struct cnuasgpu_export *x = zarg(sizeof(*x));
	uint32_t handle;
	size_t out;

	if (np != 4)
		bad_line = 1;
	out = symno(np > 3 ? p[3] : NULL, '#');
	if (bad_line)
		return;
	if (fd < 0 || handle_ref(slot, p[2], &handle, NULL))
		SKIP();
	x->handle = handle;
	apply_mods(x, export_f, m, NULL);
	if ((e = xioctl(fd, CNUASGPU_IOC_EXPORT_DMABUF, x, m)))
		ERR(e);
	*fsym(out) = (struct fsym){ .bound = 1, .open = 1, .fd = x->fd };
	printf("ok cloexec=%d\n", (fcntl(x->fd, F_GETFD) & FD_CLOEXEC) ? 1 : 0);
}

static void op_closefd(char **p, int np)
{
	size_t n = symno(np > 1 ? p[1] : NULL, '#');

	if (bad_line)
		return;
	if (n >= nfs || !fs[n].open)
		SKIP();
	close(fs[n].fd);
	fs[n].open = 0;
	puts("ok");
}

static void op_import(char **p, int np, struct mods *m)
{
	int slot, fd = fd_of(np > 1 ? p[1] : NULL, &slot), e, dfd;
	struct cnuasgpu_import *im = zarg(sizeof(*im));
	size_t out;

	if (np != 4)
		bad_line = 1;
	out = symno(np > 3 ? p[3] : NULL, '$');
	if (bad_line)
		return;
	if (!strcmp(p[2], "badfd")) {
		dfd = 999999;
	} else if (!strcmp(p[2], "devnull")) {
		dfd = devnull;
	} else {
		size_t n = symno(p[2], '#');

		if (bad_line)
			return;
		if (n >= nfs || !fs[n].open)
			SKIP();
		dfd = fs[n].fd;
	}
	if (fd < 0)
		SKIP();
	im->size = sizeof(*im);
	im->fd = dfd;
	apply_mods(im, import_f, m, NULL);
	if ((e = xioctl(fd, CNUASGPU_IOC_IMPORT_DMABUF, im, m)))
		ERR(e);
	*hsym(out) = (struct hsym){ .bound = 1, .live = 1, .slot = slot, .kind = K_IMPORT,
				    .number = im->handle, .offset = im->offset,
				    .size = im->length };
	printf("ok handle=%u offset=%" PRIu64 " length=%" PRIu64 "\n", im->handle,
	       (uint64_t)im->offset, (uint64_t)im->length);
}

static void op_mmap(char **p, int np, struct mods *m)
{
	int slot, fd = fd_of(np > 1 ? p[1] : NULL, &slot);
	const char *priv = get_mod(m, "private");
	struct hsym *sym;
	uint32_t handle;
	uint64_t off, pgoff, npages;
	size_t out;

	if (np != 6)
		bad_line = 1;
	for (int i = 0; i < m->n; i++)
		if (strcmp(m->m[i].key, "private"))
			bad_line = 1;
	if (bad_line)
		return;
	pgoff = num(p[3]);
	npages = num(p[4]);
	out = symno(p[5], '%');
	if (bad_line)
		return;
	if (fd < 0 || handle_ref(slot, p[2], &handle, &sym))
		SKIP();
	if (sym && sym->kind == K_PIN)
		SKIP();
	off = (sym ? sym->offset : 1ull << 40) + pgoff * PG;
	void *a = mmap(NULL, npages * PG, PROT_READ | PROT_WRITE,
		       priv && num(priv) ? MAP_PRIVATE : MAP_SHARED, fd, (off_t)off);

	if (a == MAP_FAILED)
		ERR(errno);
	*msym(out) = (struct msym){ .bound = 1, .live = 1, .addr = a, .len = npages * PG };
	puts("ok");
}

static struct msym *live_map(const char *t)
{
	size_t n = symno(t, '%');

	if (bad_line || n >= nms || !ms[n].live)
		return NULL;
	return &ms[n];
}

static void op_mapuse(char **p, int np, int what)
{
	struct msym *s = live_map(np > 1 ? p[1] : NULL);
	uint64_t off, len;

	if (np != (what == 0 ? 2 : what == 1 ? 5 : 4))
		bad_line = 1;
	if (bad_line)
		return;
	if (!s)
		SKIP();
	if (what == 0) {
		munmap(s->addr, s->len);
		s->live = 0;
		puts("ok");
		return;
	}
	off = num(p[2]);
	len = num(p[3]);
	if (bad_line)
		return;
	if (!len || off + len > s->len)
		SKIP();
	if (what == 1) {
		pattern(s->addr + off, (uint32_t)num(p[4]), len);
		puts("ok");
	} else {
		printf("ok digest=%016" PRIx64 "\n", fnv1a64(s->addr + off, len));
	}
}

static void op_pin(char **p, int np, struct mods *m)
{
	int slot, fd = fd_of(np > 1 ? p[1] : NULL, &slot), e;
	struct cnuasgpu_pin *pn = zarg(sizeof(*pn));
	uint64_t npages;
	size_t out;
	void *buf;

	if (np != 4)
		bad_line = 1;
	if (bad_line)
		return;
	npages = num(p[2]);
	out = symno(p[3], '$');
	if (bad_line)
		return;
	if (fd < 0)
		SKIP();
	buf = npages ? mmap(NULL, npages * PG, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) : hbuf[slot];
	if (buf == MAP_FAILED) {
		fprintf(stderr, "pin: no address space for %" PRIu64 " pages\n", npages);
		exit(2);
	}
	pn->size = sizeof(*pn);
	pn->user_ptr = (uintptr_t)buf;
	pn->length = npages * PG;
	apply_mods(pn, pin_f, m, NULL);
	e = xioctl(fd, CNUASGPU_IOC_PIN, pn, m);
	if (e || bad_line) {
		if (npages)
			munmap(buf, npages * PG);
		if (bad_line)
			return;
		ERR(e);
	}
	*hsym(out) = (struct hsym){ .bound = 1, .live = 1, .slot = slot, .kind = K_PIN,
				    .number = pn->handle, .size = pn->length, .buf = buf,
				    .buflen = npages * PG };
	printf("ok handle=%u\n", pn->handle);
}

static void op_pinbad(char **p, int np)
{
	int slot, fd = fd_of(np > 1 ? p[1] : NULL, &slot), e;
	struct cnuasgpu_pin *pn = zarg(sizeof(*pn));
	struct mods none = { 0 };
	uint64_t npages;
	const char *k;

	if (np != 4 && np != 5)
		bad_line = 1;
	if (bad_line)
		return;
	k = p[2];
	npages = num(p[3]);
	if (bad_line)
		return;
	if (fd < 0)
		SKIP();
	pn->size = sizeof(*pn);
	pn->length = npages * PG;
	if (!strcmp(k, "ptr")) {
		pn->user_ptr = (uintptr_t)hbuf[slot] + 1;
	} else if (!strcmp(k, "len")) {
		pn->user_ptr = (uintptr_t)hbuf[slot];
		pn->length = npages * PG - 1;
	} else if (!strcmp(k, "zero")) {
		pn->user_ptr = (uintptr_t)hbuf[slot];
		pn->length = 0;
	} else if (!strcmp(k, "wrap")) {
		pn->user_ptr = WRAP_ADDR;
	} else if (!strcmp(k, "prot")) {
		pn->user_ptr = (uintptr_t)badpage;
	} else if (!strcmp(k, "ro")) {
		pn->user_ptr = (uintptr_t)ropage;
	} else if (!strcmp(k, "kern")) {
		pn->user_ptr = KERN_ADDR;
	} else if (!strcmp(k, "map")) {
		struct msym *s = live_map(np > 4 ? p[4] : NULL);

		if (bad_line)
			return;
		if (!s)
			SKIP();
		pn->user_ptr = (uintptr_t)s->addr;
	} else {
		bad_line = 1;
		return;
	}
	if ((e = xioctl(fd, CNUASGPU_IOC_PIN, pn, &none)))
		ERR(e);
	printf("ok handle=%u\n", pn->handle);	/* wrong: the model says so */
}

static void op_pinio(char **p, int np, int write)
{
	size_t n = symno(np > 1 ? p[1] : NULL, '$');
	uint64_t off, len;

	if (np != (write ? 5 : 4))
		bad_line = 1;
	if (bad_line)
		return;
	off = num(p[2]);
	len = num(p[3]);
	if (bad_line)
		return;
	if (n >= nhs || !hs[n].live || hs[n].kind != K_PIN || !hs[n].buf || !len ||
	    off + len > hs[n].buflen)
		SKIP();
	if (write) {
		pattern((uint8_t *)hs[n].buf + off, (uint32_t)num(p[4]), len);
		puts("ok");
	} else {
		printf("ok digest=%016" PRIx64 "\n", fnv1a64((uint8_t *)hs[n].buf + off, len));
	}
}

static void op_hbuf(char **p, int np, int write)
{
	int slot = slot_of(np > 1 ? p[1] : NULL);
	uint64_t off, len;

	if (np != (write ? 5 : 4))
		bad_line = 1;
	if (bad_line)
		return;
	off = num(p[2]);
	len = num(p[3]);
	if (bad_line)
		return;
	if (!len || off + len > HBUF)
		SKIP();
	if (write) {
		pattern(hbuf[slot] + off, (uint32_t)num(p[4]), len);
		puts("ok");
	} else {
		printf("ok digest=%016" PRIx64 "\n", fnv1a64(hbuf[slot] + off, len));
	}
}

/* One op of a batch from its tokens; -1 when a symbol is not bound. */
static int build_op(int slot, char **t, int nt, struct cnuasgpu_op *o)
{
	char *pos[16];
	int np;
	struct mods m;
	uint32_t h, ph;
	const char *k;

	split_mods(t, nt, pos, 16, &np, &m);
	if (bad_line || np < 1)
		return bad_line = 1, 0;
	k = pos[0];
	memset(o, 0, sizeof(*o));
	if (!strcmp(k, "to") || !strcmp(k, "from")) {
		if (np != 6)
			return bad_line = 1, 0;
		o->opcode = k[0] == 't' ? CNUASGPU_OP_COPY_TO_DEV : CNUASGPU_OP_COPY_FROM_DEV;
		o->host = (uintptr_t)hbuf[slot] + num(pos[4]);
		o->user_data = num(pos[5]);
	} else if (!strcmp(k, "fill")) {
		if (np != 6)
			return bad_line = 1, 0;
		o->opcode = CNUASGPU_OP_FILL;
		o->value = (uint32_t)num(pos[4]);
		o->user_data = num(pos[5]);
	} else if (!strcmp(k, "pto") || !strcmp(k, "pfrom")) {
		if (np != 7)
			return bad_line = 1, 0;
		o->opcode = k[1] == 't' ? CNUASGPU_OP_COPY_TO_DEV : CNUASGPU_OP_COPY_FROM_DEV;
		o->flags = CNUASGPU_OP_F_PINNED;
		if (handle_ref(slot, pos[4], &ph, NULL))
			return -1;
		o->pin_handle = ph;
		o->host = num(pos[5]);
		o->user_data = num(pos[6]);
	} else {
		return bad_line = 1, 0;
	}
	if (handle_ref(slot, pos[1], &h, NULL))
		return -1;
	o->handle = h;
	o->offset = num(pos[2]);
	o->length = num(pos[3]);
	apply_mods(o, op_f, &m, NULL);
	return 0;
}

static void op_submit(char **t, int nt)
{
	int slot, fd, e, i = 2, nops = 0, cap;
	char *pos[4];
	int np;
	struct mods m;
	struct cnuasgpu_submit *s = zarg(sizeof(*s));
	struct cnuasgpu_op *ops;
	const char *cnt;
	uint64_t want;

	while (i < nt && strcmp(t[i], ":"))
		i++;
	if (i >= nt) {
		bad_line = 1;
		return;
	}
	split_mods(t + 1, i - 1, pos, 4, &np, &m);
	if (np != 1)
		bad_line = 1;
	fd = bad_line ? -1 : fd_of(pos[0], &slot);
	if (bad_line)
		return;
	for (int j = i + 1; j <= nt; j++)
		if (j == nt || !strcmp(t[j], ";"))
			nops++;
	cnt = get_mod(&m, "count");
	want = cnt ? num(cnt) : (uint64_t)nops;
	cap = want > (uint64_t)nops && want <= 4096 ? (int)want : nops;
	ops = calloc((size_t)cap, sizeof(*ops));
	if (!ops) {
		perror("calloc");
		exit(2);
	}
	for (int j = i + 1, start = i + 1, k = 0; j <= nt; j++) {
		if (j < nt && strcmp(t[j], ";"))
			continue;
		if (fd < 0 || build_op(slot, t + start, j - start, &ops[k++]) < 0) {
			free(ops);
			if (!bad_line)
				puts("skip");
			return;
		}
		start = j + 1;
	}
	if (bad_line) {
		free(ops);
		return;
	}
	s->size = sizeof(*s);
	s->op_size = sizeof(*ops);
	s->ops_ptr = (uintptr_t)ops;
	s->count = (uint32_t)nops;
	apply_mods(s, submit_f, &m, NULL);
	e = xioctl(fd, CNUASGPU_IOC_SUBMIT, s, &m);
	free(ops);
	if (bad_line)
		return;
	if (e)
		ERR(e);
	last_seq[slot] = s->first_seq + s->count - 1;
	printf("ok first=%" PRIu64 "\n", (uint64_t)s->first_seq);
}

static void op_reap(char **p, int np, struct mods *m, int wait)
{
	int slot, fd = fd_of(np > 1 ? p[1] : NULL, &slot), e;
	struct cnuasgpu_reap *r = zarg(sizeof(*r));

	if (np != (wait ? 5 : 3))
		bad_line = 1;
	if (bad_line)
		return;
	if (fd < 0)
		SKIP();
	r->size = sizeof(*r);
	r->comp_size = sizeof(comps[0]);
	r->comps_ptr = (uintptr_t)comps;
	if (wait) {
		const char *q = p[2];

		if (!strcmp(q, "last"))
			r->seq = last_seq[slot];
		else if (!strncmp(q, "last+", 5))
			r->seq = last_seq[slot] + num(q + 5);
		else
			r->seq = num(q);
		r->max = (uint32_t)num(p[3]);
		r->timeout_ms = (uint32_t)num(p[4]);
	} else {
		r->max = (uint32_t)num(p[2]);
	}
	apply_mods(r, reap_f, m, NULL);
	if (bad_line)
		return;
	if ((e = xioctl(fd, wait ? CNUASGPU_IOC_WAIT : CNUASGPU_IOC_POLL, r, m)))
		ERR(e);
	printf("ok count=%u submitted=%" PRIu64 " completed=%" PRIu64 " reaped=%" PRIu64 " c=",
	       r->count, (uint64_t)r->submitted, (uint64_t)r->completed, (uint64_t)r->reaped);
	for (uint32_t i = 0; i < r->count && i < MAXCOMPS; i++)
		printf("%s%" PRIu64 ":%d:%u:%" PRIu64, i ? "," : "", (uint64_t)comps[i].seq,
		       comps[i].status, comps[i].opcode, (uint64_t)comps[i].user_data);
	putchar('\n');
}

static void op_events(char **p, int np)
{
	int slot, fd = fd_of(np > 1 ? p[1] : NULL, &slot);
	struct pollfd pf;

	if (np != 2)
		bad_line = 1;
	if (bad_line)
		return;
	if (fd < 0)
		SKIP();
	pf.fd = fd;
	pf.events = POLLIN | POLLOUT;
	pf.revents = 0;
	if (poll(&pf, 1, 0) < 0)
		ERR(errno);
	printf("ok in=%d out=%d err=%d\n", !!(pf.revents & POLLIN), !!(pf.revents & POLLOUT),
	       !!(pf.revents & POLLERR));
}

static void op_stat(char **p, int np)
{
	static const char *const attrs[] = { "devmem_used", "allocations", "exports",
					     "pinned_used", "pins", "inflight" };
	char path[256], val[64];
	uint64_t node;

	if (np != 2)
		bad_line = 1;
	node = num(np > 1 ? p[1] : NULL);
	if (bad_line)
		return;
	printf("ok");
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		FILE *f;

		snprintf(path, sizeof(path), "/sys/class/cnuasgpu_host/cnuasgpu_host%" PRIu64 "/%s",
			 node, attrs[i]);
		f = fopen(path, "r");
		if (!f || !fgets(val, sizeof(val), f))
			snprintf(val, sizeof(val), "unreadable");
		if (f)
			fclose(f);
		val[strcspn(val, "\n")] = 0;
		printf(" %s=%s", attrs[i], val);
	}
	putchar('\n');
}

static void op_badcmd(char **p, int np)
{
	int slot, fd = fd_of(np > 1 ? p[1] : NULL, &slot);
	uint64_t cmd = num(np > 2 ? p[2] : NULL);

	if (np != 3 || bad_line)
		return;
	if (fd < 0)
		SKIP();
	if (ioctl(fd, (unsigned long)cmd, zarg(4096)) < 0)
		ERR(errno);
	puts("ok");
}

static void run_line(char *line)
{
	static char *tok[MAXTOK];
	char *pos[MAXTOK];
	int nt = 0, np;
	struct mods m;

	for (char *s = strtok(line, " \t\r\n"); s; s = strtok(NULL, " \t\r\n")) {
		if (nt == MAXTOK) {
			bad_line = 1;
			break;
		}
		tok[nt++] = s;
	}
	if (!nt || tok[0][0] == '#')
		return;
	bad_line = 0;
	if (!strcmp(tok[0], "submit")) {
		op_submit(tok, nt);
	} else {
		split_mods(tok, nt, pos, MAXTOK, &np, &m);
		if (bad_line || !np)
			bad_line = 1;
		else if (!strcmp(pos[0], "open")) op_open(pos, np);
		else if (!strcmp(pos[0], "close")) op_close(pos, np);
		else if (!strcmp(pos[0], "caps")) op_caps(pos, np, &m);
		else if (!strcmp(pos[0], "info")) op_info(pos, np, &m);
		else if (!strcmp(pos[0], "alloc")) op_alloc(pos, np, &m);
		else if (!strcmp(pos[0], "free")) op_free_unpin(pos, np, &m, 0);
		else if (!strcmp(pos[0], "unpin")) op_free_unpin(pos, np, &m, 1);
		else if (!strcmp(pos[0], "copy_to")) op_copy(pos, np, &m, 1);
		else if (!strcmp(pos[0], "copy_from")) op_copy(pos, np, &m, 0);
		else if (!strcmp(pos[0], "export")) op_export(pos, np, &m);
		else if (!strcmp(pos[0], "closefd")) op_closefd(pos, np);
		else if (!strcmp(pos[0], "import")) op_import(pos, np, &m);
		else if (!strcmp(pos[0], "mmap")) op_mmap(pos, np, &m);
		else if (!strcmp(pos[0], "munmap")) op_mapuse(pos, np, 0);
		else if (!strcmp(pos[0], "mwrite")) op_mapuse(pos, np, 1);
		else if (!strcmp(pos[0], "mread")) op_mapuse(pos, np, 2);
		else if (!strcmp(pos[0], "pin")) op_pin(pos, np, &m);
		else if (!strcmp(pos[0], "pinbad")) op_pinbad(pos, np);
		else if (!strcmp(pos[0], "pwrite")) op_pinio(pos, np, 1);
		else if (!strcmp(pos[0], "pread")) op_pinio(pos, np, 0);
		else if (!strcmp(pos[0], "hwrite")) op_hbuf(pos, np, 1);
		else if (!strcmp(pos[0], "hread")) op_hbuf(pos, np, 0);
		else if (!strcmp(pos[0], "poll")) op_reap(pos, np, &m, 0);
		else if (!strcmp(pos[0], "wait")) op_reap(pos, np, &m, 1);
		else if (!strcmp(pos[0], "events")) op_events(pos, np);
		else if (!strcmp(pos[0], "stat")) op_stat(pos, np);
		else if (!strcmp(pos[0], "badcmd")) op_badcmd(pos, np);
		else bad_line = 1;
	}
	if (bad_line)
		puts("err BADLINE");
}

static uint8_t *guarded(size_t n, int prot)
{
	uint8_t *p = mmap(NULL, n + PG, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED || mprotect(p + n, PG, PROT_NONE)) {
		perror("mmap");
		exit(2);
	}
	return p;
}

int main(int argc, char **argv)
{
	char *line = NULL;
	size_t cap = 0;
	int opt;

	while ((opt = getopt(argc, argv, "p:s:")) != -1) {
		switch (opt) {
		case 'p':
			prefix = optarg;
			break;
		case 's':
			rnd_state = (uint32_t)strtoul(optarg, NULL, 0) | 1;
			break;
		default:
			fprintf(stderr, "usage: cnuasgpu_host_ops [-p DEVPREFIX] [-s SEED] <ops\n");
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < SLOTS; i++)
		hbuf[i] = guarded(HBUF, PROT_READ | PROT_WRITE);
	cbuf = guarded(CBUF, PROT_READ | PROT_WRITE);
	badpage = mmap(NULL, BADPAGES * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ropage = mmap(NULL, BADPAGES * PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (badpage == MAP_FAILED || ropage == MAP_FAILED || devnull < 0) {
		perror("setup");
		return 2;
	}
	while (getline(&line, &cap, stdin) > 0)
		run_line(line);
	free(line);
	return 0;
}
