// SPDX-License-Identifier: GPL-2.0
/*
 * cnuasgpu_smoke DEV: guest-side checks of /dev/cnuasgpuN for the gpu-smoke
 * row.  Info and caps (printed as key=value lines), alloc, copy in/out with
 * patterns verified, mmap read/write, free, devmem_used bookkeeping and, on
 * an idle device, an allocation of the whole allocator region (alloc_full).
 *
 * Exits 0 when every check passed, 1 on a mismatch, 2 on usage errors.
 */
#include <inttypes.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cnuasgpu_test.h"

/*
 * With nothing else allocated, all of alloc_limit can be had and not a page
 * more, and its last page holds data: a driver that sized the allocator from
 * defaults instead of DEVMEM_SIZE fails here.  Prints alloc_full (bytes).
 */
static void smoke_full(int fd, const struct cnuasgpu_info *inf, uint8_t *src,
		       uint8_t *dst)
{
	struct cnuasgpu_alloc full, more;
	uint64_t last;

	CHECK(inf->alloc_limit % 4096 == 0 && inf->alloc_limit <= inf->devmem_size,
	      "alloc_limit %" PRIu64 " within devmem_size %" PRIu64,
	      (uint64_t)inf->alloc_limit, (uint64_t)inf->devmem_size);
	if (alloc(fd, inf->alloc_limit, 0, &full)) {
		CHECK(0, "ALLOC of alloc_limit (%" PRIu64 "): %s",
		      (uint64_t)inf->alloc_limit, strerror(errno));
		return;
	}
	printf("alloc_full=%" PRIu64 "\n", (uint64_t)full.size);
	CHECK(alloc(fd, 4096, 0, &more) == -1 && errno == ENOMEM,
	      "one page past alloc_limit: ENOMEM");
	last = full.size - 4096;
	fill(src, 4096, 4);
	memset(dst, 0, 4096);
	CHECK(copy(fd, 1, full.handle, last, src, 4096) == 0 &&
	      copy(fd, 0, full.handle, last, dst, 4096) == 0 &&
	      memcmp(src, dst, 4096) == 0, "the last page of alloc_limit holds data");
	CHECK(free_handle(fd, full.handle) == 0, "FREE of the full allocation");
}

/*
 * CAPS: a PCI function, zerocopy, DMA-BUF for peer RDMA, the link when BAR1
 * has room for its buffers (alloc_limit below devmem_size), no pins, no
 * queues.  Prints caps (hex).
 */
static void smoke_caps(int fd, const struct cnuasgpu_info *inf)
{
	uint32_t want = CNUASGPU_CAP_ZEROCOPY | CNUASGPU_CAP_DMABUF |
			CNUASGPU_CAP_PEER_RDMA;
	struct cnuasgpu_caps c = { .size = sizeof(c) };

	if (inf->alloc_limit < inf->devmem_size)
		want |= CNUASGPU_CAP_LINK;
	CHECK(ioctl(fd, CNUASGPU_IOC_CAPS, &c) == 0, "CAPS: %s", strerror(errno));
	printf("caps=0x%x\n", c.caps);
	CHECK(c.size == sizeof(c) && c.version == CNUASGPU_CAPS_VERSION &&
	      c.kind == CNUASGPU_KIND_PCIE, "CAPS size %u version %u kind %u",
	      c.size, c.version, c.kind);
	CHECK(c.caps == want, "CAPS bits 0x%x, expected 0x%x", c.caps, want);
	CHECK(c.devmem_size == inf->devmem_size && !c.pinned_max &&
	      !c.queue_depth && !c.batch_max && c.page_size == 4096,
	      "CAPS sizes");
	c = (struct cnuasgpu_caps){ .size = sizeof(c), .reserved[4] = 1 };
	CHECK(ioctl(fd, CNUASGPU_IOC_CAPS, &c) == -1 && errno == EINVAL,
	      "CAPS with reserved set: EINVAL");
}

static int smoke(const char *path)
{
	const size_t big = 1u << 20, small = 3 * 4096 + 1;
	struct cnuasgpu_alloc a, b;
	struct cnuasgpu_info inf;
	uint8_t *src, *dst, *map;
	uint64_t used0;
	int fd = open_dev(path);

	CHECK(info(fd, &inf) == 0, "INFO: %s", strerror(errno));
	printf("abi_version=%u\nfw_version=0x%08x\ngpu_id=%u\nsm_count=%u\n"
	       "lanes_per_sm=%u\ntensor_size=%u\ndevmem_size=%" PRIu64 "\n"
	       "devmem_used=%" PRIu64 "\nalloc_limit=%" PRIu64 "\nlink_up=%u\n",
	       inf.abi_version, inf.fw_version, inf.gpu_id, inf.sm_count,
	       inf.lanes_per_sm, inf.tensor_size,
	       (uint64_t)inf.devmem_size, (uint64_t)inf.devmem_used,
	       (uint64_t)inf.alloc_limit, inf.link_up);
	used0 = inf.devmem_used;
	smoke_caps(fd, &inf);

	CHECK(alloc(fd, big, 0, &a) == 0, "ALLOC 1 MiB: %s", strerror(errno));
	CHECK(alloc(fd, small, 1u << 16, &b) == 0, "ALLOC small: %s",
	      strerror(errno));
	CHECK(a.handle != b.handle, "handles differ");
	CHECK(a.offset % 4096 == 0 && b.offset % 65536 == 0, "alignment");
	CHECK(b.size == 4 * 4096, "size rounded to pages (got %" PRIu64 ")",
	      (uint64_t)b.size);
	CHECK(b.offset >= a.offset + a.size, "no overlap");
	CHECK(info(fd, &inf) == 0 && inf.devmem_used == used0 + a.size + b.size,
	      "devmem_used follows allocations");

	src = malloc(big);
	dst = malloc(big);
	if (!src || !dst)
		return 1;
	fill(src, big, 1);
	CHECK(copy(fd, 1, a.handle, 0, src, big) == 0, "COPY_TO_DEV");
	memset(dst, 0, big);
	CHECK(copy(fd, 0, a.handle, 0, dst, big) == 0, "COPY_FROM_DEV");
	CHECK(memcmp(src, dst, big) == 0, "pattern read back");
	fill(src, 4096, 2);
	CHECK(copy(fd, 1, a.handle, 12345, src, 4096) == 0, "copy at offset");
	CHECK(copy(fd, 0, a.handle, 12345, dst, 4096) == 0 &&
	      memcmp(src, dst, 4096) == 0, "offset pattern read back");

	map = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_SHARED, fd, a.offset);
	CHECK(map != MAP_FAILED, "mmap: %s", strerror(errno));
	if (map != MAP_FAILED) {
		CHECK(memcmp(map + 12345, src, 4096) == 0, "mmap sees copies");
		fill(map, 8192, 3);
		fill(src, 8192, 3);
		CHECK(copy(fd, 0, a.handle, 0, dst, 8192) == 0 &&
		      memcmp(src, dst, 8192) == 0, "copies see mmap writes");
		CHECK(munmap(map, big) == 0, "munmap");
	}
	CHECK(mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, a.offset) ==
	      MAP_FAILED, "private mappings are refused");
	CHECK(mmap(NULL, 2 * big, PROT_READ, MAP_SHARED, fd, a.offset) ==
	      MAP_FAILED, "mapping past an allocation is refused");

	CHECK(free_handle(fd, b.handle) == 0, "FREE b");
	CHECK(free_handle(fd, b.handle) == -1 && errno == ENOENT, "double free");
	CHECK(free_handle(fd, a.handle) == 0, "FREE a");
	CHECK(info(fd, &inf) == 0 && inf.devmem_used == used0,
	      "devmem_used back to %" PRIu64, used0);
	if (used0 == 0)
		smoke_full(fd, &inf, src, dst);
	free(src);
	free(dst);
	close(fd);
	printf("smoke=%s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: cnuasgpu_smoke DEV\n");
		return 2;
	}
	return smoke(argv[1]);
}
