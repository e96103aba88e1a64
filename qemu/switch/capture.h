/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pcapng capture: one Section Header Block, one Interface Description Block
 * per switch port (written when the capture starts, or when a port first
 * connects during a capture), one Enhanced Packet Block per frame with a
 * nanosecond timestamp (if_tsresol = 9) and the direction in epb_flags.
 *
 * With a file limit, the capture rolls over to a next file (its own section
 * header and the same interface blocks, in the same order, so interface ids
 * and the frame sequence continue) before a packet would take the current
 * file past the limit, as tcpdump -C does.
 */
#ifndef CNUAS_CAPTURE_H
#define CNUAS_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define LINKTYPE_ETHERNET	1
#define LINKTYPE_INFINIBAND	247

#define CAP_INBOUND		1
#define CAP_OUTBOUND		2

/* The smallest file limit capture_start takes: a few frames at the largest MTU. */
#define CAP_MIN_FILE_BYTES	(64u << 10)

/* The stdio buffer of a capture file: a write(2) per 1 MiB of frames. */
#define CAP_BUF_SIZE		(1u << 20)

/* One file of a capture, as capture_stop lists it. */
struct cap_file {
	char *path;
	uint64_t packets;
	uint64_t bytes;		/* the file's length: every byte handed to it */
};

struct capture {
	FILE *f;
	char *buf;		/* c->f's buffer; freed after fclose() */
	char *path;		/* the first file's path; the rest are named from it */
	uint64_t file_limit;	/* bytes per file, 0: one file */
	struct cap_file *files;	/* the last one is being written */
	uint32_t n_files;
	uint16_t linktype;
	int32_t *ifid;		/* per port slot: interface id, -1 = no IDB yet */
	uint32_t n_ifs;
	uint32_t n_slots;
	uint64_t packets;
	uint64_t bytes;
	char error[160];	/* last write error, empty when none */
};

int cap_start(struct capture *c, const char *path, uint16_t linktype, uint32_t n_slots,
	      uint64_t file_limit);
/* Write an IDB for @port unless it has one in this capture. */
void cap_add_port(struct capture *c, uint32_t port);
void cap_packet(struct capture *c, uint32_t port, uint64_t ts_ns, const uint8_t *data,
		uint32_t caplen, uint32_t origlen, uint32_t direction);
/*
 * Flush and close; returns 0 or -errno of the first failure.  The file list
 * goes to *@files (the caller frees it with cap_free_files()) unless NULL.
 */
int cap_stop(struct capture *c, struct cap_file **files, uint32_t *n_files);
void cap_free_files(struct cap_file *files, uint32_t n_files);
void cap_flush(struct capture *c);

static inline bool cap_active(const struct capture *c)
{
	return c->f != NULL;
}

#endif
