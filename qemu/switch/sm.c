// SPDX-License-Identifier: GPL-2.0-or-later
/* Subnet-manager seam; see sm.h.  Intentionally empty until native IB. */
#include "sm.h"
#include "switch.h"

/* Called once, at the end of setup, when ports, tables and sockets exist. */
void sm_init(struct sw *sw)
{
	(void)sw;
}

/*
 * Called after a device took the port (@up) and after it left, by which time
 * its learned state is forgotten.
 */
void sm_port_change(struct sw *sw, unsigned int port, bool up)
{
	(void)sw;
	(void)port;
	(void)up;
}

/*
 * Returns true when the SM took the frame.  @frame may point into the receive
 * batch buffer and is valid only during the call: an SM that needs it later
 * copies it.
 */
bool sm_receive(struct sw *sw, unsigned int in, const uint8_t *frame, size_t len)
{
	(void)sw;
	(void)in;
	(void)frame;
	(void)len;
	return false;
}
