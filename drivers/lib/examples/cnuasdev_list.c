// SPDX-License-Identifier: (GPL-2.0 OR MIT)
/*
 * cnuasdev_list: every CnuasGPU device libcnuasdev can reach, with what it
 * offers - the smallest program built against an installed libcnuasdev:
 *
 *   cc -o cnuasdev_list cnuasdev_list.c $(pkg-config --cflags --libs cnuasdev)
 *
 * One line per device: NAME PATH opens=CODE caps=... devmem=BYTES.
 * Exits 0, or 1 when listing itself failed.
 */
#include <inttypes.h>
#include <stdio.h>

#include <cnuasdev.h>

int main(void)
{
	struct cnuasdev_devinfo list[64];
	uint32_t n = 0;
	int rc = cnuasdev_enumerate(list, 64, &n);

	if (rc) {
		fprintf(stderr, "cnuasdev_enumerate: %s\n", cnuasdev_strerror(rc));
		return 1;
	}
	printf("libcnuasdev %s: %u device%s\n", cnuasdev_version(), n, n == 1 ? "" : "s");
	for (uint32_t i = 0; i < n && i < 64; i++) {
		struct cnuasdev_props p = { .size = sizeof(p) };
		struct cnuasdev *dev;

		rc = cnuasdev_open(list[i].name, 0, &dev);
		printf("%s %s opens=%s", list[i].name, list[i].path[0] ? list[i].path : "-",
		       cnuasdev_strerror(rc));
		if (!rc && !cnuasdev_query(dev, &p))
			printf(" caps=0x%x devmem=%" PRIu64, p.caps, p.devmem_size);
		printf("\n");
		cnuasdev_close(dev);
	}
	return 0;
}
