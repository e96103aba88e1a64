// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pcapng writer; see capture.h.  Layout from the pcapng draft (IETF opsawg).
 *
 * Every block is: type (4), total length (4), body, options, total length
 * again (4), so a reader can walk the file both ways; every block and option
 * is padded to 4 bytes.  Writes go through the stdio buffer: the switch
 * writes a block per received frame and cannot afford a syscall each
 * (cap_start() gives it a 1 MiB buffer of its own).  A
 * write error is remembered (c->error) rather than acted on at
 * once, so forwarding never stops over a capture; capture_stop and stats
 * report it.
 *
 * A capture with a file limit rolls over before a packet would take the
 * current file past it (a file always takes at least one packet): the next
 * file is named <stem>.<k>.pcapng after the first file's <stem>.pcapng
 * (<path>.<k> when the path does not end in .pcapng), k = 1, 2, ...  Each
 * file starts with its own section header and the capture's interface
 * blocks in interface-id order, so readers see the same ids throughout.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"

/* Block types, the byte-order magic and option codes of the draft. */
#define BT_SHB		0x0a0d0d0a
#define BT_IDB		0x00000001
#define BT_EPB		0x00000006
#define BYTE_ORDER_MAGIC 0x1a2b3c4d
#define OPT_END		0
#define OPT_SHB_USERAPPL 4
#define OPT_IF_NAME	2
#define OPT_IF_TSRESOL	9
#define OPT_EPB_FLAGS	2

static const uint8_t zeros[4];	/* padding source */

/* Keep the first error only: later ones are usually its consequences. */
static void cap_fail(struct capture *c, const char *what)
{
	if (!c->error[0])
		snprintf(c->error, sizeof(c->error), "%s: %s", what, strerror(errno));
}

/*
 * Every write goes through here, so the first failure is recorded; later writes
 * are still attempted and fail the same way.
 */
static void put(struct capture *c, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, c->f) != n)
		cap_fail(c, "write");
	else
		c->files[c->n_files - 1].bytes += n;
}

static void put32(struct capture *c, uint32_t v)
{
	put(c, &v, 4);	/* host order: the byte-order magic tells readers */
}

static void put16(struct capture *c, uint16_t v)
{
	put(c, &v, 2);
}

/* Bytes that pad @n up to a multiple of 4. */
static uint32_t pad4(uint32_t n)
{
	return (4 - (n & 3)) & 3;
}

/* Option header + value + padding. */
static void put_opt(struct capture *c, uint16_t code, const void *v, uint16_t len)
{
	put16(c, code);
	put16(c, len);
	put(c, v, len);
	put(c, zeros, pad4(len));
}

/* Size of one option as put_opt writes it. */
static uint32_t opt_size(uint32_t len)
{
	return 4 + len + pad4(len);
}

void cap_free_files(struct cap_file *files, uint32_t n_files)
{
	for (uint32_t i = 0; i < n_files; i++)
		free(files[i].path);
	free(files);
}

/* What cap_start() allocated besides the FILE; safe on a partial start. */
static void cap_free(struct capture *c)
{
	free(c->ifid);
	free(c->path);
	free(c->buf);
	cap_free_files(c->files, c->n_files);
	c->ifid = NULL;
	c->path = NULL;
	c->buf = NULL;
	c->files = NULL;
	c->n_files = 0;
}

/* Append a file record named @path (taken over); false when memory is short. */
static bool cap_add_file(struct capture *c, char *path)
{
	struct cap_file *f;

	if (!path)
		return false;
	f = realloc(c->files, sizeof(*f) * (c->n_files + 1));
	if (!f) {
		free(path);
		return false;
	}
	c->files = f;
	c->files[c->n_files++] = (struct cap_file){ .path = path };
	return true;
}

/* The name of file @k (k >= 1) of a capture whose first file is @base. */
static char *cap_file_name(const char *base, uint32_t k)
{
	static const char ext[] = ".pcapng";
	size_t len = strlen(base), el = sizeof(ext) - 1;
	size_t stem = len >= el && !strcmp(base + len - el, ext) ? len - el : len;
	char *name = malloc(stem + 12 + el + 1);

	if (name)
		sprintf(name, "%.*s.%u%s", (int)stem, base, k, stem < len ? ext : "");
	return name;
}

/* Open @path for a new file of the capture, with the capture's own stdio buffer. */
static FILE *cap_open(struct capture *c, const char *path)
{
	FILE *f = fopen(path, "wb");

	/*
	 * Full buffering in a buffer of our own: with a NULL buffer glibc
	 * keeps only the mode and allocates its default size (st_blksize,
	 * 4 KiB on most file systems), which would mean a write(2) every few
	 * frames.  The buffer must outlive the FILE: cap_stop() frees it only
	 * after fclose(); a rollover flushes the old FILE before the new one
	 * takes the buffer, and closes it before the new one writes.
	 */
	if (f)
		setvbuf(f, c->buf, _IOFBF, CAP_BUF_SIZE);
	return f;
}

/*
 * Section Header Block: 28 fixed bytes (type, length, magic, version 1.0,
 * section length) + shb_userappl + opt_endofopt.  The section length is
 * "unknown" because the file grows while the switch runs.
 */
static void put_shb(struct capture *c)
{
	static const char appl[] = "cnuas-switch";
	uint64_t section_len = UINT64_MAX;	/* unknown */
	uint32_t total = 28 + opt_size(sizeof(appl) - 1) + 4;

	put32(c, BT_SHB);
	put32(c, total);
	put32(c, BYTE_ORDER_MAGIC);
	put16(c, 1);
	put16(c, 0);
	put(c, &section_len, 8);
	put_opt(c, OPT_SHB_USERAPPL, appl, sizeof(appl) - 1);
	put32(c, OPT_END);
	put32(c, total);
}

/*
 * Interface Description Block for a port: its link type, if_name "portN" and
 * if_tsresol 9 (nanosecond timestamps).
 */
static void put_idb(struct capture *c, uint32_t port)
{
	char name[16];
	uint8_t resol = 9;	/* 10^-9 s */
	uint16_t name_len;
	uint32_t total;

	name_len = (uint16_t)snprintf(name, sizeof(name), "port%u", port);
	/*
	 * 16 fixed bytes (type, length, link type, reserved, snaplen), the two
	 * options, opt_endofopt and the trailing length.
	 */
	total = 16 + opt_size(name_len) + opt_size(1) + 4 + 4;
	put32(c, BT_IDB);
	put32(c, total);
	put16(c, c->linktype);
	put16(c, 0);
	put32(c, 0);		/* snaplen: no limit */
	put_opt(c, OPT_IF_NAME, name, name_len);
	put_opt(c, OPT_IF_TSRESOL, &resol, 1);
	put32(c, OPT_END);
	put32(c, total);
}

/*
 * Close the current file and go on in the next.  When the next file cannot
 * be opened the error is kept (capture_stop reports it) and the current
 * file goes on past the limit, so no frame is lost.
 */
static void cap_roll_over(struct capture *c)
{
	char *path = cap_file_name(c->path, c->n_files);
	FILE *next;

	if (!path) {
		errno = ENOMEM;
		cap_fail(c, "next file");
		return;
	}
	/*
	 * The next file is opened (and listed) before the current one closes,
	 * so a failure leaves the capture writing, and counting, where it was.
	 * The two FILEs share c->buf: the flush first leaves the old one's empty.
	 */
	if (fflush(c->f)) {
		cap_fail(c, "flush");
		free(path);
		return;
	}
	next = cap_open(c, path);
	if (!next) {
		cap_fail(c, "next file");
		free(path);
		return;
	}
	if (!cap_add_file(c, path)) {
		errno = ENOMEM;
		cap_fail(c, "next file");
		fclose(next);
		return;
	}
	if (fclose(c->f))
		cap_fail(c, "close");
	c->f = next;
	put_shb(c);
	for (uint32_t id = 0; id < c->n_ifs; id++)
		for (uint32_t port = 0; port < c->n_slots; port++)
			if (c->ifid[port] == (int32_t)id)
				put_idb(c, port);
}

/*
 * Returns 0, -EBUSY while a capture runs (op_capture_start() checks first), or
 * -errno when the file cannot be opened or memory is short; on failure nothing
 * stays allocated.  "wb" truncates: starting again on the same path replaces
 * the old file.
 */
int cap_start(struct capture *c, const char *path, uint16_t linktype, uint32_t n_slots,
	      uint64_t file_limit)
{
	if (c->f)
		return -EBUSY;
	c->ifid = malloc(sizeof(*c->ifid) * n_slots);
	c->path = strdup(path);
	c->buf = malloc(CAP_BUF_SIZE);
	if (!c->ifid || !c->path || !c->buf || !cap_add_file(c, strdup(path)))
		goto nomem;
	c->f = cap_open(c, path);
	if (!c->f) {
		int err = -errno;

		cap_free(c);
		return err;
	}
	for (uint32_t i = 0; i < n_slots; i++)
		c->ifid[i] = -1;
	c->n_slots = n_slots;
	c->n_ifs = 0;
	c->linktype = linktype;
	c->file_limit = file_limit;
	c->packets = 0;
	c->bytes = 0;
	c->error[0] = 0;
	put_shb(c);
	return 0;
nomem:
	cap_free(c);
	return -ENOMEM;
}

/*
 * Interface ids count up in the order ports first appear, so they differ
 * from port numbers; c->ifid maps them.
 */
void cap_add_port(struct capture *c, uint32_t port)
{
	if (!c->f || port >= c->n_slots || c->ifid[port] >= 0)
		return;
	put_idb(c, port);
	c->ifid[port] = (int32_t)c->n_ifs++;
}

void cap_packet(struct capture *c, uint32_t port, uint64_t ts_ns, const uint8_t *data,
		uint32_t caplen, uint32_t origlen, uint32_t direction)
{
	uint32_t total;

	if (!c->f || port >= c->n_slots)
		return;
	/*
	 * A port with no interface block yet gets one now, so a packet never
	 * precedes its interface; op_capture_start() and port_accept() normally
	 * did it already.
	 */
	if (c->ifid[port] < 0)
		cap_add_port(c, port);
	/*
	 * Enhanced Packet Block: 28 fixed bytes (type, length, interface id,
	 * timestamp high and low, captured and original length), the padded
	 * data, epb_flags (bits 0-1: 1 inbound, 2 outbound), opt_endofopt and
	 * the trailing length.  caplen < origlen marks a truncated frame.
	 */
	total = 28 + caplen + pad4(caplen) + opt_size(4) + 4 + 4;
	if (c->file_limit && c->files[c->n_files - 1].packets &&
	    c->files[c->n_files - 1].bytes + total > c->file_limit)
		cap_roll_over(c);
	put32(c, BT_EPB);
	put32(c, total);
	put32(c, (uint32_t)c->ifid[port]);
	/* The timestamp, in units of if_tsresol (ns): high word first. */
	put32(c, (uint32_t)(ts_ns >> 32));
	put32(c, (uint32_t)ts_ns);
	put32(c, caplen);
	put32(c, origlen);
	put(c, data, caplen);
	put(c, zeros, pad4(caplen));
	put_opt(c, OPT_EPB_FLAGS, &direction, 4);
	put32(c, OPT_END);
	put32(c, total);
	c->files[c->n_files - 1].packets++;
	c->packets++;
	c->bytes += caplen;
}

/* Put what the buffer holds on disk, so a reader sees every frame so far. */
void cap_flush(struct capture *c)
{
	if (c->f && fflush(c->f))
		cap_fail(c, "flush");
}

/*
 * Returns 0, or -errno of the first failure; -EIO when an earlier write had
 * failed.  The file is closed and everything freed either way, so a failed
 * capture can be started again; c->error stays for stats until then.
 */
int cap_stop(struct capture *c, struct cap_file **files, uint32_t *n_files)
{
	int err = 0;

	if (!c->f)
		return -ENOENT;
	if (fflush(c->f)) {
		cap_fail(c, "flush");
		err = -errno;
	}
	if (fclose(c->f) && !err) {
		cap_fail(c, "close");
		err = -errno;
	}
	if (c->error[0] && !err)
		err = -EIO;
	c->f = NULL;
	if (files) {
		*files = c->files;
		*n_files = c->n_files;
		c->files = NULL;
		c->n_files = 0;
	}
	cap_free(c);
	return err;
}
