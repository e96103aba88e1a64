// SPDX-License-Identifier: GPL-2.0-or-later
/* Subnet-manager seam; see sm.h.  Intentionally empty until native IB. */
#include "sm.h"
#include "switch.h"

void sm_init(struct sw *sw)
{
	(void)sw;
}

void sm_port_change(struct sw *sw, unsigned int port, bool up)
{
	(void)sw;
	(void)port;
	(void)up;
}

bool sm_receive(struct sw *sw, unsigned int in, const uint8_t *frame, size_t len)
{
	(void)sw;
	(void)in;
	(void)frame;
	(void)len;
	return false;
}
